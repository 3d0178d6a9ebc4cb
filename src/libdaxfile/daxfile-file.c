/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-file.h"
#include "daxfile-util.h"

gboolean
daxfile_file_check_regular(const struct stat *st, const char *name,
                           GError **error)
{
    const char *what = NULL;

    if (S_ISREG(st->st_mode))
        return TRUE;
    if (S_ISLNK(st->st_mode)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is a symbolic link; daxfile does not follow "
                    "symlinks (give the target's path, or pass "
                    "--follow-symlinks)", name);
        return FALSE;
    }
    if (S_ISCHR(st->st_mode)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is a character device, not a regular file; a "
                    "device-dax device is given to QEMU directly", name);
        return FALSE;
    }
    if (S_ISDIR(st->st_mode))
        what = "a directory";
    else if (S_ISFIFO(st->st_mode))
        what = "a FIFO";
    else if (S_ISSOCK(st->st_mode))
        what = "a socket";
    else if (S_ISBLK(st->st_mode))
        what = "a block device";
    else
        what = "not a regular file";
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "'%s' is %s, not a regular file", name, what);
    return FALSE;
}

int
daxfile_fd_reopen(int fd, int open_flags, const char *name, GError **error)
{
    g_autofree char *proc = g_strdup_printf("/proc/self/fd/%d", fd);
    int newfd = open(proc, open_flags | O_CLOEXEC | O_NOCTTY);

    if (newfd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", name);
        return -1;
    }
    return newfd;
}

int
daxfile_file_open(const char *path, DaxfileOpenFlags flags,
                  struct stat *ret_st, GError **error)
{
    g_autofree char *name = daxfile_escape(path);
    g_auto(DaxfileFd) pfd = -1;
    struct stat st;
    int oflags = O_PATH | O_CLOEXEC;

    if (!(flags & DAXFILE_OPEN_FOLLOW))
        oflags |= O_NOFOLLOW;
    pfd = open(path, oflags);
    if (pfd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", name);
        return -1;
    }
    if (fstat(pfd, &st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", name);
        return -1;
    }
    if (!daxfile_file_check_regular(&st, name, error))
        return -1;
    if (ret_st)
        *ret_st = st;
    return daxfile_fd_reopen(pfd,
                             (flags & DAXFILE_OPEN_WRITE) ? O_RDWR : O_RDONLY,
                             name, error);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-util.h"

void
daxfile_file_free(DaxfileFile *file)
{
    if (!file)
        return;
    daxfile_fd_close(file->fd);
    g_free(file->path);
    g_free(file->display);
    g_free(file);
}

/* A handle around @fd, already stat()ed as @st */
static DaxfileFile *
file_new(int fd, const struct stat *st, const char *path)
{
    DaxfileFile *file = g_new0(DaxfileFile, 1);

    file->fd = fd;
    file->st = *st;
    file->path = g_strdup(path);
    file->display = daxfile_escape(path);
    return file;
}

DaxfileFile *
daxfile_file_new_from_fd(int fd, const char *path, GError **error)
{
    g_auto(DaxfileFd) owned = fd;
    struct stat st;

    if (fstat(owned, &st) < 0) {
        g_autofree char *name = daxfile_escape(path);

        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", name);
        return NULL;
    }
    return file_new(g_steal_fd(&owned), &st, path);
}

gboolean
daxfile_file_check_regular(const struct stat *st, const char *name,
                           GError **error)
{
    const char *what = NULL;

    if (S_ISREG(st->st_mode))
        return TRUE;
    if (S_ISLNK(st->st_mode)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' is a symbolic link, which daxfile does not follow; fix: give the target's path",
            name);
        return FALSE;
    }
    if (S_ISCHR(st->st_mode)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' is a character device, not a regular file; a device-dax device is given to QEMU directly",
            name);
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

char *
daxfile_fd_path(int fd)
{
    g_autofree char *target = daxfile_fd_target(fd);

    if (!target)
        return g_strdup_printf("fd %d", fd);
    return daxfile_escape(target);
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

gboolean
daxfile_file_reopen(DaxfileFile *f, int open_flags, GError **error)
{
    int fd = daxfile_fd_reopen(f->fd, open_flags, f->display, error);

    if (fd < 0)
        return FALSE;
    daxfile_fd_close(f->fd);
    f->fd = fd;
    return TRUE;
}

/* The O_PATH fd @pfd (taken) of @path: a regular file? then reopen it
 * for real. */
static DaxfileFile *
open_checked(int pfd, const char *path, DaxfileOpenFlags flags, GError **error)
{
    g_autoptr(DaxfileFile) f = daxfile_file_new_from_fd(pfd, path, error);

    if (!f || !daxfile_file_check_regular(&f->st, f->display, error) ||
        !daxfile_file_reopen(
            f, (flags & DAXFILE_OPEN_WRITE) ? O_RDWR : O_RDONLY, error))
        return NULL;
    return g_steal_pointer(&f);
}

DaxfileFile *
daxfile_file_open(const char *path, DaxfileOpenFlags flags, GError **error)
{
    g_auto(DaxfileFd) pfd = -1;
    int oflags = O_PATH | O_CLOEXEC;

    if (!(flags & DAXFILE_OPEN_FOLLOW))
        oflags |= O_NOFOLLOW;
    pfd = open(path, oflags);
    if (pfd < 0) {
        g_autofree char *name = daxfile_escape(path);

        daxfile_set_error_errno(error, errno, "Cannot open '%s'", name);
        return NULL;
    }
    return open_checked(g_steal_fd(&pfd), path, flags, error);
}

DaxfileFile *
daxfile_file_open_node(const char *path, int open_flags, const char *link_fix,
                       GError **error)
{
    int fd = open(path, open_flags | O_CLOEXEC);

    if (fd < 0) {
        int errsv = errno;
        g_autofree char *name = daxfile_escape(path);

        daxfile_set_error_errno(error, errsv, "Cannot open '%s'%s", name,
                                errsv == ELOOP && link_fix ? link_fix : "");
        return NULL;
    }
    return daxfile_file_new_from_fd(fd, path, error);
}

/* Without openat2 (kernels before 5.6, valgrind): one component at a
 * time, never following a symlink and refusing "..". */
static int
open_beneath_walk(int rootfd, const char *rel, int oflags)
{
    g_auto(GStrv) parts = g_strsplit(rel, "/", -1);
    g_auto(DaxfileFd) cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
    guint i, last = 0;

    for (i = 0; parts[i]; i++) {
        if (*parts[i] && STRNEQ(parts[i], "."))
            last = i;
    }
    for (i = 0; cur >= 0 && parts[i]; i++) {
        int next;

        if (!*parts[i] || STREQ(parts[i], "."))
            continue;
        if (STREQ(parts[i], "..")) {
            errno = EXDEV;
            return -1;
        }
        next = openat(cur, parts[i],
                      (i == last ? oflags : O_PATH | O_DIRECTORY) | O_NOFOLLOW |
                          O_CLOEXEC);
        if (next < 0)
            return -1;
        close(cur);
        cur = next;
    }
    return g_steal_fd(&cur);
}

static int
open_beneath(int rootfd, const char *rel, int oflags)
{
    struct open_how how = {
        .flags = oflags | O_CLOEXEC | O_NOFOLLOW,
        .resolve =
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));

    if (fd < 0 && errno == ENOSYS)
        return open_beneath_walk(rootfd, rel, oflags);
    return fd;
}

/* Resolve @path under @root with openat2(RESOLVE_BENEATH|NO_SYMLINKS) */
static int
beneath(const char *root, const char *path, int oflags, GError **error)
{
    g_auto(DaxfileFd) rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    g_autofree char *rootname = NULL;
    g_autofree char *name = NULL;
    size_t n = strlen(root);
    const char *rel;
    int errsv;
    int fd;

    if (rootfd < 0) {
        errsv = errno;
        rootname = daxfile_escape(root);
        daxfile_set_error_errno(error, errsv,
                                "Cannot open the managed root '%s'", rootname);
        return -1;
    }
    g_return_val_if_fail(strncmp(path, root, n) == 0, -1);
    rel = path + n;
    while (*rel == '/')
        rel++;
    fd = open_beneath(rootfd, *rel ? rel : ".", oflags);
    if (fd >= 0)
        return fd;
    /* the names, for the message, only now that there is one */
    errsv = errno;
    name = daxfile_escape(path);
    rootname = daxfile_escape(root);
    if (errsv == ELOOP || errsv == EXDEV) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "'%s' leads outside the managed root '%s' or through a symbolic link; fix: use a plain path inside the root",
            name, rootname);
        return -1;
    }
    daxfile_set_error_errno(error, errsv, "Cannot open '%s'", name);
    return -1;
}

int
daxfile_dir_open_beneath(const char *root, const char *dir, GError **error)
{
    return beneath(root, dir, O_RDONLY | O_DIRECTORY, error);
}

DaxfileFile *
daxfile_file_open_beneath(const char *root, const char *path,
                          DaxfileOpenFlags flags, GError **error)
{
    g_auto(DaxfileFd) pfd = beneath(root, path, O_PATH, error);

    if (pfd < 0)
        return NULL;
    return open_checked(g_steal_fd(&pfd), path, flags, error);
}

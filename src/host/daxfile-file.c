/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-sysfs.h"
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
                    "'%s' is a symbolic link, which daxfile does not "
                    "follow; give the target's path", name);
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

/* The O_PATH fd @pfd: a regular file? then reopen it for real. */
static int
open_checked(int pfd, const char *name, DaxfileOpenFlags flags,
             struct stat *ret_st, GError **error)
{
    struct stat st;

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

int
daxfile_file_open(const char *path, DaxfileOpenFlags flags,
                  struct stat *ret_st, GError **error)
{
    g_autofree char *name = daxfile_escape(path);
    g_auto(DaxfileFd) pfd = -1;
    int oflags = O_PATH | O_CLOEXEC;

    if (!(flags & DAXFILE_OPEN_FOLLOW))
        oflags |= O_NOFOLLOW;
    pfd = open(path, oflags);
    if (pfd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", name);
        return -1;
    }
    return open_checked(pfd, name, flags, ret_st, error);
}

static void
add_identity(GArray *out, const struct stat *st)
{
    DaxfileIdentity id = {st->st_dev, st->st_ino};

    g_array_append_val(out, id);
}

/* The backing files of the loop devices under the block device at
 * @sysdir (relative to the sysfs root), through partitions and stacked
 * devices (slaves/), at most @depth levels down. */
static void
loop_backing(const char *sysdir, guint depth, GArray *out)
{
    g_autofree char *part = g_build_filename(sysdir, "partition", NULL);
    g_autofree char *whole = g_build_filename(sysdir, "..", NULL);
    const char *dir = daxfile_sysfs_exists(part) ? whole : sysdir;
    g_autofree char *rel = g_build_filename(dir, "loop", "backing_file",
                                            NULL);
    g_autofree char *backing = daxfile_sysfs_read(rel, NULL);
    g_autofree char *slaves = g_build_filename(daxfile_sysfs_root(), dir,
                                               "slaves", NULL);
    g_autoptr(GDir) d = depth > 0 ? g_dir_open(slaves, 0, NULL) : NULL;
    const char *name;
    struct stat st;

    if (backing) {
        if (g_str_has_suffix(backing, " (deleted)"))
            backing[strlen(backing) - strlen(" (deleted)")] = '\0';
        if (stat(backing, &st) == 0)
            add_identity(out, &st);
    }
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *sub = g_build_filename("class", "block", name, NULL);

        loop_backing(sub, depth - 1, out);
    }
}

void
daxfile_path_identities(const char *path, GArray *out)
{
    g_auto(DaxfileFd) slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    g_auto(DaxfileFd) fd = -1;
    struct stat st;

    if (slash < 0 || !path || !*path)
        return;
    fd = openat(slash, path, O_PATH | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return;
    add_identity(out, &st);
    if (S_ISBLK(st.st_mode)) {
        g_autofree char *sysdir = g_strdup_printf(
            "dev/block/%u:%u", major(st.st_rdev), minor(st.st_rdev));

        loop_backing(sysdir, 4, out);
    }
}

gboolean
daxfile_identities_have(GArray *ids, guint64 dev, guint64 ino)
{
    guint i;

    for (i = 0; i < ids->len; i++) {
        const DaxfileIdentity *id = &g_array_index(ids, DaxfileIdentity, i);

        if (id->dev == dev && id->ino == ino)
            return TRUE;
    }
    return FALSE;
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
                      (i == last ? oflags : O_PATH | O_DIRECTORY) |
                          O_NOFOLLOW | O_CLOEXEC);
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
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                   RESOLVE_NO_MAGICLINKS,
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
    g_autofree char *name = daxfile_escape(path);
    g_autofree char *rootname = daxfile_escape(root);
    g_auto(DaxfileFd) rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    size_t n = strlen(root);
    const char *rel;
    int fd;

    if (rootfd < 0) {
        daxfile_set_error_errno(error, errno,
                                "Cannot open the managed root '%s'", rootname);
        return -1;
    }
    g_return_val_if_fail(strncmp(path, root, n) == 0, -1);
    rel = path + n;
    while (*rel == '/')
        rel++;
    fd = open_beneath(rootfd, *rel ? rel : ".", oflags);
    if (fd < 0 && (errno == ELOOP || errno == EXDEV)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
                    "'%s' leads outside the managed root '%s' or through a "
                    "symbolic link; use a plain path inside the root",
                    name, rootname);
        return -1;
    }
    if (fd < 0)
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", name);
    return fd;
}

int
daxfile_dir_open_beneath(const char *root, const char *dir, GError **error)
{
    return beneath(root, dir, O_RDONLY | O_DIRECTORY, error);
}

int
daxfile_file_open_beneath(const char *root, const char *path,
                          DaxfileOpenFlags flags, struct stat *ret_st,
                          GError **error)
{
    g_autofree char *name = daxfile_escape(path);
    g_auto(DaxfileFd) pfd = beneath(root, path, O_PATH, error);

    if (pfd < 0)
        return -1;
    return open_checked(pfd, name, flags, ret_st, error);
}

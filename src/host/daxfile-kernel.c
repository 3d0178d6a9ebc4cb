/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-kernel.h"
#include "daxfile-sysfs.h"

#define SYSCALL_NR_MAX 1024

gboolean
daxfile_kernel_syscall_nr(long *ret_nr)
{
    guint64 nr = 0;

    if (!daxfile_sysfs_read_u64(DAXFILE_KERNEL_SYSFS_NR, &nr, NULL))
        return FALSE;
    if (nr == 0 || nr >= SYSCALL_NR_MAX) {
        g_debug("ignoring implausible daxctl syscall number %" G_GUINT64_FORMAT,
                nr);
        return FALSE;
    }
    *ret_nr = (long)nr;
    return TRUE;
}

static long
daxctl(long nr, int fd, int flags, guint64 align)
{
    g_autofree char *path = g_strdup_printf("/proc/self/fd/%d", fd);

    return syscall(nr, path, flags, (int)MIN(align, G_MAXINT));
}

gboolean
daxfile_kernel_get(long nr, const DaxfileFile *f, gboolean *ret_static,
                   GError **error)
{
    long rc = daxctl(nr, f->fd, DAXCTL_F_GET, 0);

    if (rc < 0) {
        daxfile_set_error_errno(
            error, errno, "daxctl(DAXCTL_F_GET) failed on '%s'", f->display);
        return FALSE;
    }
    *ret_static = (rc & DAXCTL_F_STATIC) != 0;
    return TRUE;
}

gboolean
daxfile_kernel_set(long nr, const DaxfileFile *f, gboolean on, guint64 align,
                   GError **error)
{
    const char *name = f->display;
    long rc = daxctl(nr, f->fd, on ? DAXCTL_F_STATIC : 0, on ? align : 0);
    int errsv = errno;

    if (rc == 0)
        return TRUE;
    switch (errsv) {
    case EPERM:
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "The kernel refused to change static mode of '%s': CAP_LINUX_IMMUTABLE is needed; fix: run as root",
            name);
        break;
    case EBUSY:
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
            "The kernel refused to make '%s' static: it is a swapfile or already static",
            name);
        break;
    case EINVAL:
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY,
            "The kernel refused to make '%s' static: not a DAX regular file, or an extent is a hole, unwritten, shared or not aligned; see 'daxfile check'",
            name);
        break;
    default:
        daxfile_set_error_errno(error, errsv, "daxctl() failed on '%s'", name);
    }
    return FALSE;
}

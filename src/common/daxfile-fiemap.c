/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "daxfile-error.h"
#include "daxfile-fiemap.h"

#define FIEMAP_BATCH 512

static gboolean
fiemap_request_error(int errsv, const char *name, GError **error)
{
    if (errsv == EOPNOTSUPP || errsv == ENOTTY) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
            "Cannot read the block map of '%s': the filesystem does not report extents (FIEMAP); static mode is not supported here",
            name);
        return FALSE;
    }
    daxfile_set_error_errno(error, errsv, "Cannot read the block map of '%s'",
                            name);
    return FALSE;
}

static gboolean
fiemap_request(int fd, const char *name, struct fiemap *fm, guint64 start,
               guint32 flags, GError **error)
{
    fm->fm_start = start;
    fm->fm_length = FIEMAP_MAX_OFFSET - start;
    fm->fm_flags = flags;
    fm->fm_extent_count = FIEMAP_BATCH;
    fm->fm_mapped_extents = 0;
    if (ioctl(fd, FS_IOC_FIEMAP, fm) == 0)
        return TRUE;
    return fiemap_request_error(errno, name, error);
}

DaxfileExtentMap *
daxfile_fiemap_read(int fd, const char *name, GError **error)
{
    g_autoptr(DaxfileExtentMap) map = NULL;
    g_autofree struct fiemap *fm = NULL;
    struct stat st;
    guint64 start = 0;
    guint32 flags = FIEMAP_FLAG_SYNC;
    gboolean last = FALSE;

    if (fstat(fd, &st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", name);
        return NULL;
    }
    map = daxfile_extent_map_new(st.st_size, st.st_blksize);
    fm = g_malloc0(sizeof(*fm) + FIEMAP_BATCH * sizeof(struct fiemap_extent));

    while (!last && start < (guint64)st.st_size) {
        guint32 i;

        if (!fiemap_request(fd, name, fm, start, flags, error))
            return NULL;
        flags = 0;
        if (fm->fm_mapped_extents == 0)
            break;
        for (i = 0; i < fm->fm_mapped_extents; i++) {
            const struct fiemap_extent *fe = &fm->fm_extents[i];

            daxfile_extent_map_add(map, fe->fe_logical, fe->fe_physical,
                                   fe->fe_length, fe->fe_flags);
            start = fe->fe_logical + fe->fe_length;
            if (fe->fe_flags & FIEMAP_EXTENT_LAST)
                last = TRUE;
        }
    }
    return g_steal_pointer(&map);
}

gboolean
daxfile_fiemap_supported(int fd, const char *name, GError **error)
{
    struct fiemap fm = {0};

    fm.fm_length = FIEMAP_MAX_OFFSET;
    if (ioctl(fd, FS_IOC_FIEMAP, &fm) == 0)
        return TRUE;
    return fiemap_request_error(errno, name, error);
}

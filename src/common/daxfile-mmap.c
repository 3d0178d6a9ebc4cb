/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <sys/mman.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-mmap.h"

void
daxfile_mapping_clear(DaxfileMapping *map)
{
    if (map->addr && map->addr != MAP_FAILED)
        munmap(map->addr, map->length);
    map->addr = NULL;
    map->length = 0;
}

gboolean
daxfile_map_aligned(int fd, guint64 len, guint64 offset, int prot, int flags,
                    guint64 align, void **ret_addr, GError **error)
{
    guint8 *res = mmap(NULL, len + align, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    guint8 *start;
    void *addr;
    int errsv;

    if (res == MAP_FAILED) {
        errsv = errno;
        daxfile_set_error_errno(error, errsv,
                                "Cannot reserve %" G_GUINT64_FORMAT
                                " bytes of address space",
                                len + align);
        errno = errsv;
        return FALSE;
    }
    start = (guint8 *)DAXFILE_ALIGN_UP((guintptr)res, align);
    if (start > res)
        munmap(res, start - res);
    if (res + align > start)
        munmap(start + len, res + align - start);
    addr = mmap(start, len, prot, flags | MAP_FIXED, fd, (off_t)offset);
    if (addr == MAP_FAILED) {
        errsv = errno;
        munmap(start, len);
        daxfile_set_error_errno(error, errsv, "mmap failed");
        errno = errsv;
        return FALSE;
    }
    *ret_addr = addr;
    return TRUE;
}

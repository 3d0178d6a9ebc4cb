/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-mmap.h: owned memory mappings, at aligned addresses
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A mapping released by munmap() */
typedef struct {
    void *addr;
    size_t length;
} DaxfileMapping;
void daxfile_mapping_clear(DaxfileMapping *map);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileMapping, daxfile_mapping_clear)

/* mmap() @len bytes of @fd from @offset at an address aligned to @align (a
 * power of two), as QEMU's qemu_ram_mmap() does: reserve @len + @align of
 * address space, then map over the aligned part. A device-dax device
 * refuses any other address, and a fault can map a 2 MiB page only where
 * the address is 2 MiB-aligned. On failure errno is left as the failing
 * call set it too. */
gboolean daxfile_map_aligned(int fd, guint64 len, guint64 offset, int prot,
                             int flags, guint64 align, void **ret_addr,
                             GError **error);

G_END_DECLS

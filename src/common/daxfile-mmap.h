/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-mmap.h: owned memory mappings
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

G_END_DECLS

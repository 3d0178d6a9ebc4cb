/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-align.h: page sizes and alignment
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define DAXFILE_SZ_4K (G_GUINT64_CONSTANT(4096))
#define DAXFILE_SZ_2M (G_GUINT64_CONSTANT(2) << 20)
#define DAXFILE_DEFAULT_ALIGN DAXFILE_SZ_2M

#define DAXFILE_ALIGN_DOWN(x, a) ((x) & ~((guint64)(a)-1))
#define DAXFILE_ALIGN_UP(x, a) DAXFILE_ALIGN_DOWN((x) + (a)-1, (a))
#define DAXFILE_IS_ALIGNED(x, a) (((x) & ((guint64)(a)-1)) == 0)

guint64 daxfile_page_size(void);

/* TRUE when @align is a power of two no smaller than the page size */
gboolean daxfile_align_check(guint64 align, GError **error);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-size.h: sizes as users write them (4096, 2M, 2MiB, 4G, 1T)
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Parse a byte count: decimal digits with an optional binary suffix
 * K/M/G/T/P (any case, optionally followed by "iB"). Zero, signs,
 * spaces, garbage and values above INT64_MAX are refused. */
gboolean daxfile_size_parse(const char *str, guint64 *ret_size, GError **error);

typedef enum {
    DAXFILE_SIZE_DEFAULT = 0,
    /* 0 is accepted (an offset, a count that may be zero) */
    DAXFILE_SIZE_ZERO = 1 << 0,
    /* a number rather than a size (a seed, an offset in hex): decimal or
     * 0x-hex digits, no unit, zero and anything up to G_MAXUINT64 */
    DAXFILE_SIZE_NUMBER = 1 << 1,
} DaxfileSizeFlags;

/* daxfile_size_parse() with @flags: the one parser of sizes and numbers
 * given on a command line (daxfile, daxfile-guest, bench-dax, dax-probe) */
gboolean daxfile_size_parse_flags(const char *str, DaxfileSizeFlags flags,
                                  guint64 *ret_size, GError **error);

/* "2 MiB" when the value is an exact multiple of a unit, "4097 bytes"
 * otherwise. */
char *daxfile_size_format(guint64 size);

/* The shortest form daxfile_size_parse() reads back: "4M", "4097". */
char *daxfile_size_format_arg(guint64 size);

G_END_DECLS

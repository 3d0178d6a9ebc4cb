/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-size.h: sizes as users write them (4096, 2M, 2MiB, 4G, 1T)
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Parse a byte count: decimal digits with an optional binary suffix
 * K/M/G/T/P (any case, optionally followed by "iB"). Zero, negative
 * numbers, garbage and values above INT64_MAX are refused. */
gboolean daxfile_size_parse(const char *str, guint64 *ret_size,
                            GError **error);

/* "2 MiB" when the value is an exact multiple of a unit, "4097 bytes"
 * otherwise. */
char *daxfile_size_format(guint64 size);

/* The shortest form daxfile_size_parse() reads back: "4M", "4097". */
char *daxfile_size_format_arg(guint64 size);

G_END_DECLS

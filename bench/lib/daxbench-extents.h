/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxbench-extents.h: bench-dax frag and extents, files of many extents
 * and the cost of reading their maps
 *
 *   bench-dax frag A B --chunk BYTES --count N [--write]
 *       fallocate N chunks to A and B in turn, so each file gets about N
 *       (unwritten) extents; --write then writes zeroes over all of A,
 *       which makes its extents written where they are.
 *   bench-dax extents PATH [--repeat N]
 *       Count PATH's extents and the unwritten ones, read as daxfile reads
 *       them (daxfile_fiemap_read: FIEMAP, 512 extents per call,
 *       FIEMAP_FLAG_SYNC first); with --repeat, also the median and minimum
 *       time of N more reads in this process.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    const char *a;
    const char *b;
    guint64 chunk;
    guint64 count;
    gboolean write;
} DaxbenchFragArgs;

/* Parse "bench-dax frag ..." (argv[2] on); FALSE: a usage error */
gboolean daxbench_frag_parse(int argc, char **argv, DaxbenchFragArgs *ret_args);

/* Make the two files; prints nothing */
gboolean daxbench_frag(const DaxbenchFragArgs *args, GError **error);

/* The count (and with @repeat > 0 the timing) as one line of JSON */
char *daxbench_extents(const char *path, guint64 repeat, GError **error);

G_END_DECLS

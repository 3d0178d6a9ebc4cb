/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxbench-fill.h: bench-dax fill, the ways to provision a file, timed
 *
 *   bench-dax fill PATH SIZE METHOD [--daxfile BIN] [--allow-non-dax]
 *       Provision SIZE bytes (a multiple of 1 MiB) and print the time.
 *       METHOD:
 *         raw-dd         dd if=/dev/zero of=PATH bs=1M oflag=direct conv=fsync
 *         raw-pwrite     pwrite zeroes, O_DIRECT, 1 MiB at a time, fsync
 *         falloc-dd      fallocate, then dd bs=1M conv=notrunc,fsync
 *         falloc-pwrite  fallocate, then pwrite zeroes 1 MiB at a time, fsync
 *         falloc-pwrite-64m  the same, 64 MiB at a time
 *         falloc-populate  fallocate, then mmap(MAP_SHARED) and
 *                        MADV_POPULATE_WRITE 64 MiB at a time, fsync (the
 *                        method daxfile create uses on DAX filesystems)
 *         falloc-populate-sync  the same through a MAP_SYNC mapping, 2 MiB
 *                        at a time
 *         create         daxfile create PATH --size SIZE
 *         wipe           daxfile wipe PATH, after an untimed daxfile create;
 *                        adds wipe's own zeroing and read-back times
 *       The raw methods write over an existing PATH (a device or a file),
 *       the others create it.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct DaxbenchFillMethod DaxbenchFillMethod;

typedef struct {
    const char *path;
    guint64 size;
    const DaxbenchFillMethod *method;
    const char *daxfile;    /* the daxfile binary, default "daxfile" */
    gboolean allow_non_dax; /* create --allow-non-dax */
} DaxbenchFillArgs;

/* Parse "bench-dax fill ..." (argv[2] on); FALSE: a usage error */
gboolean daxbench_fill_parse(int argc, char **argv, DaxbenchFillArgs *ret_args);

/* The measurement as one line of JSON (no newline) */
char *daxbench_fill(const DaxbenchFillArgs *args, GError **error);

G_END_DECLS

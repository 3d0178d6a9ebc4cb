/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxbench-fault.h: bench-dax fault and populate, the costs of faulting a
 * mapping in, one store at a time or all at once
 *
 *   bench-dax fault PATH --mode 4k|2m --count N [--sync] [--offset BYTES]
 *       Map N pages (4 KiB or 2 MiB) of PATH (a file or /dev/daxX.Y) at a
 *       2 MiB-aligned address and write one byte to each page, timing every
 *       store (CLOCK_MONOTONIC): daxfile-guest bench's fault benchmark
 *       (daxguest_bench_stores). 4k mode first sets MADV_NOHUGEPAGE so
 *       every fault is a PTE fault. Faults are counted with getrusage. Then
 *       the same stores again (no faults: the cost of the timer and a
 *       store), and in 2m mode every 4 KiB page of the first two 2 MiB
 *       pages (0 extra faults = the first store mapped a PMD).
 *   bench-dax populate PATH --size BYTES [--sync]
 *       What QEMU's prealloc=on does to a memory-backend-file (QEMU 7.2:
 *       MADV_POPULATE_WRITE over the mapping): map SIZE bytes of PATH
 *       MAP_SHARED (MAP_SHARED_VALIDATE|MAP_SYNC with --sync, as with
 *       pmem=on), time one MADV_POPULATE_WRITE over all of it, count faults.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    const char *path;
    gboolean huge; /* --mode 2m */
    gboolean sync;
    guint64 count;
    guint64 offset;
} DaxbenchFaultArgs;

/* Parse "bench-dax fault ..." (argv[2] on); FALSE: a usage error */
gboolean daxbench_fault_parse(int argc, char **argv,
                              DaxbenchFaultArgs *ret_args);

/* The measurement as one line of JSON (no newline) */
char *daxbench_fault(const DaxbenchFaultArgs *args, GError **error);

typedef struct {
    const char *path;
    gboolean sync;
    guint64 size;
} DaxbenchPopulateArgs;

/* Parse "bench-dax populate ..." (argv[2] on); FALSE: a usage error */
gboolean daxbench_populate_parse(int argc, char **argv,
                                 DaxbenchPopulateArgs *ret_args);

/* The measurement as one line of JSON (no newline) */
char *daxbench_populate(const DaxbenchPopulateArgs *args, GError **error);

G_END_DECLS

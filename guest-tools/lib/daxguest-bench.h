/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxguest-bench.h: first-write fault latency (4 KiB and 2 MiB pages),
 * flush+fence latency, and write bandwidth, on a DAX file or device-dax
 *
 * Layout of the region (at least 40 MiB): [0, 8 MiB) takes 4 KiB faults
 * (MADV_NOHUGEPAGE), [8 MiB, 40 MiB) takes one fault per 2 MiB and then
 * serves the flush and bandwidth runs. Under TCG only ratios mean anything.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxguest-cpu.h"

G_BEGIN_DECLS

#define DAXGUEST_BENCH_MIN_SIZE (G_GUINT64_CONSTANT(40) << 20)

typedef struct {
    char *metric;       /* stable snake_case name */
    guint samples;      /* 0: not measured, see note */
    gboolean bandwidth; /* bytes_per_second instead of latencies */
    guint64 median_ns;
    guint64 p99_ns;
    guint64 max_ns;
    guint64 bytes_per_second;
    gint64 faults;       /* faults during the timed accesses, -1: n/a */
    gint64 extra_faults; /* faults touching the rest afterwards, -1: n/a */
    char *note;
} DaxguestBenchResult;

typedef struct {
    char *target; /* "/mnt/pmem" or "/dev/dax0.0" */
    gboolean devdax;
    gboolean map_sync;
    char *flush;        /* how flush_fence and store_flush flush */
    GPtrArray *results; /* DaxguestBenchResult */
} DaxguestBenchReport;

void daxguest_bench_report_free(DaxguestBenchReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxguestBenchReport, daxguest_bench_report_free)

/* On an unnamed, provisioned file of @size bytes in the directory @dir. */
DaxguestBenchReport *daxguest_bench_dir(const char *dir, guint64 size,
                                        gboolean allow_non_dax,
                                        const DaxguestFlushChoice *choice,
                                        GError **error);

/* On the first @size bytes of a device-dax device (overwrites them). */
DaxguestBenchReport *daxguest_bench_dev(const char *dev, guint64 size,
                                        const DaxguestFlushChoice *choice,
                                        GError **error);

/* The fault benchmark, also bench/'s (bench-dax fault): one store per
 * @step bytes over [@base, @base + @len), each timed with CLOCK_MONOTONIC
 * into @ret_samples (@len / @step of them, in address order, in ns).
 * Returns the page faults the stores took. Over a range already stored to
 * that is 0, and the samples are the cost of the clock and a store. */
guint64 daxguest_bench_stores(guint8 *base, guint64 len, guint64 step,
                              guint64 *ret_samples);

/* One untimed store per 4 KiB page of [@base, @base + @len); returns the
 * page faults that took: 0 after daxguest_bench_stores() with a 2 MiB step
 * means those stores mapped PMDs. */
guint64 daxguest_bench_touch(guint8 *base, guint64 len);

/* CLOCK_MONOTONIC in nanoseconds: the clock of every timed sample */
guint64 daxguest_bench_now_ns(void);

/* Sort @n samples in place, ascending */
void daxguest_bench_sort(guint64 *samples, guint n);

/* The nearest-rank @q quantile (0 < @q <= 1) of @n > 0 sorted samples. */
guint64 daxguest_bench_percentile(const guint64 *sorted, guint n, double q);

/* Sort @samples in place; their median and p99 (nearest rank) and max. */
void daxguest_bench_stats(guint64 *samples, guint n, guint64 *ret_median,
                          guint64 *ret_p99, guint64 *ret_max);

char *daxguest_bench_format_table(const DaxguestBenchReport *report);
JsonNode *daxguest_bench_to_json(const DaxguestBenchReport *report);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxbench-util.h: what bench-dax's measurements share: running a
 * program, zeroing a file, latency statistics as JSON text (the clock and
 * the sort are daxguest-bench's: daxguest_bench_now_ns(),
 * daxguest_bench_sort())
 */
#pragma once

#include <glib.h>

#include "daxguest-bench.h"

G_BEGIN_DECLS

#define DAXBENCH_MIB (G_GUINT64_CONSTANT(1) << 20)
#define DAXBENCH_PMD_SIZE (2 * DAXBENCH_MIB)

/* Run @argv (its program searched in PATH) and wait for it; its stdout goes
 * to the file @out (created or truncated) unless @out is NULL. FALSE unless
 * it exits 0. */
gboolean daxbench_run(char *const argv[], const char *out, GError **error);

/* pwrite() zeroes over the first @size bytes of @fd, @chunk bytes at a
 * time from a 4 KiB-aligned buffer (fit for O_DIRECT), then fsync(). */
gboolean daxbench_write_zeroes(int fd, const char *path, guint64 size,
                               gsize chunk, GError **error);

/* Nearest-rank percentile @q of @n > 0 sorted samples (ns), in us */
double daxbench_pct_us(const guint64 *sorted, guint n, double q);

/* Sort the @n > 0 @samples (ns) and append
 * "@key": {"p50_us": …, "p90_us": …, "p99_us": …, "max_us": …,
 * "mean_us": …} to @out. */
void daxbench_stats_append(GString *out, const char *key, guint64 *samples,
                           guint n);

G_END_DECLS

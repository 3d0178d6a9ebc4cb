/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-mmap.h"
#include "daxfile-size.h"
#include "daxguest-bench.h"
#include "daxguest-probe.h"
#include "daxguest-target.h"

#define SZ_4K DAXFILE_SZ_4K
#define SZ_2M DAXFILE_SZ_2M
#define MIB (G_GUINT64_CONSTANT(1) << 20)
#define REGION_4K (8 * MIB)
#define REGION_2M (32 * MIB)
#define FLUSH_SAMPLES 4096u
#define BW_PASSES 3u

static void
result_free(gpointer p)
{
    DaxguestBenchResult *r = p;

    g_free(r->metric);
    g_free(r->note);
    g_free(r);
}

void
daxguest_bench_report_free(DaxguestBenchReport *report)
{
    if (!report)
        return;
    g_free(report->target);
    g_free(report->flush);
    g_ptr_array_unref(report->results);
    g_free(report);
}

static DaxguestBenchResult *
result_add(DaxguestBenchReport *report, const char *metric)
{
    DaxguestBenchResult *r = g_new0(DaxguestBenchResult, 1);

    r->metric = g_strdup(metric);
    r->faults = -1;
    r->extra_faults = -1;
    g_ptr_array_add(report->results, r);
    return r;
}

guint64
daxguest_bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (guint64)ts.tv_sec * G_GUINT64_CONSTANT(1000000000) +
           (guint64)ts.tv_nsec;
}

static int
cmp_u64(gconstpointer a, gconstpointer b)
{
    guint64 x = *(const guint64 *)a;
    guint64 y = *(const guint64 *)b;

    return (x > y) - (x < y);
}

void
daxguest_bench_sort(guint64 *samples, guint n)
{
    qsort(samples, n, sizeof(*samples), cmp_u64);
}

guint64
daxguest_bench_percentile(const guint64 *sorted, guint n, double q)
{
    double x = q * (double)n;
    guint64 rank = (guint64)x;

    g_return_val_if_fail(n > 0, 0);
    if ((double)rank < x)
        rank++;
    rank = CLAMP(rank, 1, n);
    return sorted[rank - 1];
}

void
daxguest_bench_stats(guint64 *samples, guint n, guint64 *ret_median,
                     guint64 *ret_p99, guint64 *ret_max)
{
    g_return_if_fail(n > 0);
    daxguest_bench_sort(samples, n);
    *ret_median = daxguest_bench_percentile(samples, n, 0.50);
    *ret_p99 = daxguest_bench_percentile(samples, n, 0.99);
    *ret_max = samples[n - 1];
}

guint64
daxguest_bench_stores(guint8 *base, guint64 len, guint64 step,
                      guint64 *ret_samples)
{
    guint64 n = len / step;
    guint64 f0, i;

    (void)
        daxguest_bench_now_ns(); /* resolve the clock before the first sample */
    f0 = daxguest_fault_count();
    for (i = 0; i < n; i++) {
        volatile guint8 *p = base + i * step;
        guint64 t0 = daxguest_bench_now_ns();

        __asm__ __volatile__("" ::: "memory");
        *p = 1;
        __asm__ __volatile__("" ::: "memory");
        ret_samples[i] = daxguest_bench_now_ns() - t0;
    }
    return daxguest_fault_count() - f0;
}

guint64
daxguest_bench_touch(guint8 *base, guint64 len)
{
    guint64 f0 = daxguest_fault_count();
    guint64 off;

    for (off = 0; off < len; off += SZ_4K)
        *(volatile guint8 *)(base + off) = 2;
    return daxguest_fault_count() - f0;
}

/* First-write faults over [@base, @base + @len), one per @step bytes, then
 * the faults of touching every other 4 KiB page. */
static void
bench_faults(DaxguestBenchResult *r, guint8 *base, guint64 len, guint64 step)
{
    guint n = (guint)(len / step);
    g_autofree guint64 *s = g_new0(guint64, n);

    memset(s, 0xff, n * sizeof(*s)); /* fault the array in first */
    r->faults = (gint64)daxguest_bench_stores(base, len, step, s);
    r->extra_faults = (gint64)daxguest_bench_touch(base, len);
    r->samples = n;
    daxguest_bench_stats(s, n, &r->median_ns, &r->p99_ns, &r->max_ns);
}

/* A dirty cache line, then flush + fence, timed (the region is mapped). */
static void
bench_flush(DaxguestBenchResult *r, guint8 *base,
            const DaxguestFlushChoice *choice)
{
    g_autofree guint64 *s = g_new0(guint64, FLUSH_SAMPLES);
    guint i;

    memset(s, 0xff, FLUSH_SAMPLES * sizeof(*s));
    for (i = 0; i < FLUSH_SAMPLES; i++) {
        volatile guint64 *line = (volatile guint64 *)(base + i * 64);
        guint64 t0;

        *line = i;
        t0 = daxguest_bench_now_ns();
        if (choice->flush)
            daxguest_flush_range(choice->insn, (const void *)line, 64);
        daxguest_fence();
        s[i] = daxguest_bench_now_ns() - t0;
    }
    r->samples = FLUSH_SAMPLES;
    daxguest_bench_stats(s, FLUSH_SAMPLES, &r->median_ns, &r->p99_ns,
                         &r->max_ns);
}

static void
store_flush_fill(guint8 *base, guint64 len, guint64 value,
                 const DaxguestFlushChoice *choice)
{
    guint64 off;
    guint i;

    for (off = 0; off < len; off += 64) {
        volatile guint64 *line = (volatile guint64 *)(base + off);

        for (i = 0; i < 8; i++)
            line[i] = value;
        if (choice->flush)
            daxguest_flush_range(choice->insn, (const void *)line, 64);
    }
}

/* Best of BW_PASSES over [@base, @base + @len): non-temporal stores, or
 * ordinary stores with a flush per cache line; one fence per pass. */
static void
bench_bandwidth(DaxguestBenchResult *r, guint8 *base, guint64 len, gboolean nt,
                const DaxguestFlushChoice *choice)
{
    guint64 best = G_MAXUINT64;
    guint pass;

    for (pass = 0; pass < BW_PASSES; pass++) {
        guint64 t0 = daxguest_bench_now_ns();
        guint64 dt;

        if (nt)
            daxguest_nt_fill(base, pass + 1, len);
        else
            store_flush_fill(base, len, pass + 1, choice);
        daxguest_fence();
        dt = MAX(daxguest_bench_now_ns() - t0, 1);
        best = MIN(best, dt);
    }
    r->bandwidth = TRUE;
    r->samples = BW_PASSES;
    r->bytes_per_second = (guint64)((double)len * 1e9 / (double)best);
}

static gboolean
bench_map(int fd, guint64 len, guint64 offset, int flags, guint8 **ret_addr,
          DaxfileMapping *map, GError **error)
{
    void *addr = NULL;

    if (!daxfile_map_aligned(fd, len, offset, PROT_READ | PROT_WRITE, flags,
                             SZ_2M, &addr, error))
        return FALSE;
    map->addr = addr;
    map->length = len;
    *ret_addr = addr;
    return TRUE;
}

static gboolean
bench_run(DaxguestBenchReport *report, int fd, int flags, gboolean pte_ok,
          const DaxguestFlushChoice *choice, GError **error)
{
    g_auto(DaxfileMapping) m4k = {NULL, 0};
    g_auto(DaxfileMapping) m2m = {NULL, 0};
    DaxguestBenchResult *r = result_add(report, "fault_4k_first_write");
    guint8 *p4k = NULL;
    guint8 *p2m = NULL;

    if (!pte_ok) {
        r->note =
            g_strdup("n/a: device-dax with 2 MiB pages takes no 4 KiB faults");
    } else {
        if (!bench_map(fd, REGION_4K, 0, flags, &p4k, &m4k, error))
            return FALSE;
        /* without it, a DAX mapping gets 2 MiB faults where it can */
        madvise(p4k, REGION_4K, MADV_NOHUGEPAGE);
        bench_faults(r, p4k, REGION_4K, SZ_4K);
    }
    r = result_add(report, "fault_2m_first_write");
    if (!bench_map(fd, REGION_2M, REGION_4K, flags, &p2m, &m2m, error))
        return FALSE;
    bench_faults(r, p2m, REGION_2M, SZ_2M);
    bench_flush(result_add(report, "flush_fence_64b"), p2m, choice);
    bench_bandwidth(result_add(report, "nt_write_bandwidth"), p2m, REGION_2M,
                    TRUE, choice);
    bench_bandwidth(result_add(report, "store_flush_bandwidth"), p2m, REGION_2M,
                    FALSE, choice);
    return TRUE;
}

static DaxguestBenchReport *
report_new(const char *target, gboolean devdax,
           const DaxguestFlushChoice *choice)
{
    DaxguestBenchReport *report = g_new0(DaxguestBenchReport, 1);

    report->target = daxfile_escape(target);
    report->devdax = devdax;
    report->flush = daxguest_flush_choice_describe(choice);
    report->results = g_ptr_array_new_with_free_func(result_free);
    return report;
}

static gboolean
bench_size_check(guint64 size, GError **error)
{
    if (size < DAXGUEST_BENCH_MIN_SIZE || !DAXFILE_IS_ALIGNED(size, SZ_2M)) {
        g_autofree char *pretty = daxfile_size_format(size);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Benchmark size %s is too small or not a multiple of 2 MiB; fix: use at least 40M",
            pretty);
        return FALSE;
    }
    return TRUE;
}

DaxguestBenchReport *
daxguest_bench_dir(const char *dir, guint64 size, gboolean allow_non_dax,
                   const DaxguestFlushChoice *choice, GError **error)
{
    g_autoptr(DaxguestBenchReport) report = report_new(dir, FALSE, choice);
    g_auto(DaxfileFd) fd = -1;
    void *addr;
    int flags;

    size = size ? size : DAXGUEST_TARGET_DEFAULT_SIZE;
    if (!bench_size_check(size, error))
        return NULL;
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot create a file in '%s'",
                                dir);
        return NULL;
    }
    if (!daxguest_file_provision(fd, size, report->target, error))
        return NULL;
    addr = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    report->map_sync = addr != MAP_FAILED;
    if (report->map_sync) {
        munmap(addr, SZ_4K);
    } else if (!allow_non_dax) {
        daxfile_set_error_errno(
            error, errno,
            "'%s' refuses MAP_SYNC (not a DAX mount; fix: pass --allow-non-dax to measure anyway)",
            report->target);
        return NULL;
    }
    flags = report->map_sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
    if (!bench_run(report, fd, flags, TRUE, choice, error))
        return NULL;
    return g_steal_pointer(&report);
}

DaxguestBenchReport *
daxguest_bench_dev(const char *dev, guint64 size,
                   const DaxguestFlushChoice *choice, GError **error)
{
    g_autoptr(DaxguestBenchReport) report = report_new(dev, TRUE, choice);
    g_autoptr(DaxguestTarget) t = daxguest_target_open_dev(
        dev, 0, DAXGUEST_TARGET_WRITE | DAXGUEST_TARGET_NO_MAP, error);

    if (!t)
        return NULL;
    size = size ? size : MIN(DAXGUEST_TARGET_DEFAULT_SIZE, t->dev_size);
    if (!bench_size_check(size, error))
        return NULL;
    if (size > t->dev_size || t->align > SZ_2M) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is too small or its pages are larger than 2 MiB",
                    report->target);
        return NULL;
    }
    /* device-dax: plain MAP_SHARED, data is always synchronous */
    report->map_sync = TRUE;
    if (!bench_run(report, t->fd, MAP_SHARED, t->align < SZ_2M, choice, error))
        return NULL;
    return g_steal_pointer(&report);
}

static char *
format_ns(guint64 ns)
{
    if (ns >= 1000000)
        return g_strdup_printf("%.1f ms", (double)ns / 1e6);
    return g_strdup_printf("%.1f us", (double)ns / 1e3);
}

static void
table_row(GString *out, const DaxguestBenchResult *r)
{
    g_autofree char *med = NULL;
    g_autofree char *p99 = NULL;
    g_autofree char *max = NULL;

    if (r->samples == 0) {
        g_string_append_printf(out, "%-24s %s\n", r->metric,
                               r->note ? r->note : "n/a");
        return;
    }
    if (r->bandwidth) {
        g_string_append_printf(out, "%-24s %7u %9.0f MiB/s\n", r->metric,
                               r->samples,
                               (double)r->bytes_per_second / (1 << 20));
        return;
    }
    med = format_ns(r->median_ns);
    p99 = format_ns(r->p99_ns);
    max = format_ns(r->max_ns);
    g_string_append_printf(out, "%-24s %7u %12s %12s %12s", r->metric,
                           r->samples, med, p99, max);
    if (r->faults >= 0)
        g_string_append_printf(out, " %7" G_GINT64_FORMAT " %7" G_GINT64_FORMAT,
                               r->faults, r->extra_faults);
    g_string_append_c(out, '\n');
}

char *
daxguest_bench_format_table(const DaxguestBenchReport *report)
{
    GString *out = g_string_new(NULL);
    const char *mapping = "no MAP_SYNC";
    guint i;

    if (report->devdax)
        mapping = "device-dax";
    else if (report->map_sync)
        mapping = "MAP_SYNC";
    g_string_append_printf(out, "bench on %s (%s); flush: %s\n", report->target,
                           mapping, report->flush);
    g_string_append_printf(out, "%-24s %7s %12s %12s %12s %7s %7s\n", "metric",
                           "samples", "median", "p99", "max", "faults",
                           "extra");
    for (i = 0; i < report->results->len; i++)
        table_row(out, g_ptr_array_index(report->results, i));
    return g_string_free(out, FALSE);
}

static void
json_add_int_or_null(JsonBuilder *b, const char *key, gboolean valid,
                     gint64 value)
{
    json_builder_set_member_name(b, key);
    if (valid)
        json_builder_add_int_value(b, value);
    else
        json_builder_add_null_value(b);
}

static void
json_add_result(JsonBuilder *b, const DaxguestBenchReport *report,
                const DaxguestBenchResult *r)
{
    gboolean lat = r->samples && !r->bandwidth;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "metric");
    json_builder_add_string_value(b, r->metric);
    json_builder_set_member_name(b, "target");
    json_builder_add_string_value(b, report->target);
    json_builder_set_member_name(b, "samples");
    json_builder_add_int_value(b, r->samples);
    json_add_int_or_null(b, "median_ns", lat, (gint64)r->median_ns);
    json_add_int_or_null(b, "p99_ns", lat, (gint64)r->p99_ns);
    json_add_int_or_null(b, "max_ns", lat, (gint64)r->max_ns);
    json_add_int_or_null(b, "bytes_per_second", r->samples && r->bandwidth,
                         (gint64)r->bytes_per_second);
    json_add_int_or_null(b, "faults", r->faults >= 0, r->faults);
    json_add_int_or_null(b, "extra_faults", r->extra_faults >= 0,
                         r->extra_faults);
    json_builder_set_member_name(b, "note");
    if (r->note)
        json_builder_add_string_value(b, r->note);
    else
        json_builder_add_null_value(b);
    json_builder_end_object(b);
}

JsonNode *
daxguest_bench_to_json(const DaxguestBenchReport *report)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i;

    json_builder_begin_array(b);
    for (i = 0; i < report->results->len; i++)
        json_add_result(b, report, g_ptr_array_index(report->results, i));
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fault benchmark's pieces (daxguest-bench.h), shared by
 * `daxfile-guest bench` and `bench-dax fault`: nearest-rank quantiles,
 * and fault counting on anonymous memory (one fault per 4 KiB page on the
 * first store, none on the second).
 */
#include <string.h>
#include <sys/mman.h>

#include "daxguest-bench.h"

#define PAGES 64

static void
test_percentile(void)
{
    static const guint64 s10[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static const guint64 one[] = {42};
    guint64 s200[200];
    guint i;

    for (i = 0; i < G_N_ELEMENTS(s200); i++)
        s200[i] = i + 1;
    /* nearest rank: the smallest sample with at least q * n at or below */
    g_assert_cmpuint(daxguest_bench_percentile(s10, 10, 0.50), ==, 5);
    g_assert_cmpuint(daxguest_bench_percentile(s10, 10, 0.51), ==, 6);
    g_assert_cmpuint(daxguest_bench_percentile(s10, 10, 0.99), ==, 10);
    g_assert_cmpuint(daxguest_bench_percentile(s10, 10, 1.0), ==, 10);
    g_assert_cmpuint(daxguest_bench_percentile(s10, 10, 0.01), ==, 1);
    g_assert_cmpuint(daxguest_bench_percentile(s10, 9, 0.50), ==, 5);
    g_assert_cmpuint(daxguest_bench_percentile(one, 1, 0.50), ==, 42);
    g_assert_cmpuint(daxguest_bench_percentile(s200, 200, 0.99), ==, 198);
    g_assert_cmpuint(daxguest_bench_percentile(s200, 200, 0.90), ==, 180);
}

static void
test_stats(void)
{
    guint64 s[] = {9, 1, 8, 2, 7, 3, 6, 4, 5, 10};
    guint64 median = 0, p99 = 0, max = 0;

    daxguest_bench_stats(s, G_N_ELEMENTS(s), &median, &p99, &max);
    g_assert_cmpuint(median, ==, 5);
    g_assert_cmpuint(p99, ==, 10);
    g_assert_cmpuint(max, ==, 10);
    g_assert_cmpuint(s[0], ==, 1); /* sorted in place */
    g_assert_cmpuint(s[9], ==, 10);
}

/* One store per page of fresh anonymous memory faults each page in;
 * storing again, or touching every page, faults none */
static void
test_faults(void)
{
    gsize len = PAGES * 4096;
    guint64 samples[PAGES];
    guint8 *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    guint64 faults;
    guint i;

    g_assert_true(base != MAP_FAILED);
    /* 4 KiB pages, so that each store is its own fault */
    g_assert_cmpint(madvise(base, len, MADV_NOHUGEPAGE), ==, 0);
    memset(samples, 0, sizeof(samples));
    faults = daxguest_bench_stores(base, len, 4096, samples);
    g_assert_cmpuint(faults, >=, PAGES);
    /* a few more: the clock, the counter, ASan's shadow of the range */
    g_assert_cmpuint(faults, <=, PAGES + PAGES / 2);
    for (i = 0; i < PAGES; i++) {
        g_assert_cmpuint(samples[i], >, 0);
        g_assert_cmpuint(base[i * 4096], ==, 1);
    }
    g_assert_cmpuint(daxguest_bench_stores(base, len, 4096, samples), ==, 0);
    g_assert_cmpuint(daxguest_bench_touch(base, len), ==, 0);
    g_assert_cmpuint(base[4096 + 8], ==, 0); /* one byte per page only */
    g_assert_cmpuint(base[4096], ==, 2);
    g_assert_cmpint(munmap(base, len), ==, 0);
}

/* touch on fresh memory: one fault per page, and it reports them */
static void
test_touch(void)
{
    gsize len = PAGES * 4096;
    guint8 *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    guint64 faults;

    g_assert_true(base != MAP_FAILED);
    g_assert_cmpint(madvise(base, len, MADV_NOHUGEPAGE), ==, 0);
    faults = daxguest_bench_touch(base, len);
    g_assert_cmpuint(faults, >=, PAGES);
    g_assert_cmpuint(faults, <=, PAGES + PAGES / 2);
    g_assert_cmpint(munmap(base, len), ==, 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest/bench/percentile", test_percentile);
    g_test_add_func("/guest/bench/stats", test_stats);
    g_test_add_func("/guest/bench/faults", test_faults);
    g_test_add_func("/guest/bench/touch", test_touch);
    return g_test_run();
}

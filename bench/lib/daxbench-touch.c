/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daxbench-touch.h"
#include "daxbench-util.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-mmap.h"
#include "daxfile-size.h"
#include "daxfile-util.h"
#include "daxguest-bench.h"
#include "daxguest-probe.h"

#define PAGE_4K 4096u
#define FIRST_VALUE 0x5a
#define STEADY_VALUE 0xa5

gboolean
daxbench_touch_parse(int argc, char **argv, DaxbenchTouchArgs *ret_args)
{
    DaxbenchTouchArgs a = {NULL, 0, FALSE, FALSE, FALSE};
    int i;

    if (argc < 3)
        return FALSE;
    a.path = argv[2];
    for (i = 3; i < argc; i++) {
        if (STREQ(argv[i], "--fallocate")) {
            a.fallocate = TRUE;
        } else if (STREQ(argv[i], "--sync")) {
            a.sync = TRUE;
        } else if (STREQ(argv[i], "--marker")) {
            a.marker = TRUE;
        } else if (STREQ(argv[i], "--size") && i + 1 < argc) {
            if (!daxfile_size_parse(argv[++i], &a.size, NULL))
                return FALSE;
        } else {
            return FALSE;
        }
    }
    *ret_args = a;
    return a.size > 0 && a.size % DAXBENCH_PMD_SIZE == 0;
}

/* CPUID @leaf: a VM exit in a guest, which its host traces */
static void
touch_mark(gboolean marker, guint32 leaf)
{
#if defined(__x86_64__) || defined(__i386__)
    guint32 a = leaf, b, c = 0, d;

    if (marker)
        __asm__ __volatile__("cpuid"
                             : "+a"(a), "=b"(b), "+c"(c), "=d"(d)
                             :
                             : "memory");
#else
    (void)marker;
    (void)leaf;
#endif
}

/* PATH opened read-write; with --fallocate created if missing and
 * @args->size bytes allocated (unwritten) */
static int
touch_open(const DaxbenchTouchArgs *args, GError **error)
{
    int flags = O_RDWR | O_CLOEXEC | (args->fallocate ? O_CREAT : 0);
    g_auto(DaxfileFd) fd = open(args->path, flags, 0600);

    if (fd < 0) {
        daxfile_set_error_errno(error, errno, "cannot open '%s'", args->path);
        return -1;
    }
    if (args->fallocate && fallocate(fd, 0, 0, (off_t)args->size) < 0) {
        daxfile_set_error_errno(error, errno, "cannot fallocate '%s'",
                                args->path);
        return -1;
    }
    return g_steal_fd(&fd);
}

/* Write every 4 KiB page of [@base, @base + @len) whole with @value, one
 * 2 MiB step at a time, each step's time in ns into @ret_steps; returns the
 * page faults the pass took */
static guint64
touch_pass(guint8 *base, guint64 len, int value, guint64 *ret_steps)
{
    guint64 f0, step, off;

    (void)daxguest_bench_now_ns(); /* resolve the clock before timing */
    f0 = daxguest_fault_count();
    for (step = 0; step < len / DAXBENCH_PMD_SIZE; step++) {
        guint8 *chunk = base + step * DAXBENCH_PMD_SIZE;
        guint64 t0 = daxguest_bench_now_ns();

        for (off = 0; off < DAXBENCH_PMD_SIZE; off += PAGE_4K)
            memset(chunk + off, value, PAGE_4K);
        __asm__ __volatile__("" ::: "memory");
        ret_steps[step] = daxguest_bench_now_ns() - t0;
    }
    return daxguest_fault_count() - f0;
}

/* "@key": PASS (see the header); sorts a copy of @steps */
static void
touch_pass_append(GString *out, const char *key, const guint64 *steps, guint n,
                  guint64 faults)
{
    g_autofree guint64 *sorted = g_memdup2(steps, n * sizeof(*steps));
    guint64 total = 0;
    guint i;

    for (i = 0; i < n; i++)
        total += steps[i];
    total = MAX(total, 1);
    g_string_append_printf(
        out,
        "\"%s\": {\"seconds\": %.6f, \"mib_per_s\": %.1f, \"faults\": %" PRIu64
        ", ",
        key, (double)total / 1e9, (double)n * 2.0 / ((double)total / 1e9),
        faults);
    daxbench_stats_append(out, "steps", sorted, n);
    g_string_append(out, ", \"steps_us\": [");
    for (i = 0; i < n; i++)
        g_string_append_printf(out, "%s%.1f", i ? ", " : "",
                               (double)steps[i] / 1000.0);
    g_string_append(out, "]}");
}

char *
daxbench_touch(const DaxbenchTouchArgs *args, GError **error)
{
    guint n = (guint)(args->size / DAXBENCH_PMD_SIZE);
    g_autofree guint64 *first = g_new0(guint64, n);
    g_autofree guint64 *steady = g_new0(guint64, n);
    g_auto(DaxfileMapping) map = {NULL, 0};
    g_auto(DaxfileFd) fd = touch_open(args, error);
    int flags = args->sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
    guint64 f_first, f_steady;
    GString *out = NULL;

    if (fd < 0)
        return NULL;
    if (!daxfile_map_aligned(fd, args->size, 0, PROT_READ | PROT_WRITE, flags,
                             DAXBENCH_PMD_SIZE, &map.addr, NULL)) {
        daxfile_set_error_errno(error, errno, "cannot map '%s'", args->path);
        return NULL;
    }
    map.length = args->size;
    touch_mark(args->marker, DAXBENCH_TOUCH_MARK_FIRST);
    f_first = touch_pass(map.addr, args->size, FIRST_VALUE, first);
    touch_mark(args->marker, DAXBENCH_TOUCH_MARK_STEADY);
    f_steady = touch_pass(map.addr, args->size, STEADY_VALUE, steady);
    touch_mark(args->marker, DAXBENCH_TOUCH_MARK_END);
    out = g_string_new(NULL);
    g_string_append_printf(
        out,
        "{\"path\": \"%s\", \"bytes\": %" PRIu64 ", \"step_bytes\": %" PRIu64
        ", \"sync\": %s, \"marker\": %s, ",
        args->path, args->size, DAXBENCH_PMD_SIZE,
        args->sync ? "true" : "false", args->marker ? "true" : "false");
    touch_pass_append(out, "first", first, n, f_first);
    g_string_append(out, ", ");
    touch_pass_append(out, "steady", steady, n, f_steady);
    g_string_append_c(out, '}');
    return g_string_free(out, FALSE);
}

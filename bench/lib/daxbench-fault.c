/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daxbench-fault.h"
#include "daxbench-util.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-mmap.h"
#include "daxfile-size.h"
#include "daxfile-util.h"
#include "daxguest-bench.h"
#include "daxguest-probe.h"

#define PMD_CHECK_CHUNKS 2
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

gboolean
daxbench_fault_parse(int argc, char **argv, DaxbenchFaultArgs *ret_args)
{
    DaxbenchFaultArgs a = {NULL, FALSE, FALSE, 0, 0};
    int i;

    if (argc < 3)
        return FALSE;
    a.path = argv[2];
    for (i = 3; i < argc; i++) {
        if (STREQ(argv[i], "--sync")) {
            a.sync = TRUE;
        } else if (STREQ(argv[i], "--mode") && i + 1 < argc) {
            i++;
            if (STREQ(argv[i], "2m"))
                a.huge = TRUE;
            else if (!STREQ(argv[i], "4k"))
                return FALSE;
        } else if (STREQ(argv[i], "--count") && i + 1 < argc) {
            if (!daxfile_size_parse(argv[++i], &a.count, NULL))
                return FALSE;
        } else if (STREQ(argv[i], "--offset") && i + 1 < argc) {
            if (!daxfile_size_parse_flags(argv[++i], DAXFILE_SIZE_ZERO,
                                          &a.offset, NULL))
                return FALSE;
        } else {
            return FALSE;
        }
    }
    *ret_args = a;
    return a.count > 0;
}

/* @len bytes of @path from @offset, shared and read-write, at a 2 MiB-
 * aligned address (so that 2 MiB faults can map PMDs); MAP_SYNC if @sync */
static gboolean
map_file(const char *path, guint64 len, guint64 offset, gboolean sync,
         DaxfileMapping *ret_map, GError **error)
{
    g_auto(DaxfileFd) fd = open(path, O_RDWR | O_CLOEXEC);
    int flags = sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;

    if (fd < 0) {
        daxfile_set_error_errno(error, errno, "cannot open '%s'", path);
        return FALSE;
    }
    if (daxfile_map_aligned(fd, len, offset, PROT_READ | PROT_WRITE, flags,
                            DAXBENCH_PMD_SIZE, &ret_map->addr, NULL)) {
        ret_map->length = len;
        return TRUE;
    }
    if (sync)
        daxfile_set_error_errno(error, errno, "cannot map (MAP_SYNC) '%s'",
                                path);
    else
        daxfile_set_error_errno(error, errno, "cannot map '%s'", path);
    return FALSE;
}

/* An array of @n samples, faulted in now, not inside the timed loop */
static guint64 *
samples_new(guint64 n, const char *path, GError **error)
{
    guint64 *s = g_try_new(guint64, n);

    if (!s) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NO_SPACE,
                    "cannot allocate samples for '%s'", path);
        return NULL;
    }
    memset(s, 0xff, n * sizeof(*s));
    return s;
}

char *
daxbench_fault(const DaxbenchFaultArgs *args, GError **error)
{
    guint64 stride = args->huge ? DAXBENCH_PMD_SIZE : 4096;
    guint64 len = args->count * stride;
    g_autofree guint64 *first = NULL;
    g_autofree guint64 *again = NULL;
    g_auto(DaxfileMapping) map = {NULL, 0};
    GString *out = NULL;
    gint64 faults, extra = -1;

    first = samples_new(args->count, args->path, error);
    if (!first)
        return NULL;
    again = samples_new(args->count, args->path, error);
    if (!again)
        return NULL;
    if (!map_file(args->path, len, args->offset, args->sync, &map, error))
        return NULL;
    if (!args->huge && madvise(map.addr, len, MADV_NOHUGEPAGE) < 0) {
        daxfile_set_error_errno(error, errno,
                                "madvise(MADV_NOHUGEPAGE) refused for '%s'",
                                args->path);
        return NULL;
    }
    faults = (gint64)daxguest_bench_stores(map.addr, len, stride, first);
    daxguest_bench_stores(map.addr, len, stride, again);
    if (args->huge)
        extra = (gint64)daxguest_bench_touch(
            map.addr, MIN(args->count, PMD_CHECK_CHUNKS) * DAXBENCH_PMD_SIZE);
    out = g_string_new(NULL);
    g_string_append_printf(
        out,
        "{\"path\": \"%s\", \"mode\": \"%s\", \"sync\": %s, \"n\": %" PRIu64
        ", \"faults\": %" PRId64 ", \"pmd_extra_faults\": %" PRId64 ", ",
        args->path, args->huge ? "2m" : "4k", args->sync ? "true" : "false",
        args->count, faults, extra);
    daxbench_stats_append(out, "first", first, (guint)args->count);
    g_string_append(out, ", ");
    daxbench_stats_append(out, "nofault", again, (guint)args->count);
    g_string_append_c(out, '}');
    return g_string_free(out, FALSE);
}

gboolean
daxbench_populate_parse(int argc, char **argv, DaxbenchPopulateArgs *ret_args)
{
    DaxbenchPopulateArgs a = {NULL, FALSE, 0};
    int i;

    if (argc < 3)
        return FALSE;
    a.path = argv[2];
    for (i = 3; i < argc; i++) {
        if (STREQ(argv[i], "--sync"))
            a.sync = TRUE;
        else if (!STREQ(argv[i], "--size") || i + 1 >= argc ||
                 !daxfile_size_parse(argv[++i], &a.size, NULL))
            return FALSE;
    }
    *ret_args = a;
    return a.size > 0;
}

char *
daxbench_populate(const DaxbenchPopulateArgs *args, GError **error)
{
    g_auto(DaxfileMapping) map = {NULL, 0};
    guint64 f0, t0, ns, faults;

    if (!map_file(args->path, args->size, 0, args->sync, &map, error))
        return NULL;
    f0 = daxguest_fault_count();
    t0 = daxguest_bench_now_ns();
    if (madvise(map.addr, args->size, MADV_POPULATE_WRITE) < 0) {
        daxfile_set_error_errno(
            error, errno, "MADV_POPULATE_WRITE failed on '%s'", args->path);
        return NULL;
    }
    ns = daxguest_bench_now_ns() - t0;
    faults = daxguest_fault_count() - f0;
    return g_strdup_printf(
        "{\"path\": \"%s\", \"bytes\": %" PRIu64
        ", \"sync\": %s, \"seconds\": %.6f, \"faults\": %" PRIu64 "}",
        args->path, args->size, args->sync ? "true" : "false", (double)ns / 1e9,
        faults);
}

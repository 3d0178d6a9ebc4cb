/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <stdlib.h>
#include <unistd.h>

#include "daxbench-extents.h"
#include "daxbench-util.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-fiemap.h"
#include "daxfile-size.h"
#include "daxfile-util.h"

gboolean
daxbench_frag_parse(int argc, char **argv, DaxbenchFragArgs *ret_args)
{
    DaxbenchFragArgs a = {NULL, NULL, 0, 0, FALSE};
    int i;

    if (argc < 4)
        return FALSE;
    a.a = argv[2];
    a.b = argv[3];
    for (i = 4; i < argc; i++) {
        if (STREQ(argv[i], "--write"))
            a.write = TRUE;
        else if (STREQ(argv[i], "--chunk") && i + 1 < argc &&
                 daxfile_size_parse(argv[i + 1], &a.chunk, NULL))
            i++;
        else if (STREQ(argv[i], "--count") && i + 1 < argc &&
                 daxfile_size_parse(argv[i + 1], &a.count, NULL))
            i++;
        else
            return FALSE;
    }
    *ret_args = a;
    return a.chunk && a.count && a.chunk % 4096 == 0;
}

static gboolean
frag_fsync(int fd, const char *path, GError **error)
{
    if (fsync(fd) < 0) {
        daxfile_set_error_errno(error, errno, "cannot sync '%s'", path);
        return FALSE;
    }
    return TRUE;
}

gboolean
daxbench_frag(const DaxbenchFragArgs *args, GError **error)
{
    const char *paths[2] = {args->a, args->b};
    g_auto(DaxfileFd) fd_a = -1;
    g_auto(DaxfileFd) fd_b = -1;
    int *fds[2] = {&fd_a, &fd_b};
    guint64 i;
    int k;

    for (k = 0; k < 2; k++) {
        *fds[k] = open(paths[k], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (*fds[k] < 0) {
            daxfile_set_error_errno(error, errno, "cannot create '%s'",
                                    paths[k]);
            return FALSE;
        }
    }
    /* the two files' allocations alternate on disk */
    for (i = 0; i < args->count; i++) {
        for (k = 0; k < 2; k++) {
            if (fallocate(*fds[k], 0, (off_t)(i * args->chunk),
                          (off_t)args->chunk) < 0) {
                daxfile_set_error_errno(error, errno, "cannot fallocate '%s'",
                                        paths[k]);
                return FALSE;
            }
        }
    }
    /* written extents: convert A's in place (the extents stay apart) */
    if (args->write &&
        !daxbench_write_zeroes(fd_a, args->a, args->chunk * args->count,
                               DAXBENCH_MIB, error))
        return FALSE;
    return frag_fsync(fd_a, args->a, error) && frag_fsync(fd_b, args->b, error);
}

static guint
count_unwritten(const DaxfileExtentMap *map)
{
    guint i, n = 0;

    for (i = 0; i < map->extents->len; i++) {
        if (g_array_index(map->extents, DaxfileExtent, i).flags &
            FIEMAP_EXTENT_UNWRITTEN)
            n++;
    }
    return n;
}

/* @repeat more reads of the map, timed, into @samples */
static gboolean
time_reads(int fd, const char *path, guint64 repeat, guint64 *samples,
           GError **error)
{
    guint64 r;

    for (r = 0; r < repeat; r++) {
        guint64 t0 = daxguest_bench_now_ns();
        g_autoptr(DaxfileExtentMap) map = daxfile_fiemap_read(fd, path, error);

        if (!map)
            return FALSE;
        samples[r] = daxguest_bench_now_ns() - t0;
    }
    return TRUE;
}

char *
daxbench_extents(const char *path, guint64 repeat, GError **error)
{
    g_auto(DaxfileFd) fd = open(path, O_RDONLY | O_CLOEXEC);
    g_autoptr(DaxfileExtentMap) map = NULL;
    g_autofree guint64 *samples = NULL;
    GString *out = NULL;

    if (fd < 0) {
        daxfile_set_error_errno(error, errno, "cannot open '%s'", path);
        return NULL;
    }
    map = daxfile_fiemap_read(fd, path, error);
    if (!map)
        return NULL;
    samples = g_new0(guint64, MAX(repeat, 1));
    if (!time_reads(fd, path, repeat, samples, error))
        return NULL;
    out = g_string_new(NULL);
    g_string_append_printf(out,
                           "{\"path\": \"%s\", \"size\": %" PRIu64
                           ", \"extents\": %u, \"unwritten\": %u",
                           path, map->size, daxfile_extent_map_count(map),
                           count_unwritten(map));
    if (repeat) {
        daxguest_bench_sort(samples, (guint)repeat);
        g_string_append_printf(out,
                               ", \"walk_p50_us\": %.3f, \"walk_min_us\": %.3f",
                               daxbench_pct_us(samples, (guint)repeat, 0.5),
                               (double)samples[0] / 1000.0);
    }
    g_string_append_c(out, '}');
    return g_string_free(out, FALSE);
}

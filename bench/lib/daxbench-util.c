/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daxbench-util.h"
#include "daxfile-error.h"
#include "daxguest-bench.h"

extern char **environ;

gboolean
daxbench_run(char *const argv[], const char *out, GError **error)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status, rc;

    posix_spawn_file_actions_init(&fa);
    if (out)
        posix_spawn_file_actions_addopen(&fa, 1, out,
                                         O_WRONLY | O_CREAT | O_TRUNC, 0600);
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "cannot run '%s'", argv[0]);
        return FALSE;
    }
    if (waitpid(pid, &status, 0) < 0) {
        daxfile_set_error_errno(error, errno, "cannot wait for '%s'", argv[0]);
        return FALSE;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "'%s' failed (status 0x%x)", argv[0], status);
        return FALSE;
    }
    return TRUE;
}

static gboolean
write_zeroes_from(int fd, const char *path, guint64 size, gsize chunk,
                  const void *buf, GError **error)
{
    guint64 off = 0;

    while (off < size) {
        gsize n = MIN(size - off, chunk);
        ssize_t w = pwrite(fd, buf, n, (off_t)off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            daxfile_set_error_errno(error, w < 0 ? errno : EIO,
                                    "cannot write zeroes to '%s'", path);
            return FALSE;
        }
        off += (guint64)w;
    }
    return TRUE;
}

gboolean
daxbench_write_zeroes(int fd, const char *path, guint64 size, gsize chunk,
                      GError **error)
{
    void *buf = g_aligned_alloc0(1, chunk, 4096);
    gboolean ok = write_zeroes_from(fd, path, size, chunk, buf, error);

    g_aligned_free(buf);
    if (!ok)
        return FALSE;
    if (fsync(fd) < 0) {
        daxfile_set_error_errno(error, errno, "cannot sync '%s'", path);
        return FALSE;
    }
    return TRUE;
}

double
daxbench_pct_us(const guint64 *sorted, guint n, double q)
{
    return (double)daxguest_bench_percentile(sorted, n, q) / 1000.0;
}

void
daxbench_stats_append(GString *out, const char *key, guint64 *samples, guint n)
{
    double sum = 0;
    guint i;

    g_return_if_fail(n > 0);
    daxguest_bench_sort(samples, n);
    for (i = 0; i < n; i++)
        sum += (double)samples[i];
    g_string_append_printf(
        out,
        "\"%s\": {\"p50_us\": %.3f, \"p90_us\": %.3f, \"p99_us\": %.3f, \"max_us\": %.3f, \"mean_us\": %.3f}",
        key, daxbench_pct_us(samples, n, 0.50),
        daxbench_pct_us(samples, n, 0.90), daxbench_pct_us(samples, n, 0.99),
        (double)samples[n - 1] / 1000.0, sum / (double)n / 1000.0);
}

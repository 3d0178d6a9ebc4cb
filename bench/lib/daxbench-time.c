/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daxbench-time.h"
#include "daxbench-util.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"

/* --append's line stops adding arguments here */
#define APPEND_ARGV_MAX (1024 - 200)

extern char **environ;

char *
daxbench_time(char **argv, GError **error)
{
    guint64 t0 = daxguest_bench_now_ns();

    if (!daxbench_run(argv, "/dev/null", error))
        return NULL;
    return g_strdup_printf("{\"command\": \"%s\", \"seconds\": %.6f}", argv[0],
                           (double)(daxguest_bench_now_ns() - t0) / 1e9);
}

static gboolean
append_line(const char *file, const char *line, GError **error)
{
    g_auto(DaxfileFd) fd =
        open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

    if (fd < 0)
        return TRUE; /* as before: no file, no line, no complaint */
    if (write(fd, line, strlen(line)) < 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "cannot write '%s'", file);
        return FALSE;
    }
    return TRUE;
}

int
daxbench_time_append(const char *file, char **argv, GError **error)
{
    guint64 t0 = daxguest_bench_now_ns();
    g_autoptr(GString) line = g_string_new("{\"argv\": \"");
    pid_t pid;
    int status, i;

    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "cannot run '%s'", argv[0]);
        return 127;
    }
    if (waitpid(pid, &status, 0) < 0)
        return 127;
    for (i = 1; argv[i] && line->len < APPEND_ARGV_MAX; i++)
        g_string_append_printf(line, "%s%s", i > 1 ? " " : "", argv[i]);
    g_string_append_printf(line, "\", \"seconds\": %.6f, \"status\": %d}\n",
                           (double)(daxguest_bench_now_ns() - t0) / 1e9,
                           status);
    append_line(file, line->str, error);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

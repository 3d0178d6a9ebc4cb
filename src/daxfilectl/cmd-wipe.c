/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile wipe PATH [--json]: zero a file no domain holds, durably, and
 * prove it by reading it back
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "daxfile-conf.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-size.h"
#include "daxfile-host-json.h"
#include "daxfilectl.h"

static gboolean arg_json;
static gboolean arg_follow;
static volatile gint cancel;

static const GOptionEntry wipe_options[] = {
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json, "Print JSON", NULL},
    {"follow-symlinks", 0, 0, G_OPTION_ARG_NONE, &arg_follow,
     "Accept a symbolic link and wipe its target", NULL},
    {NULL},
};

static void
on_signal(int sig)
{
    g_atomic_int_set(&cancel, 1);
}

typedef struct {
    const char *name;
    gint64 last; /* monotonic µs of the last progress line */
} Progress;

/* on a terminal only, at most five times a second */
static void
progress(guint64 done, guint64 total, gpointer data)
{
    Progress *p = data;
    gint64 t = g_get_monotonic_time();
    g_autofree char *have = NULL;
    g_autofree char *all = NULL;

    if (done < total && t - p->last < G_USEC_PER_SEC / 5)
        return;
    p->last = t;
    have = daxfile_size_format(done);
    all = daxfile_size_format(total);
    fprintf(stderr, "\r'%s': %s of %s zeroed (%u%%)%s", p->name, have, all,
            (unsigned)(done * 100 / total), done == total ? "\n" : "");
}

static void
print_result(const char *name, const DaxfileWipeResult *r)
{
    g_autofree char *size = daxfile_size_format(r->size);
    g_autofree char *resumed = daxfile_size_format(r->resumed_from);
    double rate = r->seconds > 0 ? r->zeroed / r->seconds / (1 << 20) : 0;

    fprintf(
        stderr,
        "'%s': %s zeroed (%s) and read back as zeros, sha256 %s; %.1f s at %.0f MiB/s, read back in %.1f s%s%s%s\n",
        name, size, r->method, r->sha256, r->seconds, rate, r->verify_seconds,
        r->resumed_from ? " (an interrupted wipe had zeroed the first " : "",
        r->resumed_from ? resumed : "", r->resumed_from ? ")" : "");
}

int
cli_wipe(const DaxfileFile *f, gboolean json)
{
    g_auto(DaxfileWipeResult) result = {0};
    g_autoptr(GError) error = NULL;
    const char *name = f->display;
    Progress prog = {0};
    DaxfileWipeParams params = {.cancel = &cancel};
    struct sigaction sa = {.sa_handler = on_signal};
    gboolean ok;

    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (isatty(STDERR_FILENO) && !json) {
        prog.name = name;
        params.progress = progress;
        params.progress_data = &prog;
    }
    ok = daxfile_wipe(f, &params, &result, &error);
    if (json && (ok || result.interrupted || result.sha256))
        cli_print_json(daxfile_wipe_result_to_json(&result, f->path));
    if (!ok) {
        cli_report_error(error);
        return result.interrupted ? CLI_EXIT_INTERRUPTED : CLI_EXIT_FAILURE;
    }
    if (!json)
        print_result(name, &result);
    return CLI_EXIT_OK;
}

/* One line about a record repair took up; TRUE when it is left */
static gboolean
print_resumed(const DaxfileWipeResumed *w)
{
    g_autofree char *path = daxfile_escape(w->record->path);
    g_autofree char *dom =
        w->record->domain ? daxfile_escape(w->record->domain) : NULL;
    g_autofree char *size = NULL;

    switch (w->done) {
    case DAXFILE_WIPE_RESUME_WIPED:
        size = daxfile_size_format(w->result.size);
        fprintf(
            stderr,
            "wiped '%s' (its wipe was owed since %s): %s read back as zeros (sha256 %s)\n",
            path, w->record->since, size, w->result.sha256);
        return FALSE;
    case DAXFILE_WIPE_RESUME_DROPPED:
        fprintf(
            stderr,
            "dropped the wipe owed on '%s' since %s: the file no longer exists\n",
            path, w->record->since);
        return FALSE;
    case DAXFILE_WIPE_RESUME_UNDECIDED:
        fprintf(
            stderr,
            "%s: '%s' is to be wiped for undefined domain '%s' once no other domain uses it, which only 'daxfile watch' can tell; fix: start 'daxfile watch' (daxfile-watch.service)\n",
            cli_program(), path, dom);
        return TRUE;
    case DAXFILE_WIPE_RESUME_KEPT:
        fprintf(stderr,
                "%s: the wipe owed on '%s' since %s is not finished: %s\n",
                cli_program(), path, w->record->since, w->error);
        return TRUE;
    }
    return TRUE;
}

int
cli_wipe_resume(gboolean *ret_any)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileConf) conf = daxfile_conf_load(NULL, NULL);
    g_autoptr(GPtrArray) done = NULL;
    struct sigaction sa = {.sa_handler = on_signal};
    gboolean left = FALSE;
    guint i;

    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    done = daxfile_wipe_resume(conf, &cancel, &error);
    *ret_any = done && done->len > 0;
    if (!done)
        return cli_report_error(error);
    for (i = 0; i < done->len; i++)
        left = print_resumed(g_ptr_array_index(done, i)) || left;
    return left ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

static int
cmd_wipe(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileFile) f = NULL;

    f = daxfile_wipe_open(argv[1], arg_follow, &error);
    if (!f)
        return cli_report_error(error);
    return cli_wipe(f, arg_json);
}

const CliVerb cmd_wipe_verb = {
    .name = "wipe",
    .min_args = 1,
    .max_args = 1,
    .dispatch = cmd_wipe,
    .summary = "Zero a file no domain holds, durably, and prove it",
    .params = "PATH",
    .description =
        "Zero PATH durably (through MAP_SYNC on DAX) and read it back, when no domain holds it. An interrupted wipe resumes when run again.",
    .options = wipe_options,
    .too_few = "missing PATH",
    .too_many = "exactly one PATH",
};

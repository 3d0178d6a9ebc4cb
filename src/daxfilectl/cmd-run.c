/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile run --file PATH... -- COMMAND ARGS...
 *
 * Start the consumer, wait until it (or a descendant) has every file
 * mapped, engage static mode, release it when the consumer exits, and exit
 * with the consumer's status.
 */
#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-file.h"
#include "daxfile-proc.h"
#include "daxfile-static.h"
#include "daxfilectl.h"

#define MAP_CHECK_INTERVAL_MS 20

static char **arg_files;
static char *arg_owner;
static char *arg_align;
static char *arg_mechanism;
static gint arg_timeout = 120;
static gboolean arg_allow_non_dax;

static const GOptionEntry run_options[] = {
    {"file", 'f', 0, G_OPTION_ARG_FILENAME_ARRAY, &arg_files,
     "A file the command maps (repeat for several)", "PATH"},
    {"owner", 'o', 0, G_OPTION_ARG_STRING, &arg_owner,
     "Owner name in the registry (default: pid:<command's pid>)", "NAME"},
    {"align", 'a', 0, G_OPTION_ARG_STRING, &arg_align,
     "Page size the layout must support (default 2M)", "SIZE"},
    {"mechanism", 'm', 0, G_OPTION_ARG_STRING, &arg_mechanism,
     "kernel, immutable-guard or verified-only (default: the strongest "
     "available)", "NAME"},
    {"timeout", 't', 0, G_OPTION_ARG_INT, &arg_timeout,
     "Seconds to wait for the command to map every file (default 120)",
     "SECONDS"},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Register files without DAX, enforcing nothing (development)", NULL},
    {NULL},
};

typedef struct {
    char *path;
    int fd;
    struct stat st;
    gboolean engaged;
} RunFile;

static void
run_file_free(RunFile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    g_free(f->path);
    g_free(f);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RunFile, run_file_free)

typedef struct {
    GPtrArray *files; /* RunFile */
    DaxfileEnableParams params;
    GMainLoop *loop;
    GPid child;
    int status;
    gboolean exited;
    gboolean failed;
    gint64 deadline;
    char *owner;
} RunCtx;

/* One file named twice would be engaged once and released twice. */
static gboolean
run_check_twice(const RunCtx *ctx, const RunFile *f, GError **error)
{
    guint i;

    for (i = 0; i < ctx->files->len; i++) {
        const RunFile *o = g_ptr_array_index(ctx->files, i);
        g_autofree char *a = NULL;
        g_autofree char *b = NULL;

        if (o->st.st_dev != f->st.st_dev || o->st.st_ino != f->st.st_ino)
            continue;
        a = daxfile_escape(o->path);
        b = daxfile_escape(f->path);
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' and '%s' are the same file; give each --file once",
                    a, b);
        return FALSE;
    }
    return TRUE;
}

/* Open and verify every file before the command starts. */
static gboolean
run_prepare(RunCtx *ctx, GError **error)
{
    guint i;

    for (i = 0; arg_files[i]; i++) {
        g_autoptr(RunFile) f = g_new0(RunFile, 1);
        g_autoptr(DaxfileReport) report = NULL;

        f->path = g_strdup(arg_files[i]);
        f->fd = daxfile_file_open(f->path, DAXFILE_OPEN_READ, &f->st, error);
        if (f->fd < 0 || !run_check_twice(ctx, f, error))
            return FALSE;
        report = daxfile_report_build(f->fd, f->path, ctx->params.align,
                                      arg_allow_non_dax, error);
        if (!report)
            return FALSE;
        if (!daxfile_report_require_ready(report, error))
            return FALSE;
        g_ptr_array_add(ctx->files, g_steal_pointer(&f));
    }
    return TRUE;
}

static void
run_stop_child(RunCtx *ctx, const GError *error)
{
    cli_report_error(error);
    ctx->failed = TRUE;
    if (!ctx->exited)
        kill(ctx->child, SIGTERM);
}

static gboolean
run_engage(RunCtx *ctx, RunFile *f, const GArray *tree)
{
    g_auto(DaxfileEnableResult) result = {0};
    g_autoptr(GError) error = NULL;

    ctx->params.consumers = tree;
    if (!daxfile_static_enable(f->fd, f->path, &ctx->params, &result,
                               &error)) {
        run_stop_child(ctx, error);
        return FALSE;
    }
    f->engaged = TRUE;
    cli_print_enabled(f->path, &result, ctx->owner);
    return TRUE;
}

static gboolean
tree_maps(const GArray *tree, const RunFile *f)
{
    guint i;

    for (i = 0; i < tree->len; i++) {
        if (daxfile_proc_maps_inode(g_array_index(tree, pid_t, i),
                                    f->st.st_dev, f->st.st_ino))
            return TRUE;
    }
    return FALSE;
}

static gboolean
on_check_maps(gpointer user_data)
{
    RunCtx *ctx = user_data;
    g_autoptr(GArray) tree = NULL;
    gboolean pending = FALSE;
    guint i;

    if (ctx->exited || ctx->failed)
        return G_SOURCE_REMOVE;
    tree = daxfile_proc_tree(ctx->child);
    for (i = 0; i < ctx->files->len; i++) {
        RunFile *f = g_ptr_array_index(ctx->files, i);

        if (f->engaged)
            continue;
        if (!tree_maps(tree, f))
            pending = TRUE;
        else if (!run_engage(ctx, f, tree))
            return G_SOURCE_REMOVE;
    }
    if (pending && g_get_monotonic_time() > ctx->deadline) {
        g_autoptr(GError) error = g_error_new(
            DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
            "The command did not map every --file within %d s; static mode "
            "was not engaged, stopping it", arg_timeout);

        run_stop_child(ctx, error);
        return G_SOURCE_REMOVE;
    }
    return pending ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static void
on_child_exit(GPid pid, gint status, gpointer user_data)
{
    RunCtx *ctx = user_data;

    ctx->status = status;
    ctx->exited = TRUE;
    g_spawn_close_pid(pid);
    g_main_loop_quit(ctx->loop);
}

static gboolean
on_signal(gpointer user_data)
{
    RunCtx *ctx = user_data;

    if (!ctx->exited)
        kill(ctx->child, SIGTERM);
    return G_SOURCE_CONTINUE;
}

static int
run_release(RunCtx *ctx)
{
    int ret = CLI_EXIT_OK;
    guint i;

    for (i = 0; i < ctx->files->len; i++) {
        RunFile *f = g_ptr_array_index(ctx->files, i);
        g_auto(DaxfileDisableResult) result = {0};
        g_autoptr(GError) error = NULL;

        if (!f->engaged)
            continue;
        if (!daxfile_static_disable(f->fd, f->path, ctx->owner, TRUE,
                                    &result, &error))
            ret = cli_report_error(error);
        else if (cli_print_disabled(f->path, &result) != CLI_EXIT_OK)
            ret = CLI_EXIT_FAILURE;
    }
    return ret;
}

static int
run_exit_status(const RunCtx *ctx)
{
    if (WIFEXITED(ctx->status))
        return WEXITSTATUS(ctx->status);
    if (WIFSIGNALED(ctx->status))
        return 128 + WTERMSIG(ctx->status);
    return CLI_EXIT_FAILURE;
}

static gboolean
run_spawn(RunCtx *ctx, char **command, GError **error)
{
    if (!g_spawn_async(NULL, command, NULL,
                       G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                           G_SPAWN_CHILD_INHERITS_STDIN,
                       NULL, NULL, &ctx->child, error))
        return FALSE;
    ctx->owner = arg_owner ? g_strdup(arg_owner)
                           : g_strdup_printf("pid:%d", (int)ctx->child);
    ctx->params.owner = ctx->owner;
    ctx->params.pid = ctx->child;
    ctx->deadline = g_get_monotonic_time() + (gint64)arg_timeout * 1000000;
    g_child_watch_add(ctx->child, on_child_exit, ctx);
    g_timeout_add(MAP_CHECK_INTERVAL_MS, on_check_maps, ctx);
    g_unix_signal_add(SIGINT, on_signal, ctx);
    g_unix_signal_add(SIGTERM, on_signal, ctx);
    g_unix_signal_add(SIGHUP, on_signal, ctx);
    return TRUE;
}

static int
cmd_run(int argc, char **argv)
{
    RunCtx ctx = {0};
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(
        (GDestroyNotify)run_file_free);
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    g_autoptr(GError) error = NULL;
    g_autofree char *owner = NULL;
    int ret = CLI_EXIT_OK;

    if (!arg_files || !arg_files[0])
        return cli_usage_error("run", "missing --file");
    if (arg_timeout <= 0)
        return cli_usage_error("run", "--timeout must be positive");
    ctx.files = files;
    ctx.loop = loop;
    ctx.params.allow_non_dax = arg_allow_non_dax;
    if (!cli_parse_align("run", arg_align, &ctx.params.align, &ret))
        return ret;
    if (!cli_parse_mechanism("run", arg_mechanism, &ctx.params.mechanism,
                             &ret))
        return ret;
    if (!run_prepare(&ctx, &error) || !run_spawn(&ctx, argv + 1, &error))
        return cli_report_error(error);
    owner = ctx.owner;
    g_main_loop_run(loop);
    ret = run_release(&ctx);
    if (ctx.failed)
        return CLI_EXIT_FAILURE;
    return ret != CLI_EXIT_OK ? ret : run_exit_status(&ctx);
}

const CliVerb cmd_run_verb = {
    .name = "run",
    .min_args = 1,
    .max_args = CLI_ARGS_ANY,
    .flags = CLI_VERB_COMMAND,
    .dispatch = cmd_run,
    .summary = "Run a consumer; static while it has the files mapped",
    .params = "--file PATH... -- COMMAND [ARGS...]",
    .description = "Run COMMAND, make every --file static once COMMAND has "
                   "it mapped, release it when COMMAND exits.",
    .options = run_options,
    .too_few = "missing '-- COMMAND'",
};

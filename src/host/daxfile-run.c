/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <glib-unix.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-file.h"
#include "daxfile-proc.h"
#include "daxfile-report.h"
#include "daxfile-run.h"

#define MAP_CHECK_INTERVAL_MS 20

static GArray *
proc_tree(pid_t pid, gpointer data)
{
    return daxfile_proc_tree(pid);
}

static gboolean
proc_maps(pid_t pid, guint64 dev, guint64 ino, gpointer data)
{
    return daxfile_proc_maps_inode(pid, dev, ino);
}

const DaxfileRunMappers daxfile_run_proc_mappers = {
    .tree = proc_tree,
    .maps = proc_maps,
};

typedef struct {
    DaxfileFile *file;
    gboolean engaged;
} RunFile;

static void
run_file_free(RunFile *f)
{
    daxfile_file_free(f->file);
    g_free(f);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RunFile, run_file_free)

typedef struct {
    const DaxfileRunParams *p;
    const DaxfileRunMappers *mappers;
    GPtrArray *files; /* RunFile */
    DaxfileEnableParams enable;
    GMainLoop *loop;
    GPid child;
    int status;
    gboolean exited;
    gboolean failed;
    gboolean release_failed;
    gint64 deadline;
    char *owner;
} RunCtx;

static void
run_report(RunCtx *ctx, DaxfileRunEvent *ev)
{
    ev->owner = ctx->owner;
    if (ctx->p->report)
        ctx->p->report(ev, ctx->p->report_data);
}

/* One file named twice would be engaged once and released twice. */
static gboolean
run_check_twice(const RunCtx *ctx, const RunFile *f, GError **error)
{
    guint i;

    for (i = 0; i < ctx->files->len; i++) {
        const RunFile *o = g_ptr_array_index(ctx->files, i);
        const DaxfileFile *a = o->file;
        const DaxfileFile *b = f->file;

        if (a->st.st_dev != b->st.st_dev || a->st.st_ino != b->st.st_ino)
            continue;
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' and '%s' are the same file; fix: give each --file once",
            a->display, b->display);
        return FALSE;
    }
    return TRUE;
}

/* Open and verify every file before the command starts. */
static gboolean
run_prepare(RunCtx *ctx, GError **error)
{
    guint i;

    for (i = 0; ctx->p->files[i]; i++) {
        g_autoptr(RunFile) f = g_new0(RunFile, 1);
        g_autoptr(DaxfileReport) report = NULL;

        f->file = daxfile_file_open(ctx->p->files[i], DAXFILE_OPEN_READ, error);
        if (!f->file || !run_check_twice(ctx, f, error))
            return FALSE;
        report = daxfile_report_build(f->file, ctx->p->align,
                                      ctx->p->allow_non_dax, error);
        if (!report || !daxfile_report_require_ready(report, error))
            return FALSE;
        g_ptr_array_add(ctx->files, g_steal_pointer(&f));
    }
    return TRUE;
}

static void
run_stop_child(RunCtx *ctx, const char *path, const GError *error)
{
    DaxfileRunEvent ev = {
        .kind = DAXFILE_RUN_FAILED, .path = path, .error = error};

    run_report(ctx, &ev);
    ctx->failed = TRUE;
    if (!ctx->exited)
        kill(ctx->child, SIGTERM);
}

static gboolean
run_engage(RunCtx *ctx, RunFile *f, const GArray *tree)
{
    g_auto(DaxfileEnableResult) result = {0};
    g_autoptr(GError) error = NULL;
    DaxfileRunEvent ev = {
        .kind = DAXFILE_RUN_ENGAGED, .path = f->file->path, .enabled = &result};

    ctx->enable.consumers = tree;
    if (!daxfile_static_enable(f->file, &ctx->enable, &result, &error)) {
        run_stop_child(ctx, f->file->path, error);
        return FALSE;
    }
    f->engaged = TRUE;
    run_report(ctx, &ev);
    return TRUE;
}

static gboolean
tree_maps(const RunCtx *ctx, const GArray *tree, const RunFile *f)
{
    guint i;

    for (i = 0; i < tree->len; i++) {
        if (ctx->mappers->maps(g_array_index(tree, pid_t, i),
                               f->file->st.st_dev, f->file->st.st_ino,
                               ctx->p->mappers_data))
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
    tree = ctx->mappers->tree(ctx->child, ctx->p->mappers_data);
    for (i = 0; i < ctx->files->len; i++) {
        RunFile *f = g_ptr_array_index(ctx->files, i);

        if (f->engaged)
            continue;
        if (!tree_maps(ctx, tree, f))
            pending = TRUE;
        else if (!run_engage(ctx, f, tree))
            return G_SOURCE_REMOVE;
    }
    if (pending && g_get_monotonic_time() > ctx->deadline) {
        g_autoptr(GError) error = g_error_new(
            DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
            "The command did not map every --file within %u s; static mode was not engaged, stopping it",
            ctx->p->timeout);

        run_stop_child(ctx, NULL, error);
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

static void
run_release(RunCtx *ctx)
{
    guint i;

    for (i = 0; i < ctx->files->len; i++) {
        RunFile *f = g_ptr_array_index(ctx->files, i);
        g_auto(DaxfileDisableResult) result = {0};
        g_autoptr(GError) error = NULL;
        DaxfileRunEvent ev = {.kind = DAXFILE_RUN_RELEASED,
                              .path = f->file->path,
                              .disabled = &result};

        if (!f->engaged)
            continue;
        if (!daxfile_static_disable(f->file, ctx->owner, TRUE, &result,
                                    &error)) {
            ev.kind = DAXFILE_RUN_RELEASE_FAILED;
            ev.disabled = NULL;
            ev.error = error;
        }
        if (ev.error || !result.layout_unchanged)
            ctx->release_failed = TRUE;
        run_report(ctx, &ev);
    }
}

/* Attach a source to the loop's context and drop our reference */
static void
run_attach(RunCtx *ctx, GSource *source, GSourceFunc func)
{
    g_source_set_callback(source, func, ctx, NULL);
    g_source_attach(source, g_main_loop_get_context(ctx->loop));
    g_source_unref(source);
}

static gboolean
run_spawn(RunCtx *ctx, GError **error)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    size_t i;

    if (!g_spawn_async(NULL, ctx->p->command, NULL,
                       G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                           G_SPAWN_CHILD_INHERITS_STDIN,
                       NULL, NULL, &ctx->child, error))
        return FALSE;
    ctx->owner = ctx->p->owner ? g_strdup(ctx->p->owner)
                               : g_strdup_printf("pid:%d", (int)ctx->child);
    ctx->enable.owner = ctx->owner;
    ctx->enable.pid = ctx->child;
    ctx->deadline =
        g_get_monotonic_time() + (gint64)ctx->p->timeout * G_USEC_PER_SEC;
    run_attach(ctx, g_child_watch_source_new(ctx->child),
               G_SOURCE_FUNC(on_child_exit));
    run_attach(ctx, g_timeout_source_new(MAP_CHECK_INTERVAL_MS), on_check_maps);
    for (i = 0; i < G_N_ELEMENTS(signals); i++)
        run_attach(ctx, g_unix_signal_source_new(signals[i]), on_signal);
    return TRUE;
}

static int
run_exit_status(const RunCtx *ctx)
{
    if (ctx->failed || ctx->release_failed)
        return 1;
    if (WIFEXITED(ctx->status))
        return WEXITSTATUS(ctx->status);
    if (WIFSIGNALED(ctx->status))
        return 128 + WTERMSIG(ctx->status);
    return 1;
}

gboolean
daxfile_run(const DaxfileRunParams *params, DaxfileRunResult *ret_result,
            GError **error)
{
    g_autoptr(GMainContext) context = g_main_context_new();
    g_autoptr(GMainLoop) loop = g_main_loop_new(context, FALSE);
    g_autoptr(GPtrArray) files =
        g_ptr_array_new_with_free_func((GDestroyNotify)run_file_free);
    g_autofree char *owner = NULL;
    RunCtx ctx = {0};

    g_return_val_if_fail(params->files && params->files[0], FALSE);
    g_return_val_if_fail(params->command && params->command[0], FALSE);
    ctx.p = params;
    ctx.mappers = params->mappers ? params->mappers : &daxfile_run_proc_mappers;
    ctx.files = files;
    ctx.loop = loop;
    ctx.enable.align = params->align;
    ctx.enable.mechanism = params->mechanism;
    ctx.enable.allow_non_dax = params->allow_non_dax;
    if (!run_prepare(&ctx, error) || !run_spawn(&ctx, error))
        return FALSE;
    owner = ctx.owner;
    g_main_loop_run(loop);
    run_release(&ctx);
    ret_result->wait_status = ctx.status;
    ret_result->failed = ctx.failed;
    ret_result->release_failed = ctx.release_failed;
    ret_result->exit_status = run_exit_status(&ctx);
    return TRUE;
}

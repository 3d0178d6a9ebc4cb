/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile_run(), the supervisor of `daxfile run`, driven by a fake "who
 * maps this file" source: real commands (sh, sleep) that map nothing, files
 * made by daxfile_create() in a temporary directory of the build tree
 * (--allow-non-dax, verified-only), a registry of its own. No root.
 */
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daxfile-create.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-run.h"
#include "daxfile-test-util.h"

#define M (G_GUINT64_CONSTANT(1) << 20)

/* The fake source: from poll @map_from on, the inodes in @mapped are
 * mapped by the process @mapper (0: the command itself) */
typedef struct {
    guint polls;
    guint map_from;
    guint64 mapped[2];
    pid_t mapper;
    pid_t child;
    gboolean raise_term; /* SIGTERM to ourselves once something is mapped */
    const char *owner;   /* the run's --owner */
    GPtrArray *events;   /* "engaged PATH", "failed MESSAGE", ... */
    guint registered;    /* registry entries seen at the last ENGAGED */
} Fake;

static GArray *
fake_tree(pid_t pid, gpointer data)
{
    Fake *fake = data;
    GArray *tree = g_array_new(FALSE, FALSE, sizeof(pid_t));
    pid_t other = 4194304; /* above pid_max: no such process */

    fake->child = pid;
    fake->polls++;
    g_array_append_val(tree, pid);
    if (fake->mapper)
        g_array_append_val(tree, other);
    if (fake->raise_term && fake->polls == fake->map_from)
        raise(SIGTERM);
    return tree;
}

static gboolean
fake_maps(pid_t pid, guint64 dev, guint64 ino, gpointer data)
{
    Fake *fake = data;
    pid_t mapper = fake->mapper ? fake->mapper : fake->child;
    guint i;

    if (fake->polls < fake->map_from || pid != mapper)
        return FALSE;
    for (i = 0; i < G_N_ELEMENTS(fake->mapped); i++) {
        if (fake->mapped[i] == ino)
            return TRUE;
    }
    return FALSE;
}

static const DaxfileRunMappers fake_mappers = {
    .tree = fake_tree,
    .maps = fake_maps,
};

static guint
registry_count(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) entries = daxfile_static_list(&error);

    g_assert_no_error(error);
    return entries->len;
}

static void
on_event(const DaxfileRunEvent *ev, gpointer data)
{
    Fake *fake = data;
    g_autofree char *base = ev->path ? g_path_get_basename(ev->path) : NULL;
    g_autofree char *own = g_strdup_printf("pid:%d", (int)fake->child);
    const char *owner = g_strcmp0(ev->owner, own) ? ev->owner : "pid:COMMAND";

    switch (ev->kind) {
    case DAXFILE_RUN_ENGAGED:
        fake->registered = registry_count();
        g_ptr_array_add(
            fake->events,
            g_strdup_printf("engaged %s %s %s", base,
                            daxfile_mechanism_to_string(ev->enabled->mechanism),
                            owner));
        break;
    case DAXFILE_RUN_RELEASED:
        g_ptr_array_add(fake->events,
                        g_strdup_printf("released %s %s", base,
                                        ev->disabled->layout_unchanged
                                            ? "unchanged"
                                            : "CHANGED"));
        break;
    case DAXFILE_RUN_FAILED:
        g_ptr_array_add(fake->events,
                        g_strdup_printf("failed %s", ev->error->message));
        break;
    case DAXFILE_RUN_RELEASE_FAILED:
        g_ptr_array_add(fake->events, g_strdup_printf("release-failed %s",
                                                      ev->error->message));
        break;
    }
}

/* A directory of two static-ready files */
typedef struct {
    char *dir;
    char *a;
    char *b;
    guint64 ino_a;
    guint64 ino_b;
    gboolean ready; /* FALSE: skipped, no static-ready file here */
} Fixture;

static gboolean
make_file(const char *path, guint64 *ret_ino)
{
    DaxfileCreateParams params = {
        .size = 4 * M, .align = 2 * M, .allow_non_dax = TRUE};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileReport) report =
        daxfile_create(path, &params, NULL, &error);
    struct stat st;

    if (!report || !report->static_ready) {
        g_autofree char *why =
            g_strdup_printf("no static-ready file here (%s)",
                            error ? error->message : "not ready");

        g_test_skip(why);
        return FALSE;
    }
    g_assert_cmpint(stat(path, &st), ==, 0);
    *ret_ino = st.st_ino;
    return TRUE;
}

/* the registry and the empty sysfs (no daxctl() advert) of every test,
 * set before any thread starts */
static char *top;

static void
fixture_set_up(Fixture *fx, gconstpointer data)
{
    g_autofree char *tmpl = g_build_filename(top, "test-XXXXXX", NULL);

    fx->dir = g_mkdtemp(g_steal_pointer(&tmpl));
    g_assert_nonnull(fx->dir);
    fx->a = g_build_filename(fx->dir, "a.img", NULL);
    fx->b = g_build_filename(fx->dir, "b.img", NULL);
    fx->ready = make_file(fx->a, &fx->ino_a) && make_file(fx->b, &fx->ino_b);
}

static void
fixture_tear_down(Fixture *fx, gconstpointer data)
{
    daxfile_test_rmtree(fx->dir);
    g_free(fx->dir);
    g_free(fx->a);
    g_free(fx->b);
}

/* daxfile_run() over the fake of @fake, whose events it fills */
static gboolean
run(Fixture *fx, Fake *fake, const char *const *files, const char *shell,
    guint timeout, DaxfileRunResult *ret_result, GError **error)
{
    char *command[] = {(char *)"sh", (char *)"-c", (char *)shell, NULL};
    DaxfileRunParams params = {
        .files = files,
        .command = command,
        .owner = fake->owner,
        .align = 2 * M,
        .mechanism = DAXFILE_MECH_VERIFIED_ONLY,
        .allow_non_dax = TRUE,
        .timeout = timeout,
        .mappers = &fake_mappers,
        .mappers_data = fake,
        .report = on_event,
        .report_data = fake,
    };

    fake->events = g_ptr_array_new_with_free_func(g_free);
    return daxfile_run(&params, ret_result, error);
}

static void
assert_events(Fake *fake, const char *const *want)
{
    g_autoptr(GPtrArray) got = g_steal_pointer(&fake->events);
    guint i;

    g_ptr_array_add(got, NULL);
    for (i = 0; want[i] && got->pdata[i]; i++)
        g_assert_cmpstr(got->pdata[i], ==, want[i]);
    g_assert_cmpstr(got->pdata[i], ==, want[i]);
}

/* A run of the fake source over a.img (and b.img) and `sh -c SHELL` */
typedef struct {
    const char *name;
    gboolean two;        /* a.img and b.img, else a.img alone */
    guint map_from;      /* the poll from which a.img is mapped */
    gboolean map_b;      /* b.img too */
    gboolean descendant; /* by a descendant of the command */
    gboolean raise_term; /* SIGTERM to the supervisor then */
    const char *owner;
    const char *shell;
    guint timeout;
    int exit_status;
    int signal;       /* that ended the command, or 0: it exited */
    guint registered; /* registry entries at the last ENGAGED */
    const char *events[5];
} RunCase;

#define DEADLINE_1S                                                            \
    "failed The command did not map every --file within 1 s; static mode "     \
    "was not engaged, stopping it"

static const RunCase run_cases[] = {
    /* mapped at the third poll: engaged then, released at the exit, whose
     * status is the run's; the owner is the command's pid */
    {
        .name = "/run/engage-release",
        .map_from = 3,
        .shell = "sleep 0.5; exit 7",
        .timeout = 30,
        .exit_status = 7,
        .registered = 1,
        .events = {"engaged a.img verified-only pid:COMMAND",
                   "released a.img unchanged"},
    },
    /* a descendant that maps the files counts; --owner names the entry */
    {
        .name = "/run/descendant-owner",
        .two = TRUE,
        .map_from = 1,
        .map_b = TRUE,
        .descendant = TRUE,
        .owner = "me",
        .shell = "exec sleep 0.3",
        .timeout = 30,
        .registered = 2,
        .events = {"engaged a.img verified-only me",
                   "engaged b.img verified-only me", "released a.img unchanged",
                   "released b.img unchanged"},
    },
    /* never mapped: stopped after the timeout, nothing engaged, exit 1 */
    {
        .name = "/run/deadline",
        .map_from = G_MAXUINT,
        .shell = "exec sleep 30",
        .timeout = 1,
        .exit_status = 1,
        .signal = SIGTERM,
        .events = {DEADLINE_1S},
    },
    /* one of two files mapped: it is engaged, then released after the
     * deadline stops the command */
    {
        .name = "/run/partial",
        .two = TRUE,
        .map_from = 1,
        .shell = "exec sleep 30",
        .timeout = 1,
        .exit_status = 1,
        .signal = SIGTERM,
        .registered = 1,
        .events = {"engaged a.img verified-only pid:COMMAND", DEADLINE_1S,
                   "released a.img unchanged"},
    },
    /* exits before mapping: its status, nothing engaged */
    {
        .name = "/run/exit-before-map",
        .map_from = G_MAXUINT,
        .shell = "exit 3",
        .timeout = 30,
        .exit_status = 3,
    },
    /* killed by a signal: 128 + the signal */
    {
        .name = "/run/killed",
        .map_from = G_MAXUINT,
        .shell = "kill -9 $$",
        .timeout = 30,
        .exit_status = 128 + SIGKILL,
        .signal = SIGKILL,
    },
    /* SIGTERM to the supervisor stops the command, which is released */
    {
        .name = "/run/signal",
        .map_from = 2,
        .raise_term = TRUE,
        .shell = "exec sleep 30",
        .timeout = 30,
        .exit_status = 128 + SIGTERM,
        .signal = SIGTERM,
        .registered = 1,
        .events = {"engaged a.img verified-only pid:COMMAND",
                   "released a.img unchanged"},
    },
};

static void
test_run_case(Fixture *fx, gconstpointer data)
{
    const RunCase *c = data;
    const char *files[] = {fx->a, c->two ? fx->b : NULL, NULL};
    Fake fake = {.map_from = c->map_from,
                 .mapped = {fx->ino_a, c->map_b ? fx->ino_b : 0},
                 .mapper = c->descendant ? 4194304 : 0,
                 .raise_term = c->raise_term,
                 .owner = c->owner};
    DaxfileRunResult r;
    g_autoptr(GError) error = NULL;

    if (!fx->ready)
        return;
    g_assert_true(run(fx, &fake, files, c->shell, c->timeout, &r, &error));
    g_assert_no_error(error);
    assert_events(&fake, c->events);
    g_assert_cmpuint(fake.registered, ==, c->registered);
    g_assert_cmpuint(registry_count(), ==, 0);
    g_assert_cmpint(r.failed, ==, c->timeout == 1);
    g_assert_false(r.release_failed);
    g_assert_cmpint(r.exit_status, ==, c->exit_status);
    if (c->signal)
        g_assert_cmpint(WTERMSIG(r.wait_status), ==, c->signal);
    else
        g_assert_true(WIFEXITED(r.wait_status));
}

/* static for another owner: engaging fails, the command is stopped and
 * the other owner's entry is left alone */
static void
test_engage_fails(Fixture *fx, gconstpointer data)
{
    const char *files[] = {fx->a, NULL};
    DaxfileEnableParams other = {.owner = "other",
                                 .allow_non_dax = TRUE,
                                 .align = 2 * M,
                                 .mechanism = DAXFILE_MECH_VERIFIED_ONLY};
    g_auto(DaxfileEnableResult) enabled = {0};
    g_auto(DaxfileDisableResult) disabled = {0};
    Fake fake = {.map_from = 1, .mapped = {fx->ino_a}};
    DaxfileRunResult r;
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileFile) f = NULL;

    if (!fx->ready)
        return;
    f = daxfile_file_open(fx->a, DAXFILE_OPEN_READ, &error);
    g_assert_no_error(error);
    g_assert_true(daxfile_static_enable(f, &other, &enabled, &error));
    g_assert_true(run(fx, &fake, files, "exec sleep 30", 30, &r, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(fake.events->len, ==, 1);
    g_assert_true(g_str_has_prefix(fake.events->pdata[0], "failed "));
    g_assert_nonnull(strstr(fake.events->pdata[0], "'other'"));
    g_ptr_array_unref(fake.events);
    g_assert_true(r.failed);
    g_assert_cmpint(r.exit_status, ==, 1);
    g_assert_cmpuint(registry_count(), ==, 1);
    g_assert_true(daxfile_static_disable(f, "other", FALSE, &disabled, &error));
}

/* refused before the command starts: one file twice, a missing file, a
 * command that does not exist */
static void
test_refused(Fixture *fx, gconstpointer data)
{
    g_autofree char *marker = g_build_filename(fx->dir, "ran", NULL);
    g_autofree char *shell = g_strdup_printf("touch '%s'", marker);
    g_autofree char *again = g_build_filename(fx->dir, ".", "a.img", NULL);
    g_autofree char *missing = g_build_filename(fx->dir, "nope.img", NULL);
    const char *twice[] = {fx->a, again, NULL};
    const char *nope[] = {missing, NULL};
    char *command[] = {(char *)"/nonexistent/command", NULL};
    DaxfileRunParams params = {.files = (const char *const[]){fx->a, NULL},
                               .command = command,
                               .allow_non_dax = TRUE,
                               .align = 2 * M,
                               .timeout = 30};
    Fake fake = {.map_from = 1};
    DaxfileRunResult r;
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;
    g_autoptr(GError) e3 = NULL;

    if (!fx->ready)
        return;
    g_assert_false(run(fx, &fake, twice, shell, 30, &r, &e1));
    g_assert_error(e1, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
    g_assert_nonnull(strstr(e1->message, "are the same file"));
    g_clear_pointer(&fake.events, g_ptr_array_unref);
    g_assert_false(run(fx, &fake, nope, shell, 30, &r, &e2));
    g_assert_error(e2, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND);
    g_clear_pointer(&fake.events, g_ptr_array_unref);
    g_assert_false(g_file_test(marker, G_FILE_TEST_EXISTS));
    g_assert_cmpuint(fake.polls, ==, 0);
    g_assert_false(daxfile_run(&params, &r, &e3));
    g_assert_error(e3, G_SPAWN_ERROR, G_SPAWN_ERROR_NOENT);
    g_assert_cmpuint(registry_count(), ==, 0);
}

/* the default source reads /proc: a command that maps nothing */
static void
test_proc_default(Fixture *fx, gconstpointer data)
{
    char *command[] = {(char *)"sleep", (char *)"0.1", NULL};
    DaxfileRunParams params = {.files = (const char *const[]){fx->a, NULL},
                               .command = command,
                               .allow_non_dax = TRUE,
                               .align = 2 * M,
                               .timeout = 30};
    DaxfileRunResult r;
    g_autoptr(GError) error = NULL;

    if (!fx->ready)
        return;
    g_assert_true(daxfile_run(&params, &r, &error));
    g_assert_no_error(error);
    g_assert_false(r.failed);
    g_assert_cmpint(r.exit_status, ==, 0);
    g_assert_cmpuint(registry_count(), ==, 0);
}

int
main(int argc, char **argv)
{
    g_autofree char *tmpl = NULL;
    g_autofree char *state = NULL;
    g_autofree char *sysfs = NULL;
    size_t i;
    int ret;

    g_test_init(&argc, &argv, NULL);
    tmpl = g_test_build_filename(G_TEST_BUILT, "test-run-XXXXXX", NULL);
    top = g_mkdtemp(g_steal_pointer(&tmpl));
    g_assert_nonnull(top);
    state = g_build_filename(top, "state", NULL);
    sysfs = g_build_filename(top, "sysfs", NULL);
    g_assert_cmpint(mkdir(state, 0700), ==, 0);
    g_assert_cmpint(mkdir(sysfs, 0700), ==, 0);
    g_setenv("DAXFILE_STATE_DIR", state, TRUE);
    g_setenv("DAXFILE_SYSFS_ROOT", sysfs, TRUE);
#define ADD(path, func)                                                        \
    g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    for (i = 0; i < G_N_ELEMENTS(run_cases); i++)
        g_test_add(run_cases[i].name, Fixture, &run_cases[i], fixture_set_up,
                   test_run_case, fixture_tear_down);
    ADD("/run/engage-fails", test_engage_fails);
    ADD("/run/refused", test_refused);
    ADD("/run/proc-default", test_proc_default);
#undef ADD
    ret = g_test_run();
    daxfile_test_rmtree(top);
    g_free(top);
    return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Static mode in process (daxfile-static*.c), one file at a time: enable,
 * disable, the owner and interrupted-state refusals, repair's typed
 * actions, the files enable refuses (holes, unwritten extents, no
 * FIEMAP); sets of files are test-static-set's. Files are made by
 * daxfile_create() (--allow-non-dax) in the scratch directory; every test
 * has a registry of its own (DAXFILE_STATE_DIR) and the empty sysfs of
 * static_fixture_init() (no daxctl() advert). There is no DAX here, so
 * the mechanism chosen is verified-only whoever runs the test: root (CI)
 * and any other user alike, and nothing here sets the immutable flag;
 * entries of the immutable guard are written through the registry API.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "static-fixture.h"

/* enable: engaged in the registry for its owner, verified-only without
 * DAX (with the development-mode warning), the entry as recorded */
static void
test_enable(Fixture *fx, gconstpointer data)
{
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(DaxfileEntry) e = NULL;
    g_autofree char *abs = NULL;
    g_auto(DaxfileEnableResult) result = {0};
    g_autoptr(GError) error = NULL;

    if (!fx->ready)
        return;
    f = open_file(fx->a);
    g_assert_true(enable(f, ALICE, &result, &error));
    g_assert_no_error(error);
    g_assert_cmpint(result.mechanism, ==, DAXFILE_MECH_VERIFIED_ONLY);
    g_assert_false(result.already);
    g_assert_nonnull(result.warning);
    g_assert_true(g_str_has_prefix(result.warning, "DEVELOPMENT MODE: '"));
    g_assert_nonnull(strstr(result.warning, fx->a));
    g_assert_cmpuint(entry_count(), ==, 1);
    e = entry_of(f);
    g_assert_nonnull(e);
    abs = g_canonicalize_filename(fx->a, NULL);
    g_assert_cmpstr(e->path, ==, abs);
    g_assert_cmpint(e->state, ==, DAXFILE_STATE_ENGAGED);
    g_assert_cmpint(e->mechanism, ==, DAXFILE_MECH_VERIFIED_ONLY);
    g_assert_cmpstr(e->owner, ==, ALICE);
    g_assert_null(e->owner_uuid);
    g_assert_cmpuint(e->align, ==, 4 * K);
    g_assert_cmpstr(e->fingerprint, ==, fx->fingerprint_a);
    g_assert_cmpstr(e->boot_id, ==, daxfile_boot_id());
    g_assert_nonnull(e->since);
    g_assert_false(e->flag_set);
    g_assert_cmpint(e->pid, ==, 0);
    g_assert_cmpint(e->holder_pid, ==, 0);
}

/* Without DAX the stronger mechanisms are refused when asked for, and
 * nothing is registered */
static void
test_enable_no_dax(Fixture *fx, gconstpointer data)
{
    g_autoptr(DaxfileFile) f = NULL;
    DaxfileEnableParams p = params_for(ALICE);
    g_auto(DaxfileEnableResult) r1 = {0};
    g_auto(DaxfileEnableResult) r2 = {0};
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;

    if (!fx->ready)
        return;
    f = open_file(fx->a);
    p.mechanism = DAXFILE_MECH_IMMUTABLE;
    g_assert_false(daxfile_static_enable(f, &p, &r1, &e1));
    g_assert_error(e1, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED);
    assert_message(e1, "Cannot use the immutable guard for '");
    assert_message(e1, "DAX is not in effect");
    p.mechanism = DAXFILE_MECH_KERNEL;
    g_assert_false(daxfile_static_enable(f, &p, &r2, &e2));
    g_assert_error(e2, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED);
    assert_message(e2, "does not advertise daxctl() (DAX is not in effect)");
    g_assert_cmpuint(entry_count(), ==, 0);
}

/* enable again by the same owner: done already, the entry untouched */
static void
test_idempotent(Fixture *fx, gconstpointer data)
{
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(DaxfileEntry) before = NULL;
    g_autoptr(DaxfileEntry) after = NULL;
    g_auto(DaxfileEnableResult) result = {0};
    g_autoptr(GError) error = NULL;

    if (!fx->ready)
        return;
    f = open_file(fx->a);
    enable_ok(f, ALICE);
    before = entry_of(f);
    g_assert_true(enable(f, ALICE, &result, &error));
    g_assert_no_error(error);
    g_assert_true(result.already);
    g_assert_cmpint(result.mechanism, ==, DAXFILE_MECH_VERIFIED_ONLY);
    g_assert_null(result.warning);
    g_assert_cmpuint(entry_count(), ==, 1);
    after = entry_of(f);
    g_assert_cmpstr(after->owner, ==, ALICE);
    g_assert_cmpstr(after->since, ==, before->since);
    g_assert_cmpint(after->state, ==, DAXFILE_STATE_ENGAGED);
}

/* another owner can neither enable nor disable it; both messages name
 * the owner that holds it, whose entry stays */
static void
test_owner_conflict(Fixture *fx, gconstpointer data)
{
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(DaxfileEntry) e = NULL;
    g_autofree char *want = NULL;
    g_auto(DaxfileEnableResult) result = {0};
    g_auto(DaxfileDisableResult) released = {0};
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;

    if (!fx->ready)
        return;
    f = open_file(fx->a);
    enable_ok(f, ALICE);
    g_assert_false(enable(f, BOB, &result, &e1));
    g_assert_error(e1, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
    want = g_strdup_printf("'%s' is static for '" ALICE "' since ", fx->a);
    assert_message(e1, want);
    assert_message(e1, "it cannot be used by '" BOB "' until that owner");
    g_assert_false(daxfile_static_disable(f, BOB, FALSE, &released, &e2));
    g_assert_error(e2, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
    assert_message(e2, "is static for '" ALICE "'");
    e = entry_of(f);
    g_assert_cmpstr(e->owner, ==, ALICE);
    g_assert_cmpint(e->state, ==, DAXFILE_STATE_ENGAGED);
}

/* disable by the owner: the entry is gone, what was released is said;
 * a second disable finds nothing; another owner may enable it now, and
 * a disable without an owner releases whoever holds it */
static void
test_disable(Fixture *fx, gconstpointer data)
{
    g_autoptr(DaxfileFile) f = NULL;
    g_auto(DaxfileDisableResult) r1 = {0};
    g_auto(DaxfileDisableResult) r2 = {0};
    g_auto(DaxfileDisableResult) r3 = {0};
    g_autoptr(GError) error = NULL;

    if (!fx->ready)
        return;
    f = open_file(fx->a);
    enable_ok(f, ALICE);
    g_assert_true(daxfile_static_disable(f, ALICE, FALSE, &r1, &error));
    g_assert_no_error(error);
    g_assert_cmpint(r1.mechanism, ==, DAXFILE_MECH_VERIFIED_ONLY);
    g_assert_cmpstr(r1.owner, ==, ALICE);
    g_assert_true(r1.layout_unchanged);
    g_assert_null(r1.change);
    g_assert_cmpuint(entry_count(), ==, 0);
    g_assert_false(daxfile_static_disable(f, ALICE, FALSE, &r2, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND);
    assert_message(error, "is not static (no registry entry)");
    g_clear_error(&error);
    enable_ok(f, BOB);
    g_assert_true(daxfile_static_disable(f, NULL, FALSE, &r3, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(r3.owner, ==, BOB);
    g_assert_cmpuint(entry_count(), ==, 0);
}

/* An entry left engaging or releasing: enable refuses it (for its owner
 * too, alone or in a set) and asks for repair; repair releases it with
 * its typed action, after which enable works again */
static void
test_interrupted(Fixture *fx, gconstpointer data)
{
    DaxfileEntryState state = GPOINTER_TO_INT(data);
    g_autoptr(DaxfileFile) f = NULL;
    g_autofree char *want = NULL;
    g_autofree char *abs = NULL;
    g_autoptr(DaxfileEntry) left = NULL;
    g_auto(DaxfileEnableResult) result = {0};
    g_auto(DaxfileRepairResult) repaired = {0};
    DaxfileStaticItem item = {0};
    const DaxfileRepairAction *a;
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;
    g_autoptr(GError) error = NULL;
    guint failed = 0;

    if (!fx->ready)
        return;
    f = open_file(fx->a);
    enable_ok(f, ALICE);
    entry_edit(f, state, DAXFILE_MECH_VERIFIED_ONLY);
    g_assert_false(enable(f, ALICE, &result, &e1));
    g_assert_error(e1, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
    want = g_strdup_printf(
        "'%s' was left %s by an interrupted daxfile; fix: run 'daxfile repair' first",
        fx->a, daxfile_entry_state_to_string(state));
    g_assert_cmpstr(e1->message, ==, want);
    item.file = f;
    item.params = params_for(ALICE);
    g_assert_false(daxfile_static_enable_set(ONE(&item), 1, &failed, &e2));
    g_assert_cmpstr(e2->message, ==, want);
    g_assert_cmpuint(failed, ==, 0);
    daxfile_static_item_clear(&item);
    left = entry_of(f);
    g_assert_cmpint(left->state, ==, state);

    g_assert_true(daxfile_static_repair(NULL, &repaired, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(repaired.actions->len, ==, 1);
    a = g_ptr_array_index(repaired.actions, 0);
    abs = g_canonicalize_filename(fx->a, NULL);
    g_assert_cmpstr(a->path, ==, abs);
    g_assert_cmpstr(a->owner, ==, ALICE);
    g_assert_cmpint(a->mechanism, ==, DAXFILE_MECH_VERIFIED_ONLY);
    g_assert_cmpint(a->found, ==, DAXFILE_REPAIR_FOUND_INTERRUPTED);
    g_assert_cmpint(a->done, ==, DAXFILE_REPAIR_RELEASED);
    g_assert_cmpint(a->mtime, ==, DAXFILE_REPAIR_MTIME_NONE);
    g_assert_null(a->error);
    g_assert_cmpuint(daxfile_repair_result_kept(&repaired), ==, 0);
    g_assert_cmpuint(entry_count(), ==, 0);
    enable_ok(f, BOB);
}

/* The action repair took for the file named @base, or NULL */
static const DaxfileRepairAction *
action_for(const DaxfileRepairResult *result, const char *base)
{
    guint i;

    for (i = 0; i < result->actions->len; i++) {
        const DaxfileRepairAction *a = g_ptr_array_index(result->actions, i);

        if (g_str_has_suffix(a->path, base))
            return a;
    }
    return NULL;
}

static void
assert_action(const DaxfileRepairResult *result, const char *base,
              DaxfileMechanism mech, DaxfileRepairFinding found,
              DaxfileRepairDone done)
{
    const DaxfileRepairAction *a = action_for(result, base);

    g_assert_nonnull(a);
    g_assert_cmpint(a->mechanism, ==, mech);
    g_assert_cmpstr(a->owner, ==, ALICE);
    g_assert_cmpint(a->found, ==, found);
    g_assert_cmpint(a->done, ==, done);
    g_assert_cmpint(a->mtime, ==, DAXFILE_REPAIR_MTIME_NONE);
}

/* Reserve @f for ALICE, held by @holder (0: by nobody) */
static void
reserve_ok(const DaxfileFile *f, pid_t holder)
{
    DaxfileStaticItem item = {.file = f, .params = params_for(ALICE)};
    guint64 start = holder ? daxfile_proc_start_time(holder) : 0;
    g_autoptr(GError) error = NULL;
    guint failed = 0;

    g_assert_true(daxfile_static_reserve_set(ONE(&item), 1, holder, start,
                                             &failed, &error));
    g_assert_no_error(error);
    g_assert_cmpint(item.result.mechanism, ==, DAXFILE_MECH_NONE);
    daxfile_static_item_clear(&item);
}

/* An immutable entry left engaging for a file that is gone, with no file
 * handle to find its inode by */
static void
put_lost_entry(const DaxfileFile *near, const char *path)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(&error);
    DaxfileEntry *e = g_new0(DaxfileEntry, 1);

    g_assert_no_error(error);
    e->path = g_strdup(path);
    e->dev = near->st.st_dev;
    e->ino = near->st.st_ino + 1000000;
    e->state = DAXFILE_STATE_ENGAGING;
    e->mechanism = DAXFILE_MECH_IMMUTABLE;
    e->owner = g_strdup(ALICE);
    e->since = g_strdup("2026-01-02T03:04:05Z");
    e->boot_id = g_strdup(daxfile_boot_id());
    e->flag_set = TRUE;
    daxfile_registry_put(reg, e);
    g_assert_true(daxfile_registry_save(reg, &error));
    g_assert_no_error(error);
}

static void
make_stale(const DaxfileFile *f)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(&error);
    DaxfileEntry *e = daxfile_registry_lookup(reg, f->st.st_dev, f->st.st_ino);

    g_assert_nonnull(e);
    g_free(e->boot_id);
    e->boot_id = g_strdup("00000000-0000-4000-8000-000000000000");
    daxfile_registry_touch(reg);
    g_assert_true(daxfile_registry_save(reg, &error));
    g_assert_no_error(error);
}

/* What repair takes up and what it leaves: a healthy entry and a
 * reservation whose holder lives stay; a reservation held by nobody, an
 * entry of an earlier boot and an immutable entry whose flag is not on the
 * file are released; an immutable entry whose file cannot be found is
 * kept, with the reason */
static void
test_repair(Fixture *fx, gconstpointer data)
{
    g_autofree char *c_path = g_build_filename(fx->dir, "c.img", NULL);
    g_autofree char *d_path = g_build_filename(fx->dir, "d.img", NULL);
    g_autofree char *e_path = g_build_filename(fx->dir, "e.img", NULL);
    g_autofree char *gone = g_build_filename(fx->dir, "gone.img", NULL);
    g_autofree char *fp_c = NULL;
    g_autofree char *fp_d = NULL;
    g_autofree char *fp_e = NULL;
    g_autoptr(DaxfileFile) a = NULL;
    g_autoptr(DaxfileFile) b = NULL;
    g_autoptr(DaxfileFile) c = NULL;
    g_autoptr(DaxfileFile) d = NULL;
    g_autoptr(DaxfileFile) e = NULL;
    g_autoptr(DaxfileEntry) still_a = NULL;
    g_autoptr(DaxfileEntry) still_e = NULL;
    g_auto(DaxfileRepairResult) repaired = {0};
    const DaxfileRepairAction *lost;
    g_autoptr(GError) error = NULL;

    if (!fx->ready)
        return;
    fp_c = make_file(c_path);
    fp_d = make_file(d_path);
    fp_e = make_file(e_path);
    a = open_file(fx->a);
    b = open_file(fx->b);
    c = open_file(c_path);
    d = open_file(d_path);
    e = open_file(e_path);
    enable_ok(a, ALICE);
    reserve_ok(b, 0);
    enable_ok(c, ALICE);
    make_stale(c);
    enable_ok(d, ALICE);
    entry_edit(d, DAXFILE_STATE_ENGAGED, DAXFILE_MECH_IMMUTABLE);
    reserve_ok(e, getpid());
    put_lost_entry(a, gone);
    g_assert_cmpuint(entry_count(), ==, 6);

    g_assert_true(daxfile_static_repair(NULL, &repaired, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(repaired.actions->len, ==, 4);
    assert_action(&repaired, "/b.img", DAXFILE_MECH_NONE,
                  DAXFILE_REPAIR_FOUND_START_UNFINISHED,
                  DAXFILE_REPAIR_RELEASED);
    assert_action(&repaired, "/c.img", DAXFILE_MECH_VERIFIED_ONLY,
                  DAXFILE_REPAIR_FOUND_STALE, DAXFILE_REPAIR_RELEASED);
    assert_action(&repaired, "/d.img", DAXFILE_MECH_IMMUTABLE,
                  DAXFILE_REPAIR_FOUND_MECHANISM_LOST, DAXFILE_REPAIR_RELEASED);
    assert_action(&repaired, "/gone.img", DAXFILE_MECH_IMMUTABLE,
                  DAXFILE_REPAIR_FOUND_INTERRUPTED, DAXFILE_REPAIR_KEPT);
    lost = action_for(&repaired, "/gone.img");
    g_assert_cmpstr(lost->error, ==,
                    "its path no longer leads to it and it has no file handle");
    g_assert_cmpuint(daxfile_repair_result_kept(&repaired), ==, 1);
    g_assert_cmpuint(entry_count(), ==, 3);
    still_a = entry_of(a);
    g_assert_cmpint(still_a->state, ==, DAXFILE_STATE_ENGAGED);
    still_e = entry_of(e);
    g_assert_cmpint(still_e->state, ==, DAXFILE_STATE_RESERVED);
    g_assert_cmpint(still_e->holder_pid, ==, getpid());
}

/* Files made by hand, and what enable says of them */

typedef struct {
    const char *name;
    Shape shape;
    const char *why; /* after "cannot be made static: ", or NULL: ready */
} NotReadyCase;

#define FIX                                                                      \
    "; fix: make a provisioned file with 'daxfile create PATH --size SIZE' and " \
    "copy the data into it"

static const NotReadyCase not_ready_cases[] = {
    {"/static/enable/refused/sparse", SHAPE_SPARSE,
     "hole: no blocks, a write would allocate (offset 0x0, 4 MiB)" FIX},
    {"/static/enable/refused/tail-hole", SHAPE_TAIL_HOLE,
     "hole: no blocks, a write would allocate (offset 0x100000, 3 MiB)" FIX},
    {"/static/enable/refused/unwritten", SHAPE_FALLOCATED,
     "unwritten (fallocated, never written): the first write would change metadata (offset 0x0, 4 MiB)" FIX},
    {"/static/enable/refused/empty", SHAPE_EMPTY, "file is empty" FIX},
    {"/static/enable/written-fsynced", SHAPE_WRITTEN, NULL},
};

/* enable of a file that is not provisioned is refused with the report's
 * first reason and its fix, and nothing is registered; a file written and
 * fsync'd by hand is as good as a created one */
static void
test_not_ready(Fixture *fx, gconstpointer data)
{
    const NotReadyCase *c = data;
    g_autofree char *path = g_build_filename(fx->dir, "shaped.img", NULL);
    g_autofree char *want = NULL;
    g_autoptr(DaxfileFile) f = NULL;
    g_auto(DaxfileEnableResult) result = {0};
    g_autoptr(GError) error = NULL;

    if (!fx->ready)
        return;
    shape_file(path, c->shape);
    f = open_file(path);
    if (!c->why) {
        enable_ok(f, ALICE);
        g_assert_cmpuint(entry_count(), ==, 1);
        return;
    }
    g_assert_false(enable(f, ALICE, &result, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY);
    want = g_strdup_printf("'%s' cannot be made static: %s", path, c->why);
    g_assert_cmpstr(error->message, ==, want);
    g_assert_cmpuint(entry_count(), ==, 0);
}

/* On tmpfs (no FIEMAP) enable says static mode is not supported there */
static void
test_no_fiemap(Fixture *fx, gconstpointer data)
{
    g_autofree char *dir = NULL;
    g_autofree char *path = NULL;
    g_autofree char *want = NULL;
    g_autoptr(DaxfileFile) f = NULL;
    g_auto(DaxfileEnableResult) result = {0};
    g_autoptr(GError) error = NULL;
    struct statfs sfs;

    if (statfs("/dev/shm", &sfs) < 0 || sfs.f_type != TMPFS_MAGIC_NR) {
        g_test_skip("no tmpfs at /dev/shm");
        return;
    }
    dir = g_strdup("/dev/shm/daxfile-test-static-XXXXXX");
    g_assert_nonnull(g_mkdtemp(dir));
    path = g_build_filename(dir, "vm.img", NULL);
    shape_file(path, SHAPE_WRITTEN);
    f = open_file(path);
    g_assert_false(enable(f, ALICE, &result, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED);
    want = g_strdup_printf(
        "Cannot read the block map of '%s': the filesystem does not report extents (FIEMAP); static mode is not supported here",
        path);
    g_assert_cmpstr(error->message, ==, want);
    g_assert_cmpuint(entry_count(), ==, 0);
    daxfile_test_rmtree(dir);
}

int
main(int argc, char **argv)
{
    guint i;

    static_fixture_init(&argc, &argv, "static");
    STATIC_ADD("/static/enable/engaged", test_enable);
    STATIC_ADD("/static/enable/no-dax-mechanisms", test_enable_no_dax);
    STATIC_ADD("/static/enable/idempotent", test_idempotent);
    STATIC_ADD("/static/enable/owner-conflict", test_owner_conflict);
    STATIC_ADD("/static/disable", test_disable);
    STATIC_ADD_DATA("/static/interrupted/engaging",
                    GINT_TO_POINTER(DAXFILE_STATE_ENGAGING), test_interrupted);
    STATIC_ADD_DATA("/static/interrupted/releasing",
                    GINT_TO_POINTER(DAXFILE_STATE_RELEASING), test_interrupted);
    STATIC_ADD("/static/repair", test_repair);
    for (i = 0; i < G_N_ELEMENTS(not_ready_cases); i++)
        STATIC_ADD_DATA(not_ready_cases[i].name, &not_ready_cases[i],
                        test_not_ready);
    STATIC_ADD("/static/enable/no-fiemap", test_no_fiemap);
    return daxfile_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* static-fixture.c: see static-fixture.h */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "static-fixture.h"

const char *static_fixture_scratch;

void
static_fixture_init(int *argc, char ***argv, const char *name)
{
    g_autofree char *sysfs = NULL;

    g_test_init(argc, argv, NULL);
    static_fixture_scratch = daxfile_test_scratch(name);
    /* an empty sysfs: no daxctl() advert, whatever the running kernel */
    sysfs = g_build_filename(static_fixture_scratch, "sysfs", NULL);
    g_assert_cmpint(g_mkdir_with_parents(sysfs, 0700), ==, 0);
    g_setenv("DAXFILE_SYSFS_ROOT", sysfs, TRUE);
}

char *
make_file(const char *path)
{
    DaxfileCreateParams params = {
        .size = 4 * M, .align = 4 * K, .allow_non_dax = TRUE};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileReport) report =
        daxfile_create(path, &params, NULL, &error);

    if (g_error_matches(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED)) {
        g_test_skip(error->message);
        return NULL;
    }
    g_assert_no_error(error);
    g_assert_true(report->static_ready);
    return g_strdup(report->fingerprint);
}

void
fixture_set_up(Fixture *fx, gconstpointer data)
{
    g_autofree char *name =
        g_strdelimit(g_strdup(g_test_get_path() + 1), "/", '-');
    g_autofree char *state = NULL;
    g_autofree char *fp_b = NULL;

    fx->dir = g_build_filename(static_fixture_scratch, name, NULL);
    state = g_build_filename(fx->dir, "state", NULL);
    g_assert_cmpint(g_mkdir_with_parents(fx->dir, 0700), ==, 0);
    g_setenv("DAXFILE_STATE_DIR", state, TRUE);
    fx->a = g_build_filename(fx->dir, "a.img", NULL);
    fx->b = g_build_filename(fx->dir, "b.img", NULL);
    fx->fingerprint_a = make_file(fx->a);
    fp_b = fx->fingerprint_a ? make_file(fx->b) : NULL;
    fx->ready = fp_b != NULL;
}

void
fixture_tear_down(Fixture *fx, gconstpointer data)
{
    daxfile_test_rmtree(fx->dir);
    g_free(fx->dir);
    g_free(fx->a);
    g_free(fx->b);
    g_free(fx->fingerprint_a);
}

DaxfileFile *
open_file(const char *path)
{
    g_autoptr(GError) error = NULL;
    DaxfileFile *f = daxfile_file_open(path, DAXFILE_OPEN_READ, &error);

    g_assert_no_error(error);
    return f;
}

DaxfileEnableParams
params_for(const char *owner)
{
    DaxfileEnableParams p = {
        .align = 4 * K, .allow_non_dax = TRUE, .owner = owner};

    return p;
}

gboolean
enable(const DaxfileFile *f, const char *owner, DaxfileEnableResult *result,
       GError **error)
{
    DaxfileEnableParams p = params_for(owner);

    return daxfile_static_enable(f, &p, result, error);
}

void
enable_ok(const DaxfileFile *f, const char *owner)
{
    g_auto(DaxfileEnableResult) result = {0};
    g_autoptr(GError) error = NULL;

    g_assert_true(enable(f, owner, &result, &error));
    g_assert_no_error(error);
    g_assert_cmpint(result.mechanism, ==, DAXFILE_MECH_VERIFIED_ONLY);
}

GPtrArray *
entries(void)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *list = daxfile_static_list(&error);

    g_assert_no_error(error);
    return list;
}

/* A copy of the entry of @f, or NULL */
DaxfileEntry *
entry_of(const DaxfileFile *f)
{
    g_autoptr(GPtrArray) list = entries();
    guint i;

    for (i = 0; i < list->len; i++) {
        DaxfileEntry *e = g_ptr_array_index(list, i);

        if (e->dev == f->st.st_dev && e->ino == f->st.st_ino)
            return daxfile_entry_copy(e);
    }
    return NULL;
}

guint
entry_count(void)
{
    g_autoptr(GPtrArray) list = entries();

    return list->len;
}

/* Edit the entry of @f in place through the registry API, as a daxfile
 * interrupted at that point would have left it */
void
entry_edit(const DaxfileFile *f, DaxfileEntryState state, DaxfileMechanism mech)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(&error);
    DaxfileEntry *e;

    g_assert_no_error(error);
    e = daxfile_registry_lookup(reg, f->st.st_dev, f->st.st_ino);
    g_assert_nonnull(e);
    e->state = state;
    e->mechanism = mech;
    e->flag_set = mech == DAXFILE_MECH_IMMUTABLE;
    daxfile_registry_touch(reg);
    g_assert_true(daxfile_registry_save(reg, &error));
    g_assert_no_error(error);
}

void
assert_message(const GError *error, const char *part)
{
    if (!strstr(error->message, part))
        g_error("message '%s' lacks '%s'", error->message, part);
}

void
assert_entry(const DaxfileFile *f, DaxfileEntryState state,
             DaxfileMechanism mech, const char *owner)
{
    g_autoptr(DaxfileEntry) e = entry_of(f);

    g_assert_nonnull(e);
    g_assert_cmpint(e->state, ==, state);
    g_assert_cmpint(e->mechanism, ==, mech);
    g_assert_cmpstr(e->owner, ==, owner);
}

/* A set of two: reserved together, engaged together (again: done
 * already), released together; a second release finds neither ours */

void
shape_file(const char *path, Shape shape)
{
    g_autofree char *buf = g_malloc0(M);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    guint i;

    g_assert_cmpint(fd, >=, 0);
    switch (shape) {
    case SHAPE_SPARSE:
        g_assert_cmpint(ftruncate(fd, 4 * M), ==, 0);
        break;
    case SHAPE_TAIL_HOLE:
        g_assert_cmpint(pwrite(fd, buf, M, 0), ==, M);
        g_assert_cmpint(ftruncate(fd, 4 * M), ==, 0);
        break;
    case SHAPE_FALLOCATED:
        if (fallocate(fd, 0, 0, 4 * M) < 0)
            g_error("fallocate '%s': %s", path, g_strerror(errno));
        break;
    case SHAPE_EMPTY:
        break;
    case SHAPE_WRITTEN:
        for (i = 0; i < 4; i++)
            g_assert_cmpint(pwrite(fd, buf, M, i * M), ==, M);
        break;
    }
    g_assert_cmpint(fsync(fd), ==, 0);
    g_assert_cmpint(close(fd), ==, 0);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The wipes owed (daxfile-wipes.h): a record per file or device, written
 * atomically, found by its key, listed oldest first, any path's bytes
 * kept; a record that cannot be read is an error naming it; and the
 * refusal the hook gives a file with one (daxfile-wipe.h), one line
 * naming why and the fix. Every test has a state directory of its own
 * (DAXFILE_STATE_DIR) under a temp directory.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-test-util.h"
#include "daxfile-wipe.h"
#include "daxfile-wipes.h"

static const char *tmp;

/* A fresh state directory, named after the running test; its records'
 * directory */
static char *
state_new(void)
{
    g_autofree char *name = g_strdelimit(g_strdup(g_test_get_path()), "/", '-');
    g_autofree char *dir = g_build_filename(tmp, name, NULL);

    g_setenv("DAXFILE_STATE_DIR", dir, TRUE);
    return g_build_filename(dir, "lib", "wipes", NULL);
}

/* A scratch file named @name, open, as a handle */
static DaxfileFile *
scratch(const char *name)
{
    g_autofree char *path = g_build_filename(tmp, name, NULL);
    g_autoptr(GError) error = NULL;
    DaxfileFile *f = NULL;

    g_assert_true(g_file_set_contents(path, "x", 1, &error));
    f = daxfile_file_open(path, DAXFILE_OPEN_READ, &error);
    g_assert_no_error(error);
    return f;
}

static DaxfileWipeRecord *
find(const DaxfileFile *f)
{
    g_autoptr(GError) error = NULL;
    DaxfileWipeRecord *r = NULL;
    guint64 dev, ino;

    daxfile_wipe_key(f, &dev, &ino);
    g_assert_true(daxfile_wipe_record_find(dev, ino, &r, &error));
    g_assert_no_error(error);
    return r;
}

/* saved, found by its key with every field, replaced, removed */
static void
test_roundtrip(void)
{
    g_autofree char *dir = state_new();
    g_autoptr(DaxfileFile) f = scratch("odd \n\xff name.img");
    g_autoptr(DaxfileWipeRecord) r =
        daxfile_wipe_record_new(f, DAXFILE_WIPE_UNDEFINED, "vm\n1", "u-1");
    g_autoptr(DaxfileWipeRecord) got = NULL;
    g_autoptr(DaxfileWipeRecord) none = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_null(find(f)); /* no directory yet: no record */
    g_assert_true(daxfile_wipe_record_save(r, &error));
    g_assert_no_error(error);
    got = find(f);
    g_assert_nonnull(got);
    g_assert_cmpstr(got->path, ==, f->path);
    g_assert_cmpuint(got->dev, ==, f->st.st_dev);
    g_assert_cmpuint(got->ino, ==, f->st.st_ino);
    g_assert_cmpstr(got->handle, ==, r->handle);
    g_assert_cmpint(got->state, ==, DAXFILE_WIPE_UNDEFINED);
    g_assert_cmpstr(got->domain, ==, "vm\n1");
    g_assert_cmpstr(got->uuid, ==, "u-1");
    g_assert_cmpstr(got->since, ==, r->since);
    r->state = DAXFILE_WIPE_WIPING;
    g_assert_true(daxfile_wipe_record_save(r, &error));
    g_clear_pointer(&got, daxfile_wipe_record_free);
    got = find(f);
    g_assert_cmpint(got->state, ==, DAXFILE_WIPE_WIPING);
    g_assert_true(daxfile_wipe_record_remove(r->dev, r->ino, &error));
    g_assert_true(daxfile_wipe_record_remove(r->dev, r->ino, &error));
    g_assert_no_error(error);
    none = find(f);
    g_assert_null(none);
}

/* every record, oldest first; temporary files of a save are not records;
 * one that cannot be read fails the list, naming it */
static void
test_list(void)
{
    g_autofree char *dir = state_new();
    g_autoptr(DaxfileFile) a = scratch("a.img");
    g_autoptr(DaxfileFile) b = scratch("b.img");
    g_autoptr(DaxfileWipeRecord) ra =
        daxfile_wipe_record_new(a, DAXFILE_WIPE_WIPING, NULL, NULL);
    g_autoptr(DaxfileWipeRecord) rb =
        daxfile_wipe_record_new(b, DAXFILE_WIPE_WIPING, NULL, NULL);
    g_autofree char *stray = g_build_filename(dir, ".1-2.wipe.tmp", NULL);
    g_autofree char *bad = g_build_filename(dir, "1-2.wipe", NULL);
    g_autoptr(GPtrArray) list = NULL;
    g_autoptr(GPtrArray) broken = NULL;
    g_autoptr(GError) error = NULL;

    g_free(ra->since);
    ra->since = g_strdup("2026-01-02T00:00:00Z");
    g_free(rb->since);
    rb->since = g_strdup("2026-01-01T00:00:00Z");
    g_assert_true(daxfile_wipe_record_save(ra, NULL));
    g_assert_true(daxfile_wipe_record_save(rb, NULL));
    g_assert_true(g_file_set_contents(stray, "junk", -1, NULL));
    list = daxfile_wipe_records(&error);
    g_assert_no_error(error);
    g_assert_cmpuint(list->len, ==, 2);
    g_assert_cmpstr(((DaxfileWipeRecord *)list->pdata[0])->path, ==, b->path);
    g_assert_cmpstr(((DaxfileWipeRecord *)list->pdata[1])->path, ==, a->path);
    g_assert_true(g_file_set_contents(bad, "[wipe]\nstate=gone\n", -1, NULL));
    broken = daxfile_wipe_records(&error);
    g_assert_null(broken);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, bad));
    g_assert_nonnull(strstr(error->message, "; fix: "));
}

/* the hook's refusal: one line naming the file, the domain, why and the
 * fix, for each kind of record; nothing to say without one */
static void
test_refusal(void)
{
    g_autofree char *dir = state_new();
    g_autoptr(DaxfileFile) f = scratch("vm.img");
    g_autoptr(DaxfileWipeRecord) r =
        daxfile_wipe_record_new(f, DAXFILE_WIPE_UNDEFINED, "old\nvm", "u");
    static const char *const want[] = {
        "is to be wiped: domain 'old\\x0avm', which used it, was undefined",
        "is being wiped for domain 'old\\x0avm', which was undefined",
        "has a wipe that did not finish",
    };
    guint i;

    g_assert_true(daxfile_wipe_refuse_pending(r->dev, r->ino, "vm.img", NULL));
    for (i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autoptr(GError) error = NULL;

        if (i == 1)
            r->state = DAXFILE_WIPE_WIPING;
        if (i == 2)
            g_clear_pointer(&r->domain, g_free);
        g_assert_true(daxfile_wipe_record_save(r, NULL));
        g_assert_false(
            daxfile_wipe_refuse_pending(r->dev, r->ino, "vm.img", &error));
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
        g_assert_true(g_str_has_prefix(error->message, "'vm.img' "));
        g_assert_nonnull(strstr(error->message, want[i]));
        g_assert_nonnull(strstr(error->message, "; fix: "));
        g_assert_null(strchr(error->message, '\n'));
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    tmp = daxfile_test_scratch("wipes");
    g_test_add_func("/wipes/roundtrip", test_roundtrip);
    g_test_add_func("/wipes/list", test_list);
    g_test_add_func("/wipes/refusal", test_refusal);
    return daxfile_test_run();
}

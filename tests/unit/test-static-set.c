/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Static mode's sets (daxfile-static-set.c): several files changed in one
 * registry transaction, as the hook's phases do, over the fixture of
 * test-static-state (static-fixture.h).
 */
#include <string.h>

#include "static-fixture.h"

static void
items_init(DaxfileStaticItem *items, const DaxfileFile *x, const DaxfileFile *y,
           const char *owner)
{
    memset(items, 0, 2 * sizeof(*items));
    items[0].file = x;
    items[0].params = params_for(owner);
    items[1].file = y;
    items[1].params = params_for(owner);
}

static void
items_clear(DaxfileStaticItem *items)
{
    daxfile_static_item_clear(&items[0]);
    daxfile_static_item_clear(&items[1]);
}

static void
test_set(Fixture *fx, gconstpointer data)
{
    g_autoptr(DaxfileFile) a = NULL;
    g_autoptr(DaxfileFile) b = NULL;
    DaxfileStaticItem items[2];
    g_autoptr(GError) error = NULL;
    guint failed = 0;
    guint i;

    if (!fx->ready)
        return;
    a = open_file(fx->a);
    b = open_file(fx->b);
    items_init(items, a, b, ALICE);
    g_assert_true(
        daxfile_static_reserve_set(TWO(items), 2, 0, 0, &failed, &error));
    g_assert_no_error(error);
    assert_entry(a, DAXFILE_STATE_RESERVED, DAXFILE_MECH_NONE, ALICE);
    assert_entry(b, DAXFILE_STATE_RESERVED, DAXFILE_MECH_NONE, ALICE);
    items_clear(items);

    for (i = 0; i < 2; i++) {
        items_init(items, a, b, ALICE);
        g_assert_true(
            daxfile_static_enable_set(TWO(items), 2, &failed, &error));
        g_assert_no_error(error);
        g_assert_cmpint(items[0].result.mechanism, ==,
                        DAXFILE_MECH_VERIFIED_ONLY);
        g_assert_cmpint(items[1].result.mechanism, ==,
                        DAXFILE_MECH_VERIFIED_ONLY);
        g_assert_cmpint(items[0].result.already, ==, i == 1);
        g_assert_cmpint(items[1].result.already, ==, i == 1);
        assert_entry(a, DAXFILE_STATE_ENGAGED, DAXFILE_MECH_VERIFIED_ONLY,
                     ALICE);
        assert_entry(b, DAXFILE_STATE_ENGAGED, DAXFILE_MECH_VERIFIED_ONLY,
                     ALICE);
        g_assert_cmpuint(entry_count(), ==, 2);
        items_clear(items);
    }

    items_init(items, a, b, ALICE);
    g_assert_true(daxfile_static_release_set(TWO(items), 2, &failed, &error));
    g_assert_no_error(error);
    for (i = 0; i < 2; i++) {
        g_assert_false(items[i].not_ours);
        g_assert_cmpstr(items[i].released.owner, ==, ALICE);
        g_assert_cmpint(items[i].released.mechanism, ==,
                        DAXFILE_MECH_VERIFIED_ONLY);
        g_assert_true(items[i].released.layout_unchanged);
    }
    g_assert_cmpuint(entry_count(), ==, 0);
    items_clear(items);
    items_init(items, a, b, ALICE);
    g_assert_true(daxfile_static_release_set(TWO(items), 2, &failed, &error));
    g_assert_no_error(error);
    g_assert_true(items[0].not_ours);
    g_assert_true(items[1].not_ours);
    items_clear(items);
}

/* A set that cannot be engaged whole is engaged not at all: an item that
 * is not provisioned (with no entry before, or reserved before, which it
 * stays), an item another owner holds; the same file twice is refused */
static void
test_set_none(Fixture *fx, gconstpointer data)
{
    g_autofree char *s_path = g_build_filename(fx->dir, "sparse.img", NULL);
    g_autoptr(DaxfileFile) a = NULL;
    g_autoptr(DaxfileFile) b = NULL;
    g_autoptr(DaxfileFile) s = NULL;
    g_autoptr(DaxfileFile) again = NULL;
    DaxfileStaticItem items[2];
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;
    g_autoptr(GError) e3 = NULL;
    g_autoptr(GError) e4 = NULL;
    g_autoptr(GError) error = NULL;
    guint failed = 0;

    if (!fx->ready)
        return;
    shape_file(s_path, SHAPE_SPARSE);
    a = open_file(fx->a);
    b = open_file(fx->b);
    s = open_file(s_path);
    again = open_file(fx->a);

    items_init(items, a, s, ALICE);
    g_assert_false(daxfile_static_enable_set(TWO(items), 2, &failed, &e1));
    g_assert_error(e1, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY);
    g_assert_cmpuint(failed, ==, 1);
    g_assert_cmpuint(entry_count(), ==, 0);
    items_clear(items);

    items_init(items, a, s, ALICE);
    g_assert_true(
        daxfile_static_reserve_set(TWO(items), 2, 0, 0, &failed, &error));
    g_assert_no_error(error);
    items_clear(items);
    items_init(items, a, s, ALICE);
    g_assert_false(daxfile_static_enable_set(TWO(items), 2, &failed, &e2));
    g_assert_error(e2, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY);
    g_assert_cmpuint(failed, ==, 1);
    assert_entry(a, DAXFILE_STATE_RESERVED, DAXFILE_MECH_NONE, ALICE);
    assert_entry(s, DAXFILE_STATE_RESERVED, DAXFILE_MECH_NONE, ALICE);
    items_clear(items);
    items_init(items, a, s, ALICE);
    g_assert_true(daxfile_static_release_set(TWO(items), 2, &failed, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(entry_count(), ==, 0);
    items_clear(items);

    enable_ok(b, BOB);
    items_init(items, a, b, ALICE);
    g_assert_false(daxfile_static_enable_set(TWO(items), 2, &failed, &e3));
    g_assert_error(e3, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
    assert_message(e3, "is static for '" BOB "'");
    g_assert_cmpuint(failed, ==, 1);
    g_assert_cmpuint(entry_count(), ==, 1);
    assert_entry(b, DAXFILE_STATE_ENGAGED, DAXFILE_MECH_VERIFIED_ONLY, BOB);
    items_clear(items);

    items_init(items, a, again, ALICE);
    g_assert_false(daxfile_static_enable_set(TWO(items), 2, &failed, &e4));
    g_assert_error(e4, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
    assert_message(e4, "are the same file");
    g_assert_cmpuint(entry_count(), ==, 1);
    items_clear(items);
}

/* release of a set by one owner leaves the items another owner holds */
static void
test_set_release_theirs(Fixture *fx, gconstpointer data)
{
    g_autoptr(DaxfileFile) a = NULL;
    g_autoptr(DaxfileFile) b = NULL;
    DaxfileStaticItem items[2];
    g_autoptr(GError) error = NULL;
    guint failed = 0;

    if (!fx->ready)
        return;
    a = open_file(fx->a);
    b = open_file(fx->b);
    enable_ok(a, ALICE);
    enable_ok(b, BOB);
    items_init(items, a, b, ALICE);
    g_assert_true(daxfile_static_release_set(TWO(items), 2, &failed, &error));
    g_assert_no_error(error);
    g_assert_false(items[0].not_ours);
    g_assert_true(items[1].not_ours);
    g_assert_null(items[1].released.owner);
    g_assert_cmpuint(entry_count(), ==, 1);
    assert_entry(b, DAXFILE_STATE_ENGAGED, DAXFILE_MECH_VERIFIED_ONLY, BOB);
    items_clear(items);
}

int
main(int argc, char **argv)
{
    static_fixture_init(&argc, &argv, "static-set");
    STATIC_ADD("/static/set/all", test_set);
    STATIC_ADD("/static/set/none", test_set_none);
    STATIC_ADD("/static/set/release-theirs", test_set_release_theirs);
    return daxfile_test_run();
}

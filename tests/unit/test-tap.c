/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daxfile-tap.h: the C TAP emitter, line by line */
#include <glib.h>

#include "daxfile-tap.h"

static void
write_gstring(void *ctx, const char *text, size_t len)
{
    g_string_append_len(ctx, text, (gssize)len);
}

static void
test_results(void)
{
    g_autoptr(GString) out = g_string_new(NULL);
    DaxfileTap tap = {.write = write_gstring, .ctx = out};

    daxfile_tap_version(&tap);
    daxfile_tap_plan(&tap, 4);
    g_assert_true(daxfile_tap_result(&tap, TRUE, "first", NULL));
    g_assert_false(daxfile_tap_result(&tap, FALSE, "second", NULL));
    g_assert_true(daxfile_tap_result(&tap, TRUE, "third", "SKIP no device"));
    g_assert_false(daxfile_tap_result(&tap, FALSE, "fourth", "TODO later"));
    g_assert_cmpstr(out->str, ==,
                    "TAP version 13\n"
                    "1..4\n"
                    "ok 1 - first\n"
                    "not ok 2 - second\n"
                    "ok 3 - third # SKIP no device\n"
                    "not ok 4 - fourth # TODO later\n");
    g_assert_cmpuint(tap.n, ==, 4);
    /* a TODO failure is not a failure */
    g_assert_cmpuint(tap.failed, ==, 1);
}

static void
test_numbering_from(void)
{
    g_autoptr(GString) out = g_string_new(NULL);
    DaxfileTap tap = {.write = write_gstring, .ctx = out, .n = 6};

    daxfile_tap_result(&tap, TRUE, "seventh", NULL);
    daxfile_tap_plan(&tap, tap.n);
    g_assert_cmpstr(out->str, ==, "ok 7 - seventh\n1..7\n");
}

static void
test_description_safe(void)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"a # b", "ok 1 - a _ b\n"},
        {"#", "ok 2 - _\n"},
        {"two\nlines", "ok 3 - two_lines\n"},
        {"#x#\n", "ok 4 - _x__\n"},
        {"", "ok 5 - \n"},
        {"back\\slash", "ok 6 - back\\slash\n"},
    };
    g_autoptr(GString) out = g_string_new(NULL);
    DaxfileTap tap = {.write = write_gstring, .ctx = out};
    guint i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_string_truncate(out, 0);
        daxfile_tap_result(&tap, TRUE, cases[i].in, NULL);
        g_assert_cmpstr(out->str, ==, cases[i].out);
    }
}

static void
test_diag(void)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"text", "# text\n"},
        {"", "# \n"},
        {"one\ntwo", "# one\n# two\n"},
        {"one\n", "# one\n"},
        {"one\n\nthree", "# one\n# \n# three\n"},
        {"# as is", "# # as is\n"},
    };
    g_autoptr(GString) out = g_string_new(NULL);
    DaxfileTap tap = {.write = write_gstring, .ctx = out};
    guint i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_string_truncate(out, 0);
        daxfile_tap_diag(&tap, cases[i].in);
        g_assert_cmpstr(out->str, ==, cases[i].out);
    }
    g_assert_cmpuint(tap.n, ==, 0);
}

static void
test_bail_out(void)
{
    g_autoptr(GString) out = g_string_new(NULL);
    DaxfileTap tap = {.write = write_gstring, .ctx = out};

    daxfile_tap_bail_out(&tap, "no device");
    g_assert_cmpstr(out->str, ==, "Bail out! no device\n");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tap/results", test_results);
    g_test_add_func("/tap/numbering-from", test_numbering_from);
    g_test_add_func("/tap/description-safe", test_description_safe);
    g_test_add_func("/tap/diag", test_diag);
    g_test_add_func("/tap/bail-out", test_bail_out);
    return g_test_run();
}

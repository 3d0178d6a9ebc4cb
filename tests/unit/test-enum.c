/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daxfile-enum.h: the functions DAXFILE_ENUM_IMPL generates */
#include "daxfile-enum.h"

typedef enum {
    TEST_COLOUR_RED,
    TEST_COLOUR_GREEN,
    TEST_COLOUR_NONE, /* a member with no name */
    TEST_COLOUR_BLUE,
    TEST_COLOUR_LAST
} TestColour;

DAXFILE_ENUM_DECL(test_colour, TestColour);
DAXFILE_ENUM_IMPL(test_colour, TestColour, TEST_COLOUR_LAST, "red", "green",
                  NULL, "blue");

static void
test_to_string(void)
{
    g_assert_cmpstr(test_colour_to_string(TEST_COLOUR_RED), ==, "red");
    g_assert_cmpstr(test_colour_to_string(TEST_COLOUR_GREEN), ==, "green");
    g_assert_null(test_colour_to_string(TEST_COLOUR_NONE));
    g_assert_cmpstr(test_colour_to_string(TEST_COLOUR_BLUE), ==, "blue");
}

static void
test_to_string_out_of_range(void)
{
    g_assert_null(test_colour_to_string(TEST_COLOUR_LAST));
    g_assert_null(test_colour_to_string((TestColour)-1));
    g_assert_null(test_colour_to_string((TestColour)1000));
}

static void
test_from_string(void)
{
    static const TestColour all[] = {TEST_COLOUR_RED, TEST_COLOUR_GREEN,
                                     TEST_COLOUR_BLUE};
    guint i;

    for (i = 0; i < G_N_ELEMENTS(all); i++) {
        TestColour c = TEST_COLOUR_NONE;

        g_assert_true(
            test_colour_from_string(test_colour_to_string(all[i]), &c));
        g_assert_cmpint(c, ==, all[i]);
    }
}

static void
test_from_string_unknown(void)
{
    static const char *const bad[] = {"",     "Red",    "red ",
                                      "gree", "yellow", "(null)"};
    guint i;

    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        TestColour c = TEST_COLOUR_LAST;

        g_assert_false(test_colour_from_string(bad[i], &c));
        g_assert_cmpint(c, ==, TEST_COLOUR_LAST); /* left alone */
    }
}

static void
test_from_string_null(void)
{
    TestColour c = TEST_COLOUR_LAST;

    g_assert_false(test_colour_from_string(NULL, &c));
    g_assert_cmpint(c, ==, TEST_COLOUR_LAST);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/enum/to-string", test_to_string);
    g_test_add_func("/enum/to-string/out-of-range",
                    test_to_string_out_of_range);
    g_test_add_func("/enum/from-string", test_from_string);
    g_test_add_func("/enum/from-string/unknown", test_from_string_unknown);
    g_test_add_func("/enum/from-string/null", test_from_string_null);
    return g_test_run();
}

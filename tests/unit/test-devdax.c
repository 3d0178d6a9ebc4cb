/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * device-dax devices read from a sysfs tree (tests/data/sysfs/devdax):
 * dax0.0 (252:0) in devdax mode, dax1.0 (252:1) bound to kmem, dax2.0
 * (252:2) with no driver and no align attribute, and 1:3 a character
 * device of another subsystem
 */
#include <string.h>
#include <sys/sysmacros.h>

#include "daxfile-host-json.h"
#include "daxfile-error.h"

#define M (G_GUINT64_CONSTANT(1) << 20)

static DaxfileDevdax *
read_dev(guint maj, guint min, GError **error)
{
    return daxfile_devdax_read(makedev(maj, min), "/dev/x", error);
}

static void
test_read(void)
{
    g_autoptr(DaxfileDevdax) ok = read_dev(252, 0, NULL);
    g_autoptr(DaxfileDevdax) kmem = read_dev(252, 1, NULL);
    g_autoptr(DaxfileDevdax) off = read_dev(252, 2, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileDevdax) null = read_dev(1, 3, &error);
    g_autoptr(GError) error2 = NULL;
    g_autoptr(DaxfileDevdax) none = read_dev(9, 9, &error2);

    g_assert_nonnull(ok);
    g_assert_cmpstr(ok->name, ==, "dax0.0");
    g_assert_cmpuint(ok->size, ==, 256 * M);
    g_assert_cmpuint(ok->align, ==, 2 * M);
    g_assert_cmpstr(daxfile_devdax_mode(ok), ==, "devdax");
    g_assert_cmpstr(daxfile_devdax_mode(kmem), ==, "system-ram");
    g_assert_cmpstr(daxfile_devdax_mode(off), ==, "disabled");
    g_assert_cmpuint(off->align, ==, 0);
    g_assert_null(null);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND);
    g_assert_null(none);
    g_assert_error(error2, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND);
}

static void
expect_refused(const DaxfileDevdax *d, guint64 size, guint64 align,
               const char *want)
{
    g_autoptr(GError) error = NULL;

    g_assert_false(daxfile_devdax_check(d, "/dev/x", size, align, &error));
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, want));
}

static void
test_check(void)
{
    g_autoptr(DaxfileDevdax) ok = read_dev(252, 0, NULL);
    g_autoptr(DaxfileDevdax) kmem = read_dev(252, 1, NULL);
    g_autoptr(DaxfileDevdax) off = read_dev(252, 2, NULL);

    g_assert_true(daxfile_devdax_check(ok, "/dev/x", 256 * M, 2 * M, NULL));
    g_assert_true(daxfile_devdax_check(ok, "/dev/x", 256 * M, 0, NULL));
    expect_refused(ok, 256 * M, 4096,
                   "has 2 MiB pages but <alignsize> is 4 KiB");
    expect_refused(
        ok, 128 * M, 2 * M,
        "is 256 MiB but <target><size> is 128 MiB; fix: <size unit='KiB'>262144</size>");
    expect_refused(kmem, 64 * M, 2 * M, "system-ram mode, not devdax");
    expect_refused(kmem, 64 * M, 2 * M,
                   "daxctl reconfigure-device --mode=devdax dax1.0");
    expect_refused(off, 64 * M, 2 * M, "disabled mode");
}

static void
test_json(void)
{
    g_autoptr(DaxfileDevdax) ok = read_dev(252, 0, NULL);
    g_autoptr(JsonNode) node = daxfile_devdax_to_json(ok, "/dev/dax0.0");
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autofree char *text = NULL;

    json_generator_set_root(gen, node);
    text = json_generator_to_data(gen, NULL);
    g_assert_cmpstr(
        text, ==,
        "{\"name\":\"dax0.0\",\"path\":\"/dev/dax0.0\",\"size\":268435456,\"align\":2097152,\"mode\":\"devdax\"}");
}

int
main(int argc, char **argv)
{
    g_autofree char *root = NULL;

    g_test_init(&argc, &argv, NULL);
    root = g_test_build_filename(G_TEST_DIST, "data", "sysfs", "devdax", NULL);
    g_setenv("DAXFILE_SYSFS_ROOT", root, TRUE);
    g_test_add_func("/devdax/read", test_read);
    g_test_add_func("/devdax/check", test_check);
    g_test_add_func("/devdax/json", test_json);
    return g_test_run();
}

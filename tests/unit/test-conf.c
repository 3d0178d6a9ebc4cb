/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile.conf: parsing, managed roots, path mapping, trusted owners
 */
#include <glib/gstdio.h>

#include "daxfile-conf.h"
#include "daxfile-error.h"

static DaxfileConf *
parse(const char *text, GError **error)
{
    return daxfile_conf_load_data(text, strlen(text), "/etc/daxfile.conf",
                                  error);
}

static const DaxfileRoot *
root(const DaxfileConf *c, guint i)
{
    return g_ptr_array_index(c->roots, i);
}

static void
test_good(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileConf) c = parse(
        "# comment\n[hook]\nmanaged_roots=/mnt/pmem/;/var/lib/libvirt/pmem\n"
        "allow_non_dax=true\ntrusted_owners=root;1234\n"
        "create_missing=true\npath_map=/mnt/a=/mnt/b;/x=/y\n"
        "device_dax=true\nwipe_on_undefine=true\n",
        &error);
    g_autofree char *m1 = NULL;
    g_autofree char *m2 = NULL;

    g_assert_no_error(error);
    g_assert_cmpuint(c->roots->len, ==, 2);
    g_assert_cmpstr(root(c, 0)->path, ==, "/mnt/pmem");
    g_assert_cmpstr(root(c, 1)->path, ==, "/var/lib/libvirt/pmem");
    g_assert_true(root(c, 0)->allow_non_dax);
    g_assert_true(root(c, 1)->create_missing);
    g_assert_true(c->device_dax);
    g_assert_true(root(c, 0)->wipe_on_undefine);
    g_assert_true(c->wipe_devdax);
    g_assert_true(daxfile_conf_trusts_uid(c, 0));
    g_assert_true(daxfile_conf_trusts_uid(c, 1234));
    g_assert_false(daxfile_conf_trusts_uid(c, 1000));
    g_assert_true(daxfile_conf_managed_root(c, "/mnt/pmem/vm.img") ==
                  root(c, 0));
    g_assert_true(daxfile_conf_managed_root(c, "/mnt/pmem/d/vm.img") ==
                  root(c, 0));
    g_assert_null(daxfile_conf_managed_root(c, "/mnt/pmem2/vm.img"));
    g_assert_null(daxfile_conf_managed_root(c, "/mnt/pmem"));
    g_assert_null(daxfile_conf_managed_root(c, "mnt/pmem/vm.img"));
    g_assert_null(daxfile_conf_managed_root(c, NULL));
    m1 = daxfile_conf_map_path(c, "/mnt/a/vm.img");
    m2 = daxfile_conf_map_path(c, "/mnt/ab/vm.img");
    g_assert_cmpstr(m1, ==, "/mnt/b/vm.img");
    g_assert_null(m2);
}

static void
test_defaults(void)
{
    g_autoptr(DaxfileConf) c = parse("", NULL);
    g_autoptr(DaxfileConf) missing =
        daxfile_conf_load("/nonexistent.conf", NULL);

    g_assert_nonnull(c);
    g_assert_cmpuint(c->roots->len, ==, 0);
    g_assert_false(c->device_dax);
    g_assert_false(c->wipe_devdax);
    g_assert_true(daxfile_conf_trusts_uid(c, 0));
    g_assert_nonnull(missing);
    g_assert_cmpuint(missing->roots->len, ==, 0);
}

static void
test_bad(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"[hook\n", "Cannot parse '/etc/daxfile.conf'"},
        {"managed_roots=/x\n", "Cannot parse"},
        {"[hook]\nmanaged_roots=relative\n", "not an absolute path"},
        {"[hook]\nmanaged_roots=/a/../b\n", "'.' and '..' are not allowed"},
        {"[hook]\nallow_non_dax=maybe\n", "Invalid allow_non_dax"},
        {"[hook]\ndevice_dax=yes please\n", "Invalid device_dax"},
        {"[hook]\nwipe_on_undefine=1x\n", "Invalid wipe_on_undefine"},
        {"[hook]\ntrusted_owners=no-such-user-here\n", "no such user"},
        {"[hook]\npath_map=/a\n", "Invalid path_map entry '/a'"},
        {"[hook]\npath_map=/a=rel\n", "not an absolute path"},
    };
    guint i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(DaxfileConf) c = parse(cases[i].text, &error);

        g_test_message("case %u: %s", i, error ? error->message : "(none)");
        g_assert_null(c);
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_assert_nonnull(strstr(error->message, cases[i].want));
        g_assert_nonnull(strstr(error->message, "/etc/daxfile.conf"));
    }
}

/* Drop-ins add roots with their own flags; the main file stays as it is */
static void
test_dropins(void)
{
    g_autofree char *dir = g_dir_make_tmp("daxfile-conf-XXXXXX", NULL);
    g_autofree char *main_conf = g_build_filename(dir, "daxfile.conf", NULL);
    g_autofree char *ddir = g_strconcat(main_conf, ".d", NULL);
    g_autofree char *d1 = g_build_filename(ddir, "10-dev.conf", NULL);
    g_autofree char *d2 = g_build_filename(ddir, "20-ignored.txt", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileConf) c = NULL;

    g_assert_cmpint(g_mkdir(ddir, 0700), ==, 0);
    g_assert_true(g_file_set_contents(
        main_conf, "[hook]\nmanaged_roots=/mnt/pmem\n", -1, NULL));
    g_assert_true(g_file_set_contents(d1,
                                      "[hook]\nmanaged_roots=/tmp/q\n"
                                      "allow_non_dax=true\n"
                                      "wipe_on_undefine=true\n",
                                      -1, NULL));
    g_assert_true(g_file_set_contents(d2, "garbage", -1, NULL));
    c = daxfile_conf_load(main_conf, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(c->roots->len, ==, 2);
    g_assert_false(daxfile_conf_managed_root(c, "/mnt/pmem/a")->allow_non_dax);
    g_assert_true(daxfile_conf_managed_root(c, "/tmp/q/a")->allow_non_dax);
    /* wipe_on_undefine is per file too; device_dax was not set with it */
    g_assert_false(
        daxfile_conf_managed_root(c, "/mnt/pmem/a")->wipe_on_undefine);
    g_assert_true(daxfile_conf_managed_root(c, "/tmp/q/a")->wipe_on_undefine);
    g_assert_false(c->wipe_devdax);
    g_assert_cmpstr(daxfile_conf_managed_root(c, "/tmp/q/a")->conf, ==, d1);
    g_assert_true(daxfile_conf_trusts_uid(c, 0));
    g_unlink(d1);
    g_unlink(d2);
    g_rmdir(ddir);
    g_unlink(main_conf);
    g_rmdir(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/conf/good", test_good);
    g_test_add_func("/conf/defaults", test_defaults);
    g_test_add_func("/conf/bad", test_bad);
    g_test_add_func("/conf/dropins", test_dropins);
    return g_test_run();
}

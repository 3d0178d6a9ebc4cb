/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What attach and domain-xml check before a device is wired or printed
 * (daxfile-attach.h): a file's report (synthetic, as attach --create hands
 * it over, or built from a file in the scratch directory) against the
 * device's size and settings, and a device-dax device of a sysfs tree
 * (tests/data/sysfs/attach: /dev/null's 1:3 is dax0.0 there, in devdax
 * mode, 256 MiB with 2 MiB pages), which completes the device.
 */
#include <fcntl.h>
#include <linux/fiemap.h>
#include <string.h>
#include <unistd.h>

#include "daxfile-attach.h"
#include "daxfile-error.h"
#include "daxfile-test-util.h"

#define K (G_GUINT64_CONSTANT(1) << 10)
#define M (G_GUINT64_CONSTANT(1) << 20)

#define FILE_PATH "/mnt/pmem/vm.img"
#define DEVDAX "/dev/null"

static const char *tmp;

/* A 64 MiB file on DAX xfs: one 2 MiB-aligned extent (static-ready), or
 * two unwritten ones (not ready) */
static DaxfileReport *
fake_report(gboolean ready)
{
    DaxfileFsInfo *fs = g_new0(DaxfileFsInfo, 1);
    DaxfileExtentMap *map = daxfile_extent_map_new(64 * M, 4096);

    fs->fs_type = g_strdup("xfs");
    fs->block_size = 4096;
    fs->dax = DAXFILE_TRI_YES;
    fs->dax_mode = g_strdup("always");
    fs->map_sync = TRUE;
    fs->mount_point = g_strdup("/mnt/pmem");
    fs->device = g_strdup("/dev/pmem0");
    daxfile_fs_geometry(fs, "rw,dax=always,sunit=4096", 2 * M);
    if (ready) {
        daxfile_extent_map_add(map, 0, 2 * M, 64 * M, FIEMAP_EXTENT_LAST);
    } else {
        daxfile_extent_map_add(map, 0, 2 * M, 2 * M, FIEMAP_EXTENT_UNWRITTEN);
        daxfile_extent_map_add(map, 2 * M, 130 * M, 62 * M,
                               FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST);
    }
    return daxfile_report_new(FILE_PATH, FILE_PATH, 2 * M, FALSE, fs, map);
}

/* The device attach makes for @path before the checks: 2 MiB aligned */
static void
spec_init(DaxfileNvdimm *spec, DaxfileDeviceModel model, const char *path)
{
    daxfile_nvdimm_init(spec, model, path);
    spec->node = 0;
    spec->alignsize = 2 * M;
}

static void
expect_refused(GError *error, gint code, const char *want)
{
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    g_assert_error(error, DAXFILE_ERROR, code);
    g_assert_nonnull(strstr(error->message, want));
}

/* the created file's report completes the device: its size */
static void
test_report_size(void)
{
    g_autoptr(DaxfileReport) report = fake_report(TRUE);
    g_auto(DaxfileNvdimm) spec = {0};
    g_autoptr(GError) error = NULL;
    DaxfileAttachOptions opts = {0};

    spec_init(&spec, DAXFILE_DEVICE_NVDIMM, FILE_PATH);
    g_assert_true(daxfile_attach_check(&spec, &opts, report, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(spec.size, ==, 64 * M);
    g_assert_cmpuint(spec.alignsize, ==, 2 * M);
}

/* --size must be the file's */
static void
test_report_size_differs(void)
{
    g_autoptr(DaxfileReport) report = fake_report(TRUE);
    g_auto(DaxfileNvdimm) spec = {0};
    g_autoptr(GError) error = NULL;
    DaxfileAttachOptions opts = {0};

    spec_init(&spec, DAXFILE_DEVICE_NVDIMM, FILE_PATH);
    spec.size = 32 * M;
    g_assert_false(daxfile_attach_check(&spec, &opts, report, &error));
    expect_refused(
        error, DAXFILE_ERROR_INVALID,
        "'" FILE_PATH
        "' is 64 MiB, not 32 MiB; the device size must equal the file's size; fix: drop --size");
}

/* a writable device needs a static-ready file; a read-only one does not */
static void
test_report_not_ready(void)
{
    g_autoptr(DaxfileReport) report = fake_report(FALSE);
    g_auto(DaxfileNvdimm) spec = {0};
    g_auto(DaxfileNvdimm) ro = {0};
    g_autoptr(GError) error = NULL;
    DaxfileAttachOptions opts = {0};

    spec_init(&spec, DAXFILE_DEVICE_NVDIMM, FILE_PATH);
    g_assert_false(daxfile_attach_check(&spec, &opts, report, &error));
    expect_refused(error, DAXFILE_ERROR_NOT_READY, FILE_PATH);
    spec_init(&ro, DAXFILE_DEVICE_NVDIMM, FILE_PATH);
    ro.readonly = TRUE;
    g_assert_true(daxfile_attach_check(&ro, &opts, report, NULL));
    g_assert_cmpuint(ro.size, ==, 64 * M);
}

/* the device's settings are checked too, the error naming the file */
static void
test_report_settings(void)
{
    g_autoptr(DaxfileReport) report = fake_report(TRUE);
    g_auto(DaxfileNvdimm) spec = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(GError) plain = NULL;
    DaxfileAttachOptions opts = {0};

    spec_init(&spec, DAXFILE_DEVICE_NVDIMM, FILE_PATH);
    spec.label_size = 64 * K;
    g_assert_false(daxfile_attach_check(&spec, &opts, report, &error));
    spec.size = 64 * M;
    g_assert_false(daxfile_nvdimm_check(&spec, &plain));
    g_assert_nonnull(error);
    g_assert_nonnull(plain);
    g_test_message("%s", error->message);
    g_assert_true(g_str_has_prefix(error->message, "'" FILE_PATH "': "));
    g_assert_cmpstr(error->message + strlen("'" FILE_PATH "': "), ==,
                    plain->message);
}

/* without a report, the file is opened and its report built */
static void
test_file(void)
{
    g_autofree char *path = g_build_filename(tmp, "sparse.img", NULL);
    g_autofree char *missing = g_build_filename(tmp, "missing.img", NULL);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    g_auto(DaxfileNvdimm) spec = {0};
    g_auto(DaxfileNvdimm) ro = {0};
    g_auto(DaxfileNvdimm) none = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(GError) error2 = NULL;
    DaxfileAttachOptions opts = {.allow_non_dax = TRUE};

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, 8 * M), ==, 0);
    close(fd);
    spec_init(&spec, DAXFILE_DEVICE_NVDIMM, path);
    g_assert_false(daxfile_attach_check(&spec, &opts, NULL, &error));
    expect_refused(error, DAXFILE_ERROR_NOT_READY, "sparse.img");
    spec_init(&ro, DAXFILE_DEVICE_NVDIMM, path);
    ro.readonly = TRUE;
    g_assert_true(daxfile_attach_check(&ro, &opts, NULL, NULL));
    g_assert_cmpuint(ro.size, ==, 8 * M);
    spec_init(&none, DAXFILE_DEVICE_NVDIMM, missing);
    g_assert_false(daxfile_attach_check(&none, &opts, NULL, &error2));
    g_assert_nonnull(error2);
    g_assert_nonnull(strstr(error2->message, "missing.img"));
}

/* a device-dax device gives the device its page size and size */
static void
test_devdax(void)
{
    g_auto(DaxfileNvdimm) spec = {0};
    g_auto(DaxfileNvdimm) sized = {0};
    DaxfileAttachOptions opts = {0};

    spec_init(&spec, DAXFILE_DEVICE_NVDIMM, DEVDAX);
    spec.alignsize = 4 * K; /* the default --align does not bind it */
    g_assert_true(daxfile_attach_check(&spec, &opts, NULL, NULL));
    g_assert_cmpuint(spec.alignsize, ==, 2 * M);
    g_assert_cmpuint(spec.size, ==, 256 * M);
    spec_init(&sized, DAXFILE_DEVICE_NVDIMM, DEVDAX);
    sized.size = 256 * M;
    g_assert_true(daxfile_attach_check(&sized, &opts, NULL, NULL));
    g_assert_cmpuint(sized.size, ==, 256 * M);
}

/* what a device-dax device refuses: --align or --size not its own, a
 * model other than nvdimm, --create */
static void
test_devdax_refused(void)
{
    DaxfileAttachOptions given = {.align_given = TRUE};
    DaxfileAttachOptions create = {.create = TRUE};
    DaxfileAttachOptions none = {0};
    g_auto(DaxfileNvdimm) align = {0};
    g_auto(DaxfileNvdimm) size = {0};
    g_auto(DaxfileNvdimm) model = {0};
    g_auto(DaxfileNvdimm) made = {0};
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;
    g_autoptr(GError) e3 = NULL;
    g_autoptr(GError) e4 = NULL;

    spec_init(&align, DAXFILE_DEVICE_NVDIMM, DEVDAX);
    align.alignsize = 4 * K;
    g_assert_false(daxfile_attach_check(&align, &given, NULL, &e1));
    expect_refused(e1, DAXFILE_ERROR_INVALID, "'" DEVDAX "'");
    g_assert_cmpuint(align.alignsize, ==, 4 * K);
    spec_init(&size, DAXFILE_DEVICE_NVDIMM, DEVDAX);
    size.size = 128 * M;
    g_assert_false(daxfile_attach_check(&size, &none, NULL, &e2));
    expect_refused(e2, DAXFILE_ERROR_INVALID, "'" DEVDAX "'");
    spec_init(&model, DAXFILE_DEVICE_VIRTIO_PMEM, DEVDAX);
    g_assert_false(daxfile_attach_check(&model, &none, NULL, &e3));
    expect_refused(
        e3, DAXFILE_ERROR_INVALID,
        "'" DEVDAX
        "' is a device-dax device (dax0.0): it is given to a guest as an nvdimm, and there is nothing to create; fix: drop --model");
    spec_init(&made, DAXFILE_DEVICE_NVDIMM, DEVDAX);
    g_assert_false(daxfile_attach_check(&made, &create, NULL, &e4));
    expect_refused(e4, DAXFILE_ERROR_INVALID, "; fix: drop --create");
}

/* --create makes the file and hands its report over; without it, or on a
 * device-dax device, nothing is made */
static void
test_create(void)
{
    g_autofree char *path = g_build_filename(tmp, "made.img", NULL);
    g_autofree char *other = g_build_filename(tmp, "not-made.img", NULL);
    DaxfileAttachOptions create = {.create = TRUE, .allow_non_dax = TRUE};
    DaxfileAttachOptions none = {.allow_non_dax = TRUE};
    g_autoptr(DaxfileReport) report = NULL;
    g_autoptr(DaxfileReport) nothing = NULL;
    g_autoptr(DaxfileReport) dev = NULL;
    g_auto(DaxfileNvdimm) spec = {0};
    g_auto(DaxfileNvdimm) spec2 = {0};
    g_auto(DaxfileNvdimm) devdax = {0};
    g_autoptr(GError) error = NULL;

    spec_init(&spec, DAXFILE_DEVICE_NVDIMM, path);
    spec.size = 4 * M;
    g_assert_true(daxfile_attach_create(&spec, &create, &report, &error));
    g_assert_no_error(error);
    g_assert_nonnull(report);
    g_assert_cmpuint(report->size, ==, 4 * M);
    g_assert_true(g_file_test(path, G_FILE_TEST_IS_REGULAR));
    g_assert_true(daxfile_attach_check(&spec, &create, report, NULL));
    spec_init(&spec2, DAXFILE_DEVICE_NVDIMM, other);
    spec2.size = 4 * M;
    g_assert_true(daxfile_attach_create(&spec2, &none, &nothing, NULL));
    g_assert_null(nothing);
    g_assert_false(g_file_test(other, G_FILE_TEST_EXISTS));
    spec_init(&devdax, DAXFILE_DEVICE_NVDIMM, DEVDAX);
    devdax.size = 256 * M;
    g_assert_true(daxfile_attach_create(&devdax, &create, &dev, NULL));
    g_assert_null(dev);
}

int
main(int argc, char **argv)
{
    g_autofree char *root = NULL;

    g_test_init(&argc, &argv, NULL);
    root = g_test_build_filename(G_TEST_DIST, "data", "sysfs", "attach", NULL);
    g_setenv("DAXFILE_SYSFS_ROOT", root, TRUE);
    tmp = daxfile_test_scratch("attach");
    g_test_add_func("/attach/report/size", test_report_size);
    g_test_add_func("/attach/report/size-differs", test_report_size_differs);
    g_test_add_func("/attach/report/not-ready", test_report_not_ready);
    g_test_add_func("/attach/report/settings", test_report_settings);
    g_test_add_func("/attach/file", test_file);
    g_test_add_func("/attach/devdax", test_devdax);
    g_test_add_func("/attach/devdax/refused", test_devdax_refused);
    g_test_add_func("/attach/create", test_create);
    return daxfile_test_run();
}

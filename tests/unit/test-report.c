/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reports of synthetic files as JSON, compared with golden files
 */
#include <linux/fiemap.h>

#include "daxfile-json.h"
#include "daxfile-host-json.h"
#include "daxfile-test-util.h"

#define M (G_GUINT64_CONSTANT(1) << 20)

static DaxfileFsInfo *
fake_fs(const char *type, DaxfileTristate dax, gboolean map_sync,
        const char *opts)
{
    DaxfileFsInfo *fs = g_new0(DaxfileFsInfo, 1);

    fs->fs_type = g_strdup(type);
    fs->block_size = 4096;
    fs->dax = dax;
    fs->dax_mode = dax == DAXFILE_TRI_YES ? g_strdup("always") : NULL;
    fs->map_sync = map_sync;
    fs->map_sync_error = map_sync ? NULL : g_strdup("Operation not supported");
    fs->mount_point = g_strdup("/mnt/pmem");
    fs->device = g_strdup("/dev/pmem0");
    daxfile_fs_geometry(fs, opts, 2 * M);
    return fs;
}

static void
check_report(const char *golden, DaxfileReport *report, gboolean full)
{
    g_autoptr(DaxfileReport) owned = report;
    g_autoptr(JsonNode) node = full ? daxfile_report_to_json(report)
                                    : daxfile_report_check_to_json(report);
    g_autofree char *text = daxfile_json_to_string(node);

    daxfile_test_golden(golden, text);
}

static void
test_ready(void)
{
    DaxfileExtentMap *map = daxfile_extent_map_new(64 * M, 4096);

    daxfile_extent_map_add(map, 0, 2 * M, 64 * M, FIEMAP_EXTENT_LAST);
    check_report("golden/status-ready.json",
                 daxfile_report_new("/mnt/pmem/vm.img", "/mnt/pmem/vm.img",
                                    2 * M, FALSE,
                                    fake_fs("xfs", DAXFILE_TRI_YES, TRUE,
                                            "rw,dax=always,sunit=4096"),
                                    map),
                 TRUE);
}

static void
test_fallocated_not_dax(void)
{
    DaxfileExtentMap *map = daxfile_extent_map_new(64 * M, 4096);

    daxfile_extent_map_add(map, 0, 2 * M, 2 * M, FIEMAP_EXTENT_UNWRITTEN);
    daxfile_extent_map_add(map, 2 * M, 130 * M, 62 * M,
                           FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST);
    check_report(
        "golden/status-fallocated.json",
        daxfile_report_new("/srv/vm.img", "/srv/vm.img", 2 * M, FALSE,
                           fake_fs("ext4", DAXFILE_TRI_NO, FALSE, "rw"), map),
        TRUE);
}

static void
test_check_subset(void)
{
    DaxfileExtentMap *map = daxfile_extent_map_new(8 * M, 4096);

    daxfile_extent_map_add(map, 0, 3 * M, 4 * M, 0);
    daxfile_extent_map_add(map, 6 * M, 20 * M, 2 * M,
                           FIEMAP_EXTENT_SHARED | FIEMAP_EXTENT_LAST);
    check_report("golden/check-problems.json",
                 daxfile_report_new(
                     "/mnt/pmem/odd\nname.img", "/mnt/pmem/odd\\x0aname.img",
                     2 * M, TRUE,
                     fake_fs("xfs", DAXFILE_TRI_UNKNOWN, TRUE, "rw"), map),
                 FALSE);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/report/json/ready", test_ready);
    g_test_add_func("/report/json/fallocated-not-dax", test_fallocated_not_dax);
    g_test_add_func("/report/json/check-subset", test_check_subset);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mountinfo parsing, mount options and filesystem geometry verdicts, the
 * filesystem UUID in a superblock
 */
#include <string.h>

#include "daxfile-fs.h"
#include "daxfile-mount.h"

/* Lines as the 6.1 guest and the 6.18 host printed them */
static const char mountinfo[] =
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "45 27 7:0 / /tmp/lt/e rw,relatime - ext4 /dev/loop0 rw,stripe=512\n"
    "46 27 7:1 / /tmp/lt/x rw,relatime - xfs /dev/loop1 rw,inode64,logbufs=8,logbsize=32k,sunit=4096,swidth=4096,noquota\n"
    "47 27 259:0 /sub /mnt/bind rw shared:5 master:3 - xfs /dev/pmem0 rw,dax=always,sunit=4096\n"
    "48 27 259:0 / /mnt/pmem\\040dir rw shared:5 - xfs /dev/pmem0 rw,dax=always,sunit=4096\n"
    "49 27 259:1 / /mnt/e rw - ext4 /dev/pmem1 rw,dax\n";

static void
test_lookup(void)
{
    g_auto(DaxfileMountEntry) e = {0};

    g_assert_true(daxfile_mountinfo_lookup(mountinfo, 7, 1, &e));
    g_assert_cmpstr(e.mount_point, ==, "/tmp/lt/x");
    g_assert_cmpstr(e.fs_type, ==, "xfs");
    g_assert_cmpstr(e.source, ==, "/dev/loop1");
    g_assert_true(g_str_has_prefix(e.super_options, "rw,inode64"));
    g_assert_false(daxfile_mountinfo_lookup(mountinfo, 8, 0, &e));
}

static void
test_lookup_prefers_root(void)
{
    g_auto(DaxfileMountEntry) e = {0};

    /* a bind mount of a subdirectory comes first; the root mount wins and
     * the octal escape in its path is decoded */
    g_assert_true(daxfile_mountinfo_lookup(mountinfo, 259, 0, &e));
    g_assert_cmpstr(e.mount_point, ==, "/mnt/pmem dir");
}

static void
test_options(void)
{
    g_autofree char *a = daxfile_mount_option("rw,dax=always,sunit=8", "dax");
    g_autofree char *b = daxfile_mount_option("rw,dax", "dax");
    g_autofree char *c = daxfile_mount_option("rw,daxx=1", "dax");
    g_autofree char *d = daxfile_mount_option("rw,sunit=8", "sunit");
    g_autofree char *e = daxfile_mount_option(NULL, "dax");

    g_assert_cmpstr(a, ==, "always");
    g_assert_cmpstr(b, ==, "");
    g_assert_null(c);
    g_assert_cmpstr(d, ==, "8");
    g_assert_null(e);
}

static void
check_geometry(const char *fs_type, const char *opts, guint64 align,
               guint64 want_stripe, DaxfileTristate want, const char *want_fix)
{
    DaxfileFsInfo info = {0};

    info.fs_type = (char *)fs_type;
    info.block_size = 4096;
    daxfile_fs_geometry(&info, opts, align);
    g_assert_cmpuint(info.stripe, ==, want_stripe);
    g_assert_cmpint(info.geometry_aligned, ==, want);
    g_assert_cmpstr(info.geometry_fix, ==, want_fix);
    g_free(info.geometry_fix);
}

static void
test_geometry(void)
{
    const guint64 m2 = 2 << 20;

    check_geometry("xfs", "rw,sunit=4096,swidth=4096", m2, m2, DAXFILE_TRI_YES,
                   NULL);
    check_geometry("xfs", "rw,inode64", m2, 0, DAXFILE_TRI_NO,
                   "mkfs.xfs -d su=2m,sw=1");
    check_geometry("xfs", "rw,sunit=1024", m2, 512 << 10, DAXFILE_TRI_NO,
                   "mkfs.xfs -d su=2m,sw=1");
    check_geometry("xfs", "rw", 1 << 30, 0, DAXFILE_TRI_NO,
                   "mkfs.xfs -d su=1024m,sw=1");
    check_geometry("ext4", "rw,stripe=512", m2, m2, DAXFILE_TRI_YES, NULL);
    check_geometry("ext4", "rw,stripe=1024", m2, 4 << 20, DAXFILE_TRI_YES,
                   NULL);
    check_geometry("ext4", "rw", m2, 0, DAXFILE_TRI_NO,
                   "mkfs.ext4 -b 4096 -E stride=512,stripe_width=512");
    check_geometry("ext4", "rw", 4096, 0, DAXFILE_TRI_YES, NULL);
    check_geometry("tmpfs", "rw", m2, 0, DAXFILE_TRI_UNKNOWN, NULL);
}

/* The UUID where an ext4 and an xfs superblock keep it (what blkid
 * prints), nothing from anything else */
static void
test_superblock_uuid(void)
{
    static const guint8 want[16] = {0x94, 0xab, 0xa2, 0x2a, 0x3d, 0x25,
                                    0x44, 0x16, 0xbc, 0xa5, 0xd3, 0x9b,
                                    0x7b, 0x87, 0x1b, 0x93};
    guint8 buf[2048] = {0};
    guint8 got[16] = {0};

    g_assert_false(daxfile_superblock_uuid(buf, sizeof(buf), got));
    memcpy(buf, "XFSB", 4);
    memcpy(buf + 32, want, 16);
    g_assert_true(daxfile_superblock_uuid(buf, sizeof(buf), got));
    g_assert_cmpmem(got, 16, want, 16);
    g_assert_false(daxfile_superblock_uuid(buf, 40, got));
    memset(buf, 0, sizeof(buf));
    memset(got, 0, sizeof(got));
    buf[1024 + 0x38] = 0x53; /* s_magic 0xef53, little-endian */
    buf[1024 + 0x39] = 0xef;
    memcpy(buf + 1024 + 0x68, want, 16);
    g_assert_true(daxfile_superblock_uuid(buf, sizeof(buf), got));
    g_assert_cmpmem(got, 16, want, 16);
    g_assert_false(daxfile_superblock_uuid(buf, 1100, got));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fs/mountinfo/lookup", test_lookup);
    g_test_add_func("/fs/mountinfo/prefers-root", test_lookup_prefers_root);
    g_test_add_func("/fs/options", test_options);
    g_test_add_func("/fs/geometry", test_geometry);
    g_test_add_func("/fs/superblock-uuid", test_superblock_uuid);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daxfile_smaps_find(): what the hook reads of QEMU's mapping of a file */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-attest.h"
#include "daxfile-proc.h"

#define DEV makedev(0xfd, 0x01)
#define INO 1234

/* one VMA: header, a few of smaps's keys, VmFlags */
#define VMA(range, perms, off, devino, flags)                                 \
    range " " perms " " off " " devino "   /mnt/pmem/vm1.img\n"              \
    "Size:               2048 kB\n"                                           \
    "Rss:                   0 kB\n"                                          \
    "THPeligible:    0\n"                                                     \
    "VmFlags: " flags "\n"

static const char *const ANON =
    "7f0000000000-7f0000200000 ---p 00000000 00:00 0 \n"
    "Size:               2048 kB\n"
    "VmFlags: mr mw me sd\n";

static void
test_one_vma(void)
{
    g_autofree char *smaps = g_strconcat(
        ANON,
        VMA("7f0000200000-7f0000600000", "rw-s", "00000000", "fd:01 1234",
            "rd wr sh mr mw me ms sf"),
        NULL);
    DaxfileProcMap m;

    g_assert_true(daxfile_smaps_find(smaps, DEV, INO, &m));
    g_assert_cmphex(m.start, ==, 0x7f0000200000);
    g_assert_cmphex(m.end, ==, 0x7f0000600000);
    g_assert_cmpuint(m.offset, ==, 0);
    g_assert_true(m.shared);
    g_assert_true(m.sync);
    g_assert_cmpuint(m.vmas, ==, 1);
    g_assert_cmpuint(m.others, ==, 0);
}

/* split by madvise: contiguous VMAs in address and offset are one
 * mapping, synchronous only if every part is */
static void
test_split_vmas(void)
{
    g_autofree char *smaps = g_strconcat(
        VMA("7f0000200000-7f0000400000", "rw-s", "00000000", "fd:01 1234",
            "rd wr sh mr mw me ms sf hg"),
        VMA("7f0000400000-7f0000600000", "rw-s", "00200000", "fd:01 1234",
            "rd wr sh mr mw me ms"),
        NULL);
    DaxfileProcMap m;

    g_assert_true(daxfile_smaps_find(smaps, DEV, INO, &m));
    g_assert_cmphex(m.end - m.start, ==, 0x400000);
    g_assert_cmpuint(m.vmas, ==, 2);
    g_assert_true(m.shared);
    g_assert_false(m.sync);
}

/* private; another inode and another device with the same inode number
 * are not the file; a flag merely containing "sf" does not count */
static void
test_private_and_others(void)
{
    g_autofree char *smaps = g_strconcat(
        VMA("7f0000000000-7f0000200000", "rw-s", "00000000", "fd:01 999",
            "rd wr sh sf"),
        VMA("7f0000200000-7f0000400000", "rw-s", "00000000", "fd:02 1234",
            "rd wr sh sf"),
        VMA("7f0000400000-7f0000600000", "rw-p", "00000000", "fd:01 1234",
            "rd wr mr mw me sfx"),
        NULL);
    DaxfileProcMap m;

    g_assert_true(daxfile_smaps_find(smaps, DEV, INO, &m));
    g_assert_cmphex(m.start, ==, 0x7f0000400000);
    g_assert_false(m.shared);
    g_assert_false(m.sync);
}

/* two separate mappings: the larger is reported, the other counted; a
 * gap in the file offsets is not merged */
static void
test_two_mappings(void)
{
    g_autofree char *smaps = g_strconcat(
        VMA("7f0000000000-7f0000001000", "r--s", "00000000", "fd:01 1234",
            "rd sh mr me ms"),
        VMA("7f0000200000-7f0000400000", "rw-s", "00000000", "fd:01 1234",
            "rd wr sh mr mw me ms sf"),
        VMA("7f0000400000-7f0000600000", "rw-s", "00400000", "fd:01 1234",
            "rd wr sh mr mw me ms sf"),
        NULL);
    DaxfileProcMap m;

    g_assert_true(daxfile_smaps_find(smaps, DEV, INO, &m));
    g_assert_cmphex(m.start, ==, 0x7f0000200000);
    g_assert_cmphex(m.end, ==, 0x7f0000400000);
    g_assert_cmpuint(m.vmas, ==, 1);
    g_assert_cmpuint(m.others, ==, 2);
}

static void
test_not_mapped(void)
{
    DaxfileProcMap m;

    g_assert_false(daxfile_smaps_find(ANON, DEV, INO, &m));
    g_assert_false(daxfile_smaps_find("", DEV, INO, &m));
    g_assert_false(daxfile_smaps_find("garbage\nVmFlags: sf\n", DEV, INO, &m));
}

/* this process's own mapping of a file, read from its smaps */
static void
test_self(void)
{
    g_autofree char *path = NULL;
    g_autoptr(GError) error = NULL;
    int fd = g_file_open_tmp("daxfile-test-proc-XXXXXX", &path, &error);
    struct stat st;
    DaxfileProcMap m;
    char *smaps;
    void *addr;

    g_assert_no_error(error);
    g_assert_cmpint(ftruncate(fd, 1 << 20), ==, 0);
    g_assert_cmpint(fstat(fd, &st), ==, 0);
    addr = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_assert_true(addr != MAP_FAILED);
    smaps = daxfile_attest_read_smaps(getpid(), &error);
    g_assert_no_error(error);
    g_assert_true(daxfile_smaps_find(smaps, st.st_dev, st.st_ino, &m));
    g_free(smaps);
    g_assert_cmphex(m.start, ==, (guintptr)addr);
    g_assert_cmphex(m.end - m.start, ==, 1 << 20);
    g_assert_true(m.shared);
    g_assert_false(m.sync);  /* no MAP_SYNC asked for */
    munmap(addr, 1 << 20);
    smaps = daxfile_attest_read_smaps(getpid(), &error);
    g_assert_no_error(error);
    g_assert_false(daxfile_smaps_find(smaps, st.st_dev, st.st_ino, &m));
    g_free(smaps);
    close(fd);
    unlink(path);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/proc/smaps/one-vma", test_one_vma);
    g_test_add_func("/proc/smaps/split-vmas", test_split_vmas);
    g_test_add_func("/proc/smaps/private-and-others", test_private_and_others);
    g_test_add_func("/proc/smaps/two-mappings", test_two_mappings);
    g_test_add_func("/proc/smaps/not-mapped", test_not_mapped);
    g_test_add_func("/proc/smaps/self", test_self);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dax-probe: small DAX checks for the daxfile-vm guest scripts.
 *
 *   dax-probe statx PATH
 *       exit 0 iff statx() reports STATX_ATTR_DAX for PATH
 *   dax-probe mapsync PATH
 *       exit 0 iff mmap(MAP_SHARED_VALIDATE | MAP_SYNC) of PATH's first
 *       4 KiB works and a store + msync() succeed; exit 1 if the mapping is
 *       refused (EOPNOTSUPP/EINVAL, printed)
 *   dax-probe faults PATH [--sync] [--offset BYTES] [--expect-pmd]
 *       map 2 MiB of PATH (a file or a /dev/daxX.Y) at a 2 MiB-aligned
 *       address, write-touch its first byte, then one byte in each of the
 *       other 511 4 KiB pages; print the page faults (getrusage minflt +
 *       majflt) taken by the first touch and by the rest. A touch is an
 *       atomic add of 0: a write access that leaves the data unchanged. With
 * --expect-pmd exit 0 iff the first store faulted and the rest did not (one PMD
 *       mapping). --sync adds MAP_SHARED_VALIDATE | MAP_SYNC.
 *       Note: once any 4 KiB mapping of a 2 MiB file range has faulted
 *       (e.g. `mapsync`), the kernel keeps a 4 KiB DAX entry there and later
 *       faults in that range fall back to 4 KiB until the inode is evicted.
 *
 * Exit status: 0 check passed, 1 check failed, 2 usage or system error.
 * Everything printed goes to stdout (guest scripts capture it).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dax-util.h"

#define PROBE_PAGE 4096UL
/* A write access (so a write fault) that keeps the byte's value. */
#define PROBE_TOUCH(p) __atomic_fetch_add((char *)(p), 0, __ATOMIC_RELAXED)

static int
probe_usage(void)
{
    fprintf(
        stderr,
        "usage: dax-probe statx|mapsync PATH\n"
        "       dax-probe faults PATH [--sync] [--offset BYTES] [--expect-pmd]\n");
    return 2;
}

static int
probe_statx(const char *path)
{
    struct statx stx;

    if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) <
        0) {
        printf("statx '%s': %s\n", path, strerror(errno));
        return 2;
    }
    printf("'%s': attributes_mask.dax=%d attributes.dax=%d\n", path,
           !!(stx.stx_attributes_mask & STATX_ATTR_DAX),
           !!(stx.stx_attributes & STATX_ATTR_DAX));
    return (stx.stx_attributes & STATX_ATTR_DAX) ? 0 : 1;
}

static int
probe_mapsync(const char *path)
{
    int fd;
    volatile char *p;
    int ret = 0;

    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        printf("open '%s': %s\n", path, strerror(errno));
        return 2;
    }
    p = mmap(NULL, PROBE_PAGE, PROT_READ | PROT_WRITE,
             MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (p == MAP_FAILED) {
        printf("mmap(MAP_SHARED_VALIDATE|MAP_SYNC) of '%s' refused: %s\n", path,
               strerror(errno));
        close(fd);
        return (errno == EOPNOTSUPP || errno == EINVAL) ? 1 : 2;
    }
    PROBE_TOUCH(&p[0]);
    if (msync((void *)p, PROBE_PAGE, MS_SYNC) < 0) {
        printf("msync '%s': %s\n", path, strerror(errno));
        ret = 2;
    } else {
        printf("mmap(MAP_SHARED_VALIDATE|MAP_SYNC) of '%s': ok\n", path);
    }
    munmap((void *)p, PROBE_PAGE);
    close(fd);
    return ret;
}

static int
probe_faults(int argc, char **argv)
{
    const char *path = argv[0];
    uint64_t offset = 0;
    bool sync = false;
    int expect_pmd = 0;
    volatile char *p;
    long f0, f1, f2;
    unsigned long i;
    int fd;
    int a;

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--sync") == 0) {
            sync = true;
        } else if (strcmp(argv[a], "--expect-pmd") == 0) {
            expect_pmd = 1;
        } else if (strcmp(argv[a], "--offset") == 0 && a + 1 < argc) {
            if (!daxfile_size_parse_flags(argv[++a], DAXFILE_SIZE_ZERO, &offset,
                                          NULL) ||
                offset % DAX_PMD_SIZE) {
                fprintf(
                    stderr,
                    "dax-probe: invalid --offset '%s'; a multiple of 2 MiB\n",
                    argv[a]);
                return 2;
            }
        } else {
            return probe_usage();
        }
    }
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        printf("open '%s': %s\n", path, strerror(errno));
        return 2;
    }
    p = dax_map_aligned(fd, DAX_PMD_SIZE, offset, sync);
    if (!p) {
        printf("mmap 2 MiB of '%s' at offset %" PRIu64 ": %s\n", path, offset,
               strerror(errno));
        close(fd);
        return 2;
    }
    f0 = dax_faults_now();
    PROBE_TOUCH(&p[0]);
    f1 = dax_faults_now();
    for (i = PROBE_PAGE; i < DAX_PMD_SIZE; i += PROBE_PAGE)
        PROBE_TOUCH(&p[i]);
    f2 = dax_faults_now();
    printf("'%s' offset %" PRIu64
           "%s: first touch %ld fault(s), other 511 pages %ld fault(s)\n",
           path, offset, sync ? " MAP_SYNC" : "", f1 - f0, f2 - f1);
    munmap((void *)p, DAX_PMD_SIZE);
    close(fd);
    if (!expect_pmd)
        return 0;
    return (f1 - f0 >= 1 && f2 - f1 == 0) ? 0 : 1;
}

int
main(int argc, char **argv)
{
    if (argc < 3)
        return probe_usage();
    if (strcmp(argv[1], "statx") == 0 && argc == 3)
        return probe_statx(argv[2]);
    if (strcmp(argv[1], "mapsync") == 0 && argc == 3)
        return probe_mapsync(argv[2]);
    if (strcmp(argv[1], "faults") == 0)
        return probe_faults(argc - 2, argv + 2);
    return probe_usage();
}

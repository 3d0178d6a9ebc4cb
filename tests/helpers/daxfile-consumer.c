/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-consumer FILE [--sync|--pmem] [--private] [--misalign] [--also
 * FILE]... a stand-in for QEMU in tests
 *
 * Opens FILE O_RDWR, maps all of it MAP_SHARED (MAP_SHARED_VALIDATE |
 * MAP_SYNC with --sync; with --pmem as QEMU does with pmem=on: MAP_SYNC,
 * and plain MAP_SHARED where that is refused) at a 2 MiB-aligned
 * address, as QEMU does (--misalign: 4 KiB past one; --private:
 * MAP_PRIVATE), and each --also FILE the same way (read-only when it
 * cannot be opened for writing: an immutable file), prints "mapped PID",
 * then obeys one command per line on stdin about FILE, answering one line
 * each:
 *   write OFF LEN VAL   store VAL into every byte of [OFF, OFF+LEN)
 *   touch OFF LEN       store one byte per page (write faults)
 *   read OFF LEN        load one byte per page (read faults)
 *   verify OFF LEN VAL  "ok" or "bad OFFSET"
 *   msync               msync(MS_SYNC) the whole mapping
 *   remap               map the file again through the same fd
 *   exit N              exit with status N
 * A store or load that raises SIGBUS answers "sigbus" and goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static sigjmp_buf fault_jmp;
static unsigned char *map;
static size_t map_len;
static int private_flag;
static int map_prot = PROT_READ | PROT_WRITE;
static int misalign_flag;
static int pmem_flag;

#define HUGE_ALIGN (2UL << 20)

/* mmap @len of @fd at an address aligned as QEMU's qemu_ram_mmap() aligns
 * it: reserve more, then map over the aligned part */
static void *
aligned_map(size_t len, int prot, int flags, int fd)
{
    size_t skip = misalign_flag ? 4096 : 0;
    size_t total = len + HUGE_ALIGN + skip;
    unsigned char *area =
        mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uintptr_t at;

    if (area == MAP_FAILED)
        return MAP_FAILED;
    at = ((uintptr_t)area + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1);
    area = mmap((void *)(at + skip), len, prot, flags | MAP_FIXED, fd, 0);
    if (area == MAP_FAILED && pmem_flag && (flags & MAP_SYNC) &&
        errno == EOPNOTSUPP) /* QEMU: a warning, then without MAP_SYNC */
        area =
            mmap((void *)(at + skip), len, prot, MAP_SHARED | MAP_FIXED, fd, 0);
    return area;
}

static void
on_sigbus(int sig)
{
    siglongjmp(fault_jmp, 1);
}

static int
do_map(int fd, int sync_flag)
{
    int flags = sync_flag ? (MAP_SHARED_VALIDATE | MAP_SYNC) : MAP_SHARED;
    void *addr =
        aligned_map(map_len, map_prot, private_flag ? MAP_PRIVATE : flags, fd);

    if (addr == MAP_FAILED)
        return -errno;
    map = addr;
    return 0;
}

static int
in_range(unsigned long off, unsigned long len)
{
    return off <= map_len && len <= map_len - off;
}

/* One command; the answer goes to stdout. */
static void
run_command(char *line, int fd, int sync_flag)
{
    char cmd[16] = "";
    unsigned long off = 0, len = 0, val = 0, i;
    long page = sysconf(_SC_PAGESIZE);
    int n = sscanf(line, "%15s %lu %lu %lu", cmd, &off, &len, &val);
    volatile unsigned char sink = 0;

    if (n < 1)
        return;
    if (strcmp(cmd, "exit") == 0)
        exit((int)off);
    if (n >= 3 && !in_range(off, len)) {
        printf("error range\n");
        return;
    }
    if (sigsetjmp(fault_jmp, 1)) {
        printf("sigbus\n");
        return;
    }
    if (strcmp(cmd, "write") == 0 && n == 4) {
        memset(map + off, (int)val, len);
    } else if (strcmp(cmd, "touch") == 0 && n == 3) {
        for (i = off; i < off + len; i += page)
            map[i] = 0x5a;
    } else if (strcmp(cmd, "read") == 0 && n == 3) {
        for (i = off; i < off + len; i += page)
            sink += map[i];
    } else if (strcmp(cmd, "verify") == 0 && n == 4) {
        for (i = off; i < off + len; i++) {
            if (map[i] != (unsigned char)val) {
                printf("bad %lu\n", i);
                return;
            }
        }
    } else if (strcmp(cmd, "msync") == 0) {
        if (msync(map, map_len, MS_SYNC) < 0) {
            printf("error msync %s\n", strerror(errno));
            return;
        }
    } else if (strcmp(cmd, "remap") == 0) {
        int rc = do_map(fd, sync_flag);

        if (rc < 0) {
            printf("error mmap %s\n", strerror(-rc));
            return;
        }
    } else {
        printf("error unknown command\n");
        return;
    }
    (void)sink;
    printf("ok\n");
}

/* --also FILE: map it too, for the life of the process */
static int
map_also(const char *path, int sync_flag)
{
    int flags = sync_flag ? (MAP_SHARED_VALIDATE | MAP_SYNC) : MAP_SHARED;
    int prot = PROT_READ | PROT_WRITE;
    struct stat st;
    int fd = open(path, O_RDWR | O_CLOEXEC);

    if (fd < 0 && errno == EPERM) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        prot = PROT_READ;
    }
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0 ||
        aligned_map((size_t)st.st_size, prot,
                    private_flag ? MAP_PRIVATE : flags, fd) == MAP_FAILED) {
        fprintf(stderr, "daxfile-consumer: cannot map '%s': %s\n", path,
                strerror(errno));
        return 1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct sigaction sa;
    struct stat st;
    char line[256];
    int sync_flag = 0;
    int fd, rc, i;

    if (argc < 2) {
        fprintf(
            stderr,
            "usage: daxfile-consumer FILE [--sync|--pmem] [--private] [--misalign] [--also FILE]...\n");
        return 2;
    }
    for (i = 2; i < argc; i++) {
        pmem_flag |= strcmp(argv[i], "--pmem") == 0;
        sync_flag |= pmem_flag || strcmp(argv[i], "--sync") == 0;
        private_flag |= strcmp(argv[i], "--private") == 0;
        misalign_flag |= strcmp(argv[i], "--misalign") == 0;
    }
    for (i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--also") == 0 && map_also(argv[++i], sync_flag))
            return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    fd = open(argv[1], O_RDWR | O_CLOEXEC);
    if (fd < 0 && errno == EPERM) { /* immutable: map it read-only */
        fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        map_prot = PROT_READ;
    }
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
        fprintf(stderr, "daxfile-consumer: cannot open '%s': %s\n", argv[1],
                strerror(errno));
        return 1;
    }
    map_len = (size_t)st.st_size;
    rc = do_map(fd, sync_flag);
    if (rc < 0) {
        fprintf(stderr, "daxfile-consumer: cannot map '%s': %s\n", argv[1],
                strerror(-rc));
        return 1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigbus;
    sigaction(SIGBUS, &sa, NULL);
    printf("mapped %d\n", (int)getpid());
    while (fgets(line, sizeof(line), stdin))
        run_command(line, fd, sync_flag);
    return 0;
}

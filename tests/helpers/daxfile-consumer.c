/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-consumer FILE [--sync]: a stand-in for QEMU in tests
 *
 * Opens FILE O_RDWR, maps all of it MAP_SHARED (MAP_SHARED_VALIDATE |
 * MAP_SYNC with --sync, as QEMU does with pmem=on), prints "mapped PID",
 * then obeys one command per line on stdin, answering one line each:
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
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static sigjmp_buf fault_jmp;
static unsigned char *map;
static size_t map_len;

static void
on_sigbus(int sig)
{
    siglongjmp(fault_jmp, 1);
}

static int
do_map(int fd, int sync_flag)
{
    int flags = sync_flag ? (MAP_SHARED_VALIDATE | MAP_SYNC) : MAP_SHARED;
    void *addr = mmap(NULL, map_len, PROT_READ | PROT_WRITE, flags, fd, 0);

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

int
main(int argc, char **argv)
{
    struct sigaction sa;
    struct stat st;
    char line[256];
    int sync_flag = argc > 2 && strcmp(argv[2], "--sync") == 0;
    int fd, rc;

    if (argc < 2) {
        fprintf(stderr, "usage: daxfile-consumer FILE [--sync]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    fd = open(argv[1], O_RDWR | O_CLOEXEC);
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-dax: the measuring half of daxfile's benchmarks (bench/run). Runs on
 * the host and inside the VM harness's guests; libc, daxfile-common for
 * sizes and aligned mappings, and daxfile-guest's fault benchmark
 * (daxguest-bench.h); one JSON object per measurement on stdout,
 * errors on stderr. Sizes: daxfile_size_parse() (4096, 2M, 2MiB).
 *
 *   bench-dax fault PATH --mode 4k|2m --count N [--sync] [--offset BYTES]
 *       Map N pages (4 KiB or 2 MiB) of PATH (a file or /dev/daxX.Y) at a
 *       2 MiB-aligned address and write one byte to each page, timing every
 *       store (CLOCK_MONOTONIC). 4k mode first sets MADV_NOHUGEPAGE so every
 *       fault is a PTE fault. Faults are counted with getrusage. Then the
 *       same stores again (no faults: the cost of the timer and a store),
 *       and in 2m mode every 4 KiB page of the first two 2 MiB pages
 *       (0 extra faults = the first store mapped a PMD).
 *   bench-dax fill PATH SIZE METHOD [--daxfile BIN] [--allow-non-dax]
 *       Provision SIZE bytes and print the time. METHOD:
 *         raw-dd         dd if=/dev/zero of=PATH bs=1M oflag=direct conv=fsync
 *         raw-pwrite     pwrite zeroes, O_DIRECT, 1 MiB at a time, fsync
 *         falloc-dd      fallocate, then dd bs=1M conv=notrunc,fsync
 *         falloc-pwrite  fallocate, then pwrite zeroes 1 MiB at a time, fsync
 *         falloc-pwrite-64m  the same, 64 MiB at a time
 *         falloc-populate  fallocate, then mmap(MAP_SHARED) and
 *                        MADV_POPULATE_WRITE 64 MiB at a time, fsync (the
 *                        method daxfile create uses on DAX filesystems)
 *         wipe           daxfile wipe PATH, after an untimed daxfile create
 *         falloc-populate-sync  the same through a MAP_SYNC mapping, 2 MiB
 *                        at a time
 *         create         daxfile create PATH --size SIZE
 *   bench-dax populate PATH --size BYTES [--sync]
 *       What QEMU's prealloc=on does to a memory-backend-file (QEMU 7.2:
 *       MADV_POPULATE_WRITE over the mapping): map SIZE bytes of PATH
 *       MAP_SHARED (MAP_SHARED_VALIDATE|MAP_SYNC with --sync, as with
 *       pmem=on), time one MADV_POPULATE_WRITE over all of it, count faults.
 *   bench-dax time [--append FILE] CMD [ARG...]
 *       Run CMD (from PATH, its stdout to /dev/null) and print its wall
 *       time. With --append: a transparent wrapper (a libvirt hook): CMD
 *       keeps its stdio, one JSON line with its arguments, time and wait
 *       status is appended to FILE, and the exit status is CMD's.
 *   bench-dax frag A B --chunk BYTES --count N [--write]
 *       fallocate N chunks to A and B in turn, so each file gets about N
 *       (unwritten) extents; --write then writes zeroes over all of A,
 *       which makes its extents written where they are.
 *   bench-dax extents PATH [--repeat N]
 *       Count PATH's extents (FIEMAP, 512 per call, FIEMAP_FLAG_SYNC as
 *       daxfile does) and the unwritten ones; with --repeat, also the
 *       median and minimum time of N more walks in this process.
 *
 * Exit status: 0 measured, 1 failed, 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daxfile-mmap.h"
#include "daxfile-size.h"
#include "daxguest-bench.h"
#include "daxguest-probe.h"

#define KIB ((uint64_t)1024)
#define MIB (1024 * KIB)
#define FILL_CHUNK MIB
#define PMD_SIZE (2 * MIB)
#define PMD_CHECK_CHUNKS 2
#define POPULATE_CHUNK (64 * MIB)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

extern char **environ;

static bool
streq(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

static int
usage(void)
{
    fprintf(stderr,
            "usage: bench-dax fault PATH --mode 4k|2m --count N [--sync] "
            "[--offset BYTES]\n"
            "       bench-dax fill PATH SIZE raw-dd|raw-pwrite|falloc-dd|"
            "falloc-pwrite|falloc-populate|create\n"
            "           [--daxfile BIN] [--allow-non-dax]\n"
            "       bench-dax populate PATH --size BYTES [--sync]\n"
            "       bench-dax time [--append FILE] CMD [ARG...]\n"
            "       bench-dax frag A B --chunk BYTES --count N [--write]\n"
            "       bench-dax extents PATH [--repeat N]\n");
    return 2;
}

static int
fail(const char *what, const char *path)
{
    fprintf(stderr, "bench-dax: %s '%s': %s\n", what, path, strerror(errno));
    return 1;
}

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples, in microseconds */
static double
pct_us(const uint64_t *sorted, size_t n, double q)
{
    return (double)daxguest_bench_percentile(sorted, (guint)n, q) / 1000.0;
}

/* Page faults of this process so far */
static long
faults_now(void)
{
    return (long)daxguest_fault_count();
}

/* A shared read-write mapping of @len bytes of @fd from @offset at a
 * 2 MiB-aligned address (so that 2 MiB faults can map PMDs); NULL with
 * errno set when it cannot be had */
static char *
map_aligned(int fd, uint64_t len, uint64_t offset, bool sync)
{
    int flags = sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
    void *addr = NULL;

    if (!daxfile_map_aligned(fd, len, offset, PROT_READ | PROT_WRITE, flags,
                             PMD_SIZE, &addr, NULL))
        return NULL;
    return addr;
}

/* ------------------------------------------------------------ fault */

typedef struct {
    const char *path;
    bool huge;
    bool sync;
    uint64_t count;
    uint64_t offset;
} FaultArgs;

static int
fault_parse(int argc, char **argv, FaultArgs *a)
{
    int i;

    if (argc < 3)
        return -1;
    a->path = argv[2];
    for (i = 3; i < argc; i++) {
        if (streq(argv[i], "--sync")) {
            a->sync = true;
        } else if (streq(argv[i], "--mode") && i + 1 < argc) {
            i++;
            if (streq(argv[i], "2m"))
                a->huge = true;
            else if (!streq(argv[i], "4k"))
                return -1;
        } else if (streq(argv[i], "--count") && i + 1 < argc) {
            if (!daxfile_size_parse(argv[++i], &a->count, NULL))
                return -1;
        } else if (streq(argv[i], "--offset") && i + 1 < argc) {
            if (!daxfile_size_parse_flags(argv[++i], DAXFILE_SIZE_ZERO,
                                          &a->offset, NULL))
                return -1;
        } else {
            return -1;
        }
    }
    return a->count ? 0 : -1;
}

static void
print_stats(const char *key, uint64_t *s, size_t n, bool last)
{
    double sum = 0;
    size_t i;

    qsort(s, n, sizeof(*s), cmp_u64);
    for (i = 0; i < n; i++)
        sum += (double)s[i];
    printf("\"%s\": {\"p50_us\": %.3f, \"p90_us\": %.3f, \"p99_us\": %.3f, "
           "\"max_us\": %.3f, \"mean_us\": %.3f}%s", key,
           pct_us(s, n, 0.50), pct_us(s, n, 0.90), pct_us(s, n, 0.99),
           (double)s[n - 1] / 1000.0, sum / (double)n / 1000.0,
           last ? "" : ", ");
}

static int
cmd_fault(int argc, char **argv)
{
    FaultArgs a = {0};
    uint64_t stride, len;
    uint64_t *first = NULL;
    uint64_t *again = NULL;
    char *base;
    long faults, extra = -1;
    int fd;

    if (fault_parse(argc, argv, &a) < 0)
        return usage();
    stride = a.huge ? PMD_SIZE : 4 * KIB;
    len = a.count * stride;
    first = malloc(a.count * sizeof(*first));
    again = malloc(a.count * sizeof(*again));
    if (!first || !again)
        return fail("cannot allocate samples for", a.path);
    /* fault the sample arrays in now, not inside the timed loop */
    memset(first, 0xff, a.count * sizeof(*first));
    memset(again, 0xff, a.count * sizeof(*again));
    fd = open(a.path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return fail("cannot open", a.path);
    base = map_aligned(fd, len, a.offset, a.sync);
    if (!base)
        return fail(a.sync ? "cannot map (MAP_SYNC)" : "cannot map", a.path);
    if (!a.huge && madvise(base, len, MADV_NOHUGEPAGE) < 0)
        return fail("madvise(MADV_NOHUGEPAGE) refused for", a.path);
    /* daxfile-guest bench's fault benchmark: timed stores, then again */
    faults = (long)daxguest_bench_stores((guint8 *)base, len, stride, first);
    daxguest_bench_stores((guint8 *)base, len, stride, again);
    /* extra faults touching every 4 KiB page of the first PMDs */
    if (a.huge)
        extra = (long)daxguest_bench_touch(
            (guint8 *)base, MIN(a.count, PMD_CHECK_CHUNKS) * PMD_SIZE);
    printf("{\"path\": \"%s\", \"mode\": \"%s\", \"sync\": %s, "
           "\"n\": %" PRIu64 ", \"faults\": %ld, \"pmd_extra_faults\": %ld, ",
           a.path, a.huge ? "2m" : "4k", a.sync ? "true" : "false", a.count,
           faults, extra);
    print_stats("first", first, a.count, false);
    print_stats("nofault", again, a.count, true);
    printf("}\n");
    munmap(base, len);
    close(fd);
    free(first);
    free(again);
    return 0;
}

/* ------------------------------------------------------------- fill */

/* Run argv and wait; its stdout goes to @out (a path) unless NULL */
static int
run_argv_to(char *const argv[], const char *out)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status, rc;

    posix_spawn_file_actions_init(&fa);
    if (out)
        posix_spawn_file_actions_addopen(&fa, 1, out,
                                         O_WRONLY | O_CREAT | O_TRUNC, 0600);
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "bench-dax: cannot run '%s'\n", argv[0]);
        return -1;
    }
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench-dax: '%s' failed (status 0x%x)\n", argv[0],
                status);
        return -1;
    }
    return 0;
}

static int
run_argv_out(char *const argv[], bool quiet)
{
    return run_argv_to(argv, quiet ? "/dev/null" : NULL);
}

static int
run_argv(char *const argv[])
{
    return run_argv_to(argv, NULL);
}

static int
write_zeroes(int fd, const char *path, uint64_t size, size_t chunk)
{
    void *buf = NULL;
    uint64_t off = 0;

    if (posix_memalign(&buf, 4096, chunk) != 0)
        return fail("cannot allocate a buffer for", path);
    memset(buf, 0, chunk);
    while (off < size) {
        size_t n = size - off < chunk ? size - off : chunk;
        ssize_t w = pwrite(fd, buf, n, (off_t)off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            free(buf);
            return fail("cannot write zeroes to", path);
        }
        off += (uint64_t)w;
    }
    free(buf);
    if (fsync(fd) < 0)
        return fail("cannot sync", path);
    return 0;
}

static int
fill_pwrite(const char *path, uint64_t size, bool raw, size_t chunk)
{
    int flags = raw ? O_WRONLY | O_DIRECT : O_WRONLY | O_CREAT | O_EXCL;
    int fd = open(path, flags | O_CLOEXEC, 0600);
    int ret;

    if (fd < 0)
        return fail("cannot open", path);
    if (!raw && fallocate(fd, 0, 0, (off_t)size) < 0) {
        close(fd);
        return fail("cannot fallocate", path);
    }
    ret = write_zeroes(fd, path, size, chunk);
    close(fd);
    return ret;
}

static int
fill_populate(const char *path, uint64_t size, bool sync)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    size_t chunk = sync ? 2 * MIB : POPULATE_CHUNK;
    uint64_t off;
    char *map;

    if (fd < 0)
        return fail("cannot create", path);
    if (fallocate(fd, 0, 0, (off_t)size) < 0)
        return fail("cannot fallocate", path);
    map = mmap(NULL, size, PROT_READ | PROT_WRITE,
               sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return fail("cannot map", path);
    for (off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;

        if (madvise(map + off, n, MADV_POPULATE_WRITE) < 0)
            return fail("MADV_POPULATE_WRITE failed on", path);
    }
    munmap(map, size);
    if (fsync(fd) < 0)
        return fail("cannot sync", path);
    close(fd);
    return 0;
}

static int
fill_dd(const char *path, uint64_t size, bool raw)
{
    char of[4096], count[64];
    char *dd_raw[] = {"dd", "if=/dev/zero", of, "bs=1M", count,
                      "oflag=direct", "conv=fsync", "status=none", NULL};
    char *dd_file[] = {"dd", "if=/dev/zero", of, "bs=1M", count,
                       "conv=notrunc,fsync", "status=none", NULL};

    snprintf(of, sizeof(of), "of=%s", path);
    snprintf(count, sizeof(count), "count=%" PRIu64, size / MIB);
    if (!raw) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

        if (fd < 0)
            return fail("cannot create", path);
        if (fallocate(fd, 0, 0, (off_t)size) < 0) {
            close(fd);
            return fail("cannot fallocate", path);
        }
        close(fd);
    }
    return run_argv(raw ? dd_raw : dd_file);
}

static int
fill_create(const char *path, uint64_t size, const char *daxfile,
            bool allow_non_dax)
{
    char sz[64];
    char *argv[] = {(char *)daxfile, "create", (char *)path, "--size", sz,
                    allow_non_dax ? "--allow-non-dax" : NULL, NULL};

    snprintf(sz, sizeof(sz), "%" PRIu64, size);
    return run_argv(argv);
}

/* A number field of daxfile's JSON output, or -1 */
static double
json_number(const char *json, const char *key)
{
    char pat[64];
    const char *p;

    snprintf(pat, sizeof(pat), "\"%s\"", key);
    p = strstr(json, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    while (*p == ' ' || *p == ':')
        p++;
    return strtod(p, NULL);
}

/* daxfile wipe --json of the file create made (untimed, before); its own
 * zeroing and read-back times into @zero_s and @verify_s */
static int
fill_wipe(const char *path, const char *daxfile, double *zero_s,
          double *verify_s)
{
    char out[] = "/tmp/bench-dax-wipe.XXXXXX";
    char *argv[] = {(char *)daxfile, "wipe", "--json", (char *)path, NULL};
    char json[4096] = "";
    int fd = mkstemp(out), rc;
    ssize_t n;

    if (fd < 0)
        return fail("cannot make a temporary file in", "/tmp");
    rc = run_argv_to(argv, out);
    n = pread(fd, json, sizeof(json) - 1, 0);
    json[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(out);
    *zero_s = json_number(json, "seconds");
    *verify_s = json_number(json, "verify_seconds");
    return rc;
}

static int
cmd_fill(int argc, char **argv)
{
    const char *daxfile = "daxfile";
    bool allow_non_dax = false;
    const char *path, *method;
    uint64_t size, t0, ns;
    double zero_s = -1, verify_s = -1;
    int i, rc;

    if (argc < 5 || !daxfile_size_parse(argv[3], &size, NULL) || size % MIB)
        return usage();
    path = argv[2];
    method = argv[4];
    for (i = 5; i < argc; i++) {
        if (streq(argv[i], "--allow-non-dax"))
            allow_non_dax = true;
        else if (streq(argv[i], "--daxfile") && i + 1 < argc)
            daxfile = argv[++i];
        else
            return usage();
    }
    if (streq(method, "wipe") &&
        fill_create(path, size, daxfile, allow_non_dax) != 0)
        return 1;
    t0 = now_ns();
    if (streq(method, "wipe"))
        rc = fill_wipe(path, daxfile, &zero_s, &verify_s);
    else if (streq(method, "raw-dd"))
        rc = fill_dd(path, size, true);
    else if (streq(method, "falloc-dd"))
        rc = fill_dd(path, size, false);
    else if (streq(method, "raw-pwrite"))
        rc = fill_pwrite(path, size, true, FILL_CHUNK);
    else if (streq(method, "falloc-pwrite"))
        rc = fill_pwrite(path, size, false, FILL_CHUNK);
    else if (streq(method, "falloc-pwrite-64m"))
        rc = fill_pwrite(path, size, false, 64 * MIB);
    else if (streq(method, "falloc-populate"))
        rc = fill_populate(path, size, false);
    else if (streq(method, "falloc-populate-sync"))
        rc = fill_populate(path, size, true);
    else if (streq(method, "create"))
        rc = fill_create(path, size, daxfile, allow_non_dax);
    else
        return usage();
    ns = now_ns() - t0;
    if (rc != 0)
        return 1;
    printf("{\"path\": \"%s\", \"method\": \"%s\", \"bytes\": %" PRIu64
           ", \"seconds\": %.6f, \"mib_per_s\": %.1f", path, method, size,
           (double)ns / 1e9, (double)size / MIB / ((double)ns / 1e9));
    if (zero_s >= 0 && verify_s >= 0)
        printf(", \"zero_seconds\": %.6f, \"verify_seconds\": %.6f", zero_s,
               verify_s);
    printf("}\n");
    return 0;
}

/* --------------------------------------------------------- populate */

static int
cmd_populate(int argc, char **argv)
{
    uint64_t size = 0, t0, ns;
    bool sync = false, ok = true;
    long f0, faults;
    char *map;
    int i, fd;

    if (argc < 3)
        return usage();
    for (i = 3; i < argc; i++) {
        if (streq(argv[i], "--sync"))
            sync = true;
        else if (streq(argv[i], "--size") && i + 1 < argc)
            ok = daxfile_size_parse(argv[++i], &size, NULL);
        else
            return usage();
        if (!ok)
            return usage();
    }
    if (!size)
        return usage();
    fd = open(argv[2], O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return fail("cannot open", argv[2]);
    map = map_aligned(fd, size, 0, sync);
    if (!map)
        return fail(sync ? "cannot map (MAP_SYNC)" : "cannot map", argv[2]);
    f0 = faults_now();
    t0 = now_ns();
    if (madvise(map, size, MADV_POPULATE_WRITE) < 0)
        return fail("MADV_POPULATE_WRITE failed on", argv[2]);
    ns = now_ns() - t0;
    faults = faults_now() - f0;
    munmap(map, size);
    close(fd);
    printf("{\"path\": \"%s\", \"bytes\": %" PRIu64 ", \"sync\": %s, "
           "\"seconds\": %.6f, \"faults\": %ld}\n", argv[2], size,
           sync ? "true" : "false", (double)ns / 1e9, faults);
    return 0;
}

/* ------------------------------------------------------------- time */

/* time --append FILE CMD...: a wrapper (e.g. a libvirt hook): CMD keeps
 * stdin, stdout and stderr, the time goes to FILE, the exit status is
 * CMD's. */
static int
time_append(const char *file, char **argv)
{
    uint64_t t0 = now_ns();
    pid_t pid;
    int status, fd, i;
    char line[1024];
    size_t len = 0;

    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench-dax: cannot run '%s'\n", argv[0]);
        return 127;
    }
    if (waitpid(pid, &status, 0) < 0)
        return 127;
    len += (size_t)snprintf(line, sizeof(line), "{\"argv\": \"");
    for (i = 1; argv[i] && len < sizeof(line) - 200; i++)
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s",
                                i > 1 ? " " : "", argv[i]);
    snprintf(line + len, sizeof(line) - len,
             "\", \"seconds\": %.6f, \"status\": %d}\n",
             (double)(now_ns() - t0) / 1e9, status);
    fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, line, strlen(line)) < 0)
            fprintf(stderr, "bench-dax: cannot write '%s'\n", file);
        close(fd);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int
cmd_time(int argc, char **argv)
{
    uint64_t t0, ns;

    if (argc >= 5 && streq(argv[2], "--append"))
        return time_append(argv[3], argv + 4);
    if (argc < 3)
        return usage();
    t0 = now_ns();
    if (run_argv_out(argv + 2, true) != 0)
        return 1;
    ns = now_ns() - t0;
    printf("{\"command\": \"%s\", \"seconds\": %.6f}\n", argv[2],
           (double)ns / 1e9);
    return 0;
}

/* ------------------------------------------------------------- frag */

static int
cmd_frag(int argc, char **argv)
{
    uint64_t chunk = 0, count = 0, i;
    bool write = false, ok = true;
    int fds[2], a, k;

    if (argc < 4)
        return usage();
    for (a = 4; a < argc; a++) {
        if (streq(argv[a], "--write"))
            write = true;
        else if (streq(argv[a], "--chunk") && a + 1 < argc)
            ok = daxfile_size_parse(argv[++a], &chunk, NULL);
        else if (streq(argv[a], "--count") && a + 1 < argc)
            ok = daxfile_size_parse(argv[++a], &count, NULL);
        else
            return usage();
        if (!ok)
            return usage();
    }
    if (!chunk || !count || chunk % 4096)
        return usage();
    for (k = 0; k < 2; k++) {
        fds[k] = open(argv[2 + k], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                      0600);
        if (fds[k] < 0)
            return fail("cannot create", argv[2 + k]);
    }
    /* the two files' allocations alternate on disk */
    for (i = 0; i < count; i++) {
        for (k = 0; k < 2; k++) {
            if (fallocate(fds[k], 0, (off_t)(i * chunk), (off_t)chunk) < 0)
                return fail("cannot fallocate", argv[2 + k]);
        }
    }
    /* written extents: convert A's in place (the extents stay apart) */
    if (write && write_zeroes(fds[0], argv[2], chunk * count, FILL_CHUNK) != 0)
        return 1;
    for (k = 0; k < 2; k++) {
        if (fsync(fds[k]) < 0)
            return fail("cannot sync", argv[2 + k]);
        close(fds[k]);
    }
    return 0;
}

/* ---------------------------------------------------------- extents */

typedef struct {
    uint64_t extents;
    uint64_t unwritten;
} ExtentCount;

/* One FIEMAP walk of the whole file, as daxfile does it (FLAG_SYNC) */
static int
walk_extents(int fd, const char *path, struct fiemap *fm, unsigned batch,
             ExtentCount *ret)
{
    uint64_t start = 0;
    bool last = false;
    unsigned i;

    memset(ret, 0, sizeof(*ret));
    while (!last) {
        memset(fm, 0, sizeof(*fm));
        fm->fm_start = start;
        fm->fm_length = FIEMAP_MAX_OFFSET - start;
        fm->fm_flags = FIEMAP_FLAG_SYNC;
        fm->fm_extent_count = batch;
        if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
            return fail("FIEMAP failed on", path);
        if (fm->fm_mapped_extents == 0)
            break;
        for (i = 0; i < fm->fm_mapped_extents; i++) {
            const struct fiemap_extent *fe = &fm->fm_extents[i];

            ret->extents++;
            if (fe->fe_flags & FIEMAP_EXTENT_UNWRITTEN)
                ret->unwritten++;
            if (fe->fe_flags & FIEMAP_EXTENT_LAST)
                last = true;
            start = fe->fe_logical + fe->fe_length;
        }
    }
    return 0;
}

static int
cmd_extents(int argc, char **argv)
{
    const unsigned batch = 512;
    uint64_t repeat = 0, r;
    uint64_t *samples = NULL;
    ExtentCount count;
    struct fiemap *fm;
    struct stat st;
    int fd;

    if (argc == 5 && streq(argv[3], "--repeat")) {
        if (!daxfile_size_parse(argv[4], &repeat, NULL))
            return usage();
    } else if (argc != 3) {
        return usage();
    }
    fd = open(argv[2], O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return fail("cannot open", argv[2]);
    fm = calloc(1, sizeof(*fm) + batch * sizeof(struct fiemap_extent));
    samples = calloc(repeat ? repeat : 1, sizeof(*samples));
    if (!fm || !samples)
        return fail("cannot allocate a FIEMAP buffer for", argv[2]);
    if (walk_extents(fd, argv[2], fm, batch, &count) != 0)
        return 1;
    for (r = 0; r < repeat; r++) {
        uint64_t t0 = now_ns();

        if (walk_extents(fd, argv[2], fm, batch, &count) != 0)
            return 1;
        samples[r] = now_ns() - t0;
    }
    printf("{\"path\": \"%s\", \"size\": %lld, \"extents\": %" PRIu64
           ", \"unwritten\": %" PRIu64, argv[2], (long long)st.st_size,
           count.extents, count.unwritten);
    if (repeat) {
        qsort(samples, repeat, sizeof(*samples), cmp_u64);
        printf(", \"walk_p50_us\": %.3f, \"walk_min_us\": %.3f",
               pct_us(samples, repeat, 0.5), (double)samples[0] / 1000.0);
    }
    printf("}\n");
    free(samples);
    free(fm);
    close(fd);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    if (streq(argv[1], "fault"))
        return cmd_fault(argc, argv);
    if (streq(argv[1], "fill"))
        return cmd_fill(argc, argv);
    if (streq(argv[1], "populate"))
        return cmd_populate(argc, argv);
    if (streq(argv[1], "time"))
        return cmd_time(argc, argv);
    if (streq(argv[1], "frag"))
        return cmd_frag(argc, argv);
    if (streq(argv[1], "extents"))
        return cmd_extents(argc, argv);
    return usage();
}

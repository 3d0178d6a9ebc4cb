/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxctl-test: TAP test of the daxctl() system call, run as root inside a
 * guest booted with the kernel from kernel/build-kernel.
 *
 *   daxctl-test --label NAME [--dir DIR] [--misaligned-dir DIR]
 *               [--offset-dir DIR] [--nondax-dir DIR] [--tmpfs-dir DIR]
 *               [--align BYTES] [--number-from N] [--no-plan]
 *   daxctl-test --label NAME --persist-write|--persist-verify FILE --seed N
 *
 * DIR is on a DAX mount whose allocator gives align-aligned extents (ext4
 * -E stride=512,stripe_width=512 or xfs -d su=2m,sw=1); --misaligned-dir on
 * a default mkfs; --offset-dir on such an aligned mkfs, but in a partition
 * whose start is not align-aligned (the DAX partition offset must count);
 * --nondax-dir on a dax=never mount of ext4 or xfs; --tmpfs-dir on tmpfs.
 * Each directory given runs its section (at least one is needed): --dir
 * the life cycle, the fault path, fsync's writeback, the error cases and
 * memory failure (last: its pages stay poisoned), the others their
 * own cases (--persist-*: see persist_write()); xfs
 * allows one DAX filesystem per DAX device (holder), so a guest script may
 * have to mount them one at a time.  --number-from and --no-plan let a
 * guest script splice several runs into one TAP stream.
 *
 * The syscall number comes only from /sys/kernel/mm/daxfile/syscall_nr;
 * nothing is called if it is missing.  Every case prints one named
 * "ok"/"not ok" line; the expected errnos are the table in kernel/README.md.
 *
 * Its TAP goes through src/common/daxfile-tap.h (header-only, libc only).
 * Built static: gcc -static -O2 -Wall -I../../src/common -o daxctl-test
 * daxctl-test.c
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/swap.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daxfile-tap.h"

/* include/uapi/linux/dax.h of the patch series */
#define DAXCTL_F_GET (1 << 0)
#define DAXCTL_F_DAX (1 << 1)
#define DAXCTL_F_STATIC (1 << 2)

#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef FALLOC_FL_UNSHARE_RANGE
#define FALLOC_FL_UNSHARE_RANGE 0x40
#endif

#define SYSFS_NR "/sys/kernel/mm/daxfile/syscall_nr"
#define SYSFS_FLAGS "/sys/kernel/mm/daxfile/flags"
#define TRACEFS "/sys/kernel/tracing"

#define MIB (1024L * 1024L)
#define FILE_SIZE (8 * MIB)
#define EXT4_MAGIC 0xEF53
#define XFS_MAGIC 0x58465342

/* ext4 ioctls (fs/ext4/ext4.h) */
struct move_extent {
    uint32_t reserved;
    uint32_t donor_fd;
    uint64_t orig_start;
    uint64_t donor_start;
    uint64_t len;
    uint64_t moved_len;
};
#define EXT4_IOC_MOVE_EXT _IOWR('f', 15, struct move_extent)
#define EXT4_IOC_SWAP_BOOT _IO('f', 17)

/* xfs swapext (fs/xfs/libxfs/xfs_fs.h) */
struct xfs_bstime {
    long tv_sec;
    int32_t tv_nsec;
};
struct xfs_bstat {
    uint64_t bs_ino;
    uint16_t bs_mode;
    uint16_t bs_nlink;
    uint32_t bs_uid;
    uint32_t bs_gid;
    uint32_t bs_rdev;
    int32_t bs_blksize;
    int64_t bs_size;
    struct xfs_bstime bs_atime;
    struct xfs_bstime bs_mtime;
    struct xfs_bstime bs_ctime;
    int64_t bs_blocks;
    uint32_t bs_xflags;
    int32_t bs_extsize;
    int32_t bs_extents;
    uint32_t bs_gen;
    uint16_t bs_projid_lo;
    uint16_t bs_forkoff;
    uint16_t bs_projid_hi;
    uint16_t bs_sick;
    uint16_t bs_checked;
    unsigned char bs_pad[2];
    uint32_t bs_cowextsize;
    uint32_t bs_dmevmask;
    uint16_t bs_dmstate;
    uint16_t bs_aextents;
};
struct xfs_swapext {
    int64_t sx_version;
    int64_t sx_fdtarget;
    int64_t sx_fdtmp;
    int64_t sx_offset;
    int64_t sx_length;
    char sx_pad[16];
    struct xfs_bstat sx_stat;
};
#define XFS_IOC_SWAPEXT _IOWR('X', 109, struct xfs_swapext)

/* xfs exchange-range (6.10+, fs/xfs/libxfs/xfs_fs.h) */
struct xfs_exchange_range {
    int32_t file1_fd;
    uint32_t pad;
    uint64_t file1_offset;
    uint64_t file2_offset;
    uint64_t length;
    uint64_t flags;
};
#define XFS_IOC_EXCHANGE_RANGE _IOW('X', 129, struct xfs_exchange_range)

static long nr_daxctl = -1;
static const char *label = "fs";
static const char *dir;
static const char *misaligned_dir;
static const char *offset_dir;
static bool no_plan;
static const char *nondax_dir;
static const char *tmpfs_dir;
static long align = 2 * MIB;

/* ------------------------------------------------------------------ TAP */

/* each line on stdout as soon as it is complete */
static void
write_stdout(void *ctx, const char *text, size_t len)
{
    fwrite(text, 1, len, stdout);
    if (len && text[len - 1] == '\n')
        fflush(stdout);
}

static DaxfileTap tap = {.write = write_stdout};

/* "ok N - LABEL: NAME" */
static void
vreport(bool pass, const char *directive, const char *fmt, va_list ap)
{
    char name[512], desc[1024];

    vsnprintf(name, sizeof(name), fmt, ap);
    snprintf(desc, sizeof(desc), "%s: %s", label, name);
    daxfile_tap_result(&tap, pass, desc, directive);
}

static bool
report(bool pass, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(pass, NULL, fmt, ap);
    va_end(ap);
    return pass;
}

static void
skip(const char *why, const char *fmt, ...)
{
    char directive[300];
    va_list ap;

    snprintf(directive, sizeof(directive), "SKIP %s", why);
    va_start(ap, fmt);
    vreport(true, directive, fmt, ap);
    va_end(ap);
}

static void
diag(const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    daxfile_tap_diag(&tap, text);
}

/* rc/errno of a call, captured right after it */
struct res {
    long rc;
    int err;
};

#define CALL(expr)                                                             \
    ({                                                                         \
        errno = 0;                                                             \
        long rc_ = (long)(expr);                                               \
        (struct res){rc_, errno};                                              \
    })

static const char *
errname(int e)
{
    static char buf[32];

    switch (e) {
    case 0:
        return "0";
    case EPERM:
        return "EPERM";
    case ENOENT:
        return "ENOENT";
    case EIO:
        return "EIO";
    case EBADF:
        return "EBADF";
    case ENOMEM:
        return "ENOMEM";
    case EACCES:
        return "EACCES";
    case EBUSY:
        return "EBUSY";
    case EXDEV:
        return "EXDEV";
    case EISDIR:
        return "EISDIR";
    case EINVAL:
        return "EINVAL";
    case ETXTBSY:
        return "ETXTBSY";
    case EFBIG:
        return "EFBIG";
    case ENOSPC:
        return "ENOSPC";
    case ENOSYS:
        return "ENOSYS";
    case ENOTTY:
        return "ENOTTY";
    case EOPNOTSUPP:
        return "EOPNOTSUPP";
    case EBADE:
        return "EBADE";
    default:
        snprintf(buf, sizeof(buf), "errno %d", e);
        return buf;
    }
}

/* ok iff the call failed with @want */
static bool
expect_err(struct res r, int want, const char *fmt, ...)
{
    bool pass = r.rc == -1 && r.err == want;
    va_list ap;

    va_start(ap, fmt);
    vreport(pass, NULL, fmt, ap);
    va_end(ap);
    if (!pass)
        diag("  got rc=%ld %s, want -1 %s", r.rc, errname(r.err),
             errname(want));
    return pass;
}

/* ok iff the call returned @want */
static bool
expect_rc(struct res r, long want, const char *fmt, ...)
{
    bool pass = r.rc == want;
    va_list ap;

    va_start(ap, fmt);
    vreport(pass, NULL, fmt, ap);
    va_end(ap);
    if (!pass)
        diag("  got rc=%ld %s, want %ld", r.rc, errname(r.err), want);
    return pass;
}

/* --------------------------------------------------------------- helpers */

static long
daxctl(const char *path, int flags, long al)
{
    return syscall(nr_daxctl, path, flags, (int)al);
}

static char *
path_in(const char *d, const char *name)
{
    char *p;

    if (asprintf(&p, "%s/%s", d, name) < 0)
        abort();
    return p;
}

static char *
proc_fd(int fd)
{
    char *p;

    if (asprintf(&p, "/proc/self/fd/%d", fd) < 0)
        abort();
    return p;
}

static bool
read_sysfs_long(const char *path, long *ret, int base)
{
    char buf[64] = "", *end;
    FILE *f = fopen(path, "re");
    bool ok;

    if (!f)
        return false;
    ok = fgets(buf, sizeof(buf), f) != NULL;
    fclose(f);
    if (!ok)
        return false;
    errno = 0;
    *ret = strtol(buf, &end, base);
    return errno == 0 && end != buf && *end == '\n' && end[1] == '\0';
}

static void
fill(char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)(seed + i * 7 + (i >> 12));
}

/*
 * A provisioned file: fallocate the whole size, then overwrite it (which
 * converts the unwritten extents), fsync.  fallocate-then-write is what
 * gives aligned extents on xfs su=2m (dax-in-a-guest.md).
 */
static int
make_file(const char *path, off_t size, unsigned seed, bool write_all,
          bool do_falloc)
{
    char *buf = malloc(MIB);
    int fd, rc = -1;

    unlink(path);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || !buf)
        goto out;
    if (do_falloc && fallocate(fd, 0, 0, size) < 0)
        goto out;
    if (!write_all) {
        rc = ftruncate(fd, size);
        if (rc == 0)
            rc = fsync(fd);
        goto out;
    }
    for (off_t off = 0; off < size; off += MIB) {
        size_t n = size - off < MIB ? (size_t)(size - off) : MIB;

        fill(buf, n, seed + (unsigned)(off / MIB));
        if (pwrite(fd, buf, n, off) != (ssize_t)n)
            goto out;
    }
    rc = fsync(fd);
out:
    if (rc < 0)
        diag("  cannot create '%s': %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

/*
 * Byte offset of the partition holding @path on its whole device (0 for a
 * whole device): FIEMAP reports partition-relative addresses, the kernel
 * checks DAX-device offsets.
 */
static long long
part_start(const char *path)
{
    char sys[128];
    struct stat st;
    long start = 0;

    if (stat(path, &st) < 0)
        return 0;
    snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/start", major(st.st_dev),
             minor(st.st_dev));
    if (!read_sysfs_long(sys, &start, 10))
        return 0;
    return (long long)start * 512;
}

/*
 * FIEMAP: are all extents written, unshared and mapping file offsets to
 * device offsets congruent modulo @al, with no extent boundary inside an
 * @al chunk below the last partial chunk?  (What the kernel checks, minus
 * the pfn part; used to tell a kernel bug from an unlucky allocator.)
 */
static bool
extents_aligned(const char *path, long al, bool verbose)
{
    long long base = part_start(path);
    struct fiemap *fm;
    struct stat st;
    bool good = true;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    off_t tail;

    if (fd < 0 || fstat(fd, &st) < 0)
        return false;
    tail = st.st_size / al * al;
    fm = calloc(1, sizeof(*fm) + 256 * sizeof(struct fiemap_extent));
    fm->fm_length = FIEMAP_MAX_OFFSET;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = 256;
    if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
        close(fd);
        free(fm);
        return false;
    }
    for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
        struct fiemap_extent *e = &fm->fm_extents[i];
        bool bad = false;

        if (e->fe_flags & (FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_SHARED |
                           FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC))
            bad = true;
        if ((off_t)e->fe_logical < tail &&
            ((base + e->fe_physical - e->fe_logical) % al ||
             e->fe_logical % al))
            bad = true;
        if (bad)
            good = false;
        if (verbose || bad)
            diag("  extent %u: logical %#" PRIx64 " physical %#" PRIx64
                 "+%#llx length %#" PRIx64 " flags %#x%s",
                 i, (uint64_t)e->fe_logical, (uint64_t)e->fe_physical, base,
                 (uint64_t)e->fe_length, e->fe_flags, bad ? " (not ok)" : "");
    }
    if (fm->fm_mapped_extents == 0)
        good = false;
    close(fd);
    free(fm);
    return good;
}

static unsigned long
fs_magic(const char *path)
{
    struct statfs sfs;

    if (statfs(path, &sfs) < 0)
        return 0;
    return (unsigned long)sfs.f_type;
}

#ifndef STATX_ATTR_DAX
#define STATX_ATTR_DAX 0x00200000
#endif

/* Does a new file in @d get S_DAX?  (xfs silently mounts without DAX
 * when it cannot have the DAX device.) */
static bool
dir_is_dax(const char *d)
{
    char *p = path_in(d, "dax-probe");
    struct statx stx;
    bool dax = false;
    int fd;

    fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0)
            dax = stx.stx_attributes & STATX_ATTR_DAX;
        close(fd);
    }
    unlink(p);
    free(p);
    return dax;
}

/* Is reflink usable here?  Clone one scratch file into another. */
static bool
reflink_works(void)
{
    char *a = path_in(dir, "reflink-probe-a"),
         *b = path_in(dir, "reflink-probe-b");
    bool works = false;
    int fa, fb;

    if (make_file(a, MIB, 3, true, true) == 0) {
        fa = open(a, O_RDONLY | O_CLOEXEC);
        fb = open(b, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fa >= 0 && fb >= 0)
            works = ioctl(fb, FICLONE, fa) == 0;
        if (!works)
            diag("  FICLONE probe: %s", strerror(errno));
        if (fa >= 0)
            close(fa);
        if (fb >= 0)
            close(fb);
    }
    unlink(a);
    unlink(b);
    free(a);
    free(b);
    return works;
}

/* ------------------------------------------------------------- sections */

static bool
test_discovery(void)
{
    long flags = 0;
    bool have;

    have = read_sysfs_long(SYSFS_NR, &nr_daxctl, 10);
    report(have && nr_daxctl > 0, "%s holds a decimal syscall number",
           SYSFS_NR);
    if (have)
        diag("  daxctl() is syscall %ld", nr_daxctl);
    else
        nr_daxctl = -1;
    if (read_sysfs_long(SYSFS_FLAGS, &flags, 16))
        report(flags == (DAXCTL_F_GET | DAXCTL_F_STATIC),
               "%s is %#x (F_GET|F_STATIC)", SYSFS_FLAGS,
               DAXCTL_F_GET | DAXCTL_F_STATIC);
    else
        report(false, "%s is readable", SYSFS_FLAGS);
    return have;
}

/* The refusals, on a static file @p opened O_RDWR as @fd */
static void
test_layout_refused(const char *p, int fd, bool reflink)
{
    unsigned long magic = fs_magic(p);
    char *other = path_in(dir, "other.img");
    char *renamed = path_in(dir, "renamed.img");
    char buf[4096];
    int ofd, afd, tfd;

    memset(buf, 0x5a, sizeof(buf));
    make_file(other, FILE_SIZE, 9, true, true);
    ofd = open(other, O_RDWR | O_CLOEXEC);

    expect_err(CALL(truncate(p, FILE_SIZE / 2)), ETXTBSY,
               "truncate(2) shrinking a static file fails with ETXTBSY");
    expect_err(CALL(ftruncate(fd, FILE_SIZE / 2)), ETXTBSY,
               "ftruncate(2) shrinking fails with ETXTBSY");
    expect_err(CALL(ftruncate(fd, FILE_SIZE * 2)), ETXTBSY,
               "ftruncate(2) growing fails with ETXTBSY");
    expect_err(CALL(ftruncate(fd, FILE_SIZE)), ETXTBSY,
               "ftruncate(2) to the same size fails with ETXTBSY");
    tfd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
    expect_err((struct res){tfd, errno}, ETXTBSY,
               "open(O_TRUNC) fails with ETXTBSY");
    if (tfd >= 0)
        close(tfd);

    expect_err(CALL(fallocate(fd, 0, 0, MIB)), ETXTBSY,
               "fallocate(mode 0) inside i_size fails with ETXTBSY");
    expect_err(CALL(fallocate(fd, 0, FILE_SIZE, MIB)), ETXTBSY,
               "fallocate(mode 0) past EOF fails with ETXTBSY");
    expect_err(CALL(fallocate(fd, FALLOC_FL_KEEP_SIZE, FILE_SIZE, MIB)),
               ETXTBSY, "fallocate(KEEP_SIZE) past EOF fails with ETXTBSY");
    expect_err(
        CALL(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, MIB)),
        ETXTBSY, "fallocate(PUNCH_HOLE) fails with ETXTBSY");
    expect_err(CALL(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 2 * MIB, 2 * MIB)),
               ETXTBSY, "fallocate(COLLAPSE_RANGE) fails with ETXTBSY");
    expect_err(CALL(fallocate(fd, FALLOC_FL_INSERT_RANGE, 2 * MIB, 2 * MIB)),
               ETXTBSY, "fallocate(INSERT_RANGE) fails with ETXTBSY");
    expect_err(CALL(fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, MIB)), ETXTBSY,
               "fallocate(ZERO_RANGE) fails with ETXTBSY");
    expect_err(
        CALL(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, MIB)),
        ETXTBSY, "fallocate(ZERO_RANGE|KEEP_SIZE) fails with ETXTBSY");
    expect_err(CALL(fallocate(fd, FALLOC_FL_UNSHARE_RANGE, 0, MIB)), ETXTBSY,
               "fallocate(UNSHARE_RANGE) fails with ETXTBSY");

    expect_err(CALL(pwrite(fd, buf, 2, FILE_SIZE - 1)), ETXTBSY,
               "pwrite(2) crossing EOF fails with ETXTBSY");
    expect_err(CALL(pwrite(fd, buf, 4096, FILE_SIZE)), ETXTBSY,
               "pwrite(2) at EOF fails with ETXTBSY");
    afd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
    expect_err(CALL(write(afd, buf, 16)), ETXTBSY,
               "write(2) on an O_APPEND fd fails with ETXTBSY");
    if (afd >= 0)
        close(afd);

    if (ofd < 0) {
        report(false, "scratch file for clone/copy tests");
    } else {
        struct file_clone_range fcr = {
            .src_fd = ofd,
            .src_offset = 0,
            .src_length = 2 * MIB,
            .dest_offset = 0,
        };
        struct file_clone_range fcr2 = {
            .src_fd = fd,
            .src_offset = 0,
            .src_length = 2 * MIB,
            .dest_offset = 0,
        };
        struct {
            struct file_dedupe_range r;
            struct file_dedupe_range_info info[1];
        } dd;
        loff_t in = 0, out = 0;
        struct res r;

        expect_err(CALL(ioctl(fd, FICLONE, ofd)), ETXTBSY,
                   "FICLONE into a static file fails with ETXTBSY");
        expect_err(CALL(ioctl(ofd, FICLONE, fd)), ETXTBSY,
                   "FICLONE from a static file fails with ETXTBSY");
        expect_err(CALL(ioctl(fd, FICLONERANGE, &fcr)), ETXTBSY,
                   "FICLONERANGE into a static file fails with ETXTBSY");
        expect_err(CALL(ioctl(ofd, FICLONERANGE, &fcr2)), ETXTBSY,
                   "FICLONERANGE from a static file fails with ETXTBSY");

        memset(&dd, 0, sizeof(dd));
        dd.r.src_offset = 0;
        dd.r.src_length = 2 * MIB;
        dd.r.dest_count = 1;
        dd.info[0].dest_fd = fd;
        dd.info[0].dest_offset = 0;
        r = CALL(ioctl(ofd, FIDEDUPERANGE, &dd));
        if (magic == EXT4_MAGIC) {
            /* ext4 has no ->remap_file_range: refused before any dest */
            expect_err(
                r, EOPNOTSUPP,
                "FIDEDUPERANGE into a static file: EOPNOTSUPP (ext4 cannot dedupe at all)");
        } else {
            bool pass = r.rc == 0 && dd.info[0].status == -ETXTBSY;

            report(pass, "FIDEDUPERANGE into a static file: status ETXTBSY");
            if (!pass)
                diag("  got rc=%ld %s status=%d", r.rc, errname(r.err),
                     dd.info[0].status);
        }
        memset(&dd, 0, sizeof(dd));
        dd.r.src_length = 2 * MIB;
        dd.r.dest_count = 1;
        dd.info[0].dest_fd = ofd;
        expect_err(CALL(ioctl(fd, FIDEDUPERANGE, &dd)), ETXTBSY,
                   "FIDEDUPERANGE from a static file fails with ETXTBSY");

        expect_err(CALL(copy_file_range(ofd, &in, fd, &out, MIB, 0)), ETXTBSY,
                   "copy_file_range(2) into a static file fails with ETXTBSY");
        in = 0;
        out = 0;
        expect_rc(CALL(copy_file_range(fd, &in, ofd, &out, MIB, 0)), MIB,
                  "copy_file_range(2) out of a static file copies");
    }
    if (!reflink)
        diag(
            "  (this filesystem cannot reflink: the clone refusals above come from the VFS check, not from a real clone attempt)");

    expect_err(CALL(rename(p, renamed)), EPERM,
               "rename(2) of a static file fails with EPERM");
    expect_err(CALL(rename(other, p)), EPERM,
               "rename(2) onto a static file fails with EPERM");
    expect_err(CALL(unlink(p)), EPERM,
               "unlink(2) of a static file fails with EPERM");
    {
        char *linked = path_in(dir, "linked.img");

        /* A second name could lead outside the directory its user
         * manages (the libvirt hook refuses files with hard links). */
        expect_err(CALL(link(p, linked)), EPERM,
                   "link(2) to a static file fails with EPERM");
        unlink(linked);
        free(linked);
    }
    expect_err(CALL(swapon(p, 0)), EBUSY,
               "swapon(2) of a static file fails with EBUSY");

    {
        struct fsxattr fsx;
        int fl = 0;

        if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx) == 0) {
            fsx.fsx_xflags ^= FS_XFLAG_DAX;
            expect_err(
                CALL(ioctl(fd, FS_IOC_FSSETXATTR, &fsx)), ETXTBSY,
                "FS_IOC_FSSETXATTR toggling FS_XFLAG_DAX fails with ETXTBSY");
        } else {
            report(false, "FS_IOC_FSGETXATTR works");
        }
        if (ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0) {
            fl ^= FS_DAX_FL;
            expect_err(CALL(ioctl(fd, FS_IOC_SETFLAGS, &fl)), ETXTBSY,
                       "FS_IOC_SETFLAGS toggling FS_DAX_FL fails with ETXTBSY");
        } else {
            report(false, "FS_IOC_GETFLAGS works");
        }
    }

    if (magic == EXT4_MAGIC && ofd >= 0) {
        struct move_extent me = {
            .donor_fd = (uint32_t)fd,
            .orig_start = 0,
            .donor_start = 0,
            .len = 16,
        };
        struct move_extent me2 = {
            .donor_fd = (uint32_t)ofd,
            .orig_start = 0,
            .donor_start = 0,
            .len = 16,
        };
        struct res r = CALL(ioctl(ofd, EXT4_IOC_MOVE_EXT, &me));
        bool pass = r.rc == -1 && (r.err == ETXTBSY || r.err == EOPNOTSUPP);

        report(pass, "EXT4_IOC_MOVE_EXT with a static donor is refused");
        diag("  got %s (ext4 refuses DAX files with EOPNOTSUPP first)",
             errname(r.err));
        r = CALL(ioctl(fd, EXT4_IOC_MOVE_EXT, &me2));
        pass = r.rc == -1 && (r.err == ETXTBSY || r.err == EOPNOTSUPP);
        report(pass, "EXT4_IOC_MOVE_EXT on a static file is refused");
        diag("  got %s", errname(r.err));
        expect_err(CALL(ioctl(fd, EXT4_IOC_SWAP_BOOT)), ETXTBSY,
                   "EXT4_IOC_SWAP_BOOT on a static file fails with ETXTBSY");
    } else if (magic == XFS_MAGIC && ofd >= 0) {
        struct xfs_swapext sx;

        memset(&sx, 0, sizeof(sx));
        sx.sx_fdtarget = fd;
        sx.sx_fdtmp = ofd;
        sx.sx_length = FILE_SIZE;
        expect_err(CALL(ioctl(fd, XFS_IOC_SWAPEXT, &sx)), ETXTBSY,
                   "XFS_IOC_SWAPEXT with a static target fails with ETXTBSY");
        sx.sx_fdtarget = ofd;
        sx.sx_fdtmp = fd;
        expect_err(CALL(ioctl(ofd, XFS_IOC_SWAPEXT, &sx)), ETXTBSY,
                   "XFS_IOC_SWAPEXT with a static donor fails with ETXTBSY");

        for (int dir_ = 0; dir_ < 2; dir_++) {
            struct xfs_exchange_range xr = {
                .file1_fd = dir_ ? fd : ofd,
                .length = 2 * MIB,
            };
            const char *name =
                dir_
                    ? "XFS_IOC_EXCHANGE_RANGE from a static file fails with ETXTBSY"
                    : "XFS_IOC_EXCHANGE_RANGE into a static file fails with ETXTBSY";
            struct res r =
                CALL(ioctl(dir_ ? ofd : fd, XFS_IOC_EXCHANGE_RANGE, &xr));

            if (r.rc == -1 && (r.err == ENOTTY || r.err == EOPNOTSUPP))
                skip(r.err == ENOTTY
                         ? "no XFS_IOC_EXCHANGE_RANGE before 6.10"
                         : "exchange-range not possible on this filesystem",
                     "%s", name);
            else
                expect_err(r, ETXTBSY, "%s", name);
        }
    }

    if (ofd >= 0)
        close(ofd);
    unlink(other);
    free(other);
    free(renamed);
}

/* ---------------------------------------------------------- fault path */

/*
 * What the kernel did for this process's faults, from tracepoints: the
 * filesystem's journal handles (ext4) and transactions (xfs), MAP_SYNC
 * syncs (dax_insert_pfn_mkwrite runs only after a fault had to sync the
 * metadata), and the DAX fault results.
 */
struct fault_trace {
    long handles;  /* jbd2:jbd2_handle_start + xfs:xfs_trans_alloc */
    long syncs;    /* fs_dax:dax_insert_pfn_mkwrite */
    long pte, pmd; /* fs_dax:dax_{pte,pmd}_fault_done */
    long clean;    /* of those, NOPAGE without NEEDDSYNC/FALLBACK */
};

static const char *const fault_events[] = {
    "jbd2/jbd2_handle_start",        "xfs/xfs_trans_alloc",
    "fs_dax/dax_insert_pfn_mkwrite", "fs_dax/dax_pte_fault_done",
    "fs_dax/dax_pmd_fault_done",
};

static bool
write_str(const char *path, const char *str)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, str, strlen(str)) == (ssize_t)strlen(str);

    if (fd >= 0)
        close(fd);
    return ok;
}

/* The @n @events, for this process only; the trace emptied first */
static bool
trace_events(const char *const *events, size_t n, bool on)
{
    char path[256], pid[32];
    bool ok = true;

    if (on) {
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        ok = write_str(TRACEFS "/trace", "") &&
             write_str(TRACEFS "/set_event_pid", pid);
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), TRACEFS "/events/%s/enable", events[i]);
        ok = write_str(path, on ? "1" : "0") && ok;
    }
    return ok;
}

/* Every event in fault_events (trace_events()) */
static bool
trace_faults(bool on)
{
    return trace_events(fault_events,
                        sizeof(fault_events) / sizeof(*fault_events), on);
}

/* Whether tracefs offers @event ("system/name") */
static bool
have_event(const char *event)
{
    char path[256];

    snprintf(path, sizeof(path), TRACEFS "/events/%s/enable", event);
    return access(path, W_OK) == 0;
}

static bool
trace_read(struct fault_trace *ft)
{
    FILE *f = fopen(TRACEFS "/trace", "re");
    char line[1024];

    memset(ft, 0, sizeof(*ft));
    if (!f)
        return false;
    while (fgets(line, sizeof(line), f)) {
        bool pte = strstr(line, " dax_pte_fault_done: "),
             pmd = strstr(line, " dax_pmd_fault_done: ");

        if (strstr(line, " jbd2_handle_start: ") ||
            strstr(line, " xfs_trans_alloc: "))
            ft->handles++;
        else if (strstr(line, " dax_insert_pfn_mkwrite: "))
            ft->syncs++;
        if (!pte && !pmd)
            continue;
        ft->pte += pte;
        ft->pmd += pmd;
        if (strstr(line, "NOPAGE") && !strstr(line, "NEEDDSYNC") &&
            !strstr(line, "FALLBACK"))
            ft->clean++;
    }
    fclose(f);
    return true;
}

enum fault_how {
    FAULT_PTE,        /* MADV_NOHUGEPAGE: one write fault per 4 KiB page */
    FAULT_PMD,        /* one write fault per 2 MiB, mapped by a PMD */
    FAULT_READ_WRITE, /* read every page, then write it: pfn_mkwrite */
};

/*
 * Store into every page (or 2 MiB) of a fresh shared mapping of @fd, with
 * the fault events traced; @sync adds MAP_SYNC.  Returns the number of
 * write faults expected, or -1.
 */
static long
traced_writes(int fd, enum fault_how how, bool sync, struct fault_trace *ft)
{
    size_t step = how == FAULT_PMD ? 2 * MIB : 4096;
    volatile char *m;
    bool traced;

    m = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE,
             sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        diag("  mmap: %s", strerror(errno));
        return -1;
    }
    if (how == FAULT_PMD && (uintptr_t)m % (2 * MIB))
        diag("  mapping at %p is not 2 MiB aligned", (void *)m);
    if (how != FAULT_PMD)
        madvise((void *)m, FILE_SIZE, MADV_NOHUGEPAGE);
    traced = trace_faults(true);
    if (how == FAULT_READ_WRITE) {
        char sum = 0;

        for (size_t off = 0; off < FILE_SIZE; off += step)
            sum += m[off];
        m[0] = sum;
    }
    for (size_t off = 0; off < FILE_SIZE; off += step)
        m[off + 64] = (char)(off >> 12);
    trace_faults(false);
    munmap((void *)m, FILE_SIZE);
    if (!traced || !trace_read(ft)) {
        diag("  cannot trace through %s", TRACEFS);
        return -1;
    }
    return (long)(FILE_SIZE / step);
}

static void
diag_trace(const struct fault_trace *ft)
{
    diag(
        "  traced: %ld journal handles/transactions, %ld MAP_SYNC syncs, %ld PTE and %ld PMD faults (%ld NOPAGE)",
        ft->handles, ft->syncs, ft->pte, ft->pmd, ft->clean);
}

static bool
have_tracing(void)
{
    return have_event("fs_dax/dax_pte_fault_done");
}

/*
 * MAP_SYNC write faults on a static file, 2 MiB at a time: all clean PMD
 * faults (no FALLBACK, no NEEDDSYNC), no handle, no sync.
 */
static void
test_pmd_faults(int fd)
{
    const char *what =
        "MAP_SYNC write faults on a static file are clean PMD faults, with no journal handle or transaction";
    struct fault_trace ft;
    long n;

    if (!have_tracing() || align % (2 * MIB) != 0) {
        skip(have_tracing() ? "align is not a multiple of 2 MiB"
                            : "no fs_dax tracepoints (tracefs)",
             "%s", what);
        return;
    }
    n = traced_writes(fd, FAULT_PMD, true, &ft);
    if (!report(n > 0 && ft.pmd == n && ft.clean == n && ft.pte == 0 &&
                    ft.handles == 0 && ft.syncs == 0,
                "%s (%ld)", what, n))
        diag_trace(&ft);
}

static bool
stat_times(int fd, struct timespec *m, struct timespec *c)
{
    struct stat st;

    if (fstat(fd, &st) < 0)
        return false;
    *m = st.st_mtim;
    *c = st.st_ctim;
    return true;
}

static int
ts_cmp(struct timespec a, struct timespec b)
{
    if (a.tv_sec != b.tv_sec)
        return a.tv_sec < b.tv_sec ? -1 : 1;
    return a.tv_nsec < b.tv_nsec ? -1 : a.tv_nsec > b.tv_nsec;
}

/* One page stored through a fresh mapping (a write fault) */
static void
store_one(int fd)
{
    char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    if (m != MAP_FAILED) {
        m[100]++;
        munmap(m, 4096);
    }
}

/* One page loaded through a fresh mapping (a read fault) */
static void
load_one(int fd)
{
    volatile char *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

    if (m != MAP_FAILED) {
        (void)m[300];
        munmap((void *)m, 4096);
    }
}

/*
 * The timestamp rule (kernel/README.md): write faults on a static file
 * leave mtime and ctime alone; fsync()/msync(MS_SYNC) and release stamp
 * both if the file was written through a mapping since the last stamp.
 * 20 ms pauses let the kernel's coarse clock move between the steps.
 */
static void
test_fault_times(const char *p, int fd)
{
    struct timespec m0, c0, m1, c1;
    char *m;
    bool ok;

    ok = daxctl(p, DAXCTL_F_STATIC, align) == 0 && stat_times(fd, &m0, &c0);
    usleep(20000);
    store_one(fd);
    ok = ok && stat_times(fd, &m1, &c1);
    report(ok && ts_cmp(m1, m0) == 0 && ts_cmp(c1, c0) == 0,
           "write faults on a static file leave mtime and ctime alone");

    usleep(20000);
    ok = ok && fsync(fd) == 0 && stat_times(fd, &m1, &c1);
    report(
        ok && ts_cmp(m1, m0) > 0 && ts_cmp(c1, c0) > 0,
        "fsync(2) of a static file written through a mapping stamps mtime and ctime");

    m0 = m1;
    c0 = c1;
    usleep(20000);
    ok = ok && fsync(fd) == 0 && stat_times(fd, &m1, &c1);
    report(ok && ts_cmp(m1, m0) == 0 && ts_cmp(c1, c0) == 0,
           "fsync(2) again, nothing written since: mtime and ctime stay");

    usleep(20000);
    m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
        m[200]++;
        ok = ok && msync(m, 4096, MS_SYNC) == 0;
        munmap(m, 4096);
    }
    ok = ok && m != MAP_FAILED && stat_times(fd, &m1, &c1);
    report(ok && ts_cmp(m1, m0) > 0 && ts_cmp(c1, c0) > 0,
           "msync(MS_SYNC) after a store stamps mtime and ctime");

    m0 = m1;
    c0 = c1;
    usleep(20000);
    store_one(fd);
    usleep(20000);
    ok = ok && daxctl(p, 0, 0) == 0 && stat_times(fd, &m1, &c1);
    report(
        ok && ts_cmp(m1, m0) > 0 && ts_cmp(c1, c0) > 0,
        "release of a static file written since the last stamp stamps mtime and ctime");

    m0 = m1;
    c0 = c1;
    usleep(20000);
    ok = ok && daxctl(p, DAXCTL_F_STATIC, align) == 0;
    load_one(fd);
    usleep(20000);
    ok = ok && daxctl(p, 0, 0) == 0 && stat_times(fd, &m1, &c1);
    report(ok && ts_cmp(m1, m0) == 0 && ts_cmp(c1, c0) == 0,
           "release of a static file only read leaves mtime and ctime");
}

/*
 * Two provisioned 8 MiB test files in dir: @name, made static at align,
 * and its comparator @q_name (@q_written: written through, else allocated
 * and unwritten).  On failure it reports and returns false; pair_close()
 * cleans up either way.
 */
struct file_pair {
    char *p, *q;
    int fd, qfd;
};

static bool
pair_open(struct file_pair *fp, const char *name, const char *q_name,
          unsigned seed, bool q_written, const char *what)
{
    fp->p = path_in(dir, name);
    fp->q = path_in(dir, q_name);
    fp->fd = fp->qfd = -1;
    if (make_file(fp->p, FILE_SIZE, seed, true, true) < 0 ||
        make_file(fp->q, FILE_SIZE, seed + 1, q_written, true) < 0 ||
        (fp->fd = open(fp->p, O_RDWR | O_CLOEXEC)) < 0 ||
        (fp->qfd = open(fp->q, O_RDWR | O_CLOEXEC)) < 0) {
        report(false, "create the %s test files", what);
        return false;
    }
    return expect_rc(CALL(daxctl(fp->p, DAXCTL_F_STATIC, align)), 0,
                     "F_STATIC on the %s test file", what);
}

static void
pair_close(struct file_pair *fp)
{
    if (fp->fd >= 0)
        close(fp->fd);
    if (fp->qfd >= 0)
        close(fp->qfd);
    unlink(fp->p);
    unlink(fp->q);
    free(fp->p);
    free(fp->q);
}

/*
 * The fault path of a static file: 4 KiB, 2 MiB and read-then-write
 * faults, with and without MAP_SYNC, start no journal handle or
 * transaction and never sync; the same faults after release do (so the
 * count can fail), and MAP_SYNC faults on unwritten extents sync.
 */
static void
test_fault_path(void)
{
    static const struct {
        enum fault_how how;
        bool sync;
        const char *what;
    } cases[] = {
        /* first: PTE entries left in the mapping would make it fall back */
        {FAULT_PMD, true, "2 MiB MAP_SYNC write faults"},
        {FAULT_PTE, false, "4 KiB write faults"},
        {FAULT_PTE, true, "4 KiB MAP_SYNC write faults"},
        {FAULT_READ_WRITE, true, "4 KiB MAP_SYNC read faults, then writes"},
    };
    struct file_pair fp;
    struct fault_trace ft;
    int fd, ufd;
    long n;

    if (!have_tracing()) {
        skip("no fs_dax tracepoints (tracefs)",
             "the fault path of a static file (tracepoints)");
        return;
    }
    /* the comparator: allocated, unwritten */
    if (!pair_open(&fp, "faults.img", "unwritten.img", 5, false, "fault-path"))
        goto out;
    fd = fp.fd;
    ufd = fp.qfd;
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        if (cases[i].how == FAULT_PMD && align % (2 * MIB)) {
            skip("align is not a multiple of 2 MiB", "static file: %s",
                 cases[i].what);
            continue;
        }
        n = traced_writes(fd, cases[i].how, cases[i].sync, &ft);
        if (!report(
                n > 0 && ft.handles == 0 && ft.syncs == 0 && ft.clean >= n &&
                    ft.clean == ft.pte + ft.pmd,
                "static file: %s start no journal handle or transaction and never sync (%ld faults)",
                cases[i].what, n))
            diag_trace(&ft);
    }
    expect_rc(CALL(daxctl(fp.p, 0, 0)), 0, "release the fault-path test file");

    n = traced_writes(fd, FAULT_PTE, true, &ft);
    if (!report(
            n > 0 && ft.handles > 0,
            "after release the same 4 KiB write faults go through the filesystem (%ld handles or transactions)",
            ft.handles))
        diag_trace(&ft);
    n = traced_writes(ufd, FAULT_PTE, true, &ft);
    if (!report(
            n > 0 && ft.syncs > 0,
            "MAP_SYNC write faults on unwritten extents sync (%ld of %ld), which a static file never needs",
            ft.syncs, n))
        diag_trace(&ft);

    test_fault_times(fp.p, fd);
out:
    pair_close(&fp);
}

/* Drop CAP_LINUX_IMMUTABLE in a child and try to change the state. */
static void
test_no_capability(const char *static_path, const char *spare)
{
    int pipefd[2], errs[3] = {-1, -1, -1};
    pid_t pid;

    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        report(false, "pipe for the capability child");
        return;
    }
    pid = fork();
    if (pid == 0) {
        struct __user_cap_header_struct hdr = {
            .version = _LINUX_CAPABILITY_VERSION_3,
            .pid = 0,
        };
        struct __user_cap_data_struct data[2];
        int bit = CAP_LINUX_IMMUTABLE;

        close(pipefd[0]);
        if (syscall(SYS_capget, &hdr, data) < 0)
            _exit(2);
        data[bit / 32].effective &= ~(1u << (bit % 32));
        data[bit / 32].permitted &= ~(1u << (bit % 32));
        data[bit / 32].inheritable &= ~(1u << (bit % 32));
        if (syscall(SYS_capset, &hdr, data) < 0)
            _exit(3);
        errs[0] = daxctl(spare, DAXCTL_F_STATIC, 0) < 0 ? errno : 0;
        errs[1] = daxctl(static_path, 0, 0) < 0 ? errno : 0;
        errs[2] = (int)daxctl(static_path, DAXCTL_F_GET, 0);
        if (write(pipefd[1], errs, sizeof(errs)) != sizeof(errs))
            _exit(4);
        _exit(0);
    }
    close(pipefd[1]);
    if (pid < 0 || read(pipefd[0], errs, sizeof(errs)) != sizeof(errs))
        diag("  the child dropping CAP_LINUX_IMMUTABLE did not report");
    close(pipefd[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    report(errs[0] == EPERM,
           "F_STATIC without CAP_LINUX_IMMUTABLE fails with EPERM (got %s)",
           errs[0] < 0 ? "nothing" : errname(errs[0]));
    report(errs[1] == EPERM,
           "flags=0 without CAP_LINUX_IMMUTABLE fails with EPERM (got %s)",
           errs[1] < 0 ? "nothing" : errname(errs[1]));
    report(errs[2] == DAXCTL_F_STATIC,
           "F_GET without CAP_LINUX_IMMUTABLE still reports F_STATIC (got %d)",
           errs[2]);
}

static void
set_immutable(int fd, bool on)
{
    int fl = 0;

    if (ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0) {
        fl = on ? (fl | FS_IMMUTABLE_FL) : (fl & ~FS_IMMUTABLE_FL);
        if (ioctl(fd, FS_IOC_SETFLAGS, &fl) < 0)
            diag("  FS_IOC_SETFLAGS(immutable=%d): %s", on, strerror(errno));
    }
}

/* The main life cycle on one provisioned, aligned file. */
static void
test_lifecycle(bool reflink)
{
    char *p = path_in(dir, "static.img");
    char *spare = path_in(dir, "spare.img");
    char *pat_map = malloc(4096), *pat_new = malloc(4096),
         *pat_pw = malloc(4096);
    char *chk = malloc(4096);
    int rofd = -1, pathfd = -1, fd = -1;
    char *ro_link = NULL, *path_link = NULL;
    char *old_map = MAP_FAILED, *new_map = MAP_FAILED;
    bool aligned;
    struct res r;

    fill(pat_map, 4096, 101);
    fill(pat_new, 4096, 202);
    fill(pat_pw, 4096, 33);

    report(dir_is_dax(dir), "files in %s are DAX (STATX_ATTR_DAX)", dir);
    if (make_file(p, FILE_SIZE, 1, true, true) < 0 ||
        make_file(spare, FILE_SIZE, 2, true, true) < 0) {
        report(false, "create the provisioned test files");
        goto out;
    }
    aligned = extents_aligned(p, align, true);
    if (!aligned)
        diag(
            "  static.img is not %ld-aligned per FIEMAP: the mkfs options did not give aligned extents",
            align);

    fd = open(p, O_RDWR | O_CLOEXEC);
    rofd = open(p, O_RDONLY | O_CLOEXEC);
    pathfd = open(p, O_PATH | O_CLOEXEC);
    if (fd < 0 || rofd < 0 || pathfd < 0) {
        report(false, "open the test file (O_RDWR, O_RDONLY, O_PATH)");
        goto out;
    }
    ro_link = proc_fd(rofd);
    path_link = proc_fd(pathfd);

    /* A MAP_SYNC mapping that exists before the file becomes static */
    old_map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE,
                   MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    report(old_map != MAP_FAILED, "MAP_SYNC mapping before F_STATIC");
    if (old_map != MAP_FAILED)
        old_map[0] = old_map[0];

    expect_rc(CALL(daxctl(p, DAXCTL_F_GET, 0)), 0,
              "F_GET on a fresh file returns 0");
    expect_rc(CALL(daxctl(ro_link, DAXCTL_F_STATIC, align)), 0,
              "F_STATIC align=%ld through /proc/self/fd of an O_RDONLY fd",
              align);
    expect_rc(CALL(daxctl(p, DAXCTL_F_GET, 0)), DAXCTL_F_STATIC,
              "F_GET by path returns DAXCTL_F_STATIC");
    expect_rc(CALL(daxctl(path_link, DAXCTL_F_GET, 0)), DAXCTL_F_STATIC,
              "F_GET through /proc/self/fd of an O_PATH fd returns F_STATIC");
    expect_err(CALL(daxctl(p, DAXCTL_F_STATIC, align)), EBUSY,
               "F_STATIC again (double enable) fails with EBUSY");
    expect_err(CALL(daxctl(p, DAXCTL_F_STATIC, 0)), EBUSY,
               "F_STATIC again with another align fails with EBUSY");
    expect_err(CALL(daxctl(p, DAXCTL_F_DAX, 0)), EINVAL,
               "F_DAX fails with EINVAL");
    expect_err(CALL(daxctl(p, DAXCTL_F_GET | DAXCTL_F_STATIC, 0)), EINVAL,
               "F_GET|F_STATIC fails with EINVAL");
    expect_err(CALL(daxctl(p, 1 << 5, 0)), EINVAL,
               "an unknown flag fails with EINVAL");

    test_layout_refused(p, fd, reflink);

    /* What must keep working */
    if (old_map != MAP_FAILED) {
        memcpy(old_map + 4096, pat_map, 4096);
        report(memcmp(old_map + 4096, pat_map, 4096) == 0,
               "stores through the MAP_SYNC mapping made before F_STATIC");
    } else {
        report(false,
               "stores through the MAP_SYNC mapping made before F_STATIC");
    }
    new_map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE,
                   MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    report(new_map != MAP_FAILED,
           "a new writable MAP_SYNC mapping of a static file is allowed");
    if (new_map != MAP_FAILED) {
        memcpy(new_map + 2 * MIB + 8192, pat_new, 4096);
        report(memcmp(new_map + 2 * MIB + 8192, pat_new, 4096) == 0,
               "stores through the new MAP_SYNC mapping");
        munmap(new_map, FILE_SIZE);
    } else {
        report(false, "stores through the new MAP_SYNC mapping");
    }
    expect_rc(CALL(pwrite(fd, pat_pw, 4096, FILE_SIZE - 4096)), 4096,
              "pwrite(2) inside i_size works");
    expect_rc(CALL(fsync(fd)), 0, "fsync(2) works");
    test_pmd_faults(fd);

    /* F_GET must work on an immutable file */
    set_immutable(fd, true);
    expect_rc(CALL(daxctl(p, DAXCTL_F_GET, 0)), DAXCTL_F_STATIC,
              "F_GET on a static FS_IMMUTABLE_FL file returns F_STATIC");
    set_immutable(fd, false);

    test_no_capability(p, spare);

    /* Release */
    expect_rc(CALL(daxctl(path_link, 0, 0)), 0,
              "flags=0 through /proc/self/fd of an O_PATH fd releases it");
    expect_rc(CALL(daxctl(p, DAXCTL_F_GET, 0)), 0,
              "F_GET after release returns 0");
    expect_rc(CALL(daxctl(p, 0, 0)), 0,
              "flags=0 on a file that is not static returns 0");

    /* Data written while static is intact */
    r = CALL(pread(fd, chk, 4096, 4096));
    report(r.rc == 4096 && memcmp(chk, pat_map, 4096) == 0,
           "data stored through the old mapping is in the file");
    r = CALL(pread(fd, chk, 4096, 2 * MIB + 8192));
    report(r.rc == 4096 && memcmp(chk, pat_new, 4096) == 0,
           "data stored through the new mapping is in the file");
    r = CALL(pread(fd, chk, 4096, FILE_SIZE - 4096));
    report(r.rc == 4096 && memcmp(chk, pat_pw, 4096) == 0,
           "data written with pwrite(2) is in the file");

    /* Everything is allowed again */
    expect_rc(CALL(fallocate(fd, FALLOC_FL_KEEP_SIZE, FILE_SIZE, MIB)), 0,
              "after release: fallocate(KEEP_SIZE) past EOF works");
    expect_rc(CALL(pwrite(fd, pat_pw, 4096, FILE_SIZE)), 4096,
              "after release: an extending pwrite(2) works");
    expect_rc(CALL(ftruncate(fd, FILE_SIZE)), 0,
              "after release: ftruncate(2) works");
    {
        char *renamed = path_in(dir, "renamed.img");

        expect_rc(CALL(rename(p, renamed)), 0,
                  "after release: rename(2) works");
        rename(renamed, p);
        free(renamed);
    }

    /* A second cycle: the kernel's bookkeeping was cleaned up */
    expect_rc(CALL(daxctl(p, DAXCTL_F_STATIC, align)), 0,
              "F_STATIC again after release works");
    expect_rc(CALL(daxctl(p, 0, 0)), 0, "and releasing it again works");
    expect_rc(CALL(unlink(p)), 0, "after release: unlink(2) works");

out:
    if (old_map != MAP_FAILED)
        munmap(old_map, FILE_SIZE);
    if (fd >= 0)
        close(fd);
    if (rofd >= 0)
        close(rofd);
    if (pathfd >= 0)
        close(pathfd);
    unlink(p);
    unlink(spare);
    free(ro_link);
    free(path_link);
    free(p);
    free(spare);
    free(pat_map);
    free(pat_new);
    free(pat_pw);
    free(chk);
}

static void
expect_refused(const char *path, long al, int want, const char *what)
{
    struct res r = CALL(daxctl(path, DAXCTL_F_STATIC, al));

    expect_err(r, want, "F_STATIC on %s fails with %s", what, errname(want));
    if (r.rc == 0)
        daxctl(path, 0, 0);
}

static void
test_errors(bool reflink)
{
    char *sparse = path_in(dir, "sparse.img");
    char *unwritten = path_in(dir, "unwritten.img");
    char *empty = path_in(dir, "empty.img");
    char *good = path_in(dir, "good.img");
    char *tail = path_in(dir, "tail.img");
    char *missing = path_in(dir, "does-not-exist");
    int fd;

    expect_refused(dir, 0, EINVAL, "a directory");
    expect_refused(missing, 0, ENOENT, "a missing path");

    /* holes: first 4 KiB written, the rest sparse */
    fd = open(sparse, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        char buf[4096] = {1};

        if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf) ||
            ftruncate(fd, FILE_SIZE) < 0 || fsync(fd) < 0)
            diag("  cannot create sparse.img: %s", strerror(errno));
        close(fd);
    }
    expect_refused(sparse, 0, EINVAL, "a sparse file (holes)");

    /* unwritten: fallocate only */
    make_file(unwritten, FILE_SIZE, 0, false, true);
    expect_refused(unwritten, 0, EINVAL,
                   "a fallocated file (unwritten extents)");

    fd = open(empty, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    expect_refused(empty, 0, EINVAL, "an empty file");

    make_file(good, FILE_SIZE, 5, true, true);
    expect_refused(good, 3 * MIB, EINVAL, "align=3 MiB (not a power of two)");
    expect_refused(good, 1024, EINVAL, "align=1024 (below PAGE_SIZE)");
    expect_refused(good, -2 * MIB, EINVAL, "a negative align");
    expect_rc(CALL(daxctl(good, DAXCTL_F_STATIC, 4096)), 0,
              "F_STATIC with align=4096 works");
    expect_rc(CALL(daxctl(good, 0, 0)), 0, "and releases");

    /* i_size not a multiple of align: the partial last chunk is exempt */
    make_file(tail, FILE_SIZE - 12288, 6, true, true);
    if (extents_aligned(tail, align, false))
        expect_rc(CALL(daxctl(tail, DAXCTL_F_STATIC, align)), 0,
                  "F_STATIC on a file whose size is not a multiple of align");
    else
        skip("extents not aligned by the allocator",
             "F_STATIC on a file whose size is not a multiple of align");
    daxctl(tail, 0, 0);

    if (reflink) {
        char *clone = path_in(dir, "clone.img");
        int a = open(good, O_RDONLY | O_CLOEXEC);
        int b = open(clone, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        bool cloned = a >= 0 && b >= 0 && ioctl(b, FICLONE, a) == 0;

        report(cloned, "FICLONE between two non-static DAX files works");
        if (a >= 0)
            close(a);
        if (b >= 0) {
            fsync(b);
            close(b);
        }
        if (cloned) {
            expect_refused(good, 0, EINVAL, "a file with shared extents");
            expect_refused(clone, 0, EINVAL, "its reflinked copy");
            unlink(clone);
            /* xfs drops the refcounts in inodegc; activation flushes it */
            expect_rc(CALL(daxctl(good, DAXCTL_F_STATIC, 0)), 0,
                      "F_STATIC works once the reflinked copy is unlinked");
            daxctl(good, 0, 0);
        } else {
            skip("FICLONE failed", "F_STATIC on a file with shared extents");
            skip("FICLONE failed", "F_STATIC on its reflinked copy");
            skip("FICLONE failed",
                 "F_STATIC works once the reflinked copy is unlinked");
        }
        unlink(clone);
        free(clone);
    } else {
        skip("no reflink on this filesystem",
             "F_STATIC on a file with shared extents");
    }

    unlink(sparse);
    unlink(unwritten);
    unlink(empty);
    unlink(good);
    unlink(tail);
    free(sparse);
    free(unwritten);
    free(empty);
    free(good);
    free(tail);
    free(missing);
}

static void
test_misaligned(void)
{
    char *p, *spacer;
    bool misaligned = false;

    report(dir_is_dax(misaligned_dir), "files in %s are DAX", misaligned_dir);
    p = path_in(misaligned_dir, "misaligned.img");
    spacer = path_in(misaligned_dir, "spacer.img");
    /*
     * A default mkfs usually gives misaligned extents, but an allocator
     * may still align a large request by luck: then push the next
     * allocation off the boundary with a small spacer file and retry.
     */
    for (int attempt = 0; attempt < 4 && !misaligned; attempt++) {
        if (attempt > 0) {
            make_file(spacer, attempt * 68 * 1024, 0, true, false);
            unlink(p);
        }
        make_file(p, FILE_SIZE, 7, true, attempt == 0);
        misaligned = !extents_aligned(p, align, false);
    }
    if (!misaligned) {
        extents_aligned(p, align, true);
        skip("the allocator aligned this file every time",
             "F_STATIC align=%ld on misaligned extents", align);
    } else {
        extents_aligned(p, align, true);
        expect_refused(p, align, EINVAL, "misaligned extents (default mkfs)");
    }
    expect_rc(CALL(daxctl(p, DAXCTL_F_STATIC, 4096)), 0,
              "F_STATIC align=4096 on the same file works");
    daxctl(p, 0, 0);
    unlink(p);
    unlink(spacer);
    free(p);
    free(spacer);
}

/*
 * An aligned mkfs in a partition that starts off the align boundary: the
 * file looks aligned to the filesystem, not to the DAX device.
 */
static void
test_partition_offset(void)
{
    long long base;
    char *p;

    report(dir_is_dax(offset_dir), "files in %s are DAX", offset_dir);
    p = path_in(offset_dir, "offset.img");
    make_file(p, FILE_SIZE, 4, true, true);
    base = part_start(p);
    diag("  partition starts at %#llx", base);
    if (base % align == 0) {
        skip("the partition start is aligned",
             "F_STATIC align=%ld honours the partition offset", align);
    } else {
        long part_align = (long)(base & -base); /* lowest set bit */
        bool rel = true;
        struct fiemap *fm =
            calloc(1, sizeof(*fm) + 256 * sizeof(struct fiemap_extent));
        int fd = open(p, O_RDONLY | O_CLOEXEC);

        /* aligned relative to the partition? */
        fm->fm_length = FIEMAP_MAX_OFFSET;
        fm->fm_flags = FIEMAP_FLAG_SYNC;
        fm->fm_extent_count = 256;
        if (fd < 0 || ioctl(fd, FS_IOC_FIEMAP, fm) < 0 ||
            fm->fm_mapped_extents == 0)
            rel = false;
        for (unsigned i = 0; rel && i < fm->fm_mapped_extents; i++) {
            if ((fm->fm_extents[i].fe_physical - fm->fm_extents[i].fe_logical) %
                align)
                rel = false;
        }
        if (fd >= 0)
            close(fd);
        free(fm);
        if (rel)
            expect_refused(
                p, align, EINVAL,
                "a file aligned in its filesystem but not on the DAX device (partition offset)");
        else
            skip("extents not aligned even inside the filesystem",
                 "F_STATIC align=%ld honours the partition offset", align);
        if (rel && part_align >= 4096 && part_align < align) {
            expect_rc(CALL(daxctl(p, DAXCTL_F_STATIC, part_align)), 0,
                      "F_STATIC at the partition's own alignment (%ld) works",
                      part_align);
            daxctl(p, 0, 0);
        } else {
            skip("no smaller alignment to try",
                 "F_STATIC at the partition's own alignment");
        }
    }
    unlink(p);
    free(p);
}

/* A swap file on a non-DAX mount: daxctl must say EBUSY, not EINVAL. */
static void
test_swapfile(const char *d)
{
    char *p = path_in(d, "swap.img");
    char page[4096];
    int fd;
    struct res r;

    if (make_file(p, 4 * MIB, 0, true, true) < 0) {
        report(false, "create a swap file");
        goto out;
    }
    memset(page, 0, sizeof(page));
    *(uint32_t *)(page + 1024) = 1;                  /* version */
    *(uint32_t *)(page + 1028) = 4 * MIB / 4096 - 1; /* last_page */
    memcpy(page + 4096 - 10, "SWAPSPACE2", 10);
    fd = open(p, O_RDWR | O_CLOEXEC);
    if (fd < 0 || pwrite(fd, page, sizeof(page), 0) != sizeof(page) ||
        fsync(fd) < 0) {
        report(false, "write a swap header");
        if (fd >= 0)
            close(fd);
        goto out;
    }
    close(fd);
    r = CALL(swapon(p, 0));
    if (r.rc != 0) {
        skip("swapon failed",
             "F_STATIC on an active swap file fails with EBUSY");
        diag("  swapon: %s", errname(r.err));
        goto out;
    }
    expect_err(CALL(daxctl(p, DAXCTL_F_STATIC, 0)), EBUSY,
               "F_STATIC on an active swap file fails with EBUSY");
    swapoff(p);
out:
    unlink(p);
    free(p);
}

static void
test_nondax(void)
{
    char *p;

    if (nondax_dir) {
        p = path_in(nondax_dir, "nondax.img");
        make_file(p, FILE_SIZE, 8, true, true);
        expect_refused(p, 0, EINVAL, "a file on a dax=never mount");
        expect_rc(CALL(daxctl(p, DAXCTL_F_GET, 0)), 0,
                  "F_GET on a dax=never file returns 0");
        unlink(p);
        free(p);
        test_swapfile(nondax_dir);
    }
    if (tmpfs_dir) {
        p = path_in(tmpfs_dir, "tmpfs.img");
        make_file(p, MIB, 8, true, false);
        expect_refused(p, 0, EINVAL, "a tmpfs file");
        unlink(p);
        free(p);
    }
}

/*
 * --persist-write FILE: a provisioned file made static, then SEED's
 * pattern stored through a plain shared mapping (no MAP_SYNC, no msync,
 * no fsync), then "# DAXCTL-KILL-POINT" and a wait for the host to
 * SIGKILL QEMU.  --persist-verify FILE, after the next boot: the file
 * holds the pattern.
 */
static void
persist_write(const char *p, unsigned seed)
{
    char *m;
    int fd;

    if (make_file(p, FILE_SIZE, seed + 1000, true, true) < 0) {
        report(false, "create %s", p);
        return;
    }
    fd = open(p, O_RDWR | O_CLOEXEC);

    expect_rc(CALL(daxctl(p, DAXCTL_F_STATIC, align)), 0, "F_STATIC on %s", p);
    m = fd < 0
            ? MAP_FAILED
            : mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!report(m != MAP_FAILED, "a plain shared mapping of the static file"))
        return;
    for (off_t off = 0; off < FILE_SIZE; off += MIB)
        fill(m + off, MIB, seed + (unsigned)(off / MIB));
    report(true, "seed %u stored through it, no msync or fsync", seed);
    daxfile_tap_diag(&tap, "DAXCTL-KILL-POINT");
    for (;;)
        pause();
}

static void
persist_verify(const char *p, unsigned seed)
{
    char *buf = malloc(MIB), *want = malloc(MIB);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    off_t bad = -1;

    report(fd >= 0, "open %s after the SIGKILL", p);
    for (off_t off = 0; fd >= 0 && buf && want && off < FILE_SIZE; off += MIB) {
        fill(want, MIB, seed + (unsigned)(off / MIB));
        if (pread(fd, buf, MIB, off) != MIB || memcmp(buf, want, MIB)) {
            bad = off;
            break;
        }
    }
    report(
        fd >= 0 && bad < 0,
        "the file holds seed %u, stored through the mapping of the static file before QEMU was killed%s",
        seed, bad < 0 ? "" : " (it does not)");
    if (bad >= 0)
        diag("  first difference in the MiB at offset %lld", (long long)bad);
    expect_rc(CALL(daxctl(p, DAXCTL_F_GET, 0)), 0,
              "after a reboot the file is not static (in-core state only)");
    if (fd >= 0)
        close(fd);
    free(buf);
    free(want);
}

/* ------------------------------------- what a static file must keep doing */

/*
 * A static file is still a DAX file: fsync writes back the CPU caches of
 * what was stored through a plain shared mapping, exactly there, and a
 * memory error on one of its pages signals the processes that map it.
 * Issue 39's fault path must keep both; these cases prove them on the
 * series as it is, against the same file not static.
 */

#define CHUNK (2 * MIB)
#define NCHUNKS ((int)(FILE_SIZE / CHUNK))

/*
 * The writeback events of this process since the trace was emptied, as the
 * 2 MiB chunks of @ino they cover (a bit each) and the pages they flushed.
 * fs_dax:dax_writeback_one is one event per DAX entry written back.
 */
struct wb_trace {
    unsigned chunks;
    long events, pages;
};

static const char *const writeback_events[] = {"fs_dax/dax_writeback_one"};

static bool
trace_writeback(bool on)
{
    return trace_events(writeback_events, 1, on);
}

static bool
trace_read_writeback(unsigned long ino, struct wb_trace *wb)
{
    FILE *f = fopen(TRACEFS "/trace", "re");
    char line[1024];

    memset(wb, 0, sizeof(*wb));
    if (!f)
        return false;
    while (fgets(line, sizeof(line), f)) {
        const char *ev = strstr(line, " dax_writeback_one: ");
        unsigned long evino, pgoff, pglen;
        unsigned maj, min;

        if (!ev ||
            sscanf(ev,
                   " dax_writeback_one: dev %u:%u ino %lx pgoff %lx pglen %lx",
                   &maj, &min, &evino, &pgoff, &pglen) != 5 ||
            evino != ino)
            continue;
        wb->events++;
        wb->pages += (long)pglen;
        for (unsigned long pg = pgoff; pg < pgoff + pglen; pg++)
            if (pg * 4096 < (unsigned long)FILE_SIZE)
                wb->chunks |= 1u << (pg * 4096 / CHUNK);
    }
    fclose(f);
    return true;
}

/* Store one byte into each chunk in @chunks through @m */
static void
store_chunks(volatile char *m, unsigned chunks, char val)
{
    for (int c = 0; c < NCHUNKS; c++)
        if (chunks & (1u << c))
            m[(size_t)c * CHUNK + 3 * 4096 + 17] = val;
}

/*
 * One writeback case: store into @stored through @m, then @sync (fsync, or
 * msync(MS_SYNC) over the chunks in @range), and compare the chunks written
 * back with @want.
 */
static void
writeback_case(int fd, unsigned long ino, volatile char *m, unsigned stored,
               unsigned range, unsigned want, const char *what, const char *how)
{
    struct wb_trace wb = {0};
    bool traced;
    int rc;

    traced = trace_writeback(true);
    store_chunks(m, stored, (char)stored);
    if (range) {
        int first = __builtin_ctz(range), n = __builtin_popcount(range);

        rc = msync((char *)m + (size_t)first * CHUNK, (size_t)n * CHUNK,
                   MS_SYNC);
    } else {
        rc = fsync(fd);
    }
    trace_writeback(false);
    traced = traced && trace_read_writeback(ino, &wb);
    report(
        traced && rc == 0 && wb.chunks == want,
        "%s, %s: %s writes back chunks %#x of %d (got %#x: %ld events, %ld pages)",
        what, how, range ? "msync(MS_SYNC)" : "fsync", want, NCHUNKS, wb.chunks,
        wb.events, wb.pages);
}

/*
 * On a fresh plain shared mapping of @fd: nothing stored, then chunks 0
 * and 2, the same again through msync over chunks 0-1 then fsync, then
 * every chunk.  Only stores: 6.1's dax_insert_entry() marks an entry
 * dirty on a read fault too, 6.12's only on a write fault.
 */
static void
writeback_cases(int fd, const char *what, bool pmd)
{
    const char *how = pmd ? "2 MiB mappings" : "4 KiB mappings";
    unsigned all = (1u << NCHUNKS) - 1, some = 0x5 & all;
    volatile char *m;
    struct stat st;

    m = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED || fstat(fd, &st) < 0) {
        report(false, "%s, %s: a plain shared mapping (%s)", what, how,
               strerror(errno));
        return;
    }
    if (!pmd)
        madvise((void *)m, FILE_SIZE, MADV_NOHUGEPAGE);
    fsync(fd); /* whatever an earlier case left */
    writeback_case(fd, st.st_ino, m, 0, 0, 0, what,
                   "a fresh mapping, nothing stored");
    writeback_case(fd, st.st_ino, m, some, 0, some, what, how);
    writeback_case(fd, st.st_ino, m, 0, 0, 0, what, "again, nothing stored");
    writeback_case(fd, st.st_ino, m, some, 0x3 & all, some & 0x3, what, how);
    writeback_case(fd, st.st_ino, m, 0, 0, some & ~0x3u, what,
                   "what the msync left");
    writeback_case(fd, st.st_ino, m, all, 0, all, what, "every chunk stored");
    munmap((void *)m, FILE_SIZE);
}

static void
test_writeback(void)
{
    struct file_pair fp;

    if (!have_event(writeback_events[0])) {
        skip("no fs_dax tracepoints (tracefs)",
             "fsync of a static file writes back what was stored");
        return;
    }
    if (!pair_open(&fp, "writeback.img", "writeback-plain.img", 8, true,
                   "writeback"))
        goto out;
    /* 2 MiB first: the 4 KiB entries left behind would make it fall back */
    if (align % (2 * MIB) == 0)
        writeback_cases(fp.fd, "static file", true);
    writeback_cases(fp.fd, "static file", false);
    expect_rc(CALL(daxctl(fp.p, 0, 0)), 0, "release the writeback test file");
    writeback_cases(fp.qfd, "the same, not static", false);
out:
    pair_close(&fp);
}

/* What a child saw of MADV_HWPOISON on a page it maps */
struct mf_seen {
    int sig, code, lsb;
    uintptr_t addr, page;
    long rc;
    int err;
};

static struct mf_seen *mf_seen;

static void
mf_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    mf_seen->sig = sig;
    mf_seen->code = si->si_code;
    mf_seen->addr = (uintptr_t)si->si_addr;
    mf_seen->lsb = si->si_addr_lsb;
    _exit(0);
}

/* In a child: map @fd shared, store to a page, poison it */
static void
mf_child(int fd)
{
    struct sigaction sa = {.sa_sigaction = mf_handler, .sa_flags = SA_SIGINFO};
    volatile char *m;

    sigaction(SIGBUS, &sa, NULL);
    m = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        _exit(2);
    madvise((void *)m, FILE_SIZE, MADV_NOHUGEPAGE);
    mf_seen->page = (uintptr_t)m + CHUNK + 5 * 4096;
    *(volatile char *)mf_seen->page = 1;
    errno = 0;
    mf_seen->rc = madvise((void *)mf_seen->page, 4096, MADV_HWPOISON);
    mf_seen->err = errno;
    _exit(1);
}

static void
memory_failure_case(int fd, const char *what)
{
    struct mf_seen *s = mf_seen;
    int status = -1;
    pid_t pid;

    memset(s, 0, sizeof(*s));
    pid = fork();
    if (pid == 0)
        mf_child(fd);
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        report(false, "%s: MADV_HWPOISON in a child (fork: %s)", what,
               strerror(errno));
        return;
    }
    if (!report(
            WIFEXITED(status) && WEXITSTATUS(status) == 0 && s->sig == SIGBUS &&
                s->code == BUS_MCEERR_AR && s->addr == s->page && s->lsb == 12,
            "%s: MADV_HWPOISON on a mapped page delivers SIGBUS BUS_MCEERR_AR at that page's address",
            what))
        diag(
            "  child status %#x; signal %d code %d addr %#lx (page %#lx) lsb %d; madvise returned %ld (%s)",
            status, s->sig, s->code, (unsigned long)s->addr,
            (unsigned long)s->page, s->lsb, s->rc, errname(s->err));
}

static void
test_memory_failure(void)
{
    struct file_pair fp;

    mf_seen = mmap(NULL, sizeof(*mf_seen), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mf_seen == MAP_FAILED) {
        report(false, "memory failure: a shared page for the result");
        return;
    }
    if (!pair_open(&fp, "hwpoison.img", "hwpoison-plain.img", 10, true,
                   "memory-failure"))
        goto out;
    memory_failure_case(fp.fd, "static file");
    expect_rc(CALL(daxctl(fp.p, 0, 0)), 0,
              "release the memory-failure test file");
    memory_failure_case(fp.qfd, "the same, not static");
out:
    /* their poisoned pages stay poisoned for this boot (simulated) */
    pair_close(&fp);
    munmap(mf_seen, sizeof(*mf_seen));
}

static void
usage(void)
{
    fprintf(
        stderr,
        "usage: daxctl-test --label NAME [--dir DIR] [--misaligned-dir DIR] [--offset-dir DIR] [--nondax-dir DIR] [--tmpfs-dir DIR] [--align BYTES] [--number-from N] [--no-plan]\n"
        "       daxctl-test --label NAME --persist-write|--persist-verify FILE --seed N\n");
}

int
main(int argc, char **argv)
{
    const char *persist = NULL;
    bool persist_w = false;
    unsigned seed = 1;
    bool reflink;
    int number_from = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--no-plan") == 0) {
            no_plan = true;
            continue;
        }
        if (!v) {
            usage();
            return 2;
        }
        if (strcmp(a, "--label") == 0)
            label = v;
        else if (strcmp(a, "--dir") == 0)
            dir = v;
        else if (strcmp(a, "--misaligned-dir") == 0)
            misaligned_dir = v;
        else if (strcmp(a, "--offset-dir") == 0)
            offset_dir = v;
        else if (strcmp(a, "--number-from") == 0)
            number_from = atoi(v);
        else if (strcmp(a, "--nondax-dir") == 0)
            nondax_dir = v;
        else if (strcmp(a, "--tmpfs-dir") == 0)
            tmpfs_dir = v;
        else if (strcmp(a, "--align") == 0)
            align = strtol(v, NULL, 0);
        else if (strcmp(a, "--persist-write") == 0 ||
                 strcmp(a, "--persist-verify") == 0) {
            persist = v;
            persist_w = strcmp(a, "--persist-write") == 0;
        } else if (strcmp(a, "--seed") == 0)
            seed = (unsigned)strtoul(v, NULL, 0);
        else {
            usage();
            return 2;
        }
        i++;
    }
    if (!(dir || misaligned_dir || offset_dir || nondax_dir || tmpfs_dir ||
          persist) ||
        align <= 0 || number_from < 1) {
        usage();
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    tap.n = (unsigned)(number_from - 1);

    if (!test_discovery()) {
        char why[256];

        snprintf(why, sizeof(why), "%s: no %s, daxctl() is not advertised",
                 label, SYSFS_NR);
        daxfile_tap_bail_out(&tap, why);
        return 1;
    }
    if (persist) {
        if (persist_w)
            persist_write(persist, seed);
        else
            persist_verify(persist, seed);
        if (!no_plan)
            daxfile_tap_plan(&tap, tap.n);
        return tap.failed ? 1 : 0;
    }
    if (dir) {
        reflink = reflink_works();
        diag("%s: reflink %s", label, reflink ? "works" : "is not available");
        test_lifecycle(reflink);
        test_fault_path();
        test_writeback();
        test_errors(reflink);
        /* last: its pages stay poisoned */
        test_memory_failure();
    }
    if (misaligned_dir)
        test_misaligned();
    if (offset_dir)
        test_partition_offset();
    test_nondax();
    if (!no_plan)
        daxfile_tap_plan(&tap, tap.n);
    return tap.failed ? 1 : 0;
}

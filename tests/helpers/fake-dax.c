/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fake-dax.so: a test-only LD_PRELOAD shim that makes the files of chosen
 * filesystems look like DAX files, so that the immutable guard really
 * engages on a host without pmem. Never built into the product.
 *
 * DAXFILE_FAKE_DAX_DEVS="MAJ:MIN[,MAJ:MIN...]" names the devices. For a
 * regular file on one of them:
 *   statx()   reports STATX_ATTR_DAX (in the mask and the attributes);
 *   mmap()    drops MAP_SYNC from MAP_SHARED_VALIDATE|MAP_SYNC, which a
 *             page-cache filesystem refuses, and maps the same file.
 *   open()    of /proc/PID/smaps: VmFlags of a shared mapping of such a
 *             file gain "sf" (VM_SYNC) when that process asked for
 *             MAP_SYNC there, as the kernel would show on real DAX: the
 *             mmap() above notes each such mapping as a file
 *             "PID-START" in $DAXFILE_FAKE_DAX_SYNC.
 * DAXFILE_FAKE_DAX_NO_STATX=1 plays a kernel without STATX_ATTR_DAX
 * (before 5.8): statx() reports the attribute for no file, in neither the
 * mask nor the attributes, while mmap() above still takes MAP_SYNC.
 * Everything else is the real call. On an xfs loop mount the guard's
 * self-test then passes for real (mapped stores survive FS_IMMUTABLE_FL
 * there), and every refusal the guard promises is the kernel's own; on
 * ext4 the self-test fails for real (a store SIGBUSes), as it must.
 */
/* both symbols, mmap and mmap64, are defined here by their own names */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif

typedef int (*statx_fn)(int, const char *, int, unsigned int, struct statx *);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

static int
faked(unsigned int maj, unsigned int min)
{
    const char *devs = getenv("DAXFILE_FAKE_DAX_DEVS");
    const char *p = devs;

    while (p && *p) {
        unsigned int a, b;
        int n = 0;

        if (sscanf(p, "%u:%u%n", &a, &b, &n) != 2)
            return 0;
        if (a == maj && b == min)
            return 1;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

int
statx(int dirfd, const char *path, int flags, unsigned int mask,
      struct statx *buf)
{
    static statx_fn real;
    int saved, rc;

    if (!real)
        real = (statx_fn)dlsym(RTLD_NEXT, "statx");
    rc = real(dirfd, path, flags, mask, buf);
    saved = errno;
    if (rc == 0 && getenv("DAXFILE_FAKE_DAX_NO_STATX")) {
        buf->stx_attributes_mask &= ~(__u64)STATX_ATTR_DAX;
        buf->stx_attributes &= ~(__u64)STATX_ATTR_DAX;
    } else if (rc == 0 && S_ISREG(buf->stx_mode) &&
               faked(buf->stx_dev_major, buf->stx_dev_minor)) {
        buf->stx_attributes_mask |= STATX_ATTR_DAX;
        buf->stx_attributes |= STATX_ATTR_DAX;
    }
    errno = saved;
    return rc;
}

static int
fd_faked(int fd)
{
    struct stat st;

    return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
           faked(major(st.st_dev), minor(st.st_dev));
}

typedef int (*open_fn)(const char *, int, ...);

static open_fn
real_open(void)
{
    static open_fn real;

    if (!real)
        real = (open_fn)dlsym(RTLD_NEXT, "open");
    return real;
}

/* The file that says process @pid asked for MAP_SYNC at @start */
static int
sync_note(char *buf, size_t size, long pid, unsigned long long start)
{
    const char *dir = getenv("DAXFILE_FAKE_DAX_SYNC");

    return dir &&
           snprintf(buf, size, "%s/%ld-%llx", dir, pid, start) < (int)size;
}

static void *
fake_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    static mmap_fn real;
    int dropped = 0;
    void *at;

    if (!real)
        real = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
    if ((flags & MAP_SYNC) &&
        (flags & MAP_SHARED_VALIDATE) == MAP_SHARED_VALIDATE && fd_faked(fd)) {
        flags &= ~MAP_SYNC;
        dropped = 1;
    }
    at = real(addr, len, prot, flags, fd, off);
    if (dropped && at != MAP_FAILED) {
        char note[4096];
        int saved = errno;

        if (sync_note(note, sizeof(note), (long)getpid(),
                      (unsigned long long)(uintptr_t)at)) {
            int nfd = real_open()(note, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

            if (nfd >= 0)
                close(nfd);
        }
        errno = saved;
    }
    return at;
}

/* /proc/PID/smaps with "sf" added where sync_note() says so, in a memfd */
static int
fake_smaps(const char *path, long pid, int flags)
{
    int in = real_open()(path, flags);
    FILE *src, *dst;
    char line[4096];
    int mark = 0, out;

    if (in < 0)
        return in;
    out = memfd_create("smaps", MFD_CLOEXEC);
    src = fdopen(in, "r");
    if (out < 0 || !src) {
        if (out >= 0)
            close(out);
        if (src)
            fclose(src);
        else
            close(in);
        return real_open()(path, flags);
    }
    dst = fdopen(dup(out), "w");
    while (dst && fgets(line, sizeof(line), src)) {
        unsigned long long start, end, off, ino;
        unsigned int maj, min;
        char perms[5] = "";

        if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu", &start, &end, perms,
                   &off, &maj, &min, &ino) == 7) {
            char note[4096];

            mark = perms[3] == 's' && faked(maj, min) &&
                   sync_note(note, sizeof(note), pid, start) &&
                   access(note, F_OK) == 0;
        } else if (mark && strncmp(line, "VmFlags:", 8) == 0) {
            line[strcspn(line, "\n")] = '\0';
            fprintf(dst, "%s sf\n", line);
            continue;
        }
        fputs(line, dst);
    }
    fclose(src);
    if (dst)
        fclose(dst);
    lseek(out, 0, SEEK_SET);
    return out;
}

/* @path is "/proc/PID/smaps": its PID, else 0 */
static long
smaps_pid(const char *path)
{
    long pid = 0;
    int n = 0;

    if (path && sscanf(path, "/proc/%ld/smaps%n", &pid, &n) == 1 &&
        path[n] == '\0')
        return pid;
    return 0;
}

static int
fake_open(const char *path, int flags, mode_t mode)
{
    long pid = smaps_pid(path);

    if (pid > 0 && getenv("DAXFILE_FAKE_DAX_SYNC"))
        return fake_smaps(path, pid, flags);
    return real_open()(path, flags, mode);
}

/* open(2)'s optional third argument, present with O_CREAT or O_TMPFILE */
#define OPEN_MODE(flags)                                                       \
    mode_t mode = 0;                                                           \
    if (((flags)&O_CREAT) || ((flags)&O_TMPFILE) == O_TMPFILE) {               \
        va_list ap;                                                            \
        va_start(ap, flags);                                                   \
        mode = va_arg(ap, mode_t);                                             \
        va_end(ap);                                                            \
    }

int
open(const char *path, int flags, ...)
{
    OPEN_MODE(flags);
    return fake_open(path, flags, mode);
}

int
open64(const char *path, int flags, ...)
{
    OPEN_MODE(flags);
    return fake_open(path, flags, mode);
}

void *
mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return fake_mmap(addr, len, prot, flags, fd, off);
}

void *
mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    return fake_mmap(addr, len, prot, flags, fd, off);
}

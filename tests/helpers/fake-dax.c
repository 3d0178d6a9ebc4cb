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
 * Everything else is the real call. On an xfs loop mount the guard's
 * self-test then passes for real (mapped stores survive FS_IMMUTABLE_FL
 * there), and every refusal the guard promises is the kernel's own; on
 * ext4 the self-test fails for real (a store SIGBUSes), as it must.
 */
/* both symbols, mmap and mmap64, are defined here by their own names */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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
    if (rc == 0 && S_ISREG(buf->stx_mode) &&
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

static void *
fake_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    static mmap_fn real;

    if (!real)
        real = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
    if ((flags & MAP_SYNC) && (flags & MAP_SHARED_VALIDATE) ==
        MAP_SHARED_VALIDATE && fd_faked(fd))
        flags &= ~MAP_SYNC;
    return real(addr, len, prot, flags, fd, off);
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

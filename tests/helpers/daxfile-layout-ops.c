/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-layout-ops FILE OP [SRC]: try one operation that would change
 * FILE's layout (the list follows fstests' swapfile tests) and print "OK"
 * or the errno name (EPERM, ETXTBSY, ...). Used to show what static mode
 * refuses. Operations that succeed are undone where that is possible.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <unistd.h>

#define CHUNK (2 << 20)

static const char *file;
static const char *src;

static int
result(int rc)
{
    printf("%s\n", rc < 0 ? strerrorname_np(errno) : "OK");
    return 0;
}

static int
open_rw(void)
{
    return open(file, O_RDWR | O_CLOEXEC);
}

static int
op_fallocate(int mode, off_t off, off_t len)
{
    int fd = open_rw();

    if (fd < 0)
        return result(-1);
    return result(fallocate(fd, mode, off, len));
}

static int
op_remap(unsigned long req)
{
    int dst = open_rw();
    int sfd = src ? open(src, O_RDONLY | O_CLOEXEC) : -1;
    struct file_clone_range fcr = {0};
    char buf[sizeof(struct file_dedupe_range) +
             sizeof(struct file_dedupe_range_info)] = {0};
    struct file_dedupe_range *fdr = (struct file_dedupe_range *)buf;
    int rc;

    if (dst < 0 || sfd < 0)
        return result(-1);
    if (req == FICLONE)
        return result(ioctl(dst, FICLONE, sfd));
    if (req == FICLONERANGE) {
        fcr.src_fd = sfd;
        fcr.src_length = CHUNK;
        return result(ioctl(dst, FICLONERANGE, &fcr));
    }
    fdr->src_length = CHUNK;
    fdr->dest_count = 1;
    fdr->info[0].dest_fd = dst;
    rc = ioctl(sfd, FIDEDUPERANGE, fdr);
    if (rc == 0 && fdr->info[0].status < 0) {
        errno = -fdr->info[0].status;
        rc = -1;
    }
    return result(rc);
}

static int
op_path(const char *op, off_t size)
{
    char other[4096];
    int rc;

    snprintf(other, sizeof(other), "%s.daxfile-op", file);
    if (strcmp(op, "truncate") == 0)
        return result(truncate(file, size - CHUNK));
    if (strcmp(op, "rename") == 0) {
        rc = rename(file, other);
        if (rc == 0)
            rename(other, file);
        return result(rc);
    }
    if (strcmp(op, "link") == 0) {
        rc = link(file, other);
        if (rc == 0)
            unlink(other);
        return result(rc);
    }
    if (strcmp(op, "unlink") == 0)
        return result(unlink(file));
    if (strcmp(op, "chmod") == 0)
        return result(chmod(file, 0644));
    if (strcmp(op, "swapon") == 0) {
        rc = swapon(file, 0);
        if (rc == 0)
            swapoff(file);
        return result(rc);
    }
    return -1;
}

static int
op_fd(const char *op, off_t size)
{
    static const char zero[4096];
    int fd;

    if (strcmp(op, "open-rdwr") == 0)
        return result(open_rw());
    if (strcmp(op, "open-wronly") == 0)
        return result(open(file, O_WRONLY | O_CLOEXEC));
    if (strcmp(op, "open-trunc") == 0)
        return result(open(file, O_RDWR | O_TRUNC | O_CLOEXEC));
    if (strcmp(op, "open-rdonly") == 0)
        return result(open(file, O_RDONLY | O_CLOEXEC));
    if (strcmp(op, "ftruncate") != 0 && strcmp(op, "ftruncate-grow") != 0 &&
        strcmp(op, "pwrite-inside") != 0 && strcmp(op, "pwrite-extend") != 0 &&
        strcmp(op, "copy-range") != 0)
        return -1;
    fd = open_rw();
    if (fd < 0)
        return result(-1);
    if (strcmp(op, "ftruncate") == 0)
        return result(ftruncate(fd, size - CHUNK));
    if (strcmp(op, "ftruncate-grow") == 0)
        return result(ftruncate(fd, size + CHUNK));
    if (strcmp(op, "pwrite-inside") == 0)
        return result(pwrite(fd, zero, sizeof(zero), 0) < 0 ? -1 : 0);
    if (strcmp(op, "pwrite-extend") == 0)
        return result(pwrite(fd, zero, sizeof(zero), size) < 0 ? -1 : 0);
    {
        int sfd = src ? open(src, O_RDONLY | O_CLOEXEC) : -1;
        off64_t in = 0, out = 0;

        if (sfd < 0)
            return result(-1);
        return result(copy_file_range(sfd, &in, fd, &out, 4096, 0) < 0 ? -1
                                                                       : 0);
    }
}

int
main(int argc, char **argv)
{
    const char *op = argc > 2 ? argv[2] : "";
    struct stat st;

    if (argc < 3 || stat(argv[1], &st) < 0) {
        fprintf(stderr, "usage: daxfile-layout-ops FILE OP [SRC]\n");
        return 2;
    }
    file = argv[1];
    src = argc > 3 ? argv[3] : NULL;
    if (strcmp(op, "falloc-alloc") == 0)
        return op_fallocate(0, st.st_size, CHUNK);
    if (strcmp(op, "falloc-keep") == 0)
        return op_fallocate(FALLOC_FL_KEEP_SIZE, st.st_size, CHUNK);
    if (strcmp(op, "falloc-punch") == 0)
        return op_fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                            CHUNK);
    if (strcmp(op, "falloc-collapse") == 0)
        return op_fallocate(FALLOC_FL_COLLAPSE_RANGE, 0, CHUNK);
    if (strcmp(op, "falloc-insert") == 0)
        return op_fallocate(FALLOC_FL_INSERT_RANGE, 0, CHUNK);
    if (strcmp(op, "falloc-zero") == 0)
        return op_fallocate(FALLOC_FL_ZERO_RANGE, 0, CHUNK);
    if (strcmp(op, "falloc-unshare") == 0)
        return op_fallocate(FALLOC_FL_UNSHARE_RANGE, 0, CHUNK);
    if (strcmp(op, "clone") == 0)
        return op_remap(FICLONE);
    if (strcmp(op, "clonerange") == 0)
        return op_remap(FICLONERANGE);
    if (strcmp(op, "dedupe") == 0)
        return op_remap(FIDEDUPERANGE);
    if (op_path(op, st.st_size) == 0 || op_fd(op, st.st_size) == 0)
        return 0;
    fprintf(stderr, "daxfile-layout-ops: unknown operation '%s'\n", op);
    return 2;
}

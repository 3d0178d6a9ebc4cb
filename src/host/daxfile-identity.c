/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-identity.h"
#include "daxfile-sysfs.h"

/* How deep loop_backing() follows stacked devices (dm over md over loop) */
#define STACK_DEPTH 4

DaxfileIdentity
daxfile_identity_of(const struct stat *st)
{
    if (S_ISCHR(st->st_mode))
        return (DaxfileIdentity){st->st_rdev, 0};
    return (DaxfileIdentity){st->st_dev, st->st_ino};
}

/* A device number as loop_info64 carries it (the kernel's
 * new_encode_dev()) as a dev_t */
static guint64
loop_dev_decode(guint64 dev)
{
    return makedev((dev & 0xfff00) >> 8,
                   (dev & 0xff) | ((dev >> 12) & 0xfff00));
}

/* The backing file of the loop device (or partition of one) open at @fd,
 * as the kernel keeps it: device and inode (LOOP_GET_STATUS64). Never
 * the path sysfs shows: that is the path from the root of the process
 * that set the loop up, and from a chroot or another mount namespace it
 * names another file, or none. */
static gboolean
loop_status(int fd, const char *name, GArray *out, GError **error)
{
    struct loop_info64 info;
    DaxfileIdentity id;

    memset(&info, 0, sizeof(info));
    if (ioctl(fd, LOOP_GET_STATUS64, &info) < 0) {
        if (errno == ENXIO)
            return TRUE; /* no backing file: the loop is not set up */
        daxfile_set_error_errno(
            error, errno,
            "Cannot ask the loop device '%s' for its backing file", name);
        return FALSE;
    }
    id.dev = loop_dev_decode(info.lo_device);
    id.ino = info.lo_inode;
    g_array_append_val(out, id);
    return TRUE;
}

/* A node of the block device @name (in sysfs's class/block) to ask,
 * found by its device number in /dev/block/ or as /dev/@name; -1 with
 * @error set when there is none */
static int
block_node(const char *name, GError **error)
{
    g_autofree char *attr =
        g_build_filename("class", "block", name, "dev", NULL);
    g_autofree char *num = daxfile_sysfs_read(attr, NULL);
    g_autofree char *by_num = NULL;
    g_autofree char *by_name = g_build_filename("/dev", name, NULL);
    const char *nodes[2] = {NULL, by_name};
    unsigned int maj = 0, min = 0;
    guint i;

    if (num && sscanf(num, "%u:%u", &maj, &min) == 2)
        nodes[0] = by_num = g_strdup_printf("/dev/block/%u:%u", maj, min);
    for (i = 0; num && i < G_N_ELEMENTS(nodes); i++) {
        g_auto(DaxfileFd) pfd =
            nodes[i] ? open(nodes[i], O_PATH | O_CLOEXEC) : -1;
        struct stat st;

        if (pfd >= 0 && fstat(pfd, &st) == 0 && S_ISBLK(st.st_mode) &&
            st.st_rdev == makedev(maj, min))
            return daxfile_fd_reopen(pfd, O_RDONLY | O_NONBLOCK, nodes[i],
                                     error);
    }
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
        "Cannot tell which file the loop device '%s' is backed by: neither /dev/block/%u:%u nor /dev/%s is its node; fix: give the hook the host's /dev",
        name, maj, min, name);
    return -1;
}

/* The backing files of the loop devices under the block device @name at
 * @sysdir (relative to the sysfs root), through partitions and stacked
 * devices (slaves/), at most @depth levels down; @pfd is an O_PATH fd of
 * the device itself (-1: find its node). */
static gboolean
loop_backing(const char *sysdir, const char *name, int pfd, guint depth,
             GArray *out, GError **error)
{
    g_autofree char *part = g_build_filename(sysdir, "partition", NULL);
    g_autofree char *whole = g_build_filename(sysdir, "..", NULL);
    const char *dir = daxfile_sysfs_exists(part) ? whole : sysdir;
    g_autofree char *loop = g_build_filename(dir, "loop", NULL);
    g_autofree char *slaves =
        g_build_filename(daxfile_sysfs_root(), dir, "slaves", NULL);
    g_autoptr(GDir) d = depth > 0 ? g_dir_open(slaves, 0, NULL) : NULL;
    g_auto(DaxfileFd) fd = -1;
    const char *sub;

    if (daxfile_sysfs_exists(loop)) {
        fd = pfd >= 0
                 ? daxfile_fd_reopen(pfd, O_RDONLY | O_NONBLOCK, name, error)
                 : block_node(name, error);
        if (fd < 0 || !loop_status(fd, name, out, error))
            return FALSE;
    }
    while (d && (sub = g_dir_read_name(d))) {
        g_autofree char *subdir = g_build_filename("class", "block", sub, NULL);

        if (!loop_backing(subdir, sub, -1, depth - 1, out, error))
            return FALSE;
    }
    return TRUE;
}

/* What the block device @st, open at @pfd (O_PATH), stands on */
static gboolean
block_backing(int pfd, const struct stat *st, GArray *out, GError **error)
{
    g_autofree char *sysdir = g_strdup_printf(
        "dev/block/%u:%u", major(st->st_rdev), minor(st->st_rdev));
    g_autofree char *name = daxfile_fd_path(pfd);

    if (!daxfile_sysfs_exists(sysdir)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "Cannot tell what the block device '%s' stands on: '%s/%s' does not exist; fix: give the hook the host's sysfs",
            name, daxfile_sysfs_root(), sysdir);
        return FALSE;
    }
    return loop_backing(sysdir, name, pfd, STACK_DEPTH, out, error);
}

gboolean
daxfile_path_identities(const char *path, GArray *out, GError **error)
{
    g_auto(DaxfileFd) slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    g_auto(DaxfileFd) fd = -1;
    DaxfileIdentity id;
    struct stat st;

    if (!path || !*path)
        return TRUE;
    if (slash < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '/'");
        return FALSE;
    }
    fd = openat(slash, path, O_PATH | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return TRUE; /* it names nothing */
    id = daxfile_identity_of(&st);
    g_array_append_val(out, id);
    if (S_ISBLK(st.st_mode))
        return block_backing(fd, &st, out, error);
    return TRUE;
}

gboolean
daxfile_identities_have(GArray *ids, guint64 dev, guint64 ino)
{
    guint i;

    for (i = 0; i < ids->len; i++) {
        const DaxfileIdentity *id = &g_array_index(ids, DaxfileIdentity, i);

        if (id->dev == dev && id->ino == ino)
            return TRUE;
    }
    return FALSE;
}

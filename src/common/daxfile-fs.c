/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/fsmap.h>
#include <linux/magic.h>
#include <linux/stat.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-fs.h"
#include "daxfile-mount.h"
#include "daxfile-size.h"
#include "daxfile-sysfs.h"
#include "daxfile-util.h"

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

static const struct {
    guint64 magic;
    const char *name;
} fs_names[] = {
    {EXT4_SUPER_MAGIC, "ext4"}, /* also ext2/ext3: same magic */
    {XFS_SUPER_MAGIC, "xfs"},
    {TMPFS_MAGIC, "tmpfs"},
    {BTRFS_SUPER_MAGIC, "btrfs"},
    {0x2fc12fc1, "zfs"},
    {0x65735546, "fuse"},
    {NFS_SUPER_MAGIC, "nfs"},
    {OVERLAYFS_SUPER_MAGIC, "overlay"},
    {0xf2f52010, "f2fs"},
};

void
daxfile_fs_info_free(DaxfileFsInfo *info)
{
    if (!info)
        return;
    g_free(info->fs_type);
    g_free(info->dax_mode);
    g_free(info->map_sync_error);
    g_free(info->mount_point);
    g_free(info->device);
    g_free(info->geometry_fix);
    g_free(info);
}

void
daxfile_mount_entry_clear(DaxfileMountEntry *entry)
{
    g_clear_pointer(&entry->mount_point, g_free);
    g_clear_pointer(&entry->fs_type, g_free);
    g_clear_pointer(&entry->source, g_free);
    g_clear_pointer(&entry->super_options, g_free);
}

gboolean
daxfile_mountinfo_lookup(const char *mountinfo, guint major, guint minor,
                         DaxfileMountEntry *ret_entry)
{
    g_autoptr(GPtrArray) mounts = daxfile_mountinfo_parse(mountinfo);
    const DaxfileMount *best = NULL;
    guint i;

    /* Prefer a mount of the filesystem's root; take any bind mount else. */
    for (i = 0; i < mounts->len; i++) {
        const DaxfileMount *m = g_ptr_array_index(mounts, i);

        if (m->major != major || m->minor != minor)
            continue;
        if (!best || (STREQ(m->root, "/") && STRNEQ(best->root, "/")))
            best = m;
    }
    if (!best)
        return FALSE;
    daxfile_mount_entry_clear(ret_entry);
    ret_entry->mount_point = g_strdup(best->mount_point);
    ret_entry->fs_type = g_strdup(best->fs_type);
    ret_entry->source = g_strdup(best->source);
    ret_entry->super_options = g_strdup(best->super_options);
    return TRUE;
}

char *
daxfile_mount_option(const char *options, const char *key)
{
    g_auto(GStrv) opts = g_strsplit(options ? options : "", ",", -1);
    size_t keylen = strlen(key);
    guint i;

    for (i = 0; opts[i]; i++) {
        if (strncmp(opts[i], key, keylen) != 0)
            continue;
        if (opts[i][keylen] == '\0')
            return g_strdup("");
        if (opts[i][keylen] == '=')
            return g_strdup(opts[i] + keylen + 1);
    }
    return NULL;
}

static guint64
option_u64(const char *options, const char *key)
{
    g_autofree char *value = daxfile_mount_option(options, key);
    guint64 n = 0;

    if (!value ||
        !g_ascii_string_to_unsigned(value, 10, 0, G_MAXUINT32, &n, NULL))
        return 0;
    return n;
}

static char *
xfs_su_string(guint64 align)
{
    if (align % (1 << 20) == 0)
        return g_strdup_printf("%" G_GUINT64_FORMAT "m", align >> 20);
    return g_strdup_printf("%" G_GUINT64_FORMAT "k", align >> 10);
}

void
daxfile_fs_geometry(DaxfileFsInfo *info, const char *super_options,
                    guint64 align)
{
    gboolean is_xfs = STREQ(info->fs_type, "xfs");
    gboolean is_ext4 = STREQ(info->fs_type, "ext4");

    /* xfs shows sunit in 512-byte units, ext4 stripe in fs blocks */
    if (is_xfs)
        info->stripe = option_u64(super_options, "sunit") * 512;
    else if (is_ext4)
        info->stripe = option_u64(super_options, "stripe") * info->block_size;

    if (align <= info->block_size) {
        info->geometry_aligned = DAXFILE_TRI_YES;
    } else if (!is_xfs && !is_ext4) {
        info->geometry_aligned = DAXFILE_TRI_UNKNOWN;
    } else {
        info->geometry_aligned = info->stripe && info->stripe % align == 0
                                     ? DAXFILE_TRI_YES
                                     : DAXFILE_TRI_NO;
    }
    if (info->geometry_aligned != DAXFILE_TRI_NO)
        return;
    if (is_xfs) {
        g_autofree char *su = xfs_su_string(align);

        info->geometry_fix = g_strdup_printf("mkfs.xfs -d su=%s,sw=1", su);
    } else {
        guint64 stride = align / info->block_size;

        info->geometry_fix =
            g_strdup_printf("mkfs.ext4 -b %u -E stride=%" G_GUINT64_FORMAT
                            ",stripe_width=%" G_GUINT64_FORMAT,
                            info->block_size, stride, stride);
    }
}

DaxfileTristate
daxfile_fs_dax(int fd)
{
    struct statx stx;

    if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) < 0 ||
        !(stx.stx_attributes_mask & STATX_ATTR_DAX))
        return DAXFILE_TRI_UNKNOWN;
    return (stx.stx_attributes & STATX_ATTR_DAX) ? DAXFILE_TRI_YES
                                                 : DAXFILE_TRI_NO;
}

/* Whether the kernel maps @fd with MAP_SYNC; *ret_error (may be NULL)
 * the reason when not */
static gboolean
map_sync_works(int fd, char **ret_error)
{
    size_t len = daxfile_page_size();
    void *addr =
        mmap(NULL, len, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);

    if (addr == MAP_FAILED) {
        if (ret_error)
            *ret_error = g_strdup(g_strerror(errno));
        return FALSE;
    }
    munmap(addr, len);
    return TRUE;
}

static void
fs_probe_map_sync(int fd, DaxfileFsInfo *info)
{
    info->map_sync = map_sync_works(fd, &info->map_sync_error);
}

gboolean
daxfile_fs_dax_effective(DaxfileTristate dax, gboolean map_sync)
{
    return dax == DAXFILE_TRI_YES || (dax == DAXFILE_TRI_UNKNOWN && map_sync);
}

gboolean
daxfile_fd_dax_effective(int fd)
{
    DaxfileTristate dax = daxfile_fs_dax(fd);

    return daxfile_fs_dax_effective(dax, dax == DAXFILE_TRI_UNKNOWN &&
                                             map_sync_works(fd, NULL));
}

static void
fs_probe_mount(DaxfileFsInfo *info, guint64 align)
{
    g_autofree char *mountinfo = NULL;
    g_autofree char *start_attr = NULL;
    g_auto(DaxfileMountEntry) entry = {0};
    guint64 start = 0;

    start_attr = g_strdup_printf("dev/block/%u:%u/start", info->dev_major,
                                 info->dev_minor);
    if (daxfile_sysfs_read_u64(start_attr, &start, NULL))
        info->part_offset = start * 512;

    if (g_file_get_contents("/proc/self/mountinfo", &mountinfo, NULL, NULL) &&
        daxfile_mountinfo_lookup(mountinfo, info->dev_major, info->dev_minor,
                                 &entry)) {
        g_autofree char *dax = daxfile_mount_option(entry.super_options, "dax");

        info->mount_point = g_strdup(entry.mount_point);
        info->device = g_strdup(entry.source);
        if (dax)
            info->dax_mode = g_strdup(*dax ? dax : "always");
    }
    daxfile_fs_geometry(info, entry.super_options, align);
}

DaxfileFsInfo *
daxfile_fs_probe(int fd, guint64 align, GError **error)
{
    g_autoptr(DaxfileFsInfo) info = g_new0(DaxfileFsInfo, 1);
    g_autofree char *name = NULL;
    struct statfs sfs;
    struct statvfs svfs;
    struct stat st;
    size_t i;

    if (fstatfs(fd, &sfs) < 0 || fstatvfs(fd, &svfs) < 0 ||
        fstat(fd, &st) < 0) {
        int errsv = errno;

        name = daxfile_fd_path(fd);
        daxfile_set_error_errno(error, errsv,
                                "Cannot query the filesystem of '%s'", name);
        return NULL;
    }
    info->fs_magic = (guint64)(unsigned long)sfs.f_type;
    for (i = 0; i < G_N_ELEMENTS(fs_names) && !info->fs_type; i++) {
        if (fs_names[i].magic == info->fs_magic)
            info->fs_type = g_strdup(fs_names[i].name);
    }
    if (!info->fs_type)
        info->fs_type =
            g_strdup_printf("0x%" G_GINT64_MODIFIER "x", info->fs_magic);
    info->block_size = (guint32)svfs.f_bsize;
    info->available = (guint64)svfs.f_bavail * svfs.f_frsize;
    info->dev_major = major(st.st_dev);
    info->dev_minor = minor(st.st_dev);

    info->dax = daxfile_fs_dax(fd);
    fs_probe_map_sync(fd, info);
    fs_probe_mount(info, align);
    return g_steal_pointer(&info);
}

#define FSMAP_BATCH 256

gboolean
daxfile_fs_free_space(int fd, guint64 align, guint64 phys_offset,
                      guint64 *ret_free, guint64 *ret_aligned)
{
    g_autofree struct fsmap_head *head = g_malloc0(fsmap_sizeof(FSMAP_BATCH));
    guint64 total = 0, aligned = 0;

    head->fmh_count = FSMAP_BATCH;
    head->fmh_keys[1].fmr_device = G_MAXUINT32;
    head->fmh_keys[1].fmr_flags = G_MAXUINT32;
    head->fmh_keys[1].fmr_physical = G_MAXUINT64;
    head->fmh_keys[1].fmr_owner = G_MAXUINT64;
    head->fmh_keys[1].fmr_offset = G_MAXUINT64;
    for (;;) {
        const struct fsmap *last = NULL;
        guint i;

        if (ioctl(fd, FS_IOC_GETFSMAP, head) < 0) {
            g_debug("no free-space map: %s", g_strerror(errno));
            return FALSE;
        }
        for (i = 0; i < head->fmh_entries; i++) {
            const struct fsmap *r = &head->fmh_recs[i];
            guint64 start = phys_offset + r->fmr_physical;
            guint64 end = start + r->fmr_length;
            guint64 first = (start + align - 1) / align * align;

            last = r;
            if (r->fmr_owner != FMR_OWN_FREE)
                continue;
            total += r->fmr_length;
            if (end >= first + align)
                aligned += (end - first) / align * align;
        }
        if (!last || (last->fmr_flags & FMR_OF_LAST))
            break;
        head->fmh_keys[0] = *last; /* go on after it */
    }
    *ret_free = total;
    *ret_aligned = aligned;
    return TRUE;
}

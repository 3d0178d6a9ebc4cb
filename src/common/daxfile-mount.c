/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-mount.h"
#include "daxfile-sysfs.h"
#include "daxfile-util.h"

#define HANDLE_MAX 128 /* MAX_HANDLE_SZ */

void
daxfile_mount_free(DaxfileMount *mount)
{
    if (!mount)
        return;
    g_free(mount->root);
    g_free(mount->mount_point);
    g_free(mount->fs_type);
    g_free(mount->source);
    g_free(mount->super_options);
    g_free(mount);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static char *
unescape(const char *field)
{
    GString *out = g_string_new(NULL);
    const char *p;

    for (p = field; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
            p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            g_string_append_c(out, (char)(((p[1] - '0') << 6) |
                                          ((p[2] - '0') << 3) | (p[3] - '0')));
            p += 3;
        } else {
            g_string_append_c(out, *p);
        }
    }
    return g_string_free(out, FALSE);
}

/* "id parent maj:min root mountpoint opts [tags...] - fstype source
 * superopts" */
static DaxfileMount *
parse_line(const char *line)
{
    g_auto(GStrv) f = g_strsplit(line, " ", -1);
    guint n = g_strv_length(f);
    g_autoptr(DaxfileMount) m = g_new0(DaxfileMount, 1);
    guint64 id = 0;
    guint sep;

    if (n < 10 ||
        !g_ascii_string_to_unsigned(f[0], 10, 0, G_MAXUINT, &id, NULL) ||
        sscanf(f[2], "%u:%u", &m->major, &m->minor) != 2)
        return NULL;
    for (sep = 6; sep < n && STRNEQ(f[sep], "-"); sep++)
        ;
    if (sep + 3 >= n)
        return NULL;
    m->id = (guint)id;
    m->root = unescape(f[3]);
    m->mount_point = unescape(f[4]);
    m->fs_type = g_strdup(f[sep + 1]);
    m->source = unescape(f[sep + 2]);
    m->super_options = g_strdup(f[sep + 3]);
    return g_steal_pointer(&m);
}

GPtrArray *
daxfile_mountinfo_parse(const char *text)
{
    g_auto(GStrv) lines = g_strsplit(text ? text : "", "\n", -1);
    GPtrArray *mounts =
        g_ptr_array_new_with_free_func((GDestroyNotify)daxfile_mount_free);
    guint i;

    for (i = 0; lines[i]; i++) {
        DaxfileMount *m = parse_line(lines[i]);

        if (m)
            g_ptr_array_add(mounts, m);
    }
    return mounts;
}

GPtrArray *
daxfile_mounts_read(GError **error)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) local = NULL;

    if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, &local)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "Cannot read '/proc/self/mountinfo': %s", local->message);
        return NULL;
    }
    return daxfile_mountinfo_parse(text);
}

gboolean
daxfile_path_is_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    if (STREQ(dir, "/"))
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

gboolean
daxfile_fd_mount_id(int fd, guint *ret_id)
{
    g_autofree char *info_path = g_strdup_printf("/proc/self/fdinfo/%d", fd);
    g_autofree char *info = NULL;
    struct statx stx;
    const char *p;

    if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) == 0 &&
        (stx.stx_mask & STATX_MNT_ID)) {
        *ret_id = (guint)stx.stx_mnt_id;
        return TRUE;
    }
    if (!g_file_get_contents(info_path, &info, NULL, NULL))
        return FALSE;
    p = strstr(info, "mnt_id:");
    if (!p)
        return FALSE;
    *ret_id = (guint)g_ascii_strtoull(p + strlen("mnt_id:"), NULL, 10);
    return TRUE;
}

static const DaxfileMount *
mount_by_id(GPtrArray *mounts, guint id)
{
    guint i;

    for (i = 0; i < mounts->len; i++) {
        const DaxfileMount *m = g_ptr_array_index(mounts, i);

        if (m->id == id)
            return m;
    }
    return NULL;
}

gboolean
daxfile_fd_locate(int fd, guint64 *ret_dev, char **ret_fs_path, GError **error)
{
    g_autofree char *seen = daxfile_fd_target(fd);
    g_autofree char *name = daxfile_fd_path(fd);
    g_autoptr(GPtrArray) mounts = NULL;
    const DaxfileMount *m = NULL;
    const char *rel;
    struct stat st;
    guint id = 0;

    if (fstat(fd, &st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", name);
        return FALSE;
    }
    mounts = daxfile_mounts_read(error);
    if (!mounts)
        return FALSE;
    if (daxfile_fd_mount_id(fd, &id))
        m = mount_by_id(mounts, id);
    if (!seen || !g_path_is_absolute(seen) || !m || st.st_nlink == 0 ||
        !daxfile_path_is_under(seen, m->mount_point)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "Cannot tell where '%s' is: it is not reachable from this process's root (deleted, or in another mount namespace)",
            name);
        return FALSE;
    }
    rel = seen + (STREQ(m->mount_point, "/") ? 0 : strlen(m->mount_point));
    *ret_dev = st.st_dev;
    *ret_fs_path =
        g_canonicalize_filename(*rel == '/' ? rel + 1 : rel, m->root);
    return TRUE;
}

char *
daxfile_fd_handle(int fd)
{
    g_autofree struct file_handle *fh = g_malloc0(sizeof(*fh) + HANDLE_MAX);
    g_autoptr(GString) out = g_string_new(NULL);
    int mount_id = 0;
    guint i;

    fh->handle_bytes = HANDLE_MAX;
    if (name_to_handle_at(fd, "", fh, &mount_id, AT_EMPTY_PATH) < 0)
        return NULL;
    g_string_append_printf(out, "%d:", fh->handle_type);
    for (i = 0; i < fh->handle_bytes; i++)
        g_string_append_printf(out, "%02x", fh->f_handle[i]);
    return g_string_free(g_steal_pointer(&out), FALSE);
}

static char *
fsid_of(int fd)
{
    struct statfs sfs;

    if (fstatfs(fd, &sfs) < 0)
        return NULL;
    return g_strdup_printf("%08x%08x", (unsigned int)sfs.f_fsid.__val[0],
                           (unsigned int)sfs.f_fsid.__val[1]);
}

char *
daxfile_fd_fsid(int fd)
{
    return fsid_of(fd);
}

/* FS_IOC_GETFSUUID, which Debian 12's kernel headers lack (and its 6.1
 * kernel does not answer) */
struct daxfile_fsuuid2 {
    guint8 len;
    guint8 uuid[16];
};
#define DAXFILE_FS_IOC_GETFSUUID _IOR(0x15, 0, struct daxfile_fsuuid2)

#define EXT4_SB_OFFSET 1024
#define EXT4_MAGIC_OFFSET (EXT4_SB_OFFSET + 0x38)
#define EXT4_UUID_OFFSET (EXT4_SB_OFFSET + 0x68)
#define XFS_UUID_OFFSET 32
#define SB_READ 2048

gboolean
daxfile_superblock_uuid(const guint8 *buf, gsize len, guint8 ret_uuid[16])
{
    if (len >= XFS_UUID_OFFSET + 16 && memcmp(buf, "XFSB", 4) == 0) {
        memcpy(ret_uuid, buf + XFS_UUID_OFFSET, 16);
        return TRUE;
    }
    if (len >= EXT4_UUID_OFFSET + 16 && buf[EXT4_MAGIC_OFFSET] == 0x53 &&
        buf[EXT4_MAGIC_OFFSET + 1] == 0xef) {
        memcpy(ret_uuid, buf + EXT4_UUID_OFFSET, 16);
        return TRUE;
    }
    return FALSE;
}

/* The superblock UUID of block device @dev, read through its node in
 * /dev (named by sysfs, checked to be that device) */
static gboolean
device_uuid(dev_t dev, guint8 ret_uuid[16])
{
    g_autofree char *rel =
        g_strdup_printf("dev/block/%u:%u", major(dev), minor(dev));
    g_autofree char *name = daxfile_sysfs_link_name(rel);
    g_autofree char *node = name ? g_build_filename("/dev", name, NULL) : NULL;
    g_auto(DaxfileFd) fd = -1;
    guint8 buf[SB_READ];
    struct stat st;

    if (!node)
        return FALSE;
    fd = open(node, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISBLK(st.st_mode) &&
           st.st_rdev == dev && pread(fd, buf, sizeof(buf), 0) == SB_READ &&
           daxfile_superblock_uuid(buf, sizeof(buf), ret_uuid);
}

static char *
hex_of(const guint8 *bytes, gsize len)
{
    GString *out = g_string_new(NULL);
    gsize i;

    for (i = 0; i < len; i++)
        g_string_append_printf(out, "%02x", bytes[i]);
    return g_string_free(out, FALSE);
}

char *
daxfile_fd_fs_uuid(int fd)
{
    struct daxfile_fsuuid2 u = {0};
    guint8 raw[16];
    struct stat st;

    if (ioctl(fd, DAXFILE_FS_IOC_GETFSUUID, &u) == 0 && u.len > 0 &&
        u.len <= sizeof(u.uuid))
        return hex_of(u.uuid, u.len);
    if (fstat(fd, &st) < 0 || !device_uuid(st.st_dev, raw))
        return NULL;
    return hex_of(raw, sizeof(raw));
}

static struct file_handle *
handle_parse(const char *text)
{
    g_autofree struct file_handle *fh = g_malloc0(sizeof(*fh) + HANDLE_MAX);
    const char *colon = text ? strchr(text, ':') : NULL;
    g_autofree char *type = colon ? g_strndup(text, colon - text) : NULL;
    gint64 t = 0;
    size_t len, i;

    if (!colon ||
        !g_ascii_string_to_signed(type, 10, G_MININT, G_MAXINT, &t, NULL))
        return NULL;
    len = strlen(colon + 1);
    if (len % 2 || len / 2 > HANDLE_MAX)
        return NULL;
    for (i = 0; i < len / 2; i++) {
        int hi = g_ascii_xdigit_value(colon[1 + 2 * i]);
        int lo = g_ascii_xdigit_value(colon[2 + 2 * i]);

        if (hi < 0 || lo < 0)
            return NULL;
        fh->f_handle[i] = (unsigned char)(hi << 4 | lo);
    }
    fh->handle_type = (int)t;
    fh->handle_bytes = (unsigned int)(len / 2);
    return g_steal_pointer(&fh);
}

/* Whether the filesystem of mount fd @mfd has f_fsid @fsid */
static gboolean
same_fsid(int mfd, const char *fsid)
{
    g_autofree char *id = fsid ? fsid_of(mfd) : NULL;

    return id && STREQ(id, fsid);
}

/* How the filesystem of mount @m (open as @mfd) compares with @fs */
typedef enum {
    FS_OTHER, /* another filesystem */
    FS_MAYBE, /* cannot tell (no UUID on one side) */
    FS_SAME,  /* it: the same UUID, or an ext4 with the same f_fsid */
} FsMatch;

static FsMatch
fs_match(const DaxfileMount *m, int mfd, const DaxfileFsRef *fs)
{
    g_autofree char *uuid = fs->uuid ? daxfile_fd_fs_uuid(mfd) : NULL;

    if (uuid)
        return STREQ(uuid, fs->uuid) ? FS_SAME : FS_OTHER;
    if (!same_fsid(mfd, fs->fsid))
        return fs->fsid ? FS_OTHER : FS_MAYBE;
    /* an ext4 f_fsid is made of its UUID, an xfs one of its device */
    return STREQ(m->fs_type, "ext4") ? FS_SAME : FS_MAYBE;
}

/* Does mount @m hold the filesystem we look for? By device (pass 0:
 * unless it is known to hold another one now) or, on other devices, by
 * UUID or f_fsid (pass 1). The mount fd, and in *ret_match what it is. */
static int
candidate_mount(const DaxfileMount *m, int pass, const DaxfileFsRef *fs,
                FsMatch *ret_match)
{
    g_auto(DaxfileFd) mfd = -1;
    gboolean same_dev = makedev(m->major, m->minor) == fs->dev;
    struct stat st;

    if (pass == 0
            ? !same_dev
            : same_dev || (!fs->uuid && !fs->fsid) ||
                  (STRNEQ(m->fs_type, "ext4") && STRNEQ(m->fs_type, "xfs")))
        return -1;
    /* a real open: open_by_handle_at() refuses an O_PATH mount fd */
    mfd = open(m->mount_point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (mfd < 0 || fstat(mfd, &st) < 0 ||
        st.st_dev != makedev(m->major, m->minor))
        return -1; /* over-mounted, or gone meanwhile */
    *ret_match = fs_match(m, mfd, fs);
    if (*ret_match == FS_OTHER ||
        (pass == 1 && *ret_match == FS_MAYBE && !same_fsid(mfd, fs->fsid)))
        return -1;
    return g_steal_fd(&mfd);
}

int
daxfile_handle_reopen(const char *handle, const DaxfileFsRef *fs, guint64 ino,
                      int open_flags, gboolean *ret_gone, GError **error)
{
    g_autofree struct file_handle *fh = handle_parse(handle);
    g_autoptr(GPtrArray) mounts = daxfile_mounts_read(error);
    int pass;
    guint i;

    *ret_gone = FALSE;
    if (!mounts)
        return -1;
    for (pass = 0; fh && pass < 2; pass++) {
        for (i = 0; i < mounts->len; i++) {
            const DaxfileMount *m = g_ptr_array_index(mounts, i);
            FsMatch match = FS_OTHER;
            g_auto(DaxfileFd) mfd = candidate_mount(m, pass, fs, &match);
            g_auto(DaxfileFd) fd = -1;
            struct stat st;

            if (mfd < 0)
                continue;
            fd = open_by_handle_at(mfd, fh, open_flags | O_CLOEXEC);
            /* only a mount of the whole filesystem on its very device
             * can say it is gone (a UUID can repeat on a cloned image),
             * and only if that device still holds the filesystem: after
             * a reboot its number can belong to another one, and
             * another xfs there has the same f_fsid */
            if (fd < 0 && errno == ESTALE && pass == 0 && match == FS_SAME &&
                STREQ(m->root, "/"))
                *ret_gone = TRUE;
            if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == ino)
                return g_steal_fd(&fd);
        }
    }
    if (*ret_gone)
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                    "its inode no longer exists");
    else if (fs->uuid)
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "no mounted filesystem holds its inode (filesystem UUID %s, device %u:%u when it was recorded)",
            fs->uuid, major(fs->dev), minor(fs->dev));
    else
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "no mounted filesystem holds its inode (device %u:%u; its entry records no filesystem UUID, so another xfs on that device cannot be told from its own)",
            major(fs->dev), minor(fs->dev));
    return -1;
}

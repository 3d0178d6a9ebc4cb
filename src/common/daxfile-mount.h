/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-mount.h: where a file is, by what it is
 *
 * A path from domain XML or a registry entry is only a spelling: "." and
 * "..", "//", a relative path, a symbolic link or a bind mount can name
 * the same inode. These helpers answer from the inode instead: its device
 * and its path inside its own filesystem (what mountinfo's root field and
 * the mount point make of the kernel's d_path), and its file handle, which
 * finds the inode again after a rename or a reboot.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    guint id;
    guint major;
    guint minor;
    char *root; /* the mount's root, inside its filesystem */
    char *mount_point;
    char *fs_type;
    char *source;
    char *super_options;
} DaxfileMount;

void daxfile_mount_free(DaxfileMount *mount);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileMount, daxfile_mount_free)

/* The mounts of /proc/self/mountinfo text, in order (DaxfileMount *) */
GPtrArray *daxfile_mountinfo_parse(const char *text);

/* The same for the calling process */
GPtrArray *daxfile_mounts_read(GError **error);

/* The device of the inode behind @fd (any kind of fd, O_PATH included)
 * and its path inside its filesystem, absolute and normalised. */
gboolean daxfile_fd_locate(int fd, guint64 *ret_dev, char **ret_fs_path,
                           GError **error);

/* The id of the mount @fd is on (statx STATX_MNT_ID, else fdinfo's
 * mnt_id), the id mountinfo lists it by; FALSE when neither says */
gboolean daxfile_fd_mount_id(int fd, guint *ret_id);

/* TRUE when @path equals @dir or lies under it, by path components */
gboolean daxfile_path_is_under(const char *path, const char *dir);

/* The file handle of @fd as "TYPE:HEX", NULL when its filesystem has
 * none; and its filesystem id (statfs f_fsid) as hex, NULL on error */
char *daxfile_fd_handle(int fd);
char *daxfile_fd_fsid(int fd);

/* The UUID of the filesystem of @fd as 32 lowercase hex digits, NULL when
 * it cannot be read: FS_IOC_GETFSUUID, or, on a kernel without it, the
 * UUID in the ext4 or xfs superblock on its block device (root only). It
 * tells filesystems apart where f_fsid cannot: an xfs's f_fsid is made of
 * its device number, which another xfs can hold after a reboot. */
char *daxfile_fd_fs_uuid(int fd);

/* The UUID in an ext4 or xfs superblock: @buf holds the first @len bytes
 * of the device (2048 are enough); FALSE for anything else */
gboolean daxfile_superblock_uuid(const guint8 *buf, gsize len,
                                 guint8 ret_uuid[16]);

/* The filesystem an inode was on, as recorded: the device number it had
 * (numbers change across reboots and are reused), its UUID (NULL when
 * unknown: an entry made by an older daxfile) and its f_fsid (made of the
 * UUID on ext4, of the device number on xfs) */
typedef struct {
    guint64 dev;
    const char *uuid;
    const char *fsid;
} DaxfileFsRef;

/* Open the inode of @handle (from daxfile_fd_handle()) again with
 * @open_flags, looking on the mounts of the filesystem @fs: on its
 * device when that still holds it, and on mounted ext4 and xfs
 * filesystems with its UUID (without one: its f_fsid) on other devices.
 * A filesystem with another UUID is never searched. Only an inode
 * numbered @ino is accepted. -1 with a NOT_FOUND error when no mounted
 * filesystem has it; *ret_gone is then TRUE when its very filesystem is
 * mounted whole on its device (the same UUID; without one, an ext4 of the
 * same f_fsid) and says the inode no longer exists (ESTALE). Needs
 * CAP_DAC_READ_SEARCH. */
int daxfile_handle_reopen(const char *handle, const DaxfileFsRef *fs,
                          guint64 ino, int open_flags, gboolean *ret_gone,
                          GError **error);

G_END_DECLS

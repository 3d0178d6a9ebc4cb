/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-fs.h: what the filesystem under a file can and does do for DAX
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    DAXFILE_TRI_UNKNOWN = -1,
    DAXFILE_TRI_NO = 0,
    DAXFILE_TRI_YES = 1,
} DaxfileTristate;

typedef struct {
    char *fs_type; /* "ext4", "xfs", "tmpfs", ... or "0x<magic>" */
    guint64 fs_magic;
    guint32 block_size;
    DaxfileTristate dax;  /* statx STATX_ATTR_DAX; UNKNOWN on old kernels */
    char *dax_mode;       /* mount option: "always", "inode", "never", NULL */
    gboolean map_sync;    /* MAP_SHARED_VALIDATE|MAP_SYNC accepted */
    char *map_sync_error; /* strerror when not */
    char *mount_point;
    char *device; /* mount source */
    guint dev_major;
    guint dev_minor;
    guint64 part_offset; /* partition start on its disk, bytes */
    guint64 stripe;      /* allocation stripe unit in bytes, 0 = none */
    DaxfileTristate geometry_aligned; /* can give align-aligned extents */
    char *geometry_fix;               /* the mkfs command line that would */
    guint64 available;                /* free bytes (f_bavail) */
} DaxfileFsInfo;

void daxfile_fs_info_free(DaxfileFsInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileFsInfo, daxfile_fs_info_free)

/* statx's STATX_ATTR_DAX of @fd: DAX in effect for this file */
DaxfileTristate daxfile_fs_dax(int fd);

/* Whether DAX is in effect for a file, by the one rule every part of
 * daxfile uses: statx says so, or, on a kernel without STATX_ATTR_DAX
 * (before 5.8: @dax UNKNOWN), MAP_SYNC is accepted (@map_sync), which only
 * DAX does */
gboolean daxfile_fs_dax_effective(DaxfileTristate dax, gboolean map_sync);

/* The same for the open file @fd (MAP_SYNC probed only when statx cannot
 * tell) */
gboolean daxfile_fd_dax_effective(int fd);

/* Probe the filesystem of the open file @fd for @align. Never fails for a
 * filesystem that lacks something: that is reported in the fields. */
DaxfileFsInfo *daxfile_fs_probe(int fd, guint64 align, GError **error);

/* The free space of @fd's filesystem from its own free-space map
 * (FS_IOC_GETFSMAP, ext4 and xfs; needs CAP_SYS_ADMIN): *ret_free bytes in
 * all, *ret_aligned of them in whole @align pages aligned on the device
 * (@phys_offset: the filesystem's start on it). FALSE when the map cannot
 * be read (no error: callers only add this to what they say). */
gboolean daxfile_fs_free_space(int fd, guint64 align, guint64 phys_offset,
                               guint64 *ret_free, guint64 *ret_aligned);

/* Pure helpers, exposed for unit tests. */
typedef struct {
    char *mount_point;
    char *fs_type;
    char *source;
    char *super_options;
} DaxfileMountEntry;

void daxfile_mount_entry_clear(DaxfileMountEntry *entry);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileMountEntry, daxfile_mount_entry_clear)

/* Find the mount of device @major:@minor in /proc/self/mountinfo text. */
gboolean daxfile_mountinfo_lookup(const char *mountinfo, guint major,
                                  guint minor, DaxfileMountEntry *ret_entry);

/* Value of option @key in a comma-separated option string, "" for a flag,
 * NULL when absent. */
char *daxfile_mount_option(const char *options, const char *key);

/* Fill stripe/geometry_aligned/geometry_fix from fs type and options. */
void daxfile_fs_geometry(DaxfileFsInfo *info, const char *super_options,
                         guint64 align);

G_END_DECLS

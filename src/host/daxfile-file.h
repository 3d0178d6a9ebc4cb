/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-file.h: open a user-named file once, safely, and work on the fd
 */
#pragma once

#include <glib.h>
#include <sys/stat.h>

G_BEGIN_DECLS

typedef enum {
    DAXFILE_OPEN_READ = 0,
    DAXFILE_OPEN_WRITE = 1 << 0,  /* O_RDWR instead of O_RDONLY */
    DAXFILE_OPEN_FOLLOW = 1 << 1, /* accept a symlink as the last component */
} DaxfileOpenFlags;

/* Open @path as a regular file: O_PATH|O_NOFOLLOW first (no side effects
 * on FIFOs or device nodes), check the type on that fd, then reopen the
 * very same inode through /proc/self/fd. Returns the fd or -1. */
int daxfile_file_open(const char *path, DaxfileOpenFlags flags,
                      struct stat *ret_st, GError **error);

/* The same check for an fd already open (O_PATH or not). */
gboolean daxfile_file_check_regular(const struct stat *st, const char *name,
                                    GError **error);

/* Reopen the inode behind @fd with @open_flags (O_CLOEXEC added). */
int daxfile_fd_reopen(int fd, int open_flags, const char *name,
                      GError **error);

/* What a path names: device and inode number */
typedef struct {
    guint64 dev;
    guint64 ino;
} DaxfileIdentity;

/* Append to @out (DaxfileIdentity) what @path names as QEMU under libvirt
 * would open it: relative to "/", following symbolic links, with O_PATH
 * (no side effects on device nodes or FIFOs). A loop block device, a
 * partition of one, or a device stacked on one (device-mapper, md) also
 * adds the loop's backing file. Nothing when @path names nothing. */
void daxfile_path_identities(const char *path, GArray *out);

/* Whether @ids (DaxfileIdentity) holds @dev/@ino */
gboolean daxfile_identities_have(GArray *ids, guint64 dev, guint64 ino);

G_END_DECLS

G_BEGIN_DECLS

/* Open @path, which lies lexically under the directory @root, without
 * leaving @root: no symbolic link and no ".." is followed (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS). Same checks and result as
 * daxfile_file_open(). */
int daxfile_file_open_beneath(const char *root, const char *path,
                              DaxfileOpenFlags flags, struct stat *ret_st,
                              GError **error);

/* The directory @dir (lexically under @root) as an O_DIRECTORY fd, with
 * the same no-symlink, no-escape resolution. */
int daxfile_dir_open_beneath(const char *root, const char *dir,
                             GError **error);

G_END_DECLS

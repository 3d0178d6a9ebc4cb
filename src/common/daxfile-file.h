/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-file.h: a user-named file opened once, safely, as one handle
 * (fd, stat, path, display name) that every operation takes
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

/* An open file. @path is the name as given (raw bytes: what the registry
 * records and what is opened again); @display is that name made safe to
 * print (daxfile_escape()), computed once, for every message about it. */
typedef struct {
    int fd;
    struct stat st; /* fstat() at open */
    char *path;
    char *display;
} DaxfileFile;

void daxfile_file_free(DaxfileFile *file);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileFile, daxfile_file_free)

/* A handle for @fd, which it takes (closed on failure too), named @path:
 * for an fd opened elsewhere (a temporary file, O_TMPFILE). */
DaxfileFile *daxfile_file_new_from_fd(int fd, const char *path, GError **error);

/* Open @path as a regular file: O_PATH|O_NOFOLLOW first (no side effects
 * on FIFOs or device nodes), check the type on that fd, then reopen the
 * very same inode through /proc/self/fd. */
DaxfileFile *daxfile_file_open(const char *path, DaxfileOpenFlags flags,
                               GError **error);

/* Open @path with plain open(2) and @open_flags (O_CLOEXEC added), of any
 * type: for a device node named by the user (device-dax). When O_NOFOLLOW
 * refuses a symbolic link, @link_fix (or nothing) follows the name in the
 * message. */
DaxfileFile *daxfile_file_open_node(const char *path, int open_flags,
                                    const char *link_fix, GError **error);

/* Open @path, which lies lexically under the directory @root, without
 * leaving @root: no symbolic link and no ".." is followed (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS). Same checks and result as
 * daxfile_file_open(). */
DaxfileFile *daxfile_file_open_beneath(const char *root, const char *path,
                                       DaxfileOpenFlags flags, GError **error);

/* The directory @dir (lexically under @root) as an O_DIRECTORY fd, with
 * the same no-symlink, no-escape resolution. */
int daxfile_dir_open_beneath(const char *root, const char *dir, GError **error);

/* The regular-file check of daxfile_file_open() for a stat already made;
 * @display names the file in the message. */
gboolean daxfile_file_check_regular(const struct stat *st, const char *display,
                                    GError **error);

/* The path @fd refers to (daxfile_fd_target()) for messages, escaped, or
 * "fd N" when it cannot be read */
char *daxfile_fd_path(int fd);

/* Reopen @f's inode (an O_PATH handle, say) with @open_flags (O_CLOEXEC
 * added), in place: its fd is replaced; its stat, path and display stay. */
gboolean daxfile_file_reopen(DaxfileFile *f, int open_flags, GError **error);

/* Reopen the inode behind @fd with @open_flags (O_CLOEXEC added). */
int daxfile_fd_reopen(int fd, int open_flags, const char *display,
                      GError **error);

G_END_DECLS

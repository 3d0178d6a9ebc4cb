/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-trust.h: open configuration that only a trusted user can change
 *
 * The root hook obeys its configuration (which directories it freezes,
 * whose files it trusts), so whoever can write that configuration decides
 * for root. As sudo and systemd-tmpfiles do, a file is accepted only when
 * no one else could have written it: it and every directory its lookup
 * passes through are owned by root (or, for a non-root caller such as a
 * libvirt session daemon's hook, by the caller), none is writable by
 * group or others — a directory with the sticky bit excepted, where only
 * an entry's owner can replace it and the entry is checked in turn — and
 * every symbolic link followed is owned by a trusted user too.
 */
#pragma once

#include <glib.h>

#include "daxfile-file.h"

G_BEGIN_DECLS

/* Open @path (absolute) for reading after checking the whole lookup as
 * above; @want_dir asks for a directory instead of a regular file.
 * Returns the handle; NULL with no error when @path does not exist; NULL
 * with an error naming the file, what is wrong and the chown/chmod that
 * fixes it when it is not trusted. */
DaxfileFile *daxfile_trusted_open(const char *path, gboolean want_dir,
                                  GError **error);

/* Read the trusted regular file @path (at most 1 MiB). FALSE with an
 * error as above; TRUE with *ret_data NULL when it does not exist. */
gboolean daxfile_trusted_read(const char *path, char **ret_data, gsize *ret_len,
                              GError **error);

/* Read the regular file @name (at most 1 MiB) in the directory @dir,
 * whose own owner may be anyone: libvirt 10 and later give
 * /run/libvirt/qemu to its QEMU user. Every directory above @dir is
 * checked as above, @dir must not be writable by group or others (unless
 * sticky), and the file must be owned by a trusted user, not writable by
 * group or others, not a symbolic link, and, when @dir is not a trusted
 * user's (*ret_dir_foreign), have one link. @dir's owner can still rename
 * another such file of @dir over @name: the caller must check that the
 * data names what it should. TRUE with *ret_data NULL when either does not
 * exist. */
gboolean daxfile_trusted_read_entry(const char *dir, const char *name,
                                    char **ret_data, gsize *ret_len,
                                    gboolean *ret_dir_foreign, GError **error);

G_END_DECLS

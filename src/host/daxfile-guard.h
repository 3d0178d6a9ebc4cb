/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-guard.h: the stock-kernel backend, FS_IMMUTABLE_FL set after the
 * consumer opened and mapped the file, and the self-test that proves the
 * running kernel keeps mapped stores working under the flag
 */
#pragma once

#include <glib.h>

#include "daxfile-file.h"

G_BEGIN_DECLS

/* Whether FS_IMMUTABLE_FL is set on @f */
gboolean daxfile_guard_get(const DaxfileFile *f, gboolean *ret_on,
                           GError **error);

/* Set or clear FS_IMMUTABLE_FL (needs CAP_LINUX_IMMUTABLE) */
gboolean daxfile_guard_set(const DaxfileFile *f, gboolean on, GError **error);

/* The same, then fsync() of @f, so that the flag change is on disk before
 * the caller records it (or the release of it) in the registry. FALSE
 * when either failed: the flag may then be in either state (a failed
 * fsync comes after the change), so a caller that set it must clear it
 * again, and keep its registry entry while that fails. */
gboolean daxfile_guard_set_durable(const DaxfileFile *f, gboolean on,
                                   GError **error);

/* TRUE when the effective capability set holds CAP_LINUX_IMMUTABLE */
gboolean daxfile_have_cap_linux_immutable(void);

typedef struct {
    gboolean safe; /* stores through a live mapping survived the flag */
    char *detail;  /* what happened, for messages */
} DaxfileSelftest;

void daxfile_selftest_clear(DaxfileSelftest *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileSelftest, daxfile_selftest_clear)

/* Prove on the filesystem of directory @dirfd that a process holding a
 * MAP_SHARED (+MAP_SYNC when @dax) mapping of a provisioned probe file keeps
 * storing to write-faulted, read-faulted and never-faulted pages after
 * FS_IMMUTABLE_FL is set, and that the data lands. The probe is an
 * unnamed O_TMPFILE, so nothing is left behind even on a crash. @dev is
 * the device the probe must live on (the target file's). Returns FALSE
 * only when the test could not run. */
gboolean daxfile_guard_selftest(int dirfd, guint64 dev, gboolean dax,
                                DaxfileSelftest *ret_result, GError **error);

/* The swapfile check: is inode @dev/@ino an active swap area? */
gboolean daxfile_is_swapfile(guint64 dev, guint64 ino);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-priv.h: what the parts of static mode share, for
 * daxfile-static*.c only (daxfile-static.h is the interface)
 *
 *   daxfile-static.c         one file: enable, disable, list, its state for
 *                            status; the entry and the checks every change
 *                            makes
 *   daxfile-static-mech.c    the mechanism: choice (kernel, immutable guard
 *                            and its self-test, verified-only), engaging it,
 *                            whether it is still in force
 *   daxfile-static-set.c     sets: several files in one registry transaction
 *   daxfile-static-repair.c  repair: interrupted and left-over entries
 *   daxfile-static-machine.c the states an entry goes through, and the one
 *                            writer of them
 *
 * Static mode's states (DaxfileEntryState; "none": no entry), every
 * transition it makes, and nothing else:
 *
 *   none -> reserved         prepare reserves a set (the immutable guard
 *                            waits for QEMU's mapping)
 *   none -> engaging         enable (one file) logs its intent
 *   none -> engaged          a set: the registry first, then the inodes
 *   reserved -> engaged      started engages a prepared set
 *   reserved -> engaging     enable of a file this owner reserved
 *   reserved -> reserved     a hot-plug held unguarded
 *   engaging -> engaged      engaged and verified
 *   engaging -> reserved     enable rolled back to the reservation
 *   engaged -> releasing     disable (one file) logs its intent
 *   engaged -> reserved      a set rolled back to its reservations
 *   any -> none              released, rolled back, or repaired
 *
 * daxfile_static_transition() and daxfile_static_transition_state() are
 * the only writers of an entry's state (syntax-check's registry-writes
 * rule); a transition not listed is an internal error.
 */
#pragma once

#include <sys/stat.h>

#include "daxfile-registry.h"
#include "daxfile-report.h"
#include "daxfile-static.h"

G_BEGIN_DECLS

/* daxfile-static-machine.c */

/* Static mode may go from @from to @to (DAXFILE_STATE_LAST: no entry) */
gboolean daxfile_static_transition_legal(DaxfileEntryState from,
                                         DaxfileEntryState to);

/* @next (owned; its state the new one; NULL: none) takes the place of
 * @reg's entry of (@dev, @ino), when static mode may go from that entry's
 * state (none: no entry) to @next's; else an internal error, and @reg is
 * as it was */
gboolean daxfile_static_transition(DaxfileRegistry *reg, guint64 dev,
                                   guint64 ino, DaxfileEntry *next,
                                   GError **error);

/* The same for @e, an entry of @reg, going to @to */
gboolean daxfile_static_transition_state(DaxfileRegistry *reg, DaxfileEntry *e,
                                         DaxfileEntryState to, GError **error);

/* daxfile-static.c */

/* The registry key of what @f is, in @st (a device-dax device: its
 * device number and inode 0) */
gboolean daxfile_static_fd_identity(const DaxfileFile *f, struct stat *st,
                                    GError **error);
/* A copy of the inode's entry (NULL when none), read under the registry
 * lock */
gboolean daxfile_static_registry_peek(const struct stat *st,
                                      DaxfileEntry **ret_entry, GError **error);
/* TRUE, with @error set, when @e is held by another owner than @owner */
gboolean daxfile_static_owner_conflict(const DaxfileEntry *e, const char *owner,
                                       const char *name, GError **error);
/* TRUE, with @error set, when @e was left engaging or releasing */
gboolean daxfile_static_interrupted(const DaxfileEntry *e, const char *name,
                                    GError **error);
/* The absolute path of the inode behind @f, or its path made absolute */
char *daxfile_static_fd_abspath(const DaxfileFile *f);
/* A new entry for the file behind @fd, in @state */
DaxfileEntry *daxfile_static_entry_new(const char *path, int fd,
                                       const struct stat *st,
                                       const DaxfileEnableParams *params,
                                       const DaxfileReport *report,
                                       DaxfileMechanism mech,
                                       DaxfileEntryState state);
/* After engaging: no new writer, and the layout is still the one verified */
gboolean daxfile_static_verify_engaged(const DaxfileFile *f,
                                       const struct stat *st,
                                       const DaxfileEnableParams *params,
                                       const DaxfileReport *report,
                                       DaxfileMechanism mech, GError **error);
/* Undo @mech on @f after the failure *@failure (set): FALSE when it may
 * still be in force (its flag may be set), with *@failure saying so; the
 * file's registry entry must then stay, for 'daxfile repair' or the
 * release to finish */
gboolean daxfile_static_undo_engage(DaxfileMechanism mech, const DaxfileFile *f,
                                    GError **failure);
/* Enable again for the owner of @cur: engage again what was lost */
gboolean daxfile_static_still_engaged(const DaxfileFile *f,
                                      const struct stat *st,
                                      const DaxfileEnableParams *params,
                                      const DaxfileEntry *cur,
                                      DaxfileEnableResult *result,
                                      GError **error);
/* What enable verifies before anything changes, and its mechanism */
DaxfileReport *daxfile_static_enable_checks(const DaxfileFile *f,
                                            const struct stat *st,
                                            const DaxfileEnableParams *params,
                                            DaxfileEnableResult *result,
                                            GError **error);
/* Whether this process may undo @e's mechanism */
gboolean daxfile_static_release_allowed(const DaxfileEntry *e, const char *name,
                                        GError **error);
/* Undo @e's mechanism on its inode and say what changed while static */
gboolean daxfile_static_release_inode(const DaxfileFile *f,
                                      const DaxfileEntry *e,
                                      DaxfileDisableResult *result,
                                      GError **error);

/* daxfile-static-mech.c */

/* CAP_LINUX_IMMUTABLE, or @error */
gboolean daxfile_static_check_cap(const char *name, GError **error);
/* No process but the consumers holds the file open for writing */
gboolean daxfile_static_check_writers(const struct stat *st,
                                      const DaxfileEnableParams *params,
                                      gboolean engaged, const char *name,
                                      GError **error);
/* The mechanism enable will use, in result->mechanism (and why it is a
 * weaker one, in result->warning) */
gboolean daxfile_static_choose_mechanism(const DaxfileFile *f,
                                         const struct stat *st,
                                         const DaxfileEnableParams *params,
                                         const DaxfileReport *report,
                                         DaxfileEnableResult *result,
                                         GError **error);
/* Engage (@on) or release @mech on the file @f */
gboolean daxfile_static_engage(DaxfileMechanism mech, const DaxfileFile *f,
                               gboolean on, guint64 align, GError **error);
/* Is the mechanism still in force? -1 when it has nothing to check. */
int daxfile_static_mechanism_intact(const DaxfileFile *f,
                                    const DaxfileEntry *e);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static.h: static-DAX mode with the RFC's semantics
 *
 * enable: the file must be a regular file with DAX in effect (or the
 * caller allows development mode), not a swapfile, and pass the extent
 * walk for @align; then one mechanism engages, chosen in this order:
 *   kernel          daxctl(DAXCTL_F_STATIC) when the kernel advertises it
 *   immutable-guard FS_IMMUTABLE_FL, when a self-test on the file's own
 *                   filesystem shows that mapped stores survive it
 *   verified-only   nothing enforced (no DAX, or the guard is unsafe)
 * Every step is logged in the registry before it happens, so an
 * interrupted enable or disable is found and finished by 'daxfile repair'.
 */
#pragma once

#include <sys/types.h>

#include "daxfile-attest.h"
#include "daxfile-file.h"
#include "daxfile-registry.h"
#include "daxfile-report.h"

G_BEGIN_DECLS

typedef struct {
    guint64 align;
    gboolean allow_non_dax;
    const char *owner;          /* required: "domain:NAME", "pid:N", ... */
    const char *owner_uuid;     /* optional */
    const char *device;         /* optional: the domain's device model */
    pid_t pid;                  /* consumer process (run), or 0 */
    DaxfileMechanism mechanism; /* NONE = choose */
    const GArray *consumers;    /* pids allowed to hold the file open for
                                 * writing (the domain's attested QEMU,
                                 * run's command tree, enable --consumer);
                                 * NULL = none */
    gboolean wait;              /* wait for a concurrent operation on the
                                 * file instead of failing with BUSY */
} DaxfileEnableParams;

typedef struct {
    DaxfileMechanism mechanism;
    gboolean already; /* it was already static for this owner */
    char *warning;    /* a weaker guarantee than asked for, and why */
} DaxfileEnableResult;

void daxfile_enable_result_clear(DaxfileEnableResult *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileEnableResult,
                                 daxfile_enable_result_clear)

/* Make the file @f static (its path goes to the registry, its display to
 * messages). The caller opened it with daxfile_file_open(). */
gboolean daxfile_static_enable(const DaxfileFile *f,
                               const DaxfileEnableParams *params,
                               DaxfileEnableResult *ret_result, GError **error);

/* Process @pid maps the file @f: it can be named as its consumer */
gboolean daxfile_static_check_consumer(const DaxfileFile *f, pid_t pid,
                                       GError **error);

typedef struct {
    DaxfileMechanism mechanism;
    char *owner;
    gboolean layout_unchanged;
    char *change; /* what changed while static, when it did */
} DaxfileDisableResult;

void daxfile_disable_result_clear(DaxfileDisableResult *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileDisableResult,
                                 daxfile_disable_result_clear)

/* Release static mode. @owner NULL releases whoever holds it; otherwise a
 * different owner is refused (BUSY). A file that is not static is a
 * NOT_FOUND error. */
gboolean daxfile_static_disable(const DaxfileFile *f, const char *owner,
                                gboolean wait, DaxfileDisableResult *ret_result,
                                GError **error);

/* Sets: several files changed together in one registry transaction (the
 * libvirt hook's phases, one per domain). The inode locks are taken in
 * (device, inode) order, the registry is opened once and written once.
 * @items: @n pointers, each to an item of the caller's records.
 * On failure *ret_failed is the index of the item the error is about
 * (G_MAXUINT when it is about the registry); a reserve or enable that
 * fails leaves the registry and the files as before. Unlike enable/disable of
 * one file, a set writes its target state first and then changes the inodes
 * (enable) or changes the inodes first and then writes (release), so that after
 * a crash at any point the registry names every file daxfile may have made
 * static; no intent state is logged: a start whose hook died is stopped
 * by libvirt, which runs the release. */
typedef struct {
    const DaxfileFile *file;       /* opened with daxfile_file_open*() */
    DaxfileEnableParams params;    /* owner, align, ...; the same owner for
                                    * every item of a set */
    DaxfileEnableResult result;    /* enable */
    DaxfileDisableResult released; /* release: filled when it was static */
    gboolean not_ours;             /* release: no entry of this owner */
} DaxfileStaticItem;

void daxfile_static_item_clear(DaxfileStaticItem *item);

/* Claim every item for its owner before the consumer starts (libvirt
 * prepare): a second owner is refused with the first one named. Where the
 * kernel mechanism is at hand the file is made static right away (the
 * consumer can still open it for writing); otherwise it is reserved, and
 * enable_set makes it static once the consumer has mapped it. Until then
 * the entry holds while process @holder (started at @holder_start, as
 * daxfile_proc_start_time() reads it; 0 for none) lives or a process maps
 * the file; after that it is left over, for `daxfile repair`. */
gboolean daxfile_static_reserve_set(DaxfileStaticItem *const *items, guint n,
                                    pid_t holder, guint64 holder_start,
                                    guint *ret_failed, GError **error);
/* daxfile_static_enable() for every item: all of them or none */
gboolean daxfile_static_enable_set(DaxfileStaticItem *const *items, guint n,
                                   guint *ret_failed, GError **error);
/* Release every item the owner holds (reserved or static); items without
 * an entry of theirs are marked not_ours. A release that fails leaves
 * that item's entry and goes on with the others. */
gboolean daxfile_static_release_set(DaxfileStaticItem *const *items, guint n,
                                    guint *ret_failed, GError **error);

/* Hold the file of @item (one) for its owner without making it static:
 * a device hot-plugged into a running domain whose QEMU maps the file
 * already, and that could not be made static for @reason. The entry is a
 * reservation carrying @reason (DaxfileEntry.unguarded), held while
 * @holder (that QEMU, started at @holder_start) lives or a process maps
 * the file, and released with the domain's other files when it stops.
 * Another owner's entry is refused (BUSY); an entry of this owner in
 * force stays as it is. */
gboolean daxfile_static_hold_unguarded(DaxfileStaticItem *item, pid_t holder,
                                       guint64 holder_start, const char *reason,
                                       GError **error);

/* What static mode says about one file, for `daxfile status` */
typedef struct _DaxfileStaticState DaxfileStaticState;
struct _DaxfileStaticState {
    DaxfileEntry *entry;              /* a copy of its registry entry, or
                                       * NULL when it is not static */
    DaxfileTristate layout_unchanged; /* the block map is the one recorded
                                       * at enable (UNKNOWN: no entry) */
    DaxfileTristate mechanism_intact; /* UNKNOWN: no entry, or nothing to
                                       * check */
    DaxfileTristate immutable;        /* FS_IMMUTABLE_FL (UNKNOWN: cannot
                                       * be read) */
    DaxfileAttestation *qemu;         /* engaged for a domain: what its
                                       * QEMU mapped; NULL otherwise */
};

void daxfile_static_state_free(DaxfileStaticState *state);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileStaticState, daxfile_static_state_free)

/* The file is static (its entry is engaged) */
gboolean daxfile_static_state_enabled(const DaxfileStaticState *state);

/* The static state of the file @f, whose @report was built; what
 * cannot be read is left unknown. */
DaxfileStaticState *daxfile_static_state_read(const DaxfileFile *f,
                                              const DaxfileReport *report);
/* The entry is a device-dax device's (it has no inode of its own: its
 * dev is the device's number) */
gboolean daxfile_static_entry_is_device(const DaxfileEntry *e);

/* The same of the device-dax device @f (daxfile_devdax_open()): its
 * registry entry; everything else unknown */
DaxfileStaticState *daxfile_static_state_read_devdax(const DaxfileFile *f);

/* Why repair took up an entry */
typedef enum {
    DAXFILE_REPAIR_FOUND_STALE,            /* made in an earlier boot */
    DAXFILE_REPAIR_FOUND_INTERRUPTED,      /* left engaging or releasing */
    DAXFILE_REPAIR_FOUND_START_UNFINISHED, /* a reservation whose start
                                            * is gone */
    DAXFILE_REPAIR_FOUND_CONSUMER_GONE,    /* its consumer process died */
    DAXFILE_REPAIR_FOUND_UNMAPPED,         /* no process maps it any more */
    DAXFILE_REPAIR_FOUND_MECHANISM_LOST,   /* engaged, but its mechanism is
                                            * not in force */
    DAXFILE_REPAIR_FOUND_LAST
} DaxfileRepairFinding;

/* What repair did about it */
typedef enum {
    DAXFILE_REPAIR_RELEASED,           /* mechanism undone (or nothing to
                                        * undo); entry removed */
    DAXFILE_REPAIR_DROPPED_FILE_GONE,  /* the file no longer exists; entry
                                        * removed */
    DAXFILE_REPAIR_DROPPED_SUPERSEDED, /* a newer entry holds the file and
                                        * stays; this one removed */
    DAXFILE_REPAIR_KEPT,               /* its file cannot be found: the
                                        * entry stays (error says why) */
    DAXFILE_REPAIR_REENGAGED,          /* its domain's QEMU still maps it:
                                        * the mechanism is engaged again,
                                        * the entry stays */
    DAXFILE_REPAIR_KEPT_UNGUARDED,     /* its domain's QEMU still maps it,
                                        * but it cannot be engaged again
                                        * (error says why): the entry
                                        * stays */
    DAXFILE_REPAIR_DONE_LAST
} DaxfileRepairDone;

/* A file released from kernel static mode of an earlier boot gets its
 * mtime stamped now (stores since its last stamp may not show) */
typedef enum {
    DAXFILE_REPAIR_MTIME_NONE,      /* not such a file */
    DAXFILE_REPAIR_MTIME_NOT_FOUND, /* its file could not be found */
    DAXFILE_REPAIR_MTIME_STAMPED,
    DAXFILE_REPAIR_MTIME_FAILED, /* error says why */
    DAXFILE_REPAIR_MTIME_LAST
} DaxfileRepairMtime;

typedef struct {
    char *path; /* the entry's, as recorded (raw bytes) */
    DaxfileMechanism mechanism;
    char *owner;
    DaxfileRepairFinding found;
    DaxfileRepairDone done;
    DaxfileRepairMtime mtime;
    char *error; /* KEPT: why the file cannot be found;
                  * MTIME_FAILED: why; else NULL */
} DaxfileRepairAction;

typedef struct {
    GPtrArray *actions; /* DaxfileRepairAction *, one per entry taken up,
                         * in registry order */
} DaxfileRepairResult;

void daxfile_repair_result_clear(DaxfileRepairResult *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileRepairResult,
                                 daxfile_repair_result_clear)

/* Entries kept with an error (DAXFILE_REPAIR_KEPT, _KEPT_UNGUARDED) in
 * @result */
guint daxfile_repair_result_kept(const DaxfileRepairResult *result);

/* The finding for people: "left over from an earlier boot", ... */
const char *daxfile_repair_finding_describe(DaxfileRepairFinding found);

/* Finish or roll back interrupted operations and drop what a reboot, a
 * dead consumer or a start that never finished left behind. An entry
 * whose mechanism outlives it (the immutable flag) is only removed once
 * its inode was found (by its path, by @hint_path when that names the
 * same file, or by its file handle) and released, or is known to be gone;
 * otherwise it stays, as a KEPT action. An entry of a domain whose QEMU
 * still maps the file but whose mechanism was removed (chattr -i) is
 * engaged again (REENGAGED) when the QEMU attests and the file passes
 * the checks, and otherwise stays (KEPT_UNGUARDED). FALSE only on an
 * error. */
gboolean daxfile_static_repair(const char *hint_path,
                               DaxfileRepairResult *ret_result, GError **error);

/* Copies of every registry entry (DaxfileEntry *), for `daxfile list` */
GPtrArray *daxfile_static_list(GError **error);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static.c: static mode of one file (enable, disable, list); the
 * other parts are listed in daxfile-static-priv.h
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "daxfile-attest.h"
#include "daxfile-conf.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-fiemap.h"
#include "daxfile-guard.h"
#include "daxfile-mount.h"
#include "daxfile-proc.h"
#include "daxfile-registry.h"
#include "daxfile-seam.h"
#include "daxfile-static-priv.h"
#include "daxfile-static.h"
#include "daxfile-util.h"

void
daxfile_enable_result_clear(DaxfileEnableResult *result)
{
    g_clear_pointer(&result->warning, g_free);
}

void
daxfile_disable_result_clear(DaxfileDisableResult *result)
{
    g_clear_pointer(&result->owner, g_free);
    g_clear_pointer(&result->change, g_free);
}

static char *
iso_now(void)
{
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();

    return g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
}

/* The registry key of what @f is, in @st: a file's device and inode; a
 * device-dax device's device number and inode 0 (its node in /dev is not
 * what QEMU maps under libvirt: that is a node of QEMU's own /dev) */
gboolean
daxfile_static_fd_identity(const DaxfileFile *f, struct stat *st,
                           GError **error)
{
    if (fstat(f->fd, st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", f->display);
        return FALSE;
    }
    if (S_ISCHR(st->st_mode)) {
        st->st_dev = st->st_rdev;
        st->st_ino = 0;
    }
    return TRUE;
}

gboolean
daxfile_static_entry_is_device(const DaxfileEntry *e)
{
    return e->ino == 0;
}

/* A copy of the inode's entry (NULL when none), read under the registry
 * lock. The caller holds the inode lock, so it cannot change after. */
gboolean
daxfile_static_registry_peek(const struct stat *st, DaxfileEntry **ret_entry,
                             GError **error)
{
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(error);
    DaxfileEntry *e;

    if (!reg)
        return FALSE;
    e = daxfile_registry_lookup(reg, st->st_dev, st->st_ino);
    *ret_entry = e ? daxfile_entry_copy(e) : NULL;
    return TRUE;
}

gboolean
daxfile_static_owner_conflict(const DaxfileEntry *e, const char *owner,
                              const char *name, GError **error)
{
    if (!e || !owner || STREQ(e->owner, owner))
        return FALSE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
        "'%s' is %s for '%s'%s%s%s since %s, and it cannot be used by '%s' until that owner releases it; fix: stop '%s' first (if it is no longer %s, 'daxfile repair' releases it)",
        name, e->state == DAXFILE_STATE_RESERVED ? "reserved" : "static",
        e->owner, e->owner_uuid ? " (uuid " : "",
        e->owner_uuid ? e->owner_uuid : "", e->owner_uuid ? ")" : "", e->since,
        owner, e->owner,
        e->state == DAXFILE_STATE_RESERVED ? "starting" : "running");
    return TRUE;
}

gboolean
daxfile_static_interrupted(const DaxfileEntry *e, const char *name,
                           GError **error)
{
    if (!e || (e->state != DAXFILE_STATE_ENGAGING &&
               e->state != DAXFILE_STATE_RELEASING))
        return FALSE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
        "'%s' was left %s by an interrupted daxfile; fix: run 'daxfile repair' first",
        name, daxfile_entry_state_to_string(e->state));
    return TRUE;
}

static gboolean
check_not_immutable(const DaxfileFile *f, GError **error)
{
    const char *name = f->display;
    gboolean on = FALSE;

    if (!daxfile_guard_get(f, &on, error))
        return FALSE;
    if (!on)
        return TRUE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
        "'%s' is already immutable and daxfile did not set the flag; fix: clear it with 'chattr -i' if nothing else relies on it",
        name);
    return FALSE;
}

/* The absolute path of the inode behind @f (for later repair), or its
 * path made absolute */
char *
daxfile_static_fd_abspath(const DaxfileFile *f)
{
    char *target = daxfile_fd_target(f->fd);

    if (target && g_path_is_absolute(target))
        return target;
    g_free(target);
    return g_canonicalize_filename(f->path, NULL);
}

DaxfileEntry *
daxfile_static_entry_new(const char *path, int fd, const struct stat *st,
                         const DaxfileEnableParams *params,
                         const DaxfileReport *report, DaxfileMechanism mech,
                         DaxfileEntryState state)
{
    DaxfileEntry *e = g_new0(DaxfileEntry, 1);

    e->path = g_strdup(path);
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->state = state;
    e->mechanism = mech;
    e->owner = g_strdup(params->owner);
    e->owner_uuid = g_strdup(params->owner_uuid);
    e->device = g_strdup(params->device);
    e->pid = params->pid;
    e->align = params->align;
    e->fingerprint = g_strdup(report->fingerprint);
    e->since = iso_now();
    e->boot_id = g_strdup(daxfile_boot_id());
    e->flag_set = mech == DAXFILE_MECH_IMMUTABLE;
    e->handle = daxfile_fd_handle(fd);
    e->fsid = daxfile_fd_fsid(fd);
    e->fs_uuid = daxfile_fd_fs_uuid(fd);
    return e;
}

/* Once engaged, nobody can open the file for writing or change its layout
 * any more, except through a descriptor opened before (on xfs, write()
 * and ftruncate() keep working on one under the immutable flag). So look
 * again now: a writer that opened it since daxfile_static_check_writers() is
 * found, and a layout that changed meanwhile no longer matches what was
 * verified. Either one rolls back. */
gboolean
daxfile_static_verify_engaged(const DaxfileFile *f, const struct stat *st,
                              const DaxfileEnableParams *params,
                              const DaxfileReport *report,
                              DaxfileMechanism mech, GError **error)
{
    int fd = f->fd;
    const char *name = f->display;
    g_autoptr(DaxfileExtentMap) map = NULL;
    g_autofree char *now = NULL;
    struct stat cur;

    if (mech != DAXFILE_MECH_IMMUTABLE && mech != DAXFILE_MECH_KERNEL)
        return TRUE;
    if (mech == DAXFILE_MECH_IMMUTABLE &&
        !daxfile_static_check_writers(st, params, TRUE, name, error))
        return FALSE;
    if (fstat(fd, &cur) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", name);
        return FALSE;
    }
    map = daxfile_fiemap_read(fd, name, error);
    if (!map)
        return FALSE;
    now = daxfile_extent_map_fingerprint(map);
    if ((guint64)cur.st_size == report->size && STREQ(now, report->fingerprint))
        return TRUE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
        "'%s' changed while static mode was being engaged (its size or block map is no longer the one verified); static mode was rolled back, find what writes to it and try again",
        name);
    return FALSE;
}

gboolean
daxfile_static_undo_engage(DaxfileMechanism mech, const DaxfileFile *f,
                           GError **failure)
{
    g_autoptr(GError) local = NULL;
    GError *why;

    g_return_val_if_fail(failure != NULL && *failure != NULL, FALSE);
    if (daxfile_static_engage(mech, f, FALSE, 0, &local))
        return TRUE;
    why = *failure;
    *failure = g_error_new(
        why->domain, why->code,
        "%s; the %s could not be undone (%s), so its registry entry is kept; fix: run 'daxfile repair' once the filesystem works again",
        why->message, daxfile_mechanism_to_string(mech), local->message);
    g_error_free(why);
    return FALSE;
}

/* The entry @old (NULL: none) back in place of the one enable put for the
 * inode @st, after the failure @failure, which is passed on */
static gboolean
enable_rollback(DaxfileRegistry *reg, const struct stat *st, DaxfileEntry **old,
                GError *failure, GError **error)
{
    daxfile_static_transition(reg, st->st_dev, st->st_ino, g_steal_pointer(old),
                              NULL);
    daxfile_registry_save(reg, NULL);
    g_propagate_error(error, failure);
    return FALSE;
}

/* Engage, check again, log the result in @e */
static gboolean
engage_logged(DaxfileRegistry *reg, DaxfileEntry *e, const DaxfileFile *f,
              const struct stat *st, const DaxfileEnableParams *params,
              const DaxfileReport *report, DaxfileMechanism mech,
              GError **error)
{
    if (!daxfile_static_engage(mech, f, TRUE, params->align, error))
        return FALSE;
    daxfile_test_crash_point("enable-engaged");
    if (!daxfile_static_verify_engaged(f, st, params, report, mech, error) ||
        !daxfile_static_transition_state(reg, e, DAXFILE_STATE_ENGAGED, error))
        return FALSE;
    return daxfile_registry_save(reg, error);
}

/* Log the intent, engage, log the result. On failure the entry goes back
 * to what it was (a reservation stays a reservation), once the mechanism
 * is undone: while it cannot be (the flag may be set: a failed fsync
 * comes after it), the engaging entry stays for 'daxfile repair'. */
static gboolean
commit_enable(const DaxfileFile *f, const struct stat *st,
              const DaxfileEnableParams *params, const DaxfileReport *report,
              DaxfileMechanism mech, GError **error)
{
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(error);
    g_autoptr(DaxfileEntry) old = NULL;
    g_autofree char *abspath = NULL;
    GError *local = NULL;
    DaxfileEntry *e;

    if (!reg)
        return FALSE;
    e = daxfile_registry_lookup(reg, st->st_dev, st->st_ino);
    old = e ? daxfile_entry_copy(e) : NULL;
    abspath = daxfile_static_fd_abspath(f);
    e = daxfile_static_entry_new(abspath, f->fd, st, params, report, mech,
                                 DAXFILE_STATE_ENGAGING);
    if (!daxfile_static_transition(reg, st->st_dev, st->st_ino, e, error))
        return FALSE;
    if (!daxfile_registry_save(reg, &local))
        return enable_rollback(reg, st, &old, local, error);
    daxfile_test_crash_point("enable-logged");
    if (engage_logged(reg, e, f, st, params, report, mech, &local))
        return TRUE;
    if (!daxfile_static_undo_engage(mech, f, &local)) {
        g_propagate_error(error, local);
        return FALSE;
    }
    return enable_rollback(reg, st, &old, local, error);
}

/* The size and block map of @f are the ones @e recorded at enable */
static gboolean
layout_as_recorded(const DaxfileFile *f, const DaxfileEntry *e, GError **error)
{
    g_autoptr(DaxfileExtentMap) map =
        daxfile_fiemap_read(f->fd, f->display, error);
    g_autofree char *now = NULL;

    if (!map)
        return FALSE;
    now = daxfile_extent_map_fingerprint(map);
    if (e->fingerprint && STREQ(now, e->fingerprint))
        return TRUE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
        "'%s' is no longer as it was made static (its size or block map changed while its %s was removed); fix: stop its consumer, release it and check the file with 'daxfile check'",
        f->display, daxfile_mechanism_to_string(e->mechanism));
    return FALSE;
}

/* Enabling again for the same owner is a no-op, unless the mechanism was
 * lost meanwhile (someone ran chattr -i): then it is engaged again, if
 * the layout is still the one recorded and no process but the consumers
 * holds the file open for writing (before and after engaging). */
gboolean
daxfile_static_still_engaged(const DaxfileFile *f, const struct stat *st,
                             const DaxfileEnableParams *params,
                             const DaxfileEntry *cur,
                             DaxfileEnableResult *result, GError **error)
{
    const char *name = f->display;
    gboolean guard = cur->mechanism == DAXFILE_MECH_IMMUTABLE;

    result->mechanism = cur->mechanism;
    result->already = TRUE;
    if (daxfile_static_mechanism_intact(f, cur) != 0)
        return TRUE;
    if (!daxfile_static_check_cap(name, error) ||
        !layout_as_recorded(f, cur, error) ||
        (guard &&
         !daxfile_static_check_writers(st, params, FALSE, name, error)) ||
        !daxfile_static_engage(cur->mechanism, f, TRUE, cur->align, error))
        return FALSE;
    if ((guard &&
         !daxfile_static_check_writers(st, params, TRUE, name, error)) ||
        !layout_as_recorded(f, cur, error)) {
        /* its entry stays in force either way */
        daxfile_static_engage(cur->mechanism, f, FALSE, 0, NULL);
        return FALSE;
    }
    result->warning =
        g_strdup_printf("the %s of '%s' had been removed; it is engaged again",
                        daxfile_mechanism_to_string(cur->mechanism), name);
    return TRUE;
}

/* What enable verifies before anything changes (the layout; not a
 * swapfile; not immutable already), and the mechanism it will use. */
DaxfileReport *
daxfile_static_enable_checks(const DaxfileFile *f, const struct stat *st,
                             const DaxfileEnableParams *params,
                             DaxfileEnableResult *result, GError **error)
{
    const char *name = f->display;
    g_autoptr(DaxfileReport) report = NULL;

    report =
        daxfile_report_build(f, params->align, params->allow_non_dax, error);
    if (!report || !daxfile_report_require_ready(report, error))
        return NULL;
    if (daxfile_is_swapfile(st->st_dev, st->st_ino)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                    "'%s' is an active swapfile; fix: swapoff it first", name);
        return NULL;
    }
    if (!check_not_immutable(f, error) ||
        !daxfile_static_choose_mechanism(f, st, params, report, result, error))
        return NULL;
    daxfile_test_pause_point("enable-checked");
    return g_steal_pointer(&report);
}

gboolean
daxfile_static_check_consumer(const DaxfileFile *f, pid_t pid, GError **error)
{
    struct stat st;

    if (!daxfile_static_fd_identity(f, &st, error))
        return FALSE;
    if (pid > 0 && daxfile_proc_maps_inode(pid, st.st_dev, st.st_ino))
        return TRUE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
        "'%s' is not mapped by process %d, the consumer named; fix: name the process that has it mapped, or none",
        f->display, (int)pid);
    return FALSE;
}

gboolean
daxfile_static_enable(const DaxfileFile *f, const DaxfileEnableParams *params,
                      DaxfileEnableResult *ret_result, GError **error)
{
    const char *name = f->display;
    g_auto(DaxfileFd) lock = -1;
    g_autoptr(DaxfileEntry) cur = NULL;
    g_autoptr(DaxfileReport) report = NULL;
    struct stat st;

    g_return_val_if_fail(params->owner != NULL, FALSE);
    if (!daxfile_static_fd_identity(f, &st, error))
        return FALSE;
    daxfile_test_pause_point("enable-opened");
    lock = daxfile_registry_lock_inode(st.st_dev, st.st_ino, name, params->wait,
                                       error);
    if (lock < 0 || !daxfile_static_registry_peek(&st, &cur, error) ||
        daxfile_static_owner_conflict(cur, params->owner, name, error) ||
        daxfile_static_interrupted(cur, name, error))
        return FALSE;
    if (cur && cur->state == DAXFILE_STATE_ENGAGED)
        return daxfile_static_still_engaged(f, &st, params, cur, ret_result,
                                            error);
    report = daxfile_static_enable_checks(f, &st, params, ret_result, error);
    if (!report)
        return FALSE;
    return commit_enable(f, &st, params, report, ret_result->mechanism, error);
}

static void
compare_layout(const DaxfileFile *f, const DaxfileEntry *e,
               DaxfileDisableResult *result)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileExtentMap) map =
        daxfile_fiemap_read(f->fd, f->display, &error);
    g_autofree char *now = map ? daxfile_extent_map_fingerprint(map) : NULL;

    if (!map) {
        result->change =
            g_strdup_printf("cannot re-read the block map: %s", error->message);
        return;
    }
    result->layout_unchanged = e->fingerprint && STREQ(now, e->fingerprint);
    if (!result->layout_unchanged)
        result->change = g_strdup_printf(
            "the block map changed while static: %u extents now, fingerprint %.12s, was %.12s",
            daxfile_extent_map_count(map), now,
            e->fingerprint ? e->fingerprint : "none");
}

static gboolean
not_static_error(const DaxfileFile *f, GError **error)
{
    const char *name = f->display;
    gboolean immutable = FALSE;

    daxfile_guard_get(f, &immutable, NULL);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
        immutable
            ? "'%s' is not static (no registry entry); its immutable flag was not set by daxfile, clear it with 'chattr -i' if you know who set it"
            : "'%s' is not static (no registry entry)",
        name);
    return FALSE;
}

gboolean
daxfile_static_release_allowed(const DaxfileEntry *e, const char *name,
                               GError **error)
{
    return e->mechanism == DAXFILE_MECH_VERIFIED_ONLY ||
           e->mechanism == DAXFILE_MECH_NONE ||
           e->mechanism == DAXFILE_MECH_DEVICE_DAX ||
           daxfile_static_check_cap(name, error);
}

/* Undo the entry's mechanism on its inode (durably) and say what changed
 * while it was static. */
gboolean
daxfile_static_release_inode(const DaxfileFile *f, const DaxfileEntry *e,
                             DaxfileDisableResult *result, GError **error)
{
    if ((e->mechanism != DAXFILE_MECH_IMMUTABLE || e->flag_set) &&
        !daxfile_static_engage(e->mechanism, f, FALSE, 0, error))
        return FALSE;
    result->mechanism = e->mechanism;
    result->owner = g_strdup(e->owner);
    /* a device has no block map; an unguarded file was promised nothing */
    if (daxfile_static_entry_is_device(e) || e->unguarded)
        result->layout_unchanged = TRUE;
    else
        compare_layout(f, e, result);
    return TRUE;
}

gboolean
daxfile_static_disable(const DaxfileFile *f, const char *owner, gboolean wait,
                       DaxfileDisableResult *ret_result, GError **error)
{
    const char *name = f->display;
    g_autoptr(DaxfileRegistry) reg = NULL;
    g_auto(DaxfileFd) lock = -1;
    DaxfileEntry *e;
    struct stat st;

    if (!daxfile_static_fd_identity(f, &st, error))
        return FALSE;
    lock = daxfile_registry_lock_inode(st.st_dev, st.st_ino, name, wait, error);
    if (lock < 0 || !(reg = daxfile_registry_open(error)))
        return FALSE;
    e = daxfile_registry_lookup(reg, st.st_dev, st.st_ino);
    if (!e)
        return not_static_error(f, error);
    if (daxfile_static_owner_conflict(e, owner, name, error) ||
        !daxfile_static_release_allowed(e, name, error))
        return FALSE;
    if (!daxfile_static_transition_state(reg, e, DAXFILE_STATE_RELEASING,
                                         error) ||
        !daxfile_registry_save(reg, error))
        return FALSE;
    daxfile_test_crash_point("disable-logged");
    if (!daxfile_static_release_inode(f, e, ret_result, error))
        return FALSE;
    daxfile_test_crash_point("disable-released");
    return daxfile_static_transition(reg, st.st_dev, st.st_ino, NULL, error) &&
           daxfile_registry_save(reg, error);
}

GPtrArray *
daxfile_static_list(GError **error)
{
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(error);
    GPtrArray *entries;
    GPtrArray *out;
    guint i;

    if (!reg)
        return NULL;
    entries = daxfile_registry_entries(reg);
    out = g_ptr_array_new_with_free_func((GDestroyNotify)daxfile_entry_free);
    for (i = 0; i < entries->len; i++)
        g_ptr_array_add(out, daxfile_entry_copy(g_ptr_array_index(entries, i)));
    return out;
}

void
daxfile_static_state_free(DaxfileStaticState *state)
{
    if (!state)
        return;
    daxfile_entry_free(state->entry);
    if (state->qemu)
        daxfile_attestation_clear(state->qemu);
    g_free(state->qemu);
    g_free(state);
}

gboolean
daxfile_static_state_enabled(const DaxfileStaticState *state)
{
    return state->entry && state->entry->state == DAXFILE_STATE_ENGAGED;
}

/* For a file a running domain holds: what its QEMU mapped, attested as
 * the hook did at started (daxfile-attest.h); the <alignsize> judged is
 * the report's, and a virtio-pmem device needs neither it nor MAP_SYNC */
static DaxfileAttestation *
attest_qemu(const DaxfileFile *f, const struct stat *st,
            const DaxfileReport *report, const DaxfileEntry *e)
{
    g_autoptr(DaxfileConf) conf = daxfile_conf_load(NULL, NULL);
    DaxfileAttestation *a = g_new0(DaxfileAttestation, 1);
    g_autoptr(GError) local = NULL;
    const char *domain = e->owner + strlen("domain:");
    gboolean nvdimm = g_strcmp0(e->device, "virtio-pmem") != 0;

    a->pid = daxfile_attest_qemu_pid(conf ? conf->qemu_pid_dir
                                          : DAXFILE_QEMU_PID_DIR,
                                     domain, daxfile_conf_path(), &local);
    if (a->pid < 0)
        a->problem = g_strdup(local->message);
    else
        daxfile_attest(a->pid, NULL, f, st->st_size, nvdimm ? report->align : 0,
                       nvdimm, a, NULL);
    return a;
}

DaxfileStaticState *
daxfile_static_state_read_devdax(const DaxfileFile *f)
{
    DaxfileStaticState *state = g_new0(DaxfileStaticState, 1);
    struct stat st;

    /* no block map to compare, no flag to read: only its entry */
    state->layout_unchanged = DAXFILE_TRI_UNKNOWN;
    state->mechanism_intact = DAXFILE_TRI_UNKNOWN;
    state->immutable = DAXFILE_TRI_UNKNOWN;
    if (daxfile_static_fd_identity(f, &st, NULL))
        daxfile_static_registry_peek(&st, &state->entry, NULL);
    return state;
}

DaxfileStaticState *
daxfile_static_state_read(const DaxfileFile *f, const DaxfileReport *report)
{
    int fd = f->fd;
    DaxfileStaticState *state = g_new0(DaxfileStaticState, 1);
    const DaxfileEntry *e = NULL;
    gboolean immutable = FALSE;
    struct stat st;

    state->layout_unchanged = DAXFILE_TRI_UNKNOWN;
    state->mechanism_intact = DAXFILE_TRI_UNKNOWN;
    if (fstat(fd, &st) == 0)
        daxfile_static_registry_peek(&st, &state->entry, NULL);
    e = state->entry;
    if (daxfile_static_state_enabled(state) && e->owner &&
        g_str_has_prefix(e->owner, "domain:"))
        state->qemu = attest_qemu(f, &st, report, e);
    if (e) {
        state->layout_unchanged = e->fingerprint && report->fingerprint &&
                                  STREQ(e->fingerprint, report->fingerprint);
        state->mechanism_intact = daxfile_static_mechanism_intact(f, e);
    }
    state->immutable = daxfile_guard_get(f, &immutable, NULL)
                           ? immutable
                           : DAXFILE_TRI_UNKNOWN;
    return state;
}

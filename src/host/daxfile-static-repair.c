/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-repair.c: daxfile repair, which finishes interrupted
 * changes and drops what a reboot or a dead consumer left behind
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "daxfile-attest.h"
#include "daxfile-conf.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-guard.h"
#include "daxfile-kernel.h"
#include "daxfile-mount.h"
#include "daxfile-proc.h"
#include "daxfile-registry.h"
#include "daxfile-static-priv.h"
#include "daxfile-static.h"
#include "daxfile-util.h"

/* The processes mapping the entry's file, or its device-dax device */
static GArray *
entry_mappers(const DaxfileEntry *e)
{
    return daxfile_static_entry_is_device(e)
               ? daxfile_proc_mappers_rdev(e->dev)
               : daxfile_proc_mappers(e->dev, e->ino);
}

static gboolean
owned_by_consumer(const DaxfileEntry *e)
{
    return e->owner && (g_str_has_prefix(e->owner, "domain:") ||
                        g_str_has_prefix(e->owner, "pid:"));
}

static const char *const finding_texts[] = {
    [DAXFILE_REPAIR_FOUND_STALE] = "left over from an earlier boot",
    [DAXFILE_REPAIR_FOUND_INTERRUPTED] = "an enable or disable was interrupted",
    [DAXFILE_REPAIR_FOUND_START_UNFINISHED] =
        "the start that reserved it never finished (the process that reserved it is gone and no process maps the file)",
    [DAXFILE_REPAIR_FOUND_CONSUMER_GONE] = "its consumer process is gone",
    [DAXFILE_REPAIR_FOUND_UNMAPPED] = "no process maps it any more",
    [DAXFILE_REPAIR_FOUND_MECHANISM_LOST] =
        "its mechanism is not in force (a start was interrupted before it engaged, or the flag was cleared by hand)",
};

const char *
daxfile_repair_finding_describe(DaxfileRepairFinding found)
{
    return finding_texts[found];
}

/* Whether a reservation is left over; not while its start may still be
 * going on: the process that ran the prepare hook (libvirtd) is alive, or
 * QEMU has the file mapped (a libvirtd restarted meanwhile reconnects). */
static gboolean
reservation_left_over(const DaxfileEntry *e)
{
    g_autoptr(GArray) mappers = NULL;

    if (e->holder_pid > 0 &&
        daxfile_proc_same((pid_t)e->holder_pid, e->holder_start))
        return FALSE;
    mappers = entry_mappers(e);
    return mappers->len == 0;
}

/* Why an entry needs repair, in *ret_found; FALSE when it is healthy */
static gboolean
repair_reason(const DaxfileEntry *e, DaxfileRepairFinding *ret_found)
{
    g_autoptr(GArray) mappers = NULL;

    if (daxfile_entry_is_stale(e)) {
        *ret_found = DAXFILE_REPAIR_FOUND_STALE;
        return TRUE;
    }
    if (e->state == DAXFILE_STATE_ENGAGING ||
        e->state == DAXFILE_STATE_RELEASING) {
        *ret_found = DAXFILE_REPAIR_FOUND_INTERRUPTED;
        return TRUE;
    }
    if (e->state == DAXFILE_STATE_RESERVED || e->holder_start) {
        /* (made static at prepare) */
        *ret_found = DAXFILE_REPAIR_FOUND_START_UNFINISHED;
        return reservation_left_over(e);
    }
    if (e->pid > 0 && !daxfile_proc_alive((pid_t)e->pid)) {
        *ret_found = DAXFILE_REPAIR_FOUND_CONSUMER_GONE;
        return TRUE;
    }
    if (!owned_by_consumer(e))
        return FALSE;
    mappers = entry_mappers(e);
    *ret_found = DAXFILE_REPAIR_FOUND_UNMAPPED;
    return mappers->len == 0;
}

/* Whether undoing the entry needs its inode: an immutable flag outlives
 * everything, a kernel static mode only lasts the boot, the rest enforces
 * nothing. */
static gboolean
needs_inode(const DaxfileEntry *e)
{
    if (e->mechanism == DAXFILE_MECH_IMMUTABLE)
        return TRUE;
    return e->mechanism == DAXFILE_MECH_KERNEL && !daxfile_entry_is_stale(e);
}

/* @fd (whose stat is @st) is the entry's inode: on its filesystem (the
 * same UUID, where both are known: a device number can hold another
 * filesystem now), the same device and inode, or, where the device
 * number changed (a reboot, another loop device), the same inode number
 * and file handle, its generation included (an xfs f_fsid follows the
 * device number, so it cannot help) */
static gboolean
is_entry_inode(int fd, const struct stat *st, const DaxfileEntry *e)
{
    g_autofree char *uuid = e->fs_uuid ? daxfile_fd_fs_uuid(fd) : NULL;
    g_autofree char *handle = NULL;

    if (uuid && STRNEQ(uuid, e->fs_uuid))
        return FALSE;
    if (st->st_dev == e->dev && st->st_ino == e->ino)
        return TRUE;
    if (st->st_ino != e->ino || !e->handle)
        return FALSE;
    handle = daxfile_fd_handle(fd);
    return handle && STREQ(handle, e->handle);
}

/* The inode of the entry, by its recorded path, by the --path hint, or by
 * its file handle, named by its recorded path. NULL with *ret_gone when it
 * no longer exists. */
static DaxfileFile *
repair_resolve(const DaxfileEntry *e, const DaxfileFile *hint,
               gboolean *ret_gone, GError **error)
{
    g_autoptr(DaxfileFile) f = NULL;
    struct stat st;
    int fd;

    *ret_gone = FALSE;
    /* its recorded path, then the path the user named */
    f = daxfile_file_open(e->path, DAXFILE_OPEN_READ, NULL);
    if (f && is_entry_inode(f->fd, &f->st, e))
        return g_steal_pointer(&f);
    if (hint && fstat(hint->fd, &st) == 0 && is_entry_inode(hint->fd, &st, e)) {
        fd = daxfile_fd_reopen(hint->fd, O_RDONLY, hint->display, error);
    } else if (!e->handle) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                    "its path no longer leads to it and it has no file handle");
        return NULL;
    } else {
        DaxfileFsRef fs = {.dev = e->dev, .uuid = e->fs_uuid, .fsid = e->fsid};

        fd = daxfile_handle_reopen(e->handle, &fs, e->ino, O_RDONLY, ret_gone,
                                   error);
    }
    if (fd < 0)
        return NULL;
    return daxfile_file_new_from_fd(fd, e->path, error);
}

/* Another entry, in force, holds the inode @f now (a stale entry from an
 * earlier boot whose file was made static again since). */
static gboolean
held_by_other(DaxfileRegistry *reg, const DaxfileEntry *e, const DaxfileFile *f)
{
    DaxfileEntry *other;

    other = daxfile_registry_lookup(reg, f->st.st_dev, f->st.st_ino);
    return other && other != e && !daxfile_entry_is_stale(other);
}

static gboolean
repair_release(const DaxfileFile *f, const DaxfileEntry *e, GError **error)
{
    gboolean on = FALSE;
    long nr = 0;

    if (e->mechanism == DAXFILE_MECH_IMMUTABLE && e->flag_set) {
        if (!daxfile_guard_get(f, &on, error))
            return FALSE;
        return !on || (daxfile_static_check_cap(f->display, error) &&
                       daxfile_guard_set_durable(f, FALSE, error));
    }
    if (e->mechanism == DAXFILE_MECH_KERNEL && daxfile_kernel_syscall_nr(&nr)) {
        if (!daxfile_kernel_get(nr, f, &on, error))
            return FALSE;
        return !on || daxfile_kernel_set(nr, f, FALSE, 0, error);
    }
    return TRUE;
}

static void
repair_action_free(DaxfileRepairAction *action)
{
    g_free(action->path);
    g_free(action->owner);
    g_free(action->error);
    g_free(action);
}

void
daxfile_repair_result_clear(DaxfileRepairResult *result)
{
    g_clear_pointer(&result->actions, g_ptr_array_unref);
}

guint
daxfile_repair_result_kept(const DaxfileRepairResult *result)
{
    guint i;
    guint n = 0;

    for (i = 0; i < result->actions->len; i++) {
        const DaxfileRepairAction *a = g_ptr_array_index(result->actions, i);

        n += a->done == DAXFILE_REPAIR_KEPT ||
             a->done == DAXFILE_REPAIR_KEPT_UNGUARDED;
    }
    return n;
}

static DaxfileRepairAction *
add_action(DaxfileRepairResult *result, const DaxfileEntry *e,
           DaxfileRepairFinding found, DaxfileRepairDone done)
{
    DaxfileRepairAction *a = g_new0(DaxfileRepairAction, 1);

    a->path = g_strdup(e->path);
    a->mechanism = e->mechanism;
    a->owner = g_strdup(e->owner);
    a->found = found;
    a->done = done;
    g_ptr_array_add(result->actions, a);
    return a;
}

/* A file static in the kernel when an earlier boot ended: a kernel that
 * serves its faults from the frozen map (kernel/README.md, "Fault path")
 * stamps mtime only at fsync and release, so stores since the last stamp
 * may not show. Stamp it now, so that backups see it changed. */
static void
stamp_left_static(const DaxfileEntry *e, const DaxfileFile *hint,
                  DaxfileRepairAction *action)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(DaxfileFile) f = NULL;
    gboolean gone = FALSE;
    const struct timespec now[2] = {
        {.tv_nsec = UTIME_OMIT},
        {.tv_nsec = UTIME_NOW},
    };

    f = repair_resolve(e, hint, &gone, &local);
    if (!f) {
        action->mtime = DAXFILE_REPAIR_MTIME_NOT_FOUND;
    } else if (futimens(f->fd, now) < 0) {
        action->mtime = DAXFILE_REPAIR_MTIME_FAILED;
        action->error = g_strdup(g_strerror(errno));
    } else {
        action->mtime = DAXFILE_REPAIR_MTIME_STAMPED;
    }
}

/* The QEMU of @e's domain (libvirt's pid file names it), in *ret_pid,
 * when it maps the file @f: the domain runs on it */
static gboolean
domain_maps(const DaxfileEntry *e, const DaxfileFile *f, pid_t *ret_pid)
{
    g_autoptr(DaxfileConf) conf = NULL;

    if (!e->owner || !g_str_has_prefix(e->owner, "domain:"))
        return FALSE;
    conf = daxfile_conf_load(NULL, NULL);
    *ret_pid = daxfile_attest_qemu_pid(
        conf ? conf->qemu_pid_dir : DAXFILE_QEMU_PID_DIR,
        e->owner + strlen("domain:"), daxfile_conf_path(), NULL);
    return *ret_pid > 0 &&
           daxfile_proc_maps_inode(*ret_pid, f->st.st_dev, f->st.st_ino);
}

/* The mechanism of a running domain's file was removed (chattr -i): engage
 * it again when its QEMU attests as at started and the file passes the
 * checks enable makes again (daxfile_static_still_engaged()); otherwise
 * say why. The entry stays either way. */
static void
reengage_domain(const DaxfileEntry *e, const DaxfileFile *f, pid_t pid,
                DaxfileRepairFinding found, DaxfileRepairResult *result)
{
    g_autoptr(GArray) qemu = g_array_new(FALSE, FALSE, sizeof(pid_t));
    g_auto(DaxfileAttestation) a = {0};
    g_auto(DaxfileEnableResult) r = {0};
    g_autoptr(GError) local = NULL;
    gboolean nvdimm = g_strcmp0(e->device, "virtio-pmem") != 0;
    DaxfileEnableParams params = {
        .owner = e->owner, .align = e->align, .consumers = qemu};

    g_array_append_val(qemu, pid);
    if (daxfile_attest(pid, NULL, f, (guint64)f->st.st_size,
                       nvdimm ? e->align : 0, nvdimm, &a, &local) &&
        daxfile_static_still_engaged(f, &f->st, &params, e, &r, &local)) {
        add_action(result, e, found, DAXFILE_REPAIR_REENGAGED);
        return;
    }
    add_action(result, e, found, DAXFILE_REPAIR_KEPT_UNGUARDED)->error =
        g_strdup(local->message);
}

/* Repair one entry; TRUE when it is done with (and removed). */
static gboolean
repair_entry(DaxfileRegistry *reg, DaxfileEntry *e, DaxfileRepairFinding found,
             const DaxfileFile *hint, DaxfileRepairResult *result,
             GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(DaxfileFile) f = NULL;
    gboolean gone = FALSE;
    pid_t qemu = -1;

    if (e->mechanism == DAXFILE_MECH_KERNEL && daxfile_entry_is_stale(e)) {
        stamp_left_static(
            e, hint, add_action(result, e, found, DAXFILE_REPAIR_RELEASED));
        return TRUE;
    }
    if (!needs_inode(e)) {
        add_action(result, e, found, DAXFILE_REPAIR_RELEASED);
        return TRUE;
    }
    f = repair_resolve(e, hint, &gone, &local);
    if (!f && gone) {
        add_action(result, e, found, DAXFILE_REPAIR_DROPPED_FILE_GONE);
        return TRUE;
    }
    if (!f) {
        add_action(result, e, found, DAXFILE_REPAIR_KEPT)->error =
            g_strdup(local->message);
        return FALSE;
    }
    if (held_by_other(reg, e, f)) {
        add_action(result, e, found, DAXFILE_REPAIR_DROPPED_SUPERSEDED);
        return TRUE;
    }
    if (found == DAXFILE_REPAIR_FOUND_MECHANISM_LOST &&
        domain_maps(e, f, &qemu)) {
        reengage_domain(e, f, qemu, found, result);
        return FALSE;
    }
    if (!repair_release(f, e, error))
        return FALSE;
    add_action(result, e, found, DAXFILE_REPAIR_RELEASED);
    return TRUE;
}

/* An entry in force by the registry whose mechanism is not on its inode:
 * a hook killed between its registry write and the flag, or chattr -i by
 * hand. */
static gboolean
mechanism_lost(const DaxfileEntry *e, const DaxfileFile *hint)
{
    g_autoptr(DaxfileFile) f = NULL;
    gboolean gone = FALSE;

    if (e->state != DAXFILE_STATE_ENGAGED || !needs_inode(e))
        return FALSE;
    f = repair_resolve(e, hint, &gone, NULL);
    return f && daxfile_static_mechanism_intact(f, e) == 0;
}

/* Why @e needs repair, in *ret_found; FALSE when it does not */
static gboolean
needs_repair(const DaxfileEntry *e, const DaxfileFile *hint,
             DaxfileRepairFinding *ret_found)
{
    if (repair_reason(e, ret_found))
        return TRUE;
    *ret_found = DAXFILE_REPAIR_FOUND_MECHANISM_LOST;
    return mechanism_lost(e, hint);
}

gboolean
daxfile_static_repair(const char *hint_path, DaxfileRepairResult *ret_result,
                      GError **error)
{
    g_autoptr(DaxfileRegistry) reg = NULL;
    g_autoptr(DaxfileFile) hint = NULL;
    GPtrArray *entries;
    guint i = 0;

    ret_result->actions =
        g_ptr_array_new_with_free_func((GDestroyNotify)repair_action_free);
    if (hint_path) {
        hint = daxfile_file_open(hint_path, DAXFILE_OPEN_READ, error);
        if (!hint)
            return FALSE;
    }
    reg = daxfile_registry_open(error);
    if (!reg)
        return FALSE;
    entries = daxfile_registry_entries(reg);
    while (i < entries->len) {
        DaxfileEntry *e = g_ptr_array_index(entries, i);
        DaxfileRepairFinding found = DAXFILE_REPAIR_FOUND_STALE;
        g_autoptr(GError) local = NULL;

        if (!needs_repair(e, hint, &found)) {
            i++;
        } else if (repair_entry(reg, e, found, hint, ret_result, &local)) {
            daxfile_static_transition(reg, e->dev, e->ino, NULL, NULL);
        } else if (local) {
            /* save what was done so far, then report the failure */
            daxfile_registry_save(reg, NULL);
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        } else {
            i++;
        }
    }
    return daxfile_registry_save(reg, error);
}

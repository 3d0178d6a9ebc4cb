/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-set.c: sets of files changed in one registry transaction
 * (the libvirt hook's phases, daxfile-static.h)
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-fiemap.h"
#include "daxfile-kernel.h"
#include "daxfile-registry.h"
#include "daxfile-seam.h"
#include "daxfile-static-priv.h"
#include "daxfile-static.h"
#include "daxfile-wipe.h"

void
daxfile_static_item_clear(DaxfileStaticItem *item)
{
    daxfile_enable_result_clear(&item->result);
    daxfile_disable_result_clear(&item->released);
}

/* One file of a set, while the set is being changed */
typedef struct {
    guint idx; /* in the caller's items */
    DaxfileStaticItem *item;
    struct stat st;
    const DaxfileFile *file; /* the item's */
    int fd;                  /* its file's */
    const char *name;        /* its display name */
    int lock;                /* its inode lock */
    DaxfileEntry *old;       /* a copy of its entry before */
    DaxfileReport *report;   /* what was verified, when it was */
    gboolean skip;           /* its entry was there already */
    gboolean engage;         /* to be made static here */
    gboolean touched;        /* its mechanism was engaged here, or
                              * tried: a failed fsync comes after the
                              * flag, so it may be in force */
} Member;

static void
member_clear(Member *m)
{
    if (m->lock >= 0)
        close(m->lock);
    daxfile_entry_free(m->old);
    g_clear_pointer(&m->report, daxfile_report_free);
}

static gint
member_cmp(gconstpointer a, gconstpointer b)
{
    const Member *x = a;
    const Member *y = b;

    if (x->st.st_dev != y->st.st_dev)
        return x->st.st_dev < y->st.st_dev ? -1 : 1;
    if (x->st.st_ino != y->st.st_ino)
        return x->st.st_ino < y->st.st_ino ? -1 : 1;
    return 0;
}

static gboolean
member_fail(const Member *m, guint *ret_failed)
{
    *ret_failed = m->idx;
    return FALSE;
}

/* The set in (device, inode) order, every inode locked: two sets that
 * share files lock them in the same order and cannot deadlock. */
static GArray *
set_lock(DaxfileStaticItem *const *items, guint n, guint *ret_failed,
         GError **error)
{
    g_autoptr(GArray) set = g_array_sized_new(FALSE, TRUE, sizeof(Member), n);
    guint i;

    g_array_set_clear_func(set, (GDestroyNotify)member_clear);
    for (i = 0; i < n; i++) {
        Member m = {.idx = i,
                    .item = items[i],
                    .lock = -1,
                    .file = items[i]->file,
                    .fd = items[i]->file->fd,
                    .name = items[i]->file->display};

        g_array_append_val(set, m);
        if (!daxfile_static_fd_identity(
                m.file, &g_array_index(set, Member, i).st, error)) {
            *ret_failed = i;
            return NULL;
        }
    }
    g_array_sort(set, member_cmp);
    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);

        if (i > 0 && member_cmp(m - 1, m) == 0) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        "'%s' and '%s' are the same file", (m - 1)->name,
                        m->name);
            member_fail(m, ret_failed);
            return NULL;
        }
        m->lock = daxfile_registry_lock_inode(
            m->st.st_dev, m->st.st_ino, m->name, m->item->params.wait, error);
        if (m->lock < 0) {
            member_fail(m, ret_failed);
            return NULL;
        }
    }
    return g_steal_pointer(&set);
}

static DaxfileEntry *
reservation_new(const Member *m, pid_t holder, guint64 holder_start,
                GError **error)
{
    const DaxfileStaticItem *it = m->item;
    g_autoptr(DaxfileExtentMap) map =
        daxfile_fiemap_read(m->fd, m->name, error);
    g_autofree char *abspath = NULL;
    DaxfileReport fake = {0};
    DaxfileEntry *e;

    if (!map)
        return NULL;
    fake.fingerprint = daxfile_extent_map_fingerprint(map);
    abspath = daxfile_static_fd_abspath(m->file);
    e = daxfile_static_entry_new(abspath, m->fd, &m->st, &it->params, &fake,
                                 DAXFILE_MECH_NONE, DAXFILE_STATE_RESERVED);
    e->holder_pid = holder_start ? holder : 0;
    e->holder_start = holder_start;
    g_free(fake.fingerprint);
    return e;
}

/* The entry of a device-dax device: keyed by its device number, with
 * nothing to find it by but that */
static DaxfileEntry *
device_entry_new(const Member *m, DaxfileMechanism mech,
                 DaxfileEntryState state)
{
    DaxfileReport none = {0};
    DaxfileEntry *e =
        daxfile_static_entry_new(m->item->file->path, m->fd, &m->st,
                                 &m->item->params, &none, mech, state);

    g_clear_pointer(&e->handle, g_free); /* its /dev node: nothing to find */
    g_clear_pointer(&e->fsid, g_free);
    g_clear_pointer(&e->fs_uuid, g_free);
    return e;
}

/* A device-dax device (checked by the caller, daxfile-devdax.h): held for
 * its owner, reserved at prepare and engaged at started, with nothing to
 * engage on it. */
static gboolean
set_member_device(DaxfileRegistry *reg, Member *m, DaxfileEntry *cur,
                  gboolean reserve, pid_t holder, guint64 holder_start,
                  GError **error)
{
    DaxfileStaticItem *it = m->item;
    DaxfileEntry *e;

    it->result.mechanism =
        reserve ? DAXFILE_MECH_NONE : DAXFILE_MECH_DEVICE_DAX;
    if (cur && (reserve || cur->state == DAXFILE_STATE_ENGAGED)) {
        m->skip = TRUE;
        return TRUE;
    }
    m->old = cur ? daxfile_entry_copy(cur) : NULL;
    e = device_entry_new(m, it->result.mechanism,
                         reserve ? DAXFILE_STATE_RESERVED
                                 : DAXFILE_STATE_ENGAGED);
    if (reserve) {
        e->holder_pid = holder_start ? holder : 0;
        e->holder_start = holder_start;
    }
    return daxfile_static_transition(reg, m->st.st_dev, m->st.st_ino, e, error);
}

/* Check one file and put its entry, in its target state, in @reg. At
 * prepare (@reserve) that is a reservation, or, where the kernel
 * mechanism is at hand, static mode at once: daxctl() lets the consumer
 * open the file for writing, so the file is static before QEMU maps it
 * (the immutable guard would refuse QEMU's own open: it waits for
 * started). Such an entry names its holder until started says the start
 * is done. */
static gboolean
set_member(DaxfileRegistry *reg, Member *m, gboolean reserve, pid_t holder,
           guint64 holder_start, GError **error)
{
    DaxfileStaticItem *it = m->item;
    DaxfileEntry *cur =
        daxfile_registry_lookup(reg, m->st.st_dev, m->st.st_ino);
    g_autofree char *abspath = NULL;
    DaxfileEntry *e;
    long nr = 0;

    if (daxfile_static_owner_conflict(cur, it->params.owner, m->name, error) ||
        daxfile_static_interrupted(cur, m->name, error))
        return FALSE;
    /* a wipe owed (an undefined domain's, an interrupted one) comes first:
     * checked under the inode lock, which a wipe takes to record it */
    if (reserve && !cur &&
        !daxfile_wipe_refuse_pending(m->st.st_dev, m->st.st_ino, m->name,
                                     error))
        return FALSE;
    if (S_ISCHR(m->st.st_mode))
        return set_member_device(reg, m, cur, reserve, holder, holder_start,
                                 error);
    if (cur && (reserve || cur->state == DAXFILE_STATE_ENGAGED)) {
        m->skip = TRUE;
        if (reserve)
            return TRUE; /* already reserved or static for this owner */
        if (cur->holder_start) {
            cur->holder_pid = 0; /* its start is done */
            cur->holder_start = 0;
            daxfile_registry_touch(reg);
        }
        return daxfile_static_still_engaged(m->file, &m->st, &it->params, cur,
                                            &it->result, error);
    }
    m->old = cur ? daxfile_entry_copy(cur) : NULL;
    if (!reserve || daxfile_kernel_syscall_nr(&nr)) {
        m->report = daxfile_static_enable_checks(it->file, &m->st, &it->params,
                                                 &it->result, error);
        if (!m->report)
            return FALSE;
    }
    if (reserve && it->result.mechanism != DAXFILE_MECH_KERNEL) {
        daxfile_enable_result_clear(&it->result);
        it->result.mechanism = DAXFILE_MECH_NONE;
        e = reservation_new(m, holder, holder_start, error);
        return e && daxfile_static_transition(reg, m->st.st_dev, m->st.st_ino,
                                              e, error);
    }
    abspath = daxfile_static_fd_abspath(m->file);
    e = daxfile_static_entry_new(abspath, m->fd, &m->st, &it->params, m->report,
                                 it->result.mechanism, DAXFILE_STATE_ENGAGED);
    if (reserve) {
        e->holder_pid = holder_start ? holder : 0;
        e->holder_start = holder_start;
    }
    if (!daxfile_static_transition(reg, m->st.st_dev, m->st.st_ino, e, error))
        return FALSE;
    m->engage = TRUE;
    return TRUE;
}

/* Disengage what this set engaged and put the entries back; a member
 * whose mechanism cannot be undone keeps its entry (in its target state),
 * and *@failure says so. */
static void
set_rollback(DaxfileRegistry *reg, GArray *set, GError **failure)
{
    guint i;

    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);

        if (m->touched && !daxfile_static_undo_engage(m->item->result.mechanism,
                                                      m->file, failure))
            continue;
        if (m->skip)
            continue;
        daxfile_static_transition(reg, m->st.st_dev, m->st.st_ino,
                                  g_steal_pointer(&m->old), NULL);
    }
    daxfile_registry_save(reg, NULL);
}

/* Engage (when @verify is FALSE) or verify every member to be made static
 * here; on failure roll the whole set back. */
static gboolean
set_step(DaxfileRegistry *reg, GArray *set, gboolean verify, guint *ret_failed,
         GError **error)
{
    guint i;

    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);
        DaxfileStaticItem *it = m->item;
        DaxfileMechanism mech = it->result.mechanism;
        GError *local = NULL;
        gboolean ok;

        if (!m->engage)
            continue;
        m->touched = TRUE;
        if (verify)
            ok = daxfile_static_verify_engaged(m->file, &m->st, &it->params,
                                               m->report, mech, &local);
        else
            ok = daxfile_static_engage(mech, m->file, TRUE, it->params.align,
                                       &local);
        if (!ok) {
            set_rollback(reg, set, &local);
            g_propagate_error(error, local);
            return member_fail(m, ret_failed);
        }
    }
    return TRUE;
}

static gboolean
set_commit(DaxfileStaticItem *const *items, guint n, gboolean reserve,
           pid_t holder, guint64 holder_start, guint *ret_failed,
           GError **error)
{
    g_autoptr(GArray) set = NULL;
    g_autoptr(DaxfileRegistry) reg = NULL;
    guint i;

    *ret_failed = G_MAXUINT;
    set = set_lock(items, n, ret_failed, error);
    if (reserve)
        daxfile_test_pause_point("prepare-reserving");
    if (!set || !(reg = daxfile_registry_open(error)))
        return FALSE;
    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);

        if (!set_member(reg, m, reserve, holder, holder_start, error))
            return member_fail(m, ret_failed);
    }
    /* the registry first: after a crash it names every file that may be
     * static, and repair finds them */
    if (!daxfile_registry_save(reg, error))
        return FALSE;
    daxfile_test_crash_point("enable-logged");
    if (!set_step(reg, set, FALSE, ret_failed, error))
        return FALSE;
    daxfile_test_crash_point("enable-engaged");
    return set_step(reg, set, TRUE, ret_failed, error);
}

gboolean
daxfile_static_reserve_set(DaxfileStaticItem *const *items, guint n,
                           pid_t holder, guint64 holder_start,
                           guint *ret_failed, GError **error)
{
    return set_commit(items, n, TRUE, holder, holder_start, ret_failed, error);
}

gboolean
daxfile_static_enable_set(DaxfileStaticItem *const *items, guint n,
                          guint *ret_failed, GError **error)
{
    return set_commit(items, n, FALSE, 0, 0, ret_failed, error);
}

gboolean
daxfile_static_release_set(DaxfileStaticItem *const *items, guint n,
                           guint *ret_failed, GError **error)
{
    g_autoptr(GArray) set = NULL;
    g_autoptr(DaxfileRegistry) reg = NULL;
    gboolean ok = TRUE;
    guint i;

    *ret_failed = G_MAXUINT;
    set = set_lock(items, n, ret_failed, error);
    if (!set || !(reg = daxfile_registry_open(error)))
        return FALSE;
    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);
        DaxfileStaticItem *it = m->item;
        DaxfileEntry *e =
            daxfile_registry_lookup(reg, m->st.st_dev, m->st.st_ino);
        GError **err = ok ? error : NULL;

        it->not_ours = !e || daxfile_static_owner_conflict(e, it->params.owner,
                                                           m->name, NULL);
        if (it->not_ours)
            continue;
        if (!daxfile_static_release_allowed(e, m->name, err) ||
            !daxfile_static_release_inode(m->file, e, &it->released, err)) {
            ok = ok ? member_fail(m, ret_failed) : FALSE;
            continue;
        }
        daxfile_static_transition(reg, m->st.st_dev, m->st.st_ino, NULL, NULL);
    }
    /* the inodes first, durably: until the registry is written it still
     * names them */
    daxfile_test_crash_point("disable-released");
    return daxfile_registry_save(reg, ok ? error : NULL) && ok;
}

gboolean
daxfile_static_hold_unguarded(DaxfileStaticItem *item, pid_t holder,
                              guint64 holder_start, const char *reason,
                              GError **error)
{
    g_autoptr(GArray) set = NULL;
    g_autoptr(DaxfileRegistry) reg = NULL;
    DaxfileEntry *cur;
    DaxfileEntry *e;
    Member *m;
    guint failed = 0;

    set = set_lock(&item, 1, &failed, error);
    if (!set || !(reg = daxfile_registry_open(error)))
        return FALSE;
    m = &g_array_index(set, Member, 0);
    cur = daxfile_registry_lookup(reg, m->st.st_dev, m->st.st_ino);
    if (daxfile_static_owner_conflict(cur, item->params.owner, m->name, error))
        return FALSE;
    if (cur && cur->state != DAXFILE_STATE_RESERVED)
        return TRUE; /* in force, or being changed: it stays as it is */
    if (S_ISCHR(m->st.st_mode))
        e = device_entry_new(m, DAXFILE_MECH_NONE, DAXFILE_STATE_RESERVED);
    else if (!(e = reservation_new(m, 0, 0, error)))
        return FALSE;
    e->holder_pid = holder_start ? holder : 0;
    e->holder_start = holder_start;
    e->unguarded = g_strdup(reason);
    return daxfile_static_transition(reg, m->st.st_dev, m->st.st_ino, e,
                                     error) &&
           daxfile_registry_save(reg, error);
}

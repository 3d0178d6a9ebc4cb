/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-watch-wipes.c: what an undefined domain leaves behind
 * (daxfile-watch-priv.h): whether libvirt still has it, who else names
 * its files, and the wipes owed, recorded and done
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-identity.h"
#include "daxfile-registry.h"
#include "daxfile-seam.h"
#include "daxfile-util.h"
#include "daxfile-virt-priv.h"
#include "daxfile-watch-priv.h"

/* ------------------------------------------------ does it still exist */

typedef enum {
    DOMAIN_GONE,    /* libvirt says there is no such domain */
    DOMAIN_DEFINED, /* persistent: renamed, defined again, or never gone */
    DOMAIN_RUNNING, /* transient now (undefined while it runs) */
    DOMAIN_UNKNOWN, /* libvirt could not say: ask again later */
} DomainState;

static DomainState
domain_state(Watch *w, const char *uuid, char **ret_why)
{
    g_autoptr(virDomain) dom = virDomainLookupByUUIDString(w->conn, uuid);
    virErrorPtr err;
    int persistent;

    if (!dom) {
        err = virGetLastError();
        if (err && err->code == VIR_ERR_NO_DOMAIN)
            return DOMAIN_GONE;
        *ret_why = g_strdup_printf(
            "libvirt cannot tell whether domain %s still exists: %s", uuid,
            virGetLastErrorMessage());
        return DOMAIN_UNKNOWN;
    }
    persistent = virDomainIsPersistent(dom);
    if (persistent == 1)
        return DOMAIN_DEFINED;
    if (persistent == 0 && virDomainIsActive(dom) == 1)
        return DOMAIN_RUNNING;
    /* found, then gone: a transient domain as it stops */
    err = virGetLastError();
    if (err && err->code == VIR_ERR_NO_DOMAIN)
        return DOMAIN_GONE;
    *ret_why =
        g_strdup_printf("libvirt cannot tell what became of domain %s: %s",
                        uuid, virGetLastErrorMessage());
    return DOMAIN_UNKNOWN;
}

/* ------------------------------------------- who else names the file */

typedef struct {
    char *domain;
    char *path;
} WatchRef;

static void
watch_ref_free(gpointer p)
{
    WatchRef *ref = p;

    g_free(ref->domain);
    g_free(ref->path);
    g_free(ref);
}

/* Add every file reference in @dom's XML (@flags) to @refs; FALSE with
 * *@ret_why when it cannot be read (a domain gone meanwhile has none) */
static gboolean
refs_add(virDomainPtr dom, unsigned int flags, GPtrArray *refs, char **ret_why)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileDomain) def = daxfile_virt_domain_xml(dom, flags, &error);
    g_autoptr(GPtrArray) found = NULL;
    virErrorPtr err = virGetLastError();
    guint i;

    if (!def && err && err->code == VIR_ERR_NO_DOMAIN)
        return TRUE;
    if (!def) {
        *ret_why = g_strdup_printf(
            "cannot read the %s XML of domain '%s' to see whether it uses the file (%s)",
            flags ? "inactive" : "live", virDomainGetName(dom), error->message);
        return FALSE;
    }
    found = daxfile_domain_file_refs(def);
    for (i = 0; i < found->len; i++) {
        const DaxfileFileRef *r = g_ptr_array_index(found, i);
        WatchRef *ref = g_new0(WatchRef, 1);

        ref->domain = g_strdup(virDomainGetName(dom));
        ref->path = g_strdup(r->path);
        g_ptr_array_add(refs, ref);
    }
    return TRUE;
}

/* Every file reference of every domain libvirt has: each persistent
 * domain's definition, and the live XML of each running one (transient
 * domains, hot-plugged devices); NULL with *@ret_why when one of them
 * cannot be read */
static GPtrArray *
watch_refs(Watch *w, char **ret_why)
{
    g_autoptr(GPtrArray) refs = g_ptr_array_new_with_free_func(watch_ref_free);
    virDomainPtr *doms = NULL;
    gboolean ok = TRUE;
    int n, i;

    n = virConnectListAllDomains(w->conn, &doms, 0);
    if (n < 0) {
        *ret_why = g_strdup_printf("libvirt cannot list its domains: %s",
                                   virGetLastErrorMessage());
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (ok && virDomainIsPersistent(doms[i]) != 0)
            ok = refs_add(doms[i], VIR_DOMAIN_XML_INACTIVE, refs, ret_why);
        if (ok && virDomainIsActive(doms[i]) != 0)
            ok = refs_add(doms[i], 0, refs, ret_why);
        virDomainFree(doms[i]);
    }
    free(doms);
    return ok ? g_steal_pointer(&refs) : NULL;
}

/* The domain of @refs that names the file @f (whose record says @path):
 * by that name, or by what its name leads to (a device-dax device: its
 * device number; a block device: what backs it, and one that cannot be
 * told counts as naming it), or NULL */
static const char *
used_elsewhere(GPtrArray *refs, const DaxfileFile *f, const char *path)
{
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(DaxfileIdentity));
    gboolean device = S_ISCHR(f->st.st_mode);
    guint i;

    for (i = 0; i < refs->len; i++) {
        const WatchRef *ref = g_ptr_array_index(refs, i);
        struct stat st;

        if (STREQ(ref->path, path))
            return ref->domain;
        if (device) {
            if (stat(ref->path, &st) == 0 && S_ISCHR(st.st_mode) &&
                st.st_rdev == f->st.st_rdev)
                return ref->domain;
            continue;
        }
        g_array_set_size(ids, 0);
        /* what a reference leads to that cannot be told may be this file */
        if (!daxfile_path_identities(ref->path, ids, NULL) ||
            daxfile_identities_have(ids, f->st.st_dev, f->st.st_ino))
            return ref->domain;
    }
    return NULL;
}

/* ------------------------------------------------------ wipes owed */

static char *
record_key(const DaxfileWipeRecord *r)
{
    return g_strdup_printf("wipe:%" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT,
                           r->dev, r->ino);
}

/* Save @r under the inode lock of its key, which the hook's prepare
 * takes too; an existing record of that key stays as it is */
static gboolean
record_put(const DaxfileWipeRecord *r, gboolean replace, GError **error)
{
    g_autofree char *name = g_strdup(r->path);
    g_auto(DaxfileFd) lock =
        daxfile_registry_lock_inode(r->dev, r->ino, name, TRUE, error);
    g_autoptr(DaxfileWipeRecord) have = NULL;

    if (lock < 0 || !daxfile_wipe_record_find(r->dev, r->ino, &have, error))
        return FALSE;
    if (have && !replace)
        return TRUE;
    return daxfile_wipe_record_save(r, error);
}

/* The record of @r is done with: it is removed, and what was said of it
 * forgotten */
static void
record_drop(Watch *w, const DaxfileWipeRecord *r, const char *key)
{
    g_autoptr(GError) error = NULL;

    g_hash_table_remove(w->said, key);
    if (!daxfile_wipe_record_remove(r->dev, r->ino, &error))
        daxfile_watch_report(w, DAXFILE_WATCH_FAILED, r->domain, r->path,
                             error->message, NULL);
}

/* A record of an undefined domain (DAXFILE_WIPE_UNDEFINED): TRUE when the
 * wipe is now decided (the record says so, durably); FALSE when it waits,
 * or the file is kept (the record is gone) */
static gboolean
record_decide(Watch *w, DaxfileWipeRecord *r, const DaxfileFile *f,
              GPtrArray **refs, const char *key)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *why = NULL;
    g_autofree char *uses = NULL;
    const char *other;

    if (!*refs && !(*refs = watch_refs(w, &why))) {
        daxfile_watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                          why);
        return FALSE;
    }
    other = used_elsewhere(*refs, f, r->path);
    if (other) {
        uses = g_strdup_printf("domain '%s' uses it too", other);
        record_drop(w, r, key);
        daxfile_watch_report(w, DAXFILE_WATCH_KEPT, r->domain, r->path, uses,
                             NULL);
        return FALSE;
    }
    r->state = DAXFILE_WIPE_WIPING;
    if (record_put(r, TRUE, &error))
        return TRUE;
    daxfile_watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                      error->message);
    return FALSE;
}

/* Move the wipe of @r on as far as it can go now */
static void
record_process(Watch *w, DaxfileWipeRecord *r, GPtrArray **refs)
{
    g_autofree char *key = record_key(r);
    g_autofree char *why = NULL;
    g_auto(DaxfileWipeResult) result = {0};
    const DaxfileWipeParams params = {.cancel = w->stop};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileFile) f = NULL;
    DomainState state = DOMAIN_GONE;

    if (r->state == DAXFILE_WIPE_UNDEFINED && r->uuid)
        state = domain_state(w, r->uuid, &why);
    if (state == DOMAIN_DEFINED) {
        record_drop(w, r, key);
        daxfile_watch_report(w, DAXFILE_WATCH_KEPT, r->domain, r->path,
                             "its domain is defined again", NULL);
        return;
    }
    if (state == DOMAIN_RUNNING || state == DOMAIN_UNKNOWN) {
        g_autofree char *wkey = g_strconcat("waiting:", r->uuid, NULL);

        if (state == DOMAIN_RUNNING)
            daxfile_watch_say(w, wkey, DAXFILE_WATCH_WAITING, r->domain, NULL,
                              "");
        else
            daxfile_watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                              why);
        return;
    }
    if (r->uuid) {
        g_autofree char *wkey = g_strconcat("waiting:", r->uuid, NULL);

        g_hash_table_remove(w->said, wkey); /* it stopped */
    }
    /* read-only until the wipe is decided: a file another running
     * domain hot-plugged is static for it and refuses a writer, and is
     * to be kept, not retried */
    f = daxfile_wipe_record_open(r, w->conf, r->state != DAXFILE_WIPE_UNDEFINED,
                                 &error);
    if (!f && g_error_matches(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND)) {
        record_drop(w, r, key);
        daxfile_watch_report(w, DAXFILE_WATCH_KEPT, r->domain, r->path,
                             "it no longer exists", NULL);
        return;
    }
    if (!f) {
        daxfile_watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                          error->message);
        return;
    }
    if (r->state == DAXFILE_WIPE_UNDEFINED) {
        if (!record_decide(w, r, f, refs, key))
            return;
        g_clear_pointer(&f, daxfile_file_free);
        f = daxfile_wipe_record_open(r, w->conf, TRUE, &error);
        if (!f) {
            daxfile_watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                              error->message);
            return;
        }
    }
    if (!daxfile_wipe(f, &params, &result, &error)) {
        daxfile_watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                          error->message);
        return;
    }
    g_hash_table_remove(w->said, key);
    daxfile_watch_report(w, DAXFILE_WATCH_WIPED, r->domain, r->path, NULL,
                         &result);
}

/* Every wipe owed (daxfile-wipes.h: this watch's, an earlier one's,
 * an interrupted 'daxfile wipe'), as far as each can go now */
void
daxfile_watch_process(Watch *w)
{
    g_autoptr(GPtrArray) records = NULL;
    g_autoptr(GPtrArray) refs = NULL;
    g_autoptr(GError) error = NULL;
    guint i;

    records = daxfile_wipe_records(&error);
    if (!records) {
        daxfile_watch_say(w, "records", DAXFILE_WATCH_FAILED, NULL, NULL,
                          error->message);
        return;
    }
    g_hash_table_remove(w->said, "records");
    for (i = 0; i < records->len && !g_atomic_int_get(w->stop); i++)
        record_process(w, g_ptr_array_index(records, i), &refs);
}

/* The files of @wd, the undefined domain @uuid, recorded as owed, each
 * opened as the hook opens it, read-only: a domain undefined while it
 * runs may hold its file immutable until it stops. FALSE when a record
 * could not be written (the domain is kept, and this is tried again). */
static gboolean
watch_queue(Watch *w, const char *uuid, const WatchDomain *wd)
{
    gboolean ok = TRUE;
    guint i;

    for (i = 0; i < wd->paths->len; i++) {
        const char *path = g_ptr_array_index(wd->paths, i);
        g_autoptr(GError) error = NULL;
        g_autoptr(DaxfileFile) f =
            daxfile_wipe_open_placed(w->conf, path, FALSE, &error);
        g_autoptr(DaxfileWipeRecord) r = NULL;

        if (!f &&
            g_error_matches(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND)) {
            daxfile_watch_report(w, DAXFILE_WATCH_KEPT, wd->name, path,
                                 "it no longer exists", NULL);
            continue;
        }
        if (!f) {
            daxfile_watch_report(w, DAXFILE_WATCH_FAILED, wd->name, path,
                                 error->message, NULL);
            continue;
        }
        r = daxfile_wipe_record_new(f, DAXFILE_WIPE_UNDEFINED, wd->name, uuid);
        if (!record_put(r, FALSE, &error)) {
            g_autofree char *key = record_key(r);

            daxfile_watch_say(w, key, DAXFILE_WATCH_FAILED, wd->name, path,
                              error->message);
            ok = FALSE;
        }
    }
    return ok;
}

/* How long the UUID of a domain seen going is remembered (its events:
 * the undefine, a stop, the next rescan, come well within it), pruned
 * only once there are SETTLED_PRUNE_AT: a watch that runs for months
 * through thousands of undefines stays small. A UUID forgotten too soon
 * costs one more "unknown" report, never a wipe. */
#define SETTLED_KEEP_US (10 * 60 * G_USEC_PER_SEC)
#define SETTLED_PRUNE_AT 256

static void
watch_settled_add(Watch *w, const char *uuid)
{
    gint64 now = g_get_monotonic_time();
    GHashTableIter iter;
    gpointer when;

    if (g_hash_table_size(w->settled) >= SETTLED_PRUNE_AT) {
        g_hash_table_iter_init(&iter, w->settled);
        while (g_hash_table_iter_next(&iter, NULL, &when))
            if (now - *(const gint64 *)when > SETTLED_KEEP_US)
                g_hash_table_iter_remove(&iter);
    }
    g_hash_table_replace(w->settled, g_strdup(uuid),
                         g_memdup2(&now, sizeof(now)));
}

/* The domain @uuid is gone from libvirt's list of defined domains, or
 * libvirt said it was undefined (@name: what the event called it): once
 * libvirt says it no longer exists (or runs only until it stops), what
 * it leaves behind is recorded as owed and the domain forgotten; a
 * domain still defined (renamed, defined again) is read again; while
 * libvirt cannot say, nothing happens. A domain undefined before its
 * definition could be read leaves files no one knows: that is said. */
void
daxfile_watch_settle(Watch *w, const char *uuid, const char *name)
{
    WatchDomain *wd = g_hash_table_lookup(w->domains, uuid);
    g_autofree char *key = g_strconcat("exists:", uuid, NULL);
    g_autofree char *why = NULL;
    g_autoptr(virDomain) dom = NULL;

    if (!wd && (!name || g_hash_table_contains(w->settled, uuid)))
        return;
    daxfile_test_hold_point("watch-settle");
    switch (domain_state(w, uuid, &why)) {
    case DOMAIN_DEFINED:
        dom = virDomainLookupByUUIDString(w->conn, uuid);
        if (dom)
            daxfile_watch_scan(w, dom);
        return;
    case DOMAIN_UNKNOWN:
        daxfile_watch_say(w, key, DAXFILE_WATCH_UNREADABLE,
                          wd ? wd->name : name, NULL, why);
        return;
    case DOMAIN_GONE:
    case DOMAIN_RUNNING:
        break;
    }
    g_hash_table_remove(w->said, key);
    if (!wd) {
        daxfile_watch_report(w, DAXFILE_WATCH_UNKNOWN, name, NULL, NULL, NULL);
        watch_settled_add(w, uuid);
        return;
    }
    if (!watch_queue(w, uuid, wd))
        return;
    g_hash_table_remove(w->domains, uuid);
    watch_settled_add(w, uuid);
}

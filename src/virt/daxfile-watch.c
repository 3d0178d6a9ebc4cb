/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daxfile-devdax.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-identity.h"
#include "daxfile-registry.h"
#include "daxfile-util.h"
#include "daxfile-virt-priv.h"
#include "daxfile-watch.h"

typedef struct {
    char *name;
    GPtrArray *paths; /* the backends to wipe when it is undefined */
} WatchDomain;

static void
watch_domain_free(gpointer p)
{
    WatchDomain *wd = p;

    g_free(wd->name);
    g_ptr_array_unref(wd->paths);
    g_free(wd);
}

typedef struct {
    const DaxfileConf *conf;
    volatile gint *stop; /* also stops a wipe after its current chunk */
    DaxfileWatchFunc report;
    gpointer data;
    GHashTable *domains; /* UUID string -> WatchDomain */
    GHashTable *said;    /* a retried thing -> what was last said of it */
    virConnectPtr conn;
    int callback;
    int plug_callback; /* DEVICE_ADDED */
    gboolean lost;
    char *lost_why;
    guint reported_domains, reported_files; /* at the last READY */
} Watch;

/* The backends of every known domain */
static guint
watch_files(const Watch *w)
{
    GHashTableIter iter;
    gpointer value;
    guint files = 0;

    g_hash_table_iter_init(&iter, w->domains);
    while (g_hash_table_iter_next(&iter, NULL, &value))
        files += ((WatchDomain *)value)->paths->len;
    return files;
}

static void
watch_report(Watch *w, DaxfileWatchKind kind, const char *domain,
             const char *path, const char *why, const DaxfileWipeResult *wipe)
{
    DaxfileWatchEvent ev = {
        .kind = kind,
        .domain = domain,
        .path = path,
        .why = why,
        .wipe = wipe,
        .domains = g_hash_table_size(w->domains),
        .files = watch_files(w),
    };

    w->report(&ev, w->data);
    if (kind == DAXFILE_WATCH_READY) {
        w->reported_domains = ev.domains;
        w->reported_files = ev.files;
    }
}

/* Report a state that is looked at again every few seconds (a wipe that
 * waits, a domain that cannot be read) once, until it changes: @key
 * names the thing */
static void
watch_say(Watch *w, const char *key, DaxfileWatchKind kind, const char *domain,
          const char *path, const char *why)
{
    const char *said = g_hash_table_lookup(w->said, key);
    DaxfileWatchEvent ev = {
        .kind = kind,
        .domain = domain,
        .path = path,
        .why = why,
        .pending = TRUE,
        .domains = g_hash_table_size(w->domains),
        .files = watch_files(w),
    };

    if (said && STREQ(said, why ? why : ""))
        return;
    g_hash_table_replace(w->said, g_strdup(key), g_strdup(why ? why : ""));
    w->report(&ev, w->data);
}

/* The backends of @def that @conf wants wiped at undefine: a plain path
 * under a root with wipe_on_undefine, or a device-dax device when the
 * file that enabled device_dax also set it. Read-only ones are never
 * written by the guest. */
static GPtrArray *
watch_paths(const DaxfileConf *conf, const DaxfileDomain *def)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    guint i;

    for (i = 0; i < def->nvdimms->len; i++) {
        const DaxfileNvdimm *nv = g_ptr_array_index(def->nvdimms, i);
        const DaxfileRoot *root;

        if (!nv->path || nv->readonly || !daxfile_path_is_plain(nv->path))
            continue;
        root = daxfile_conf_managed_root(conf, nv->path);
        if ((root && root->wipe_on_undefine) ||
            (!root && conf->wipe_devdax && daxfile_devdax_is(nv->path)))
            g_ptr_array_add(out, g_strdup(nv->path));
    }
    return out;
}

/* Remember what the persistent domain @dom would leave behind. A
 * definition that cannot be read leaves what was known of the domain as
 * it was (it still counts as defined), and is reported. */
static void
watch_scan(Watch *w, virDomainPtr dom, GHashTable *into)
{
    char uuid[VIR_UUID_STRING_BUFLEN];
    g_autoptr(DaxfileDomain) def = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *key = NULL;
    WatchDomain *wd;

    if (virDomainGetUUIDString(dom, uuid) < 0 ||
        virDomainIsPersistent(dom) != 1)
        return;
    key = g_strconcat("read:", uuid, NULL);
    def = daxfile_virt_domain_xml(dom, VIR_DOMAIN_XML_INACTIVE, &error);
    if (!def) {
        watch_say(w, key, DAXFILE_WATCH_UNREADABLE, virDomainGetName(dom), NULL,
                  error->message);
        return;
    }
    g_hash_table_remove(w->said, key);
    wd = g_new0(WatchDomain, 1);
    wd->name = g_strdup(virDomainGetName(dom));
    wd->paths = watch_paths(w->conf, def);
    g_hash_table_replace(into, g_strdup(uuid), wd);
}

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
        watch_report(w, DAXFILE_WATCH_FAILED, r->domain, r->path,
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
        watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path, why);
        return FALSE;
    }
    other = used_elsewhere(*refs, f, r->path);
    if (other) {
        uses = g_strdup_printf("domain '%s' uses it too", other);
        record_drop(w, r, key);
        watch_report(w, DAXFILE_WATCH_KEPT, r->domain, r->path, uses, NULL);
        return FALSE;
    }
    r->state = DAXFILE_WIPE_WIPING;
    if (record_put(r, TRUE, &error))
        return TRUE;
    watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path, error->message);
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
        watch_report(w, DAXFILE_WATCH_KEPT, r->domain, r->path,
                     "its domain is defined again", NULL);
        return;
    }
    if (state == DOMAIN_RUNNING || state == DOMAIN_UNKNOWN) {
        g_autofree char *wkey = g_strconcat("waiting:", r->uuid, NULL);

        if (state == DOMAIN_RUNNING)
            watch_say(w, wkey, DAXFILE_WATCH_WAITING, r->domain, NULL, "");
        else
            watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path, why);
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
        watch_report(w, DAXFILE_WATCH_KEPT, r->domain, r->path,
                     "it no longer exists", NULL);
        return;
    }
    if (!f) {
        watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                  error->message);
        return;
    }
    if (r->state == DAXFILE_WIPE_UNDEFINED) {
        if (!record_decide(w, r, f, refs, key))
            return;
        g_clear_pointer(&f, daxfile_file_free);
        f = daxfile_wipe_record_open(r, w->conf, TRUE, &error);
        if (!f) {
            watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                      error->message);
            return;
        }
    }
    if (!daxfile_wipe(f, &params, &result, &error)) {
        watch_say(w, key, DAXFILE_WATCH_FAILED, r->domain, r->path,
                  error->message);
        return;
    }
    g_hash_table_remove(w->said, key);
    watch_report(w, DAXFILE_WATCH_WIPED, r->domain, r->path, NULL, &result);
}

/* Every wipe owed (daxfile-wipes.h: this watch's, an earlier one's,
 * an interrupted 'daxfile wipe'), as far as each can go now */
static void
watch_process(Watch *w)
{
    g_autoptr(GPtrArray) records = NULL;
    g_autoptr(GPtrArray) refs = NULL;
    g_autoptr(GError) error = NULL;
    guint i;

    records = daxfile_wipe_records(&error);
    if (!records) {
        watch_say(w, "records", DAXFILE_WATCH_FAILED, NULL, NULL,
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
            watch_report(w, DAXFILE_WATCH_KEPT, wd->name, path,
                         "it no longer exists", NULL);
            continue;
        }
        if (!f) {
            watch_report(w, DAXFILE_WATCH_FAILED, wd->name, path,
                         error->message, NULL);
            continue;
        }
        r = daxfile_wipe_record_new(f, DAXFILE_WIPE_UNDEFINED, wd->name, uuid);
        if (!record_put(r, FALSE, &error)) {
            g_autofree char *key = record_key(r);

            watch_say(w, key, DAXFILE_WATCH_FAILED, wd->name, path,
                      error->message);
            ok = FALSE;
        }
    }
    return ok;
}

/* The known domain @uuid is gone from libvirt's list of defined domains,
 * or libvirt said it was undefined: once libvirt says it no longer exists
 * (or runs only until it stops), what it leaves behind is recorded as
 * owed and the domain forgotten; a domain still defined (renamed, defined
 * again) is read again; while libvirt cannot say, nothing happens. */
static void
watch_settle(Watch *w, const char *uuid)
{
    WatchDomain *wd = g_hash_table_lookup(w->domains, uuid);
    g_autofree char *key = g_strconcat("exists:", uuid, NULL);
    g_autofree char *why = NULL;
    g_autoptr(virDomain) dom = NULL;

    if (!wd)
        return;
    switch (domain_state(w, uuid, &why)) {
    case DOMAIN_DEFINED:
        dom = virDomainLookupByUUIDString(w->conn, uuid);
        if (dom)
            watch_scan(w, dom, w->domains);
        return;
    case DOMAIN_UNKNOWN:
        watch_say(w, key, DAXFILE_WATCH_UNREADABLE, wd->name, NULL, why);
        return;
    case DOMAIN_GONE:
    case DOMAIN_RUNNING:
        break;
    }
    g_hash_table_remove(w->said, key);
    if (watch_queue(w, uuid, wd))
        g_hash_table_remove(w->domains, uuid);
}

/* ------------------------------------------------------------ events */

/* Every persistent domain again: libvirt sends no event when a device is
 * added to a definition alone (virDomainAttachDeviceFlags with
 * AFFECT_CONFIG, as `daxfile attach` and `virsh attach-device --config`
 * do), nor for what happened while the connection was down. Domains
 * listed are read again (one that cannot be read stays as it was known);
 * a known domain that is not listed is settled (watch_settle()). FALSE
 * when libvirt cannot list them. */
static gboolean
watch_rescan(Watch *w)
{
    g_autoptr(GHashTable) listed =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GPtrArray) gone = g_ptr_array_new_with_free_func(g_free);
    virDomainPtr *doms = NULL;
    char uuid[VIR_UUID_STRING_BUFLEN];
    GHashTableIter iter;
    gpointer key;
    int n, i;

    n = virConnectListAllDomains(w->conn, &doms,
                                 VIR_CONNECT_LIST_DOMAINS_PERSISTENT);
    for (i = 0; i < n; i++) {
        if (virDomainGetUUIDString(doms[i], uuid) == 0)
            g_hash_table_add(listed, g_strdup(uuid));
        watch_scan(w, doms[i], w->domains);
        virDomainFree(doms[i]);
    }
    free(doms);
    if (n < 0)
        return FALSE;
    g_hash_table_iter_init(&iter, w->domains);
    while (g_hash_table_iter_next(&iter, &key, NULL))
        if (!g_hash_table_contains(listed, key))
            g_ptr_array_add(gone, g_strdup(key));
    for (i = 0; i < (int)gone->len; i++)
        watch_settle(w, g_ptr_array_index(gone, i));
    return TRUE;
}

/* What became of a hot-plugged device (daxfile-virt-plug.c) */
static void
on_plugged(const DaxfilePlugResult *r, gpointer data)
{
    static const DaxfileWatchKind kinds[] = {
        [DAXFILE_PLUG_ENGAGED] = DAXFILE_WATCH_PLUGGED,
        [DAXFILE_PLUG_UNGUARDED] = DAXFILE_WATCH_UNGUARDED,
        [DAXFILE_PLUG_REFUSED] = DAXFILE_WATCH_PLUG_REFUSED,
    };
    Watch *w = data;
    DaxfileWatchEvent ev = {
        .kind = kinds[r->kind],
        .domain = r->domain,
        .device = r->device,
        .path = r->path,
        .why = r->why,
        .domains = g_hash_table_size(w->domains),
        .files = watch_files(w),
    };

    w->report(&ev, w->data);
}

static void
on_device_added(virConnectPtr conn, virDomainPtr dom, const char *alias,
                void *opaque)
{
    g_auto(DaxfilePlugResult) r = {0};
    Watch *w = opaque;

    /* a device added live and to the definition (daxfile attach, virsh
     * attach-device --live --config) is in the files an undefine leaves
     * from now on, not from the next rescan */
    watch_scan(w, dom, w->domains);
    if (daxfile_virt_plug_added(dom, w->conf, alias, &r))
        on_plugged(&r, w);
}

static int
on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail,
             void *opaque)
{
    Watch *w = opaque;
    char uuid[VIR_UUID_STRING_BUFLEN];

    if (virDomainGetUUIDString(dom, uuid) < 0)
        return 0;
    switch (event) {
    case VIR_DOMAIN_EVENT_DEFINED:
        watch_scan(w, dom, w->domains);
        break;
    case VIR_DOMAIN_EVENT_UNDEFINED:
        /* a rename: DEFINED (detail RENAMED) follows, same UUID */
        if (detail == VIR_DOMAIN_EVENT_UNDEFINED_RENAMED)
            break;
        watch_settle(w, uuid);
        watch_process(w);
        break;
    case VIR_DOMAIN_EVENT_STOPPED:
        watch_process(w);
        /* a file it held may be another domain's hot-plugged device */
        daxfile_virt_plug_scan(w->conn, w->conf, on_plugged, w);
        break;
    default:
        break;
    }
    return 0;
}

static void
on_close(virConnectPtr conn, int reason, void *opaque)
{
    Watch *w = opaque;
    static const char *const why[] = {
        [VIR_CONNECT_CLOSE_REASON_ERROR] = "an error",
        [VIR_CONNECT_CLOSE_REASON_EOF] = "libvirtd went away",
        [VIR_CONNECT_CLOSE_REASON_KEEPALIVE] = "keepalive timeout",
        [VIR_CONNECT_CLOSE_REASON_CLIENT] = "closed",
    };

    w->lost = TRUE;
    g_free(w->lost_why);
    w->lost_why =
        g_strdup(reason >= 0 && reason < (int)G_N_ELEMENTS(why) && why[reason]
                     ? why[reason]
                     : "closed");
}

static void
watch_disconnect(Watch *w)
{
    if (!w->conn)
        return;
    if (w->callback >= 0)
        virConnectDomainEventDeregisterAny(w->conn, w->callback);
    if (w->plug_callback >= 0)
        virConnectDomainEventDeregisterAny(w->conn, w->plug_callback);
    virConnectUnregisterCloseCallback(w->conn, on_close);
    virConnectClose(w->conn);
    w->conn = NULL;
    w->callback = -1;
    w->plug_callback = -1;
}

/* Connect, follow the life cycle and hot-plugs, learn every persistent
 * domain, settle the known ones that went away meanwhile, say so (READY),
 * take up the devices hot-plugged meanwhile, and the wipes owed */
static gboolean
watch_connect(Watch *w, const char *uri, GError **error)
{
    w->conn = virConnectOpen(uri);
    if (!w->conn) {
        g_autofree char *what = g_strdup_printf(
            "Cannot connect to libvirt at '%s'", uri ? uri : "(default URI)");

        daxfile_virt_set_error(error, what);
        return FALSE;
    }
    /* a wipe may take longer than libvirt's keepalive allows */
    virConnectSetKeepAlive(w->conn, -1, 0);
    if (virConnectRegisterCloseCallback(w->conn, on_close, w, NULL) < 0 ||
        (w->callback = virConnectDomainEventRegisterAny(
             w->conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
             VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), w, NULL)) < 0 ||
        (w->plug_callback = virConnectDomainEventRegisterAny(
             w->conn, NULL, VIR_DOMAIN_EVENT_ID_DEVICE_ADDED,
             VIR_DOMAIN_EVENT_CALLBACK(on_device_added), w, NULL)) < 0 ||
        !watch_rescan(w)) {
        daxfile_virt_set_error(error, "Cannot follow libvirt's domains");
        watch_disconnect(w);
        return FALSE;
    }
    w->lost = FALSE;
    watch_report(w, DAXFILE_WATCH_READY, NULL, NULL, NULL, NULL);
    daxfile_virt_plug_scan(w->conn, w->conf, on_plugged, w);
    watch_process(w);
    return TRUE;
}

/* Every WATCH_RESCAN_MS: wakes the loop (so that *stop is looked at),
 * rescans the definitions and retries the wipes owed */
#define WATCH_RESCAN_MS 2000

static void
watch_tick(int timer, void *opaque)
{
    Watch *w = opaque;

    if (!w->conn || w->lost || !watch_rescan(w))
        return;
    if (watch_files(w) != w->reported_files ||
        g_hash_table_size(w->domains) != w->reported_domains)
        watch_report(w, DAXFILE_WATCH_READY, NULL, NULL, NULL, NULL);
    watch_process(w);
}

gboolean
daxfile_virt_watch(const char *uri, const DaxfileConf *conf,
                   volatile gint *stop, DaxfileWatchFunc report, gpointer data,
                   GError **error)
{
    g_autoptr(GHashTable) domains = g_hash_table_new_full(
        g_str_hash, g_str_equal, g_free, watch_domain_free);
    g_autoptr(GHashTable) said =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    Watch w = {
        .conf = conf,
        .stop = stop,
        .report = report,
        .data = data,
        .callback = -1,
        .plug_callback = -1,
        .domains = domains,
        .said = said,
    };
    int timer;

    daxfile_virt_silence();
    if (virEventRegisterDefaultImpl() < 0 ||
        (timer = virEventAddTimeout(WATCH_RESCAN_MS, watch_tick, &w, NULL)) <
            0) {
        daxfile_virt_set_error(error, "Cannot set up libvirt's event loop");
        return FALSE;
    }
    if (!watch_connect(&w, uri, error)) {
        virEventRemoveTimeout(timer);
        return FALSE;
    }
    while (!g_atomic_int_get(stop)) {
        if (w.lost) {
            watch_report(&w, DAXFILE_WATCH_LOST, NULL, NULL, w.lost_why, NULL);
            watch_disconnect(&w);
            while (!g_atomic_int_get(stop) && !watch_connect(&w, uri, NULL))
                g_usleep(G_USEC_PER_SEC);
            continue;
        }
        virEventRunDefaultImpl();
    }
    virEventRemoveTimeout(timer);
    watch_disconnect(&w);
    g_free(w.lost_why);
    return TRUE;
}

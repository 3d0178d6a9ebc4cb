/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daxfile-devdax.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-util.h"
#include "daxfile-virt.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(virConnect, virConnectClose)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(virDomain, virDomainFree)

void
daxfile_attach_result_clear(DaxfileAttachResult *result)
{
    g_clear_pointer(&result->note, g_free);
}

static void
silence(void *data, virErrorPtr err)
{
    /* libvirt would print to stderr; errors become GErrors instead */
}

static void
set_virt_error(GError **error, const char *what)
{
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED, "%s: %s", what,
                virGetLastErrorMessage());
}

static virDomainPtr
lookup(const char *uri, const char *domain, virConnectPtr *ret_conn,
       GError **error)
{
    g_autofree char *name = daxfile_escape(domain);
    g_autofree char *what = NULL;
    virDomainPtr dom;

    virSetErrorFunc(NULL, silence);
    *ret_conn = virConnectOpen(uri);
    if (!*ret_conn) {
        what = g_strdup_printf("Cannot connect to libvirt at '%s'",
                               uri ? uri : "(default URI)");
        set_virt_error(error, what);
        return NULL;
    }
    dom = virDomainLookupByName(*ret_conn, domain);
    if (!dom) {
        what = g_strdup_printf("Cannot find domain '%s'", name);
        set_virt_error(error, what);
    }
    return dom;
}

static DaxfileDomain *
domain_xml(virDomainPtr dom, unsigned int flags, GError **error)
{
    g_autofree char *xml = virDomainGetXMLDesc(dom, flags);

    if (!xml) {
        set_virt_error(error, "Cannot read the domain XML");
        return NULL;
    }
    return daxfile_domain_parse(xml, strlen(xml), error);
}

/* QEMU hot-plugs an nvdimm only into a guest started with nvdimm=on,
 * which libvirt sets when the domain booted with at least one. A
 * virtio-pmem device is only added to the definition: libvirt 9.0 cannot
 * even start a domain with one (it has no parser for QEMU's report of the
 * device), and QEMU could not unplug it again. */
static gboolean
can_hotplug(virDomainPtr dom, const DaxfileNvdimm *nv, char **ret_note)
{
    g_autoptr(DaxfileDomain) live = NULL;

    if (virDomainIsActive(dom) != 1)
        return FALSE;
    if (nv->model == DAXFILE_DEVICE_VIRTIO_PMEM) {
        *ret_note = g_strdup("a virtio-pmem device is not hot-plugged; it "
                             "appears at the next boot");
        return FALSE;
    }
    live = domain_xml(dom, 0, NULL);
    if (live && live->nvdimms->len > 0)
        return TRUE;
    *ret_note = g_strdup("the running domain booted without an nvdimm, so "
                         "QEMU cannot hot-plug one; it appears at the next "
                         "boot");
    return FALSE;
}

gboolean
daxfile_virt_attach(const char *uri, const char *domain,
                    const DaxfileNvdimm *nv, DaxfileAttachResult *ret_result,
                    GError **error)
{
    g_autoptr(virConnect) conn = NULL;
    g_autoptr(virDomain) dom = lookup(uri, domain, &conn, error);
    g_autoptr(DaxfileDomain) def = NULL;
    g_autofree char *xml = NULL;
    unsigned int flags = VIR_DOMAIN_AFFECT_CONFIG;

    if (!dom)
        return FALSE;
    def = domain_xml(dom, VIR_DOMAIN_XML_INACTIVE, error);
    if (!def || !daxfile_domain_check_attach(def, nv, error))
        return FALSE;
    xml = daxfile_nvdimm_format(nv, error);
    if (!xml)
        return FALSE;
    if (can_hotplug(dom, nv, &ret_result->note))
        flags |= VIR_DOMAIN_AFFECT_LIVE;
    if (virDomainAttachDeviceFlags(dom, xml, flags) < 0) {
        set_virt_error(error, nv->model == DAXFILE_DEVICE_NVDIMM
                                  ? "libvirt refused the nvdimm"
                                  : "libvirt refused the virtio-pmem device");
        return FALSE;
    }
    ret_result->live = (flags & VIR_DOMAIN_AFFECT_LIVE) != 0;
    return TRUE;
}

gboolean
daxfile_virt_detach(const char *uri, const char *domain, const char *path,
                    DaxfileAttachResult *ret_result, GError **error)
{
    g_autoptr(virConnect) conn = NULL;
    g_autoptr(virDomain) dom = lookup(uri, domain, &conn, error);
    g_autoptr(DaxfileDomain) def = NULL;
    g_autofree char *xml = NULL;
    g_autofree char *name = daxfile_escape(path);
    g_autofree char *dname = daxfile_escape(domain);
    const char *model;
    gint index;

    if (!dom)
        return FALSE;
    def = domain_xml(dom, VIR_DOMAIN_XML_INACTIVE, error);
    if (!def)
        return FALSE;
    index = daxfile_domain_find_nvdimm(def, path);
    if (index < 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                    "Domain '%s' has no nvdimm or virtio-pmem device backed "
                    "by '%s'",
                    dname, name);
        return FALSE;
    }
    model = daxfile_device_model_to_string(
        ((DaxfileNvdimm *)g_ptr_array_index(def->nvdimms, index))->model);
    xml = daxfile_domain_nvdimm_xml(def, (guint)index);
    if (virDomainDetachDeviceFlags(dom, xml, VIR_DOMAIN_AFFECT_CONFIG) < 0) {
        set_virt_error(error, "libvirt refused to detach the device");
        return FALSE;
    }
    if (virDomainIsActive(dom) == 1)
        ret_result->note = g_strdup_printf("QEMU cannot unplug a %s device: "
                                           "the running domain keeps it until "
                                           "it shuts down",
                                           model);
    return TRUE;
}

/* ------------------------------------------------------------ watch */

typedef struct {
    char *name;
    GPtrArray *paths; /* the backends to wipe when it is undefined */
    gboolean pending; /* undefined while it ran: wipe when it stops */
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
    virConnectPtr conn;
    int callback;
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

/* Remember what the persistent domain @dom would leave behind */
static void
watch_scan(Watch *w, virDomainPtr dom, GHashTable *into)
{
    char uuid[VIR_UUID_STRING_BUFLEN];
    g_autoptr(DaxfileDomain) def = NULL;
    WatchDomain *wd;

    if (virDomainGetUUIDString(dom, uuid) < 0 ||
        virDomainIsPersistent(dom) != 1)
        return;
    def = domain_xml(dom, VIR_DOMAIN_XML_INACTIVE, NULL);
    if (!def)
        return;
    wd = g_new0(WatchDomain, 1);
    wd->name = g_strdup(virDomainGetName(dom));
    wd->paths = watch_paths(w->conf, def);
    g_hash_table_replace(into, g_strdup(uuid), wd);
}

/* Every persistent domain, scanned into @into; FALSE when libvirt cannot
 * list them */
static gboolean
watch_scan_all(Watch *w, GHashTable *into)
{
    virDomainPtr *doms = NULL;
    int n, i;

    n = virConnectListAllDomains(w->conn, &doms,
                                 VIR_CONNECT_LIST_DOMAINS_PERSISTENT);
    for (i = 0; i < n; i++) {
        watch_scan(w, doms[i], into);
        virDomainFree(doms[i]);
    }
    free(doms);
    return n >= 0;
}

/* Every persistent domain again: libvirt sends no event when a device is
 * added to a definition alone (virDomainAttachDeviceFlags with
 * AFFECT_CONFIG, as `daxfile attach` and `virsh attach-device --config`
 * do). Entries are updated and added, never removed: only an undefine
 * removes one. A changed count is reported (READY). */
static void
watch_rescan(Watch *w)
{
    watch_scan_all(w, w->domains);
    if (watch_files(w) != w->reported_files ||
        g_hash_table_size(w->domains) != w->reported_domains)
        watch_report(w, DAXFILE_WATCH_READY, NULL, NULL, NULL, NULL);
}

/* The same file: by name, or by what the name leads to */
static gboolean
same_backend(const char *a, const struct stat *sa, const char *b)
{
    struct stat sb;

    if (STREQ(a, b))
        return TRUE;
    if (!sa || stat(b, &sb) < 0 ||
        (sa->st_mode & S_IFMT) != (sb.st_mode & S_IFMT))
        return FALSE;
    if (S_ISCHR(sa->st_mode))
        return sa->st_rdev == sb.st_rdev;
    return sa->st_dev == sb.st_dev && sa->st_ino == sb.st_ino;
}

/* The name of another defined domain that uses @path, or NULL */
static const char *
used_elsewhere(const Watch *w, const char *path)
{
    GHashTableIter iter;
    gpointer value;
    struct stat st;
    gboolean have = stat(path, &st) == 0;

    g_hash_table_iter_init(&iter, w->domains);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        const WatchDomain *other = value;
        guint i;

        for (i = 0; i < other->paths->len; i++)
            if (same_backend(path, have ? &st : NULL,
                             g_ptr_array_index(other->paths, i)))
                return other->name;
    }
    return NULL;
}

static void
watch_wipe(Watch *w, const char *domain, const char *path)
{
    g_auto(DaxfileWipeResult) result = {0};
    g_autoptr(GError) error = NULL;
    const DaxfileWipeParams params = {.cancel = w->stop};
    g_autoptr(DaxfileFile) f = NULL;
    const char *other = used_elsewhere(w, path);

    if (other) {
        g_autofree char *why =
            g_strdup_printf("domain '%s' uses it too", other);

        watch_report(w, DAXFILE_WATCH_KEPT, domain, path, why, NULL);
        return;
    }
    f = daxfile_wipe_open(path, FALSE, &error);
    if (!f && g_error_matches(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND)) {
        watch_report(w, DAXFILE_WATCH_KEPT, domain, path, "it no longer exists",
                     NULL);
        return;
    }
    if (!f || !daxfile_wipe(f, &params, &result, &error)) {
        watch_report(w, DAXFILE_WATCH_FAILED, domain, path, error->message,
                     NULL);
        return;
    }
    watch_report(w, DAXFILE_WATCH_WIPED, domain, path, NULL, &result);
}

/* @uuid was undefined: wipe what it leaves behind */
static void
watch_undefined(Watch *w, const char *uuid)
{
    gpointer key = NULL, value = NULL;
    WatchDomain *wd;
    guint i;

    if (!g_hash_table_steal_extended(w->domains, uuid, &key, &value))
        return;
    g_free(key);
    wd = value;
    for (i = 0; i < wd->paths->len; i++)
        watch_wipe(w, wd->name, g_ptr_array_index(wd->paths, i));
    watch_domain_free(wd);
}

static int
on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail,
             void *opaque)
{
    Watch *w = opaque;
    char uuid[VIR_UUID_STRING_BUFLEN];
    WatchDomain *wd;

    if (virDomainGetUUIDString(dom, uuid) < 0)
        return 0;
    wd = g_hash_table_lookup(w->domains, uuid);
    switch (event) {
    case VIR_DOMAIN_EVENT_DEFINED:
        watch_scan(w, dom, w->domains);
        break;
    case VIR_DOMAIN_EVENT_UNDEFINED:
        if (!wd)
            break;
        if (virDomainIsActive(dom) == 1) {
            /* its QEMU still has the files: they are wiped at its stop */
            wd->pending = TRUE;
            watch_report(w, DAXFILE_WATCH_WAITING, wd->name, NULL, NULL, NULL);
            break;
        }
        watch_undefined(w, uuid);
        break;
    case VIR_DOMAIN_EVENT_STOPPED:
        if (wd && wd->pending)
            watch_undefined(w, uuid);
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
    virConnectUnregisterCloseCallback(w->conn, on_close);
    virConnectClose(w->conn);
    w->conn = NULL;
    w->callback = -1;
}

/* What the domains known before (w->domains) and now (@now) differ in: a
 * domain gone while the connection was down was undefined then, and is
 * wiped now, or when it stops if it still runs (a domain defined again
 * meanwhile is in @now, and nothing of it is wiped) */
static void
watch_reconcile(Watch *w, GHashTable *now)
{
    g_autoptr(GPtrArray) gone = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter iter;
    gpointer key;
    guint i;

    g_hash_table_iter_init(&iter, w->domains);
    while (g_hash_table_iter_next(&iter, &key, NULL))
        if (!g_hash_table_contains(now, key))
            g_ptr_array_add(gone, g_strdup(key));
    for (i = 0; i < gone->len; i++) {
        const char *uuid = g_ptr_array_index(gone, i);
        virDomainPtr dom = virDomainLookupByUUIDString(w->conn, uuid);
        gboolean running = dom && virDomainIsActive(dom) == 1;
        gpointer old_key = NULL, value = NULL;

        if (dom)
            virDomainFree(dom);
        if (!running) {
            watch_undefined(w, uuid);
            continue;
        }
        /* undefined while it runs: its files wait for its stop */
        g_hash_table_steal_extended(w->domains, uuid, &old_key, &value);
        ((WatchDomain *)value)->pending = TRUE;
        g_hash_table_replace(now, old_key, value);
    }
}

/* Connect, follow the life cycle, and learn every persistent domain */
static gboolean
watch_connect(Watch *w, const char *uri, GError **error)
{
    g_autoptr(GHashTable) now = g_hash_table_new_full(
        g_str_hash, g_str_equal, g_free, watch_domain_free);

    w->conn = virConnectOpen(uri);
    if (!w->conn) {
        g_autofree char *what = g_strdup_printf(
            "Cannot connect to libvirt at '%s'", uri ? uri : "(default URI)");

        set_virt_error(error, what);
        return FALSE;
    }
    /* a wipe may take longer than libvirt's keepalive allows */
    virConnectSetKeepAlive(w->conn, -1, 0);
    if (virConnectRegisterCloseCallback(w->conn, on_close, w, NULL) < 0 ||
        (w->callback = virConnectDomainEventRegisterAny(
             w->conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
             VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), w, NULL)) < 0 ||
        !watch_scan_all(w, now)) {
        set_virt_error(error, "Cannot follow libvirt's domains");
        watch_disconnect(w);
        return FALSE;
    }
    watch_reconcile(w, now);
    g_hash_table_unref(w->domains);
    w->domains = g_steal_pointer(&now);
    w->lost = FALSE;
    watch_report(w, DAXFILE_WATCH_READY, NULL, NULL, NULL, NULL);
    return TRUE;
}

/* Every WATCH_RESCAN_MS: wakes the loop (so that *stop is looked at) and
 * rescans the definitions */
#define WATCH_RESCAN_MS 2000

static void
watch_tick(int timer, void *opaque)
{
    Watch *w = opaque;

    if (w->conn && !w->lost)
        watch_rescan(w);
}

gboolean
daxfile_virt_watch(const char *uri, const DaxfileConf *conf,
                   volatile gint *stop, DaxfileWatchFunc report, gpointer data,
                   GError **error)
{
    Watch w = {
        .conf = conf,
        .stop = stop,
        .report = report,
        .data = data,
        .callback = -1,
        .domains = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                         watch_domain_free),
    };
    int timer;

    virSetErrorFunc(NULL, silence);
    if (virEventRegisterDefaultImpl() < 0 ||
        (timer = virEventAddTimeout(WATCH_RESCAN_MS, watch_tick, &w, NULL)) <
            0) {
        set_virt_error(error, "Cannot set up libvirt's event loop");
        g_hash_table_unref(w.domains);
        return FALSE;
    }
    if (!watch_connect(&w, uri, error)) {
        virEventRemoveTimeout(timer);
        g_hash_table_unref(w.domains);
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
    g_hash_table_unref(w.domains);
    g_free(w.lost_why);
    return TRUE;
}

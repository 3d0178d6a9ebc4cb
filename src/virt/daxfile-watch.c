/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-watch.c: daxfile_virt_watch() (daxfile-watch.h): its two
 * threads, libvirt's events, the domains known and what each would leave
 * behind; the wipes are daxfile-watch-wipes.c's
 */
#include <libxml/parser.h>
#include <stdlib.h>

#include "daxfile-devdax.h"
#include "daxfile-seam.h"
#include "daxfile-util.h"
#include "daxfile-virt-priv.h"
#include "daxfile-watch-priv.h"

void
daxfile_watch_domain_free(gpointer p)
{
    WatchDomain *wd = p;

    g_free(wd->name);
    g_ptr_array_unref(wd->paths);
    g_free(wd);
}

typedef enum {
    JOB_DEFINED,   /* @wd, read at the event; NULL: gone already, or @why */
    JOB_UNDEFINED, /* not a rename */
    JOB_STOPPED,
    JOB_ADDED, /* a device, @alias, added to the running domain */
} WatchJobKind;

typedef struct {
    WatchJobKind kind;
    char *uuid;
    char *name;
    WatchDomain *wd;
    char *why;
    char *alias;
} WatchJob;

static void
watch_job_free(gpointer p)
{
    WatchJob *job = p;

    g_free(job->uuid);
    g_free(job->name);
    if (job->wd)
        daxfile_watch_domain_free(job->wd);
    g_free(job->why);
    g_free(job->alias);
    g_free(job);
}

/* Hand @ev to the caller's report function, one at a time */
static void
watch_emit(Watch *w, const DaxfileWatchEvent *ev)
{
    g_mutex_lock(&w->report_lock);
    w->report(ev, w->data);
    g_mutex_unlock(&w->report_lock);
}

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

void
daxfile_watch_report(Watch *w, DaxfileWatchKind kind, const char *domain,
                     const char *path, const char *why,
                     const DaxfileWipeResult *wipe)
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

    watch_emit(w, &ev);
    if (kind == DAXFILE_WATCH_READY) {
        w->reported_domains = ev.domains;
        w->reported_files = ev.files;
    }
}

/* Report a state that is looked at again every few seconds (a wipe that
 * waits, a domain that cannot be read) once, until it changes: @key
 * names the thing. Nothing is said while the connection is going: what
 * fails then is that (said once, DAXFILE_WATCH_LOST), and it is looked
 * at again on the new one. */
void
daxfile_watch_say(Watch *w, const char *key, DaxfileWatchKind kind,
                  const char *domain, const char *path, const char *why)
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

    if ((said && STREQ(said, why ? why : "")) || g_atomic_int_get(&w->lost) ||
        !w->conn || virConnectIsAlive(w->conn) != 1)
        return;
    g_hash_table_replace(w->said, g_strdup(key), g_strdup(why ? why : ""));
    watch_emit(w, &ev);
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

/* What the persistent domain @dom would leave behind, read now (either
 * thread); NULL when it is not persistent or gone, or with *@ret_why
 * when its definition cannot be read */
static WatchDomain *
watch_read(const DaxfileConf *conf, virDomainPtr dom, char **ret_why)
{
    gint64 read_at = g_get_monotonic_time();
    g_autoptr(DaxfileDomain) def = NULL;
    g_autoptr(GError) error = NULL;
    WatchDomain *wd;

    if (virDomainIsPersistent(dom) != 1)
        return NULL;
    def = daxfile_virt_domain_xml(dom, VIR_DOMAIN_XML_INACTIVE, &error);
    if (!def) {
        virErrorPtr err = virGetLastError();

        if (!err || err->code != VIR_ERR_NO_DOMAIN)
            *ret_why = g_strdup(error->message);
        return NULL;
    }
    wd = g_new0(WatchDomain, 1);
    wd->name = g_strdup(virDomainGetName(dom));
    wd->paths = watch_paths(conf, def);
    wd->read_at = read_at;
    return wd;
}

/* Remember @wd (stolen) as what the domain @uuid leaves behind, unless
 * what is known of it was read later; @why: its definition cannot be
 * read, which leaves what was known of it as it was (it still counts as
 * defined), and is reported. */
static void
watch_store(Watch *w, const char *uuid, const char *name, WatchDomain *wd,
            const char *why)
{
    g_autofree char *key = g_strconcat("read:", uuid, NULL);
    WatchDomain *have = g_hash_table_lookup(w->domains, uuid);

    if (!wd) {
        if (why)
            daxfile_watch_say(w, key, DAXFILE_WATCH_UNREADABLE, name, NULL,
                              why);
        return;
    }
    g_hash_table_remove(w->said, key);
    g_hash_table_remove(w->settled, uuid);
    if (have && have->read_at > wd->read_at) {
        daxfile_watch_domain_free(wd);
        return;
    }
    g_hash_table_replace(w->domains, g_strdup(uuid), wd);
}

/* Read and remember the domain @dom (main thread) */
void
daxfile_watch_scan(Watch *w, virDomainPtr dom)
{
    char uuid[VIR_UUID_STRING_BUFLEN];
    g_autofree char *why = NULL;
    WatchDomain *wd;

    if (virDomainGetUUIDString(dom, uuid) < 0)
        return;
    wd = watch_read(w->conf, dom, &why);
    watch_store(w, uuid, virDomainGetName(dom), wd, why);
}

/* ------------------------------------------------------------ events */

/* Every persistent domain again: libvirt sends no event when a device is
 * added to a definition alone (virDomainAttachDeviceFlags with
 * AFFECT_CONFIG, as `daxfile attach` and `virsh attach-device --config`
 * do), nor for what happened while the connection was down. Domains
 * listed are read again (one that cannot be read stays as it was known);
 * a known domain that is not listed is settled (daxfile_watch_settle()). FALSE
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
        daxfile_watch_scan(w, doms[i]);
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
        daxfile_watch_settle(w, g_ptr_array_index(gone, i), NULL);
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

    watch_emit(w, &ev);
}

/* ------------------------------------------- the main thread's jobs */

/* The device @alias added to the running domain @uuid */
static void
watch_added(Watch *w, const char *uuid, const char *alias)
{
    g_autoptr(virDomain) dom = virDomainLookupByUUIDString(w->conn, uuid);
    g_auto(DaxfilePlugResult) r = {0};

    if (!dom)
        return; /* gone meanwhile: nothing runs to take it up for */
    /* a device added live and to the definition (daxfile attach, virsh
     * attach-device --live --config) is in the files an undefine leaves
     * from now on, not from the next rescan */
    daxfile_watch_scan(w, dom);
    if (daxfile_virt_plug_added(dom, w->conf, alias, &r))
        on_plugged(&r, w);
}

static void
watch_job(Watch *w, WatchJob *job)
{
    switch (job->kind) {
    case JOB_DEFINED:
        watch_store(w, job->uuid, job->name, g_steal_pointer(&job->wd),
                    job->why);
        break;
    case JOB_UNDEFINED:
        daxfile_watch_settle(w, job->uuid, job->name);
        daxfile_watch_process(w);
        break;
    case JOB_STOPPED:
        daxfile_watch_process(w);
        /* a file it held may be another domain's hot-plugged device */
        daxfile_virt_plug_scan(w->conn, w->conf, on_plugged, w);
        break;
    case JOB_ADDED:
        watch_added(w, job->uuid, job->alias);
        break;
    }
}

/* ------------------------------------------ the event thread's part */

static WatchJob *
job_new(WatchJobKind kind, virDomainPtr dom)
{
    char uuid[VIR_UUID_STRING_BUFLEN];
    WatchJob *job;

    if (virDomainGetUUIDString(dom, uuid) < 0)
        return NULL;
    job = g_new0(WatchJob, 1);
    job->kind = kind;
    job->uuid = g_strdup(uuid);
    job->name = g_strdup(virDomainGetName(dom));
    return job;
}

static void
on_device_added(virConnectPtr conn, virDomainPtr dom, const char *alias,
                void *opaque)
{
    Watch *w = opaque;
    WatchJob *job = job_new(JOB_ADDED, dom);

    if (!job)
        return;
    job->alias = g_strdup(alias);
    g_async_queue_push(w->jobs, job);
}

static int
on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail,
             void *opaque)
{
    Watch *w = opaque;
    WatchJob *job = NULL;

    daxfile_test_hold_point("watch-event");
    switch (event) {
    case VIR_DOMAIN_EVENT_DEFINED:
        /* read now: it may be undefined before the main thread is free */
        if ((job = job_new(JOB_DEFINED, dom)))
            job->wd = watch_read(w->conf, dom, &job->why);
        daxfile_test_hold_point("watch-defined");
        break;
    case VIR_DOMAIN_EVENT_UNDEFINED:
        /* a rename: DEFINED (detail RENAMED) follows, same UUID */
        if (detail != VIR_DOMAIN_EVENT_UNDEFINED_RENAMED)
            job = job_new(JOB_UNDEFINED, dom);
        break;
    case VIR_DOMAIN_EVENT_STOPPED:
        job = job_new(JOB_STOPPED, dom);
        break;
    default:
        break;
    }
    if (job)
        g_async_queue_push(w->jobs, job);
    return 0;
}

/* Said at once, whatever the main thread is busy with; it reconnects
 * when it is done */
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
    DaxfileWatchEvent ev = {
        .kind = DAXFILE_WATCH_LOST,
        .why = reason >= 0 && reason < (int)G_N_ELEMENTS(why) && why[reason]
                   ? why[reason]
                   : "closed",
    };

    if (g_atomic_int_get(&w->lost))
        return;
    g_atomic_int_set(&w->lost, 1);
    watch_emit(w, &ev);
}

/* Wakes the event loop, so that @quit is looked at */
static void
on_wake(int timer, void *opaque)
{
}

static gpointer
watch_events(gpointer data)
{
    Watch *w = data;

    while (!g_atomic_int_get(&w->quit))
        virEventRunDefaultImpl();
    return NULL;
}

/* ------------------------------------------------------- connecting */

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
 * take up the devices hot-plugged meanwhile, and the wipes owed. libvirt
 * keeps the connection alive (its keepalive runs on the event thread,
 * whatever a wipe takes). */
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
    g_atomic_int_set(&w->lost, 0);
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
    daxfile_watch_report(w, DAXFILE_WATCH_READY, NULL, NULL, NULL, NULL);
    daxfile_virt_plug_scan(w->conn, w->conf, on_plugged, w);
    daxfile_watch_process(w);
    return TRUE;
}

/* Every WATCH_RESCAN_MS: rescan the definitions and retry the wipes owed;
 * every WATCH_WAKE_MS the main thread looks at *stop and at the
 * connection */
#define WATCH_RESCAN_MS 2000
#define WATCH_WAKE_MS 250

static void
watch_tick(Watch *w)
{
    if (!w->conn || g_atomic_int_get(&w->lost) || !watch_rescan(w))
        return;
    if (watch_files(w) != w->reported_files ||
        g_hash_table_size(w->domains) != w->reported_domains)
        daxfile_watch_report(w, DAXFILE_WATCH_READY, NULL, NULL, NULL, NULL);
    daxfile_watch_process(w);
}

/* The main thread, once connected: the jobs in order, a tick every
 * WATCH_RESCAN_MS, and a new connection when one is lost (the jobs of
 * the old one are done on the new one: a domain defined and undefined
 * meanwhile is known from its event alone) */
static void
watch_run(Watch *w, const char *uri)
{
    gint64 tick = g_get_monotonic_time() + WATCH_RESCAN_MS * 1000;

    while (!g_atomic_int_get(w->stop)) {
        WatchJob *job;

        daxfile_test_hold_point("watch-main");
        if (g_atomic_int_get(&w->lost)) {
            watch_disconnect(w);
            while (!g_atomic_int_get(w->stop) && !watch_connect(w, uri, NULL))
                g_usleep(G_USEC_PER_SEC);
            continue;
        }
        job = g_async_queue_timeout_pop(w->jobs, WATCH_WAKE_MS * 1000);
        if (job) {
            watch_job(w, job);
            watch_job_free(job);
        }
        if (g_get_monotonic_time() >= tick) {
            watch_tick(w);
            tick = g_get_monotonic_time() + WATCH_RESCAN_MS * 1000;
        }
    }
}

gboolean
daxfile_virt_watch(const char *uri, const DaxfileConf *conf,
                   volatile gint *stop, DaxfileWatchFunc report, gpointer data,
                   GError **error)
{
    g_autoptr(GHashTable) domains = g_hash_table_new_full(
        g_str_hash, g_str_equal, g_free, daxfile_watch_domain_free);
    g_autoptr(GHashTable) said =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) settled =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GAsyncQueue) jobs = g_async_queue_new_full(watch_job_free);
    Watch w = {
        .conf = conf,
        .stop = stop,
        .report = report,
        .data = data,
        .callback = -1,
        .plug_callback = -1,
        .domains = domains,
        .said = said,
        .settled = settled,
        .jobs = jobs,
    };
    GThread *events;
    gboolean ok;
    int timer;

    daxfile_virt_silence();
    if (virEventRegisterDefaultImpl() < 0 ||
        (timer = virEventAddTimeout(WATCH_WAKE_MS, on_wake, NULL, NULL)) < 0) {
        daxfile_virt_set_error(error, "Cannot set up libvirt's event loop");
        return FALSE;
    }
    g_mutex_init(&w.report_lock);
    /* both threads parse domain XML: libxml2 is set up once, here */
    xmlInitParser();
    events = g_thread_new("daxfile-events", watch_events, &w);
    ok = watch_connect(&w, uri, error);
    if (ok)
        watch_run(&w, uri);
    g_atomic_int_set(&w.quit, 1);
    g_thread_join(events);
    virEventRemoveTimeout(timer);
    watch_disconnect(&w);
    g_mutex_clear(&w.report_lock);
    return ok;
}

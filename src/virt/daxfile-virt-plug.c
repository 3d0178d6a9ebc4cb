/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-virt-plug.c: pmem devices hot-plugged into running domains
 * (daxfile-virt-priv.h). libvirt runs no hook then: 'daxfile attach' runs
 * the hook's phases around virDomainAttachDeviceFlags() itself, and
 * 'daxfile watch' takes up a device anyone else added (virsh
 * attach-device --live), from libvirt's DEVICE_ADDED event or, for one
 * added while it was not connected, when it connects.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daxfile-attest.h"
#include "daxfile-error.h"
#include "daxfile-hook.h"
#include "daxfile-identity.h"
#include "daxfile-proc.h"
#include "daxfile-registry.h"
#include "daxfile-seam.h"
#include "daxfile-static.h"
#include "daxfile-util.h"
#include "daxfile-virt-priv.h"
#include "daxfile-virt.h"

void
daxfile_plug_result_clear(DaxfilePlugResult *result)
{
    g_clear_pointer(&result->domain, g_free);
    g_clear_pointer(&result->device, g_free);
    g_clear_pointer(&result->path, g_free);
    g_clear_pointer(&result->why, g_free);
}

/* @nv, as the device number @index of a domain */
static DaxfileNvdimm *
nvdimm_dup(const DaxfileNvdimm *nv, guint index)
{
    DaxfileNvdimm *copy = g_new0(DaxfileNvdimm, 1);

    *copy = *nv;
    copy->index = index;
    copy->alias = g_strdup(nv->alias);
    copy->access = g_strdup(nv->access);
    copy->path = g_strdup(nv->path);
    return copy;
}

/* The model's word for messages: "nvdimm", "virtio-pmem device" */
static const char *
model_word(const DaxfileNvdimm *nv)
{
    return nv->model == DAXFILE_DEVICE_NVDIMM ? "nvdimm" : "virtio-pmem device";
}

/* libvirt refused the device: its reservation (@managed) goes back */
static gboolean
attach_refused(const DaxfilePlug *plug, gboolean managed, GError **error)
{
    g_autofree char *what =
        g_strdup_printf("libvirt refused the %s%s", model_word(plug->nv),
                        managed ? " (its reservation was released)" : "");

    daxfile_virt_set_error(error, what);
    if (managed)
        daxfile_plug_release(plug, NULL);
    return FALSE;
}

/* Attached, but not made static for @why (freed): held unguarded */
static gboolean
attach_unguarded(const DaxfilePlug *plug, GError *why, GError **error)
{
    g_autoptr(GError) cause = why;
    g_autofree char *reason = daxfile_plug_cause(plug, cause->message);
    gboolean held = daxfile_plug_hold_unguarded(plug, reason, NULL);

    g_set_error(
        error, DAXFILE_ERROR, cause->code,
        "%s; the device is attached, but its file is not static: %s until the domain stops; fix: stop the domain, correct what is named above, and start it again",
        cause->message,
        held ? "it is held for the domain, unguarded,"
             : "nothing holds it for the domain");
    return FALSE;
}

gboolean
daxfile_virt_plug_attach(virDomainPtr dom, const DaxfileConf *conf,
                         const DaxfileNvdimm *nv, const char *xml,
                         unsigned int flags, gboolean *ret_plugged,
                         GError **error)
{
    g_autoptr(DaxfileDomain) live = daxfile_virt_domain_xml(dom, 0, error);
    DaxfilePlug plug = {.conf = conf,
                        .holder = getpid(),
                        .holder_start = daxfile_proc_start_time(getpid())};
    gboolean managed = FALSE;
    GError *local = NULL;

    *ret_plugged = FALSE;
    if (!live)
        return FALSE;
    plug.dom = live;
    plug.nv = nvdimm_dup(nv, live->nvdimms->len);
    g_ptr_array_add(live->nvdimms, (gpointer)plug.nv);
    if (!daxfile_plug_managed(&plug, &managed, error))
        return FALSE;
    if (managed && !daxfile_plug_prepare(&plug, error))
        return FALSE;
    /* The definition first, then the running domain: libvirt sends
     * DEVICE_ADDED during the live part, and a watch reading the
     * definition then must find the device there (one call does the
     * live part first and saves the definition last: a domain undefined
     * right after would leave its new file unwiped). The definition is
     * given back when the running domain refuses the device. */
    if ((flags & VIR_DOMAIN_AFFECT_CONFIG) &&
        virDomainAttachDeviceFlags(dom, xml, VIR_DOMAIN_AFFECT_CONFIG) < 0)
        return attach_refused(&plug, managed, error);
    if (virDomainAttachDeviceFlags(dom, xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
        g_autoptr(GError) refused = NULL;

        attach_refused(&plug, managed, &refused);
        if ((flags & VIR_DOMAIN_AFFECT_CONFIG) &&
            virDomainDetachDeviceFlags(dom, xml, VIR_DOMAIN_AFFECT_CONFIG) <
                0) {
            g_set_error(
                error, DAXFILE_ERROR, refused->code,
                "%s; the device stays in the domain's definition: libvirt refused to take it out again; fix: virsh edit the domain",
                refused->message);
            return FALSE;
        }
        g_propagate_error(error, g_steal_pointer(&refused));
        return FALSE;
    }
    *ret_plugged = TRUE;
    if (managed && !daxfile_plug_engage(&plug, &local))
        return attach_unguarded(&plug, local, error);
    return TRUE;
}

/* The device of @live that libvirt's DEVICE_ADDED @alias is about, or
 * NULL: for a memory device, libvirt names its backend object, "mem"
 * and the device's alias ("memnvdimm1" for <alias name='nvdimm1'/>) */
static const DaxfileNvdimm *
find_alias(const DaxfileDomain *live, const char *alias)
{
    const char *bare = g_str_has_prefix(alias, "mem") ? alias + 3 : alias;
    guint i;

    for (i = 0; i < live->nvdimms->len; i++) {
        const DaxfileNvdimm *nv = g_ptr_array_index(live->nvdimms, i);

        if (nv->alias && (STREQ(nv->alias, alias) || STREQ(nv->alias, bare)))
            return nv;
    }
    return NULL;
}

/* The registry has an entry of @owner for what @nv names (@engaged: one
 * in force) */
static gboolean
held_by(const DaxfileNvdimm *nv, const char *owner, GPtrArray *entries,
        gboolean engaged)
{
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(DaxfileIdentity));
    guint i;

    if (!nv->path || !daxfile_path_identities(nv->path, ids, NULL))
        return FALSE;
    for (i = 0; i < entries->len; i++) {
        const DaxfileEntry *e = g_ptr_array_index(entries, i);

        if (g_strcmp0(e->owner, owner) == 0 &&
            (!engaged || e->state == DAXFILE_STATE_ENGAGED) &&
            daxfile_identities_have(ids, e->dev, e->ino))
            return TRUE;
    }
    return FALSE;
}

/* Take up the device @nv of the running domain @live, which its QEMU
 * (@qemu) maps already: every check of a start, then static; else held
 * unguarded, and @ret says why */
static void
plug_added(const DaxfileConf *conf, DaxfileDomain *live,
           const DaxfileNvdimm *nv, pid_t qemu, DaxfilePlugResult *ret)
{
    guint64 start = qemu > 0 ? daxfile_proc_start_time(qemu) : 0;
    DaxfilePlug plug = {conf, live, nv, qemu, start, qemu, NULL};
    g_autoptr(GError) error = NULL;

    ret->kind = DAXFILE_PLUG_ENGAGED;
    if (daxfile_plug_prepare(&plug, &error) &&
        daxfile_plug_engage(&plug, &error))
        return;
    ret->why = daxfile_plug_cause(&plug, error->message);
    ret->kind = daxfile_plug_hold_unguarded(&plug, ret->why, NULL)
                    ? DAXFILE_PLUG_UNGUARDED
                    : DAXFILE_PLUG_REFUSED;
}

/* The domain's QEMU from libvirt's pid file, 0 when there is none */
static pid_t
qemu_of(const DaxfileConf *conf, const DaxfileDomain *live)
{
    pid_t pid = daxfile_attest_qemu_pid(conf->qemu_pid_dir, live->name,
                                        conf->path, NULL);

    return pid > 0 ? pid : 0;
}

gboolean
daxfile_virt_plug_added(virDomainPtr dom, const DaxfileConf *conf,
                        const char *alias, DaxfilePlugResult *ret)
{
    g_autoptr(DaxfileDomain) live = daxfile_virt_domain_xml(dom, 0, NULL);
    const DaxfileNvdimm *nv = live ? find_alias(live, alias) : NULL;
    DaxfilePlug plug = {.conf = conf, .dom = live, .nv = nv};
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) entries = NULL;
    g_autofree char *owner = NULL;
    gboolean managed = FALSE;

    if (!nv)
        return FALSE; /* not a pmem device, or gone already */
    ret->domain = g_strdup(live->name);
    ret->device = g_strdup(nv->alias);
    ret->path = g_strdup(nv->path);
    if (!daxfile_plug_managed(&plug, &managed, &error)) {
        ret->kind = DAXFILE_PLUG_REFUSED;
        ret->why = daxfile_plug_cause(&plug, error->message);
        return TRUE;
    }
    owner = g_strdup_printf("domain:%s", live->name);
    entries = daxfile_static_list(NULL);
    /* not managed, or held for the domain already: reserved by 'daxfile
     * attach', whose own engage follows the hot-plug (taking it up here
     * too would find the attach's own descriptor and hold it unguarded),
     * or engaged */
    if (!managed || (entries && held_by(nv, owner, entries, FALSE)))
        return FALSE;
    plug_added(conf, live, nv, qemu_of(conf, live), ret);
    return TRUE;
}

/* The managed devices of the running domain @dom that the registry does
 * not hold for it: added while no watch was connected */
static void
scan_domain(virDomainPtr dom, const DaxfileConf *conf, GPtrArray *entries,
            DaxfilePlugFunc func, gpointer data)
{
    g_autoptr(DaxfileDomain) live = daxfile_virt_domain_xml(dom, 0, NULL);
    g_autofree char *owner = NULL;
    guint i;

    if (!live)
        return;
    owner = g_strdup_printf("domain:%s", live->name);
    for (i = 0; i < live->nvdimms->len; i++) {
        const DaxfileNvdimm *nv = g_ptr_array_index(live->nvdimms, i);
        DaxfilePlug plug = {.conf = conf, .dom = live, .nv = nv};
        g_auto(DaxfilePlugResult) r = {0};
        gboolean managed = FALSE;

        if (!daxfile_plug_managed(&plug, &managed, NULL) || !managed ||
            held_by(nv, owner, entries, FALSE))
            continue;
        r.domain = g_strdup(live->name);
        r.device = g_strdup(nv->alias);
        r.path = g_strdup(nv->path);
        plug_added(conf, live, nv, qemu_of(conf, live), &r);
        func(&r, data);
    }
}

/* @dom runs with its devices its own: not starting (libvirt counts a
 * domain active from before its hook's prepare, and the hook takes up
 * its devices then), not arriving by migration (the hook again), not
 * stopping */
static gboolean
settled_running(virDomainPtr dom)
{
    int state, reason;

    if (virDomainGetState(dom, &state, &reason, 0) < 0)
        return FALSE;
    if (state == VIR_DOMAIN_PAUSED)
        return reason != VIR_DOMAIN_PAUSED_STARTING_UP &&
               reason != VIR_DOMAIN_PAUSED_MIGRATION;
    return state == VIR_DOMAIN_RUNNING || state == VIR_DOMAIN_BLOCKED ||
           state == VIR_DOMAIN_PMSUSPENDED;
}

void
daxfile_virt_plug_scan(virConnectPtr conn, const DaxfileConf *conf,
                       DaxfilePlugFunc func, gpointer data)
{
    virDomainPtr *doms = NULL;
    int n, i;

    daxfile_test_hold_point("watch-plug-scan");
    n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
    for (i = 0; i < n; i++) {
        /* what the registry holds now: a domain that started since the
         * scan began holds its files */
        g_autoptr(GPtrArray) entries = NULL;

        if (settled_running(doms[i]) && (entries = daxfile_static_list(NULL)))
            scan_domain(doms[i], conf, entries, func, data);
        virDomainFree(doms[i]);
    }
    free(doms);
}

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
#include "daxfile-virt-priv.h"
#include "daxfile-virt.h"

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

void
daxfile_virt_silence(void)
{
    virSetErrorFunc(NULL, silence);
}

void
daxfile_virt_set_error(GError **error, const char *what)
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

    daxfile_virt_silence();
    *ret_conn = virConnectOpen(uri);
    if (!*ret_conn) {
        what = g_strdup_printf("Cannot connect to libvirt at '%s'",
                               uri ? uri : "(default URI)");
        daxfile_virt_set_error(error, what);
        return NULL;
    }
    dom = virDomainLookupByName(*ret_conn, domain);
    if (!dom) {
        what = g_strdup_printf("Cannot find domain '%s'", name);
        daxfile_virt_set_error(error, what);
    }
    return dom;
}

DaxfileDomain *
daxfile_virt_domain_xml(virDomainPtr dom, unsigned int flags, GError **error)
{
    g_autofree char *xml = virDomainGetXMLDesc(dom, flags);

    if (!xml) {
        daxfile_virt_set_error(error, "Cannot read the domain XML");
        return NULL;
    }
    return daxfile_domain_parse(xml, strlen(xml), error);
}

/* A transient domain that cannot take the device live: it has no
 * definition to take it for the next boot either */
static gboolean
not_pluggable(const char *domain, DaxfileAttachResult *result, GError **error)
{
    g_autofree char *name = daxfile_escape(domain);

    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
        "Domain '%s' is transient and cannot take the device live: %s; fix: define the domain ('virsh define') and attach it there",
        name, result->note);
    return FALSE;
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
    live = daxfile_virt_domain_xml(dom, 0, NULL);
    if (live && live->nvdimms->len > 0)
        return TRUE;
    *ret_note = g_strdup(
        "the running domain booted without an nvdimm, so QEMU cannot hot-plug one; it appears at the next boot");
    return FALSE;
}

gboolean
daxfile_virt_attach(const char *uri, const char *domain,
                    const DaxfileConf *conf, const DaxfileNvdimm *nv,
                    DaxfileAttachResult *ret_result, GError **error)
{
    g_autoptr(virConnect) conn = NULL;
    g_autoptr(virDomain) dom = lookup(uri, domain, &conn, error);
    g_autoptr(DaxfileDomain) def = NULL;
    g_autofree char *xml = NULL;
    unsigned int flags = VIR_DOMAIN_AFFECT_CONFIG;
    gboolean persistent;

    if (!dom)
        return FALSE;
    persistent = virDomainIsPersistent(dom) != 0;
    def = daxfile_virt_domain_xml(dom, persistent ? VIR_DOMAIN_XML_INACTIVE : 0,
                                  error);
    if (!def || !daxfile_domain_check_attach(def, nv, error))
        return FALSE;
    xml = daxfile_nvdimm_format(nv, error);
    if (!xml)
        return FALSE;
    if (!can_hotplug(dom, nv, &ret_result->note)) {
        if (!persistent)
            return not_pluggable(domain, ret_result, error);
        if (virDomainAttachDeviceFlags(dom, xml, flags) == 0)
            return TRUE;
        daxfile_virt_set_error(error,
                               nv->model == DAXFILE_DEVICE_NVDIMM
                                   ? "libvirt refused the nvdimm"
                                   : "libvirt refused the virtio-pmem device");
        return FALSE;
    }
    /* a transient domain has no definition to add it to */
    flags = VIR_DOMAIN_AFFECT_LIVE;
    if (persistent)
        flags |= VIR_DOMAIN_AFFECT_CONFIG;
    ret_result->transient = !persistent;
    return daxfile_virt_plug_attach(dom, conf, nv, xml, flags,
                                    &ret_result->live, error);
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
    def = daxfile_virt_domain_xml(dom, VIR_DOMAIN_XML_INACTIVE, error);
    if (!def)
        return FALSE;
    index = daxfile_domain_find_nvdimm(def, path);
    if (index < 0) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "Domain '%s' has no nvdimm or virtio-pmem device backed by '%s'",
            dname, name);
        return FALSE;
    }
    model = daxfile_device_model_to_string(
        ((DaxfileNvdimm *)g_ptr_array_index(def->nvdimms, index))->model);
    xml = daxfile_domain_nvdimm_xml(def, (guint)index);
    if (virDomainDetachDeviceFlags(dom, xml, VIR_DOMAIN_AFFECT_CONFIG) < 0) {
        daxfile_virt_set_error(error, "libvirt refused to detach the device");
        return FALSE;
    }
    if (virDomainIsActive(dom) == 1)
        ret_result->note = g_strdup_printf(
            "QEMU cannot unplug a %s device: the running domain keeps it until it shuts down",
            model);
    return TRUE;
}

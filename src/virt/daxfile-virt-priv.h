/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-virt-priv.h: what the libvirt client's two files
 * (daxfile-virt.c: attach, detach; daxfile-watch.c: watch) share
 */
#pragma once

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "daxfile-conf.h"
#include "daxfile-domxml.h"

G_BEGIN_DECLS

G_DEFINE_AUTOPTR_CLEANUP_FUNC(virConnect, virConnectClose)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(virDomain, virDomainFree)

/* Have libvirt report errors to no one: they become GErrors */
void daxfile_virt_silence(void);

/* @error: "@what: <libvirt's last error>" */
void daxfile_virt_set_error(GError **error, const char *what);

/* The domain XML of @dom (virDomainGetXMLDesc() @flags), parsed */
DaxfileDomain *daxfile_virt_domain_xml(virDomainPtr dom, unsigned int flags,
                                       GError **error);

/* daxfile-virt-plug.c: pmem devices hot-plugged into running domains */

/* daxfile attach on a running domain: the hook's prepare over @nv, a
 * device of no managed file, or one every check passed (reserved for the
 * domain, held by this process); then virDomainAttachDeviceFlags(@xml,
 * @flags); when libvirt refuses, the reservation goes back; else the
 * domain's QEMU's new mapping is attested and the file made static with
 * it as the consumer, or, when that fails, held for the domain unguarded
 * (and the error says so). *@ret_plugged: libvirt added the device. */
gboolean daxfile_virt_plug_attach(virDomainPtr dom, const DaxfileConf *conf,
                                  const DaxfileNvdimm *nv, const char *xml,
                                  unsigned int flags, gboolean *ret_plugged,
                                  GError **error);

typedef enum {
    DAXFILE_PLUG_ENGAGED,   /* static, with its QEMU as the consumer */
    DAXFILE_PLUG_UNGUARDED, /* held for the domain, not static: @why */
    DAXFILE_PLUG_REFUSED,   /* neither (another owner holds the file, it
                             * cannot be placed): @why */
} DaxfilePlugKind;

/* What became of a device someone else hot-plugged */
typedef struct {
    DaxfilePlugKind kind;
    char *domain;
    char *device; /* its alias */
    char *path;
    char *why;
} DaxfilePlugResult;

void daxfile_plug_result_clear(DaxfilePlugResult *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfilePlugResult, daxfile_plug_result_clear)

typedef void (*DaxfilePlugFunc)(const DaxfilePlugResult *result, gpointer data);

/* libvirt's DEVICE_ADDED for @alias in the running domain @dom: when it
 * is a pmem device on a managed file that the registry does not hold
 * for @dom in force already, every check of a start, the attestation of
 * its QEMU's mapping and static mode; what fails is held unguarded.
 * FALSE when there was nothing to do; else @ret says what became of it. */
gboolean daxfile_virt_plug_added(virDomainPtr dom, const DaxfileConf *conf,
                                 const char *alias, DaxfilePlugResult *ret);

/* The same for every managed pmem device of every running domain that
 * the registry does not hold for it (added while no watch was
 * connected), each result given to @func. A domain that is starting,
 * arriving by migration or stopping is left to the hook. */
void daxfile_virt_plug_scan(virConnectPtr conn, const DaxfileConf *conf,
                            DaxfilePlugFunc func, gpointer data);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-virt-priv.h: what the libvirt client's two files
 * (daxfile-virt.c: attach, detach; daxfile-watch.c: watch) share
 */
#pragma once

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

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

G_END_DECLS

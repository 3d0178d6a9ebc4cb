/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-virt.h: attach and detach nvdimms through the libvirt API
 * (never used by the hook: libvirt waits for the hook)
 */
#pragma once

#include "daxfile-conf.h"
#include "daxfile-domxml.h"

G_BEGIN_DECLS

typedef struct {
    gboolean live;      /* hot-plugged into the running domain */
    gboolean transient; /* ...only: the domain has no definition */
    char *note;         /* e.g. why it waits for the next boot */
} DaxfileAttachResult;

void daxfile_attach_result_clear(DaxfileAttachResult *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileAttachResult,
                                 daxfile_attach_result_clear)

/* Check the domain's prerequisites, then virDomainAttachDeviceFlags with
 * AFFECT_CONFIG for @nv, a device that daxfile_nvdimm_check() passed.
 * When the domain runs and booted with an nvdimm, which is when QEMU can
 * hot-plug one, also AFFECT_LIVE (only that, for a transient domain),
 * with everything the hook does at a start around it, as @conf says
 * (daxfile_virt_plug_attach()): libvirt runs no hook at hot-plug. @uri
 * NULL = default. */
gboolean daxfile_virt_attach(const char *uri, const char *domain,
                             const DaxfileConf *conf, const DaxfileNvdimm *nv,
                             DaxfileAttachResult *ret_result, GError **error);

/* Remove the nvdimm backed by @path from the persistent definition (QEMU
 * cannot unplug an nvdimm: a running domain keeps it until shutdown). */
gboolean daxfile_virt_detach(const char *uri, const char *domain,
                             const char *path, DaxfileAttachResult *ret_result,
                             GError **error);

G_END_DECLS

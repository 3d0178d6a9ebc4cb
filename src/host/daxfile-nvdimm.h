/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-nvdimm.h: one file-backed pmem device, the one definition that
 * the domain XML parser fills (daxfile_domain_parse()), the device XML
 * formatter writes (daxfile_nvdimm_format()) and daxfile_nvdimm_check()
 * validates, for the hook, 'daxfile attach' and 'daxfile domain-xml'
 * alike (libvirt's virDomainMemoryDef, with domain_conf.c's parse and
 * format and domain_validate.c's checks).
 */
#pragma once

#include <glib.h>

#include "daxfile-enum.h"

G_BEGIN_DECLS

#define DAXFILE_MIN_LABEL_SIZE (G_GUINT64_CONSTANT(128) << 10)

/* The two file-backed pmem devices of libvirt. An nvdimm is mapped by QEMU
 * with MAP_SYNC (<pmem/>) and the guest's stores are durable once flushed
 * from its CPU cache; a virtio-pmem device is mapped without it, and the
 * guest makes its stores durable with the device's flush request, which
 * QEMU serves with fsync() of the file. */
typedef enum {
    DAXFILE_DEVICE_NVDIMM = 0,
    DAXFILE_DEVICE_VIRTIO_PMEM,
    DAXFILE_DEVICE_LAST
} DaxfileDeviceModel;

/* "nvdimm", "virtio-pmem" (libvirt's <memory model=...>); from_string is
 * FALSE for any other model */
DAXFILE_ENUM_DECL(daxfile_device_model, DaxfileDeviceModel);

/* One pmem device of either model ("nvdimm" in names below means both):
 *
 *   <memory model='nvdimm' access='shared'>
 *     <source><path/><alignsize/><pmem/></source>
 *     <target><size/><node/><label><size/></label><readonly/></target>
 *     <alias name=.../>
 *   </memory>
 *
 * A virtio-pmem device has only access, <path> and <size> in its XML
 * (libvirt keeps nothing else of it). */
typedef struct {
    guint index; /* position among the domain's pmem devices */
    DaxfileDeviceModel model;
    char *alias;        /* <alias name=>, or NULL */
    char *access;       /* "shared", "private", or NULL */
    char *path;         /* <source><path>, or NULL */
    guint64 alignsize;  /* bytes, 0 when absent; of a virtio-pmem device
                         * made by attach: the page size its file is
                         * checked for (not in its XML) */
    gboolean pmem;      /* <source><pmem/> */
    guint64 size;       /* <target><size> bytes, 0 when absent */
    gint node;          /* <target><node>, -1 when absent */
    guint64 label_size; /* bytes, 0 when absent */
    gboolean readonly;  /* <target><readonly/> */
} DaxfileNvdimm;

/* The device daxfile makes for @path: access='shared' and, for an
 * nvdimm, <pmem/>; no node, size, alignment or label yet */
void daxfile_nvdimm_init(DaxfileNvdimm *nv, DaxfileDeviceModel model,
                         const char *path);
void daxfile_nvdimm_clear(DaxfileNvdimm *nv);
void daxfile_nvdimm_free(DaxfileNvdimm *nv);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileNvdimm, daxfile_nvdimm_clear)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileNvdimm, daxfile_nvdimm_free)

/* The page size @nv's file must back with aligned extents: <alignsize>
 * of an nvdimm; 2 MiB for virtio-pmem, which has none (QEMU maps it
 * page-aligned, so this is what a guest's huge pages would need) */
guint64 daxfile_nvdimm_page(const DaxfileNvdimm *nv);

/* Whether @nv's own settings keep the guest's writes durable in the file:
 * access='shared'; a <size>; for an nvdimm also <pmem/>, a valid
 * <alignsize>, a label of at least QEMU's minimum, and room left for the
 * guest. The file itself is not looked at. The error is one phrase about
 * the device that the caller prefixes with the device's name. */
gboolean daxfile_nvdimm_check(const DaxfileNvdimm *nv, GError **error);

G_END_DECLS

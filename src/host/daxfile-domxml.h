/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-domxml.h: the parts of libvirt domain XML daxfile cares about:
 * the domain's memory settings, its pmem devices (<memory model='nvdimm'>
 * and <memory model='virtio-pmem'>, read into and written from one
 * DaxfileNvdimm, daxfile-nvdimm.h) and the files it names.
 *
 * Parsed with libxml2, no network, no entity substitution, and any
 * DOCTYPE refused (domain XML never has one; entity bombs need one).
 */
#pragma once

#include <glib.h>

#include "daxfile-nvdimm.h"

G_BEGIN_DECLS

#define DAXFILE_DOMXML_MAX (G_GUINT64_CONSTANT(16) << 20)

typedef struct {
    char *name;
    char *uuid;
    GPtrArray *nvdimms; /* DaxfileNvdimm */
    guint64 memory;     /* <memory>, bytes */
    guint64 max_memory; /* <maxMemory>, bytes; 0 when absent */
    guint max_slots;    /* <maxMemory slots=> */
    guint numa_cells;
    gboolean acpi;          /* <features><acpi/> */
    guint64 devices_memory; /* sum of every <memory> device's size */
    guint memory_devices;   /* number of <memory> devices */
    void *doc;              /* the xmlDoc, for rewriting */
} DaxfileDomain;

void daxfile_domain_free(DaxfileDomain *dom);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileDomain, daxfile_domain_free)

DaxfileDomain *daxfile_domain_parse(const char *xml, gsize len, GError **error);

/* Replace the <source><path> of the nvdimms whose index is a key of
 * @paths (GUINT_TO_POINTER(index) -> new path) and serialise the domain. */
char *daxfile_domain_rewrite_paths(DaxfileDomain *dom, GHashTable *paths,
                                   GError **error);

/* A file the domain XML names: disks (and their backing and data files),
 * filesystems, character devices and their logs, loader, nvram, kernel,
 * initrd, dtb, ACPI tables, TPM and other memory devices, host devices,
 * the files of <qemu:commandline> arguments (QEMU's option syntax and
 * JSON, relative ones too) and paths in <qemu:override> values. */
typedef struct {
    char *where; /* the XML location: "/domain/devices/disk[2]/source/@file" */
    char *path;  /* as written */
    gint nvdimm; /* the nvdimm whose own <source><path> this is, else -1 */
} DaxfileFileRef;

void daxfile_file_ref_free(DaxfileFileRef *ref);

/* Every file reference of @dom, in document order (DaxfileFileRef) */
GPtrArray *daxfile_domain_file_refs(const DaxfileDomain *dom);

/* A storage volume the domain XML names (<source pool='P' volume='V'>,
 * of a <disk type='volume'>): libvirt places it through the pool, which
 * the domain XML does not describe (daxfile-pool.h) */
typedef struct {
    char *where; /* "/domain/devices/disk[1]/source" */
    char *pool;
    char *volume;
} DaxfileVolumeRef;

void daxfile_volume_ref_free(DaxfileVolumeRef *ref);

/* Every volume reference of @dom, in document order (DaxfileVolumeRef) */
GPtrArray *daxfile_domain_volume_refs(const DaxfileDomain *dom);

/* The index of the nvdimm backed by @path, or -1 */
gint daxfile_domain_find_nvdimm(const DaxfileDomain *dom, const char *path);

/* The <memory> element of nvdimm @index, serialised (for detach) */
char *daxfile_domain_nvdimm_xml(DaxfileDomain *dom, guint index);

/* Whether @nv can be attached to @dom: maxMemory with free slots and
 * room, a NUMA cell for the node, ACPI, not attached already. The error
 * names the missing piece and the XML that fixes it. */
gboolean daxfile_domain_check_attach(const DaxfileDomain *dom,
                                     const DaxfileNvdimm *nv, GError **error);

/* libvirt's scaled integers: @unit "b", "KB" (1000), "k"/"KiB" (1024), ...
 * @default_scale applies when @unit is NULL. */
gboolean daxfile_scale_parse(const char *value, const char *unit,
                             guint64 default_scale, guint64 *ret,
                             GError **error);

/* The <memory model='nvdimm'> (or 'virtio-pmem') device XML of @nv,
 * formatted: what @nv says, with only access, <path> and <size> for a
 * virtio-pmem device; daxfile_domain_parse() reads it back the same */
char *daxfile_nvdimm_format(const DaxfileNvdimm *nv, GError **error);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-domxml.h: the parts of libvirt domain XML daxfile cares about
 *
 *   <memory model='nvdimm' access='shared'>
 *     <source><path/><alignsize/><pmem/></source>
 *     <target><size/><node/><label><size/></label><readonly/></target>
 *   </memory>
 *   <memory model='virtio-pmem' access='shared'>
 *     <source><path/></source>
 *     <target><size/></target>
 *   </memory>
 *
 * Parsed with libxml2, no network, no entity substitution, and any
 * DOCTYPE refused (domain XML never has one; entity bombs need one).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define DAXFILE_DOMXML_MAX (G_GUINT64_CONSTANT(16) << 20)
#define DAXFILE_MIN_LABEL_SIZE (G_GUINT64_CONSTANT(128) << 10)

/* The two file-backed pmem devices of libvirt. An nvdimm is mapped by QEMU
 * with MAP_SYNC (<pmem/>) and the guest's stores are durable once flushed
 * from its CPU cache; a virtio-pmem device is mapped without it, and the
 * guest makes its stores durable with the device's flush request, which
 * QEMU serves with fsync() of the file. */
typedef enum {
    DAXFILE_DEVICE_NVDIMM = 0,
    DAXFILE_DEVICE_VIRTIO_PMEM,
} DaxfileDeviceModel;

/* "nvdimm", "virtio-pmem" (libvirt's <memory model=...>) */
const char *daxfile_device_model_to_string(DaxfileDeviceModel model);
/* FALSE for any other model */
gboolean daxfile_device_model_from_string(const char *name,
                                          DaxfileDeviceModel *ret);

/* One pmem device of either model ("nvdimm" in names below means both) */
typedef struct {
    guint index;        /* position among the domain's pmem devices */
    DaxfileDeviceModel model;
    char *alias;        /* <alias name=>, or NULL */
    char *access;       /* "shared", "private", or NULL */
    char *path;         /* <source><path>, or NULL */
    guint64 alignsize;  /* bytes, 0 when absent */
    gboolean pmem;      /* <source><pmem/> */
    guint64 size;       /* <target><size> bytes, 0 when absent */
    gint node;          /* <target><node>, -1 when absent */
    guint64 label_size; /* bytes, 0 when absent */
    gboolean readonly;  /* <target><readonly/> */
} DaxfileNvdimm;

typedef struct {
    char *name;
    char *uuid;
    GPtrArray *nvdimms;      /* DaxfileNvdimm */
    guint64 memory;          /* <memory>, bytes */
    guint64 max_memory;      /* <maxMemory>, bytes; 0 when absent */
    guint max_slots;         /* <maxMemory slots=> */
    guint numa_cells;
    gboolean acpi;           /* <features><acpi/> */
    guint64 devices_memory;  /* sum of every <memory> device's size */
    guint memory_devices;    /* number of <memory> devices */
    void *doc;               /* the xmlDoc, for rewriting */
} DaxfileDomain;

typedef struct {
    const char *path;
    guint64 size;       /* bytes; the backing file's size */
    guint64 align;      /* bytes: nvdimm <alignsize>; for virtio-pmem only
                         * the page size the file's extents are checked for */
    guint64 label_size; /* bytes, 0 = no label (nvdimm only) */
    gint node;          /* guest NUMA node (nvdimm only) */
    gboolean readonly;
    DaxfileDeviceModel model;
} DaxfileNvdimmSpec;

/* The page size @nv's file must back with aligned extents: <alignsize>
 * of an nvdimm; 2 MiB for virtio-pmem, which has none (QEMU maps it
 * page-aligned, so this is what a guest's huge pages would need) */
guint64 daxfile_nvdimm_page(const DaxfileNvdimm *nv);

void daxfile_domain_free(DaxfileDomain *dom);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileDomain, daxfile_domain_free)

DaxfileDomain *daxfile_domain_parse(const char *xml, gsize len,
                                    GError **error);

/* Replace the <source><path> of the nvdimms whose index is a key of
 * @paths (GUINT_TO_POINTER(index) -> new path) and serialise the domain. */
char *daxfile_domain_rewrite_paths(DaxfileDomain *dom, GHashTable *paths,
                                   GError **error);

/* A file the domain XML names: disks (and their backing and data files),
 * filesystems, character devices and their logs, loader, nvram, kernel,
 * initrd, dtb, ACPI tables, TPM and other memory devices, host devices,
 * and paths in <qemu:commandline>/<qemu:override> values. */
typedef struct {
    char *where;  /* the XML location: "/domain/devices/disk[2]/source/@file" */
    char *path;   /* as written */
    gint nvdimm;  /* the nvdimm whose own <source><path> this is, else -1 */
} DaxfileFileRef;

void daxfile_file_ref_free(DaxfileFileRef *ref);

/* Every file reference of @dom, in document order (DaxfileFileRef) */
GPtrArray *daxfile_domain_file_refs(const DaxfileDomain *dom);

/* The index of the nvdimm backed by @path, or -1 */
gint daxfile_domain_find_nvdimm(const DaxfileDomain *dom, const char *path);

/* The <memory> element of nvdimm @index, serialised (for detach) */
char *daxfile_domain_nvdimm_xml(DaxfileDomain *dom, guint index);

/* Whether @spec can be attached to @dom: maxMemory with free slots and
 * room, a NUMA cell for the node, ACPI, not attached already. The error
 * names the missing piece and the XML that fixes it. */
gboolean daxfile_domain_check_attach(const DaxfileDomain *dom,
                                     const DaxfileNvdimmSpec *spec,
                                     GError **error);

/* libvirt's scaled integers: @unit "b", "KB" (1000), "k"/"KiB" (1024), ...
 * @default_scale applies when @unit is NULL. */
gboolean daxfile_scale_parse(const char *value, const char *unit,
                             guint64 default_scale, guint64 *ret,
                             GError **error);


/* The <memory model='nvdimm'> (or 'virtio-pmem') device XML for @spec,
 * formatted */
char *daxfile_nvdimm_device_xml(const DaxfileNvdimmSpec *spec,
                                GError **error);

G_END_DECLS

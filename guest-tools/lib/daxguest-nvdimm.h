/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxguest-nvdimm.h: the guest's NVDIMM inventory, read with libndctl and
 * libdaxctl into plain structures (which the checks judge, and which unit
 * tests build by hand)
 */
#pragma once

#include <glib.h>

#include "daxfile-enum.h"

G_BEGIN_DECLS

#define DAXGUEST_NV_UNKNOWN G_MAXUINT64 /* an address or size not known */

typedef enum {
    DAXGUEST_NV_PERSIST_UNKNOWN = 0, /* not reported (empty attribute) */
    DAXGUEST_NV_PERSIST_NONE,
    DAXGUEST_NV_PERSIST_MEM_CTRL,  /* "memory_controller": ADR */
    DAXGUEST_NV_PERSIST_CPU_CACHE, /* "cpu_cache": eADR */
    DAXGUEST_NV_PERSIST_LAST
} DaxguestNvPersistence;

typedef struct {
    char *name;   /* "dax0.0" */
    char *region; /* the ndctl region, NULL for other dax regions */
    guint64 size;
    guint64 align;
    guint64 resource; /* physical address of byte 0, or UNKNOWN */
    int major;
    int minor;
    gboolean enabled;
} DaxguestNvDaxDev;

typedef struct {
    char *name;   /* "namespace0.0" */
    char *region; /* "region0" */
    char *mode;   /* "raw", "fsdax", "devdax", "sector", "unknown" */
    guint64 size; /* usable bytes (without fsdax/devdax metadata) */
    gboolean enabled;
    char *blockdev;        /* "pmem0" (raw, fsdax, sector), else NULL */
    char *claim;           /* "pfn0.1", "dax0.1", "btt0.1", or NULL */
    guint64 align;         /* page size of fsdax/devdax, 0 otherwise */
    guint64 data_resource; /* physical address of the first data byte */
} DaxguestNvNamespace;

typedef struct {
    char *name; /* "region0" */
    char *bus;  /* "ndbus0" */
    char *type; /* "pmem", "blk" */
    guint64 size;
    guint64 resource; /* physical address (SPA) of its start */
    DaxguestNvPersistence persistence;
    gboolean virtio;       /* on a virtio-pmem bus: no NFIT, no DIMMs, no
                            * MAP_SYNC; stores are made durable by the
                            * device's flush request (fsync/msync) */
    GPtrArray *namespaces; /* DaxguestNvNamespace, active ones only */
} DaxguestNvRegion;

typedef struct {
    char *name;     /* "ndbus0" */
    char *provider; /* "ACPI.NFIT", "e820", "virtio-pmem", ... */
    gboolean nfit;
} DaxguestNvBus;

typedef struct {
    gboolean nfit_table; /* the ACPI NFIT table exists */
    GPtrArray *buses;    /* DaxguestNvBus */
    GPtrArray *dimms;    /* char *: "nmem0" */
    GPtrArray *regions;  /* DaxguestNvRegion, every bus */
    GPtrArray *daxdevs;  /* DaxguestNvDaxDev, every dax region */
} DaxguestNvInventory;

DaxguestNvInventory *daxguest_nv_inventory_new(void);
void daxguest_nv_inventory_free(DaxguestNvInventory *inv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxguestNvInventory, daxguest_nv_inventory_free)

DaxguestNvRegion *daxguest_nv_region_new(const char *name, const char *bus);
DaxguestNvNamespace *daxguest_nv_namespace_new(const char *name,
                                               const char *region,
                                               const char *mode);
DaxguestNvDaxDev *daxguest_nv_daxdev_new(const char *name);

/* Read the inventory of this machine with libndctl and libdaxctl. An
 * empty inventory is not an error; failing to start the libraries is. */
DaxguestNvInventory *daxguest_nv_inventory_read(GError **error);

DAXFILE_ENUM_DECL(daxguest_nv_persistence, DaxguestNvPersistence);

/* Look-ups; NULL when absent. */
const DaxguestNvRegion *daxguest_nv_find_region(const DaxguestNvInventory *inv,
                                                const char *name);
const DaxguestNvNamespace *
daxguest_nv_find_blockdev(const DaxguestNvInventory *inv, const char *blockdev);
const DaxguestNvDaxDev *daxguest_nv_find_daxdev(const DaxguestNvInventory *inv,
                                                int major, int minor);

#define DAXGUEST_NV_VIRTIO_PROVIDER "virtio-pmem"

/* TRUE when there are buses and every one is virtio-pmem's */
gboolean daxguest_nv_all_virtio(const DaxguestNvInventory *inv);

/* Whether the block device @major:@minor (a file's st_dev) is a pmem
 * device of a virtio-pmem bus, from sysfs (its ndbus's provider) */
gboolean daxguest_nv_blockdev_is_virtio(guint major, guint minor);

/* TRUE when there is a region and every region reports cpu_cache: the
 * condition under which libpmem stops flushing (pmem2_auto_flush). */
gboolean daxguest_nv_auto_flush(const DaxguestNvInventory *inv);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-pmem.h: the guest's NVDIMM inventory, read with libndctl and
 * libdaxctl into plain structures (which the checks judge, and which unit
 * tests build by hand)
 */
#pragma once

#include <glib.h>

#include "daxfile-enum.h"

G_BEGIN_DECLS

#define DAXFILE_PMEM_UNKNOWN G_MAXUINT64 /* an address or size not known */

typedef enum {
    DAXFILE_PMEM_PERSIST_UNKNOWN = 0, /* not reported (empty attribute) */
    DAXFILE_PMEM_PERSIST_NONE,
    DAXFILE_PMEM_PERSIST_MEM_CTRL,  /* "memory_controller": ADR */
    DAXFILE_PMEM_PERSIST_CPU_CACHE, /* "cpu_cache": eADR */
    DAXFILE_PMEM_PERSIST_LAST
} DaxfilePmemPersistence;

typedef struct {
    char *name;      /* "dax0.0" */
    char *region;    /* the ndctl region, NULL for other dax regions */
    char *namespace; /* its devdax namespace, NULL for other dax regions */
    guint64 size;
    guint64 align;
    guint64 resource; /* physical address of byte 0, or UNKNOWN */
    int major;
    int minor;
    gboolean enabled;
} DaxfilePmemDaxDev;

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
} DaxfilePmemNamespace;

typedef struct {
    char *name; /* "region0" */
    char *bus;  /* "ndbus0" */
    char *type; /* "pmem", "blk" */
    guint64 size;
    guint64 resource; /* physical address (SPA) of its start */
    DaxfilePmemPersistence persistence;
    gboolean virtio;       /* on a virtio-pmem bus: no NFIT, no DIMMs, no
                            * MAP_SYNC; stores are made durable by the
                            * device's flush request (fsync/msync) */
    GPtrArray *namespaces; /* DaxfilePmemNamespace, active ones only */
    char *cxl_region;      /* the CXL region it is (same physical
                            * address), or NULL */
} DaxfilePmemRegion;

typedef struct {
    char *name;     /* "ndbus0" */
    char *provider; /* "ACPI.NFIT", "e820", "virtio-pmem", ... */
    gboolean nfit;
} DaxfilePmemBus;

/* A CXL region (libcxl), under its root decoder */
typedef struct {
    char *name;       /* "region0" (CXL's, not libnvdimm's) */
    char *decoder;    /* its root decoder, "decoder0.0" */
    guint64 resource; /* physical address of its start, or UNKNOWN */
    guint64 size;
    GPtrArray *memdevs; /* char *: "mem0", in interleave position order */
} DaxfilePmemCxlRegion;

typedef struct {
    gboolean nfit_table;    /* the ACPI NFIT table exists */
    GPtrArray *buses;       /* DaxfilePmemBus */
    GPtrArray *dimms;       /* char *: "nmem0" */
    GPtrArray *regions;     /* DaxfilePmemRegion, every bus */
    GPtrArray *daxdevs;     /* DaxfilePmemDaxDev, every dax region */
    GPtrArray *cxl_regions; /* DaxfilePmemCxlRegion */
} DaxfilePmemInventory;

DaxfilePmemInventory *daxfile_pmem_inventory_new(void);
void daxfile_pmem_inventory_free(DaxfilePmemInventory *inv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfilePmemInventory, daxfile_pmem_inventory_free)

DaxfilePmemRegion *daxfile_pmem_region_new(const char *name, const char *bus);
DaxfilePmemNamespace *daxfile_pmem_namespace_new(const char *name,
                                                 const char *region,
                                                 const char *mode);
DaxfilePmemDaxDev *daxfile_pmem_daxdev_new(const char *name);
DaxfilePmemCxlRegion *daxfile_pmem_cxl_region_new(const char *name,
                                                  const char *decoder);

/* Read the inventory of this machine with libndctl, libdaxctl and libcxl.
 * An empty inventory is not an error; failing to start the libraries is. */
DaxfilePmemInventory *daxfile_pmem_inventory_read(GError **error);

/* Add the CXL regions of this machine (libcxl; daxfile-pmem-cxl.c) */
gboolean daxfile_pmem_cxl_read(DaxfilePmemInventory *inv, GError **error);

/* Name, in each nd region, the CXL region it is: libcxl has no link from
 * one to the other, so they are matched by physical address (both start
 * at the same one, and the nd region is a CXL pmem region's). */
void daxfile_pmem_cxl_link(DaxfilePmemInventory *inv);

const DaxfilePmemCxlRegion *
daxfile_pmem_find_cxl_region(const DaxfilePmemInventory *inv, const char *name);
const DaxfilePmemBus *daxfile_pmem_find_bus(const DaxfilePmemInventory *inv,
                                            const char *name);

DAXFILE_ENUM_DECL(daxfile_pmem_persistence, DaxfilePmemPersistence);

/* Look-ups; NULL when absent. */
const DaxfilePmemRegion *
daxfile_pmem_find_region(const DaxfilePmemInventory *inv, const char *name);
const DaxfilePmemNamespace *
daxfile_pmem_find_blockdev(const DaxfilePmemInventory *inv,
                           const char *blockdev);
const DaxfilePmemDaxDev *
daxfile_pmem_find_daxdev(const DaxfilePmemInventory *inv, int major, int minor);

#define DAXFILE_PMEM_VIRTIO_PROVIDER "virtio-pmem"
/* the provider of the nvdimm bus the kernel's cxl_pmem makes (drivers/cxl/
 * pmem.c: provider_name), the bus of every CXL pmem region */
#define DAXFILE_PMEM_CXL_PROVIDER "CXL"

/* TRUE when there are buses and every one is virtio-pmem's */
gboolean daxfile_pmem_all_virtio(const DaxfilePmemInventory *inv);

/* Whether the block device @major:@minor (a file's st_dev) is a pmem
 * device of a virtio-pmem bus, from sysfs (its ndbus's provider) */
gboolean daxfile_pmem_blockdev_is_virtio(guint major, guint minor);

/* TRUE when there is a region and every region reports cpu_cache: the
 * condition under which libpmem stops flushing (pmem2_auto_flush). */
gboolean daxfile_pmem_auto_flush(const DaxfilePmemInventory *inv);

G_END_DECLS

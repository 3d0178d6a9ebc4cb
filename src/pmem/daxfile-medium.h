/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-medium.h: what a file is stored on, for `daxfile status` and
 * `list`: the pmem namespace whose block device holds its filesystem (a
 * partition of pmem0 counts as pmem0), or the device-dax device it is,
 * with the region, its nvdimm bus and provider ("ACPI.NFIT" for an
 * NVDIMM, "CXL" for a CXL pmem region, "virtio-pmem"), its persistence
 * domain and, on CXL, the CXL region, its root decoder and its memdevs.
 *
 * A file on anything else (a loop device, tmpfs, a disk) has the medium
 * "none"; one whose inventory cannot be read "unknown". Neither is an
 * error: the medium is information, never a reason to fail.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include <sys/types.h>

#include "daxfile-pmem.h"

G_BEGIN_DECLS

typedef enum {
    DAXFILE_MEDIUM_UNKNOWN = 0, /* the inventory could not be read */
    DAXFILE_MEDIUM_NONE,        /* not persistent memory */
    DAXFILE_MEDIUM_NAMESPACE,   /* on a pmem namespace's block device */
    DAXFILE_MEDIUM_DEVICE_DAX,  /* a device-dax device */
    DAXFILE_MEDIUM_LAST
} DaxfileMediumKind;

DAXFILE_ENUM_DECL(daxfile_medium_kind, DaxfileMediumKind);

typedef struct {
    DaxfileMediumKind kind;
    char *device;    /* "pmem0", "dax0.0"; NULL for none and unknown */
    char *namespace; /* "namespace0.0", or NULL (a dax device of none) */
    char *mode;      /* the namespace's: "fsdax", "devdax", "raw", ... */
    char *region;    /* the nd region, "region0" */
    char *bus;       /* "ndbus0" */
    char *provider;  /* the bus's: "ACPI.NFIT", "CXL", "virtio-pmem" */
    DaxfilePmemPersistence persistence;
    char *cxl_region;       /* the CXL region, or NULL when not CXL */
    char *cxl_decoder;      /* its root decoder */
    GPtrArray *cxl_memdevs; /* char *: its memdevs */
    char *reason;           /* none and unknown: why, for people */
} DaxfileMedium;

void daxfile_medium_free(DaxfileMedium *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileMedium, daxfile_medium_free)

/* The medium the block device @blockdev ("pmem0") or the device-dax
 * device @major:@minor is in @inv (pure; NONE when @inv has neither) */
DaxfileMedium *daxfile_medium_from_blockdev(const DaxfilePmemInventory *inv,
                                            const char *blockdev);
DaxfileMedium *daxfile_medium_from_daxdev(const DaxfilePmemInventory *inv,
                                          int major, int minor);

/* The disk of the block device @major:@minor when it is on an nvdimm bus
 * (its sysfs device is below an ndbus): "pmem0", also for pmem0p1; NULL
 * for any other device. Read through daxfile-sysfs.h. */
char *daxfile_medium_pmem_disk(guint major, guint minor);

/* The medium of a file on the block device @dev (its st_dev), or, with
 * @chr, of the character device @dev (a device-dax device's st_rdev),
 * reading the inventory only when the device is pmem: into *@inv when
 * that is NULL, and from *@inv when it is not (the caller frees it; one
 * inventory serves the entries of a list and the paths of a status).
 * Never NULL, never an error. */
DaxfileMedium *daxfile_medium_read(dev_t dev, gboolean chr,
                                   DaxfilePmemInventory **inv);

/* One line for people: "CXL region region0 (decoder0.0; memdevs mem0),
 * namespace0.0 fsdax (pmem0) in region0 on ndbus0 (CXL), persistence
 * domain memory_controller" */
char *daxfile_medium_describe(const DaxfileMedium *m);

/* The "medium" object of status --json and list --json */
JsonNode *daxfile_medium_to_json(const DaxfileMedium *m);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <daxctl/libdaxctl.h>
#include <errno.h>
#include <limits.h>
#include <ndctl/libndctl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "daxfile-error.h"
#include "daxfile-pmem.h"
#include "daxfile-sysfs.h"
#include "daxfile-util.h"

static void
daxdev_free(gpointer p)
{
    DaxfilePmemDaxDev *d = p;

    g_free(d->name);
    g_free(d->region);
    g_free(d->namespace);
    g_free(d);
}

static void
namespace_free(gpointer p)
{
    DaxfilePmemNamespace *ns = p;

    g_free(ns->name);
    g_free(ns->region);
    g_free(ns->mode);
    g_free(ns->blockdev);
    g_free(ns->claim);
    g_free(ns);
}

static void
region_free(gpointer p)
{
    DaxfilePmemRegion *r = p;

    g_free(r->name);
    g_free(r->bus);
    g_free(r->type);
    g_ptr_array_unref(r->namespaces);
    g_free(r->cxl_region);
    g_free(r);
}

static void
cxl_region_free(gpointer p)
{
    DaxfilePmemCxlRegion *r = p;

    g_free(r->name);
    g_free(r->decoder);
    g_ptr_array_unref(r->memdevs);
    g_free(r);
}

static void
bus_free(gpointer p)
{
    DaxfilePmemBus *b = p;

    g_free(b->name);
    g_free(b->provider);
    g_free(b);
}

DaxfilePmemInventory *
daxfile_pmem_inventory_new(void)
{
    DaxfilePmemInventory *inv = g_new0(DaxfilePmemInventory, 1);

    inv->buses = g_ptr_array_new_with_free_func(bus_free);
    inv->dimms = g_ptr_array_new_with_free_func(g_free);
    inv->regions = g_ptr_array_new_with_free_func(region_free);
    inv->daxdevs = g_ptr_array_new_with_free_func(daxdev_free);
    inv->cxl_regions = g_ptr_array_new_with_free_func(cxl_region_free);
    return inv;
}

void
daxfile_pmem_inventory_free(DaxfilePmemInventory *inv)
{
    if (!inv)
        return;
    g_ptr_array_unref(inv->buses);
    g_ptr_array_unref(inv->dimms);
    g_ptr_array_unref(inv->regions);
    g_ptr_array_unref(inv->daxdevs);
    g_ptr_array_unref(inv->cxl_regions);
    g_free(inv);
}

DaxfilePmemRegion *
daxfile_pmem_region_new(const char *name, const char *bus)
{
    DaxfilePmemRegion *r = g_new0(DaxfilePmemRegion, 1);

    r->name = g_strdup(name);
    r->bus = g_strdup(bus);
    r->type = g_strdup("pmem");
    r->resource = DAXFILE_PMEM_UNKNOWN;
    r->namespaces = g_ptr_array_new_with_free_func(namespace_free);
    return r;
}

DaxfilePmemNamespace *
daxfile_pmem_namespace_new(const char *name, const char *region,
                           const char *mode)
{
    DaxfilePmemNamespace *ns = g_new0(DaxfilePmemNamespace, 1);

    ns->name = g_strdup(name);
    ns->region = g_strdup(region);
    ns->mode = g_strdup(mode);
    ns->enabled = TRUE;
    ns->data_resource = DAXFILE_PMEM_UNKNOWN;
    return ns;
}

DaxfilePmemDaxDev *
daxfile_pmem_daxdev_new(const char *name)
{
    DaxfilePmemDaxDev *d = g_new0(DaxfilePmemDaxDev, 1);

    d->name = g_strdup(name);
    d->resource = DAXFILE_PMEM_UNKNOWN;
    d->enabled = TRUE;
    return d;
}

DaxfilePmemCxlRegion *
daxfile_pmem_cxl_region_new(const char *name, const char *decoder)
{
    DaxfilePmemCxlRegion *r = g_new0(DaxfilePmemCxlRegion, 1);

    r->name = g_strdup(name);
    r->decoder = g_strdup(decoder);
    r->resource = DAXFILE_PMEM_UNKNOWN;
    r->memdevs = g_ptr_array_new_with_free_func(g_free);
    return r;
}

DAXFILE_ENUM_IMPL(daxfile_pmem_persistence, DaxfilePmemPersistence,
                  DAXFILE_PMEM_PERSIST_LAST, "unknown", "none",
                  "memory_controller", "cpu_cache");

/* libndctl returns "" (or NULL) for "none"; keep NULL for that. */
static char *
dup_nonempty(const char *s)
{
    return s && *s ? g_strdup(s) : NULL;
}

static guint64
ull_or_unknown(unsigned long long v)
{
    return v == ULLONG_MAX ? DAXFILE_PMEM_UNKNOWN : (guint64)v;
}

static void
nv_log(struct ndctl_ctx *ctx, int priority, const char *file, int line,
       const char *fn, const char *format, va_list args)
{
    g_autofree char *msg = g_strdup_vprintf(format, args);

    g_debug("libndctl: %s: %s", fn, g_strchomp(msg));
}

static void
dax_log(struct daxctl_ctx *ctx, int priority, const char *file, int line,
        const char *fn, const char *format, va_list args)
{
    g_autofree char *msg = g_strdup_vprintf(format, args);

    g_debug("libdaxctl: %s: %s", fn, g_strchomp(msg));
}

static DaxfilePmemPersistence
nv_persistence(struct ndctl_region *region)
{
    switch (ndctl_region_get_persistence_domain(region)) {
    case PERSISTENCE_NONE:
        return DAXFILE_PMEM_PERSIST_NONE;
    case PERSISTENCE_MEM_CTRL:
        return DAXFILE_PMEM_PERSIST_MEM_CTRL;
    case PERSISTENCE_CPU_CACHE:
        return DAXFILE_PMEM_PERSIST_CPU_CACHE;
    default:
        return DAXFILE_PMEM_PERSIST_UNKNOWN;
    }
}

static DaxfilePmemDaxDev *
nv_read_daxdev(struct daxctl_dev *dev, const DaxfilePmemNamespace *ns)
{
    DaxfilePmemDaxDev *d = daxfile_pmem_daxdev_new(daxctl_dev_get_devname(dev));

    d->region = g_strdup(ns ? ns->region : NULL);
    d->namespace = g_strdup(ns ? ns->name : NULL);
    d->size = daxctl_dev_get_size(dev);
    d->align = daxctl_dev_get_align(dev);
    d->resource = ull_or_unknown(daxctl_dev_get_resource(dev));
    d->major = daxctl_dev_get_major(dev);
    d->minor = daxctl_dev_get_minor(dev);
    d->enabled = daxctl_dev_is_enabled(dev) > 0;
    return d;
}

static gboolean
nv_has_daxdev(const DaxfilePmemInventory *inv, const char *name)
{
    guint i;

    for (i = 0; i < inv->daxdevs->len; i++) {
        const DaxfilePmemDaxDev *d = g_ptr_array_index(inv->daxdevs, i);

        if (STREQ(d->name, name))
            return TRUE;
    }
    return FALSE;
}

/* the devices of a dax region, of the namespace @ns (NULL: of none) */
static void
nv_read_dax_region(DaxfilePmemInventory *inv, struct daxctl_region *dregion,
                   const DaxfilePmemNamespace *ns)
{
    struct daxctl_dev *dev;

    daxctl_dev_foreach(dregion, dev)
    {
        if (daxctl_dev_get_size(dev) == 0 ||
            nv_has_daxdev(inv, daxctl_dev_get_devname(dev)))
            continue;
        g_ptr_array_add(inv->daxdevs, nv_read_daxdev(dev, ns));
    }
}

/* mode-specific parts: block device, claiming device, page size, and the
 * physical address of the first data byte */
static void
nv_read_claim(DaxfilePmemInventory *inv, struct ndctl_namespace *ndns,
              DaxfilePmemNamespace *ns)
{
    struct ndctl_pfn *pfn = ndctl_namespace_get_pfn(ndns);
    struct ndctl_dax *dax = ndctl_namespace_get_dax(ndns);
    struct ndctl_btt *btt = ndctl_namespace_get_btt(ndns);

    if (pfn) {
        ns->claim = g_strdup(ndctl_pfn_get_devname(pfn));
        ns->blockdev = dup_nonempty(ndctl_pfn_get_block_device(pfn));
        ns->align = ndctl_pfn_get_align(pfn);
        ns->data_resource = ull_or_unknown(ndctl_pfn_get_resource(pfn));
        if (ndctl_pfn_get_size(pfn))
            ns->size = ndctl_pfn_get_size(pfn);
    } else if (dax) {
        struct daxctl_region *dregion = ndctl_dax_get_daxctl_region(dax);

        ns->claim = g_strdup(ndctl_dax_get_devname(dax));
        ns->align = ndctl_dax_get_align(dax);
        ns->data_resource = ull_or_unknown(ndctl_dax_get_resource(dax));
        if (ndctl_dax_get_size(dax))
            ns->size = ndctl_dax_get_size(dax);
        if (dregion)
            nv_read_dax_region(inv, dregion, ns);
    } else if (btt) {
        ns->claim = g_strdup(ndctl_btt_get_devname(btt));
        ns->blockdev = dup_nonempty(ndctl_btt_get_block_device(btt));
    } else {
        ns->blockdev = dup_nonempty(ndctl_namespace_get_block_device(ndns));
        ns->data_resource = ull_or_unknown(ndctl_namespace_get_resource(ndns));
    }
}

static const char *
nv_mode_name(struct ndctl_namespace *ndns)
{
    switch ((int)ndctl_namespace_get_mode(ndns)) {
    case NDCTL_NS_MODE_FSDAX:
        return "fsdax";
    case NDCTL_NS_MODE_DEVDAX:
        return "devdax";
    case NDCTL_NS_MODE_SECTOR:
        return "sector";
    case NDCTL_NS_MODE_RAW:
        return "raw";
    default:
        return "unknown";
    }
}

static void
nv_read_region(DaxfilePmemInventory *inv, struct ndctl_bus *bus,
               struct ndctl_region *region)
{
    DaxfilePmemRegion *r = daxfile_pmem_region_new(
        ndctl_region_get_devname(region), ndctl_bus_get_devname(bus));
    struct ndctl_namespace *ndns;

    g_free(r->type);
    r->type = g_strdup(ndctl_region_get_type_name(region));
    r->size = ndctl_region_get_size(region);
    r->resource = ull_or_unknown(ndctl_region_get_resource(region));
    r->persistence = nv_persistence(region);
    r->virtio = g_strcmp0(ndctl_bus_get_provider(bus),
                          DAXFILE_PMEM_VIRTIO_PROVIDER) == 0;
    ndctl_namespace_foreach(region, ndns)
    {
        DaxfilePmemNamespace *ns;

        /* skip seeds (size 0) and namespaces that are off */
        if (ndctl_namespace_get_size(ndns) == 0)
            continue;
        ns = daxfile_pmem_namespace_new(ndctl_namespace_get_devname(ndns),
                                        r->name, nv_mode_name(ndns));
        ns->size = ndctl_namespace_get_size(ndns);
        ns->enabled = ndctl_namespace_is_active(ndns);
        nv_read_claim(inv, ndns, ns);
        g_ptr_array_add(r->namespaces, ns);
    }
    g_ptr_array_add(inv->regions, r);
}

static void
nv_read_bus(DaxfilePmemInventory *inv, struct ndctl_bus *bus)
{
    DaxfilePmemBus *b = g_new0(DaxfilePmemBus, 1);
    struct ndctl_dimm *dimm;
    struct ndctl_region *region;

    b->name = g_strdup(ndctl_bus_get_devname(bus));
    b->provider = g_strdup(ndctl_bus_get_provider(bus));
    b->nfit = ndctl_bus_has_nfit(bus) != 0;
    g_ptr_array_add(inv->buses, b);
    ndctl_dimm_foreach(bus, dimm)
        g_ptr_array_add(inv->dimms, g_strdup(ndctl_dimm_get_devname(dimm)));
    ndctl_region_foreach(bus, region) nv_read_region(inv, bus, region);
}

static gboolean
nv_read_daxctl(DaxfilePmemInventory *inv, GError **error)
{
    struct daxctl_ctx *dctx = NULL;
    struct daxctl_region *dregion;
    int rc = daxctl_new(&dctx);

    if (rc < 0) {
        daxfile_set_error_errno(error, -rc, "Cannot start libdaxctl");
        return FALSE;
    }
    daxctl_set_log_fn(dctx, dax_log);
    daxctl_region_foreach(dctx, dregion) nv_read_dax_region(inv, dregion, NULL);
    daxctl_unref(dctx);
    return TRUE;
}

DaxfilePmemInventory *
daxfile_pmem_inventory_read(GError **error)
{
    g_autoptr(DaxfilePmemInventory) inv = daxfile_pmem_inventory_new();
    struct ndctl_ctx *ctx = NULL;
    struct ndctl_bus *bus;
    int rc;

    inv->nfit_table = daxfile_sysfs_exists("firmware/acpi/tables/NFIT");
    rc = ndctl_new(&ctx);
    if (rc < 0) {
        daxfile_set_error_errno(error, -rc, "Cannot start libndctl");
        return NULL;
    }
    ndctl_set_log_fn(ctx, nv_log);
    ndctl_bus_foreach(ctx, bus) nv_read_bus(inv, bus);
    ndctl_unref(ctx);
    /* device-dax outside NVDIMM namespaces (hmem, cxl) too */
    if (!nv_read_daxctl(inv, error) || !daxfile_pmem_cxl_read(inv, error))
        return NULL;
    daxfile_pmem_cxl_link(inv);
    return g_steal_pointer(&inv);
}

const DaxfilePmemRegion *
daxfile_pmem_find_region(const DaxfilePmemInventory *inv, const char *name)
{
    guint i;

    for (i = 0; i < inv->regions->len; i++) {
        const DaxfilePmemRegion *r = g_ptr_array_index(inv->regions, i);

        if (STREQ(r->name, name))
            return r;
    }
    return NULL;
}

const DaxfilePmemBus *
daxfile_pmem_find_bus(const DaxfilePmemInventory *inv, const char *name)
{
    guint i;

    for (i = 0; i < inv->buses->len; i++) {
        const DaxfilePmemBus *b = g_ptr_array_index(inv->buses, i);

        if (STREQ(b->name, name))
            return b;
    }
    return NULL;
}

const DaxfilePmemNamespace *
daxfile_pmem_find_blockdev(const DaxfilePmemInventory *inv,
                           const char *blockdev)
{
    guint i, j;

    for (i = 0; i < inv->regions->len; i++) {
        const DaxfilePmemRegion *r = g_ptr_array_index(inv->regions, i);

        for (j = 0; j < r->namespaces->len; j++) {
            const DaxfilePmemNamespace *ns =
                g_ptr_array_index(r->namespaces, j);

            if (ns->blockdev && STREQ(ns->blockdev, blockdev))
                return ns;
        }
    }
    return NULL;
}

const DaxfilePmemDaxDev *
daxfile_pmem_find_daxdev(const DaxfilePmemInventory *inv, int major, int minor)
{
    guint i;

    for (i = 0; i < inv->daxdevs->len; i++) {
        const DaxfilePmemDaxDev *d = g_ptr_array_index(inv->daxdevs, i);

        if (d->major == major && d->minor == minor)
            return d;
    }
    return NULL;
}

gboolean
daxfile_pmem_auto_flush(const DaxfilePmemInventory *inv)
{
    guint i;

    for (i = 0; i < inv->regions->len; i++) {
        const DaxfilePmemRegion *r = g_ptr_array_index(inv->regions, i);

        if (r->persistence != DAXFILE_PMEM_PERSIST_CPU_CACHE)
            return FALSE;
    }
    return inv->regions->len > 0;
}

gboolean
daxfile_pmem_all_virtio(const DaxfilePmemInventory *inv)
{
    guint i;

    for (i = 0; i < inv->buses->len; i++) {
        const DaxfilePmemBus *b = g_ptr_array_index(inv->buses, i);

        if (g_strcmp0(b->provider, DAXFILE_PMEM_VIRTIO_PROVIDER) != 0)
            return FALSE;
    }
    return inv->buses->len > 0;
}

gboolean
daxfile_pmem_blockdev_is_virtio(guint major, guint minor)
{
    g_autofree char *link = g_strdup_printf("%s/dev/block/%u:%u",
                                            daxfile_sysfs_root(), major, minor);
    g_autofree char *real = realpath(link, NULL);
    g_autofree char *provider = NULL;
    g_autofree char *text = NULL;
    char *bus = real ? strstr(real, "/ndbus") : NULL;
    char *end = bus ? strchr(bus + 1, '/') : NULL;

    /* .../virtio0/ndbus0/region0/pfn0.1/block/pmem0: ndbus0/provider */
    if (!end)
        return FALSE;
    provider = g_strdup_printf("%.*s/provider", (int)(end - real), real);
    if (!g_file_get_contents(provider, &text, NULL, NULL))
        return FALSE;
    return STREQ(g_strstrip(text), DAXFILE_PMEM_VIRTIO_PROVIDER);
}

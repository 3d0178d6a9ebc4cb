/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CXL part of the inventory, read with libcxl the way ndctl's `cxl
 * list` walks it (cxl/filter.c): every bus's root port, its decoders, the
 * regions of each; a region's memdevs through its mappings' endpoint
 * decoders
 */
#include <cxl/libcxl.h>
#include <limits.h>
#include <stdarg.h>

#include "daxfile-error.h"
#include "daxfile-pmem.h"
#include "daxfile-util.h"

static void
cxl_log(struct cxl_ctx *ctx, int priority, const char *file, int line,
        const char *fn, const char *format, va_list args)
{
    g_autofree char *msg = g_strdup_vprintf(format, args);

    g_debug("libcxl: %s: %s", fn, g_strchomp(msg));
}

static DaxfilePmemCxlRegion *
cxl_read_region(struct cxl_decoder *root, struct cxl_region *region)
{
    DaxfilePmemCxlRegion *r = daxfile_pmem_cxl_region_new(
        cxl_region_get_devname(region), cxl_decoder_get_devname(root));
    unsigned long long resource = cxl_region_get_resource(region);
    struct cxl_memdev_mapping *mapping;

    r->resource = resource == ULLONG_MAX ? DAXFILE_PMEM_UNKNOWN : resource;
    r->size = cxl_region_get_size(region);
    cxl_mapping_foreach(region, mapping)
    {
        struct cxl_decoder *ep = cxl_mapping_get_decoder(mapping);
        struct cxl_memdev *memdev = ep ? cxl_decoder_get_memdev(ep) : NULL;

        if (memdev)
            g_ptr_array_add(r->memdevs,
                            g_strdup(cxl_memdev_get_devname(memdev)));
    }
    return r;
}

gboolean
daxfile_pmem_cxl_read(DaxfilePmemInventory *inv, GError **error)
{
    struct cxl_ctx *ctx = NULL;
    struct cxl_bus *bus;
    int rc = cxl_new(&ctx);

    if (rc < 0) {
        daxfile_set_error_errno(error, -rc, "Cannot start libcxl");
        return FALSE;
    }
    cxl_set_log_fn(ctx, cxl_log);
    cxl_bus_foreach(ctx, bus)
    {
        struct cxl_port *port = cxl_bus_get_port(bus);
        struct cxl_decoder *decoder;

        cxl_decoder_foreach(port, decoder)
        {
            struct cxl_region *region;

            cxl_region_foreach(decoder, region) g_ptr_array_add(
                inv->cxl_regions, cxl_read_region(decoder, region));
        }
    }
    cxl_unref(ctx);
    return TRUE;
}

void
daxfile_pmem_cxl_link(DaxfilePmemInventory *inv)
{
    guint i, j;

    for (i = 0; i < inv->regions->len; i++) {
        DaxfilePmemRegion *r = g_ptr_array_index(inv->regions, i);

        g_clear_pointer(&r->cxl_region, g_free);
        if (r->resource == DAXFILE_PMEM_UNKNOWN)
            continue;
        for (j = 0; j < inv->cxl_regions->len; j++) {
            const DaxfilePmemCxlRegion *c =
                g_ptr_array_index(inv->cxl_regions, j);

            if (c->resource == r->resource) {
                r->cxl_region = g_strdup(c->name);
                break;
            }
        }
    }
}

const DaxfilePmemCxlRegion *
daxfile_pmem_find_cxl_region(const DaxfilePmemInventory *inv, const char *name)
{
    guint i;

    for (i = 0; i < inv->cxl_regions->len; i++) {
        const DaxfilePmemCxlRegion *c = g_ptr_array_index(inv->cxl_regions, i);

        if (STREQ(c->name, name))
            return c;
    }
    return NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "daxfile-json.h"
#include "daxfile-medium.h"
#include "daxfile-sysfs.h"
#include "daxfile-util.h"

DAXFILE_ENUM_IMPL(daxfile_medium_kind, DaxfileMediumKind, DAXFILE_MEDIUM_LAST,
                  "unknown", "none", "namespace", "device_dax");

void
daxfile_medium_free(DaxfileMedium *m)
{
    if (!m)
        return;
    g_free(m->device);
    g_free(m->namespace);
    g_free(m->mode);
    g_free(m->region);
    g_free(m->bus);
    g_free(m->provider);
    g_free(m->cxl_region);
    g_free(m->cxl_decoder);
    g_ptr_array_unref(m->cxl_memdevs);
    g_free(m->reason);
    g_free(m);
}

/* Takes @reason */
static DaxfileMedium *
medium_new(DaxfileMediumKind kind, char *reason)
{
    DaxfileMedium *m = g_new0(DaxfileMedium, 1);

    m->kind = kind;
    m->reason = reason;
    m->cxl_memdevs = g_ptr_array_new_with_free_func(g_free);
    return m;
}

/* The region's details: its bus and provider, persistence, CXL region */
static void
medium_add_region(DaxfileMedium *m, const DaxfilePmemInventory *inv,
                  const char *name)
{
    const DaxfilePmemRegion *r = NULL;
    const DaxfilePmemBus *b = NULL;
    const DaxfilePmemCxlRegion *c = NULL;
    guint i;

    if (name)
        r = daxfile_pmem_find_region(inv, name);
    if (!r)
        return;
    b = daxfile_pmem_find_bus(inv, r->bus);
    if (r->cxl_region)
        c = daxfile_pmem_find_cxl_region(inv, r->cxl_region);
    m->region = g_strdup(r->name);
    m->bus = g_strdup(r->bus);
    m->provider = g_strdup(b ? b->provider : NULL);
    m->persistence = r->persistence;
    if (!c)
        return;
    m->cxl_region = g_strdup(c->name);
    m->cxl_decoder = g_strdup(c->decoder);
    for (i = 0; i < c->memdevs->len; i++)
        g_ptr_array_add(m->cxl_memdevs,
                        g_strdup(g_ptr_array_index(c->memdevs, i)));
}

DaxfileMedium *
daxfile_medium_from_blockdev(const DaxfilePmemInventory *inv,
                             const char *blockdev)
{
    const DaxfilePmemNamespace *ns = daxfile_pmem_find_blockdev(inv, blockdev);
    DaxfileMedium *m;

    if (!ns)
        return medium_new(
            DAXFILE_MEDIUM_NONE,
            g_strdup_printf("'%s' is no namespace's block device", blockdev));
    m = medium_new(DAXFILE_MEDIUM_NAMESPACE, NULL);
    m->device = g_strdup(blockdev);
    m->namespace = g_strdup(ns->name);
    m->mode = g_strdup(ns->mode);
    medium_add_region(m, inv, ns->region);
    return m;
}

DaxfileMedium *
daxfile_medium_from_daxdev(const DaxfilePmemInventory *inv, int major,
                           int minor)
{
    const DaxfilePmemDaxDev *d = daxfile_pmem_find_daxdev(inv, major, minor);
    const DaxfilePmemRegion *r = NULL;
    DaxfileMedium *m;
    guint i;

    if (!d)
        return medium_new(
            DAXFILE_MEDIUM_NONE,
            g_strdup_printf("no device-dax device is %d:%d", major, minor));
    m = medium_new(DAXFILE_MEDIUM_DEVICE_DAX, NULL);
    m->device = g_strdup(d->name);
    m->namespace = g_strdup(d->namespace);
    r = d->region ? daxfile_pmem_find_region(inv, d->region) : NULL;
    for (i = 0; r && d->namespace && i < r->namespaces->len; i++) {
        const DaxfilePmemNamespace *ns = g_ptr_array_index(r->namespaces, i);

        if (STREQ(ns->name, d->namespace))
            m->mode = g_strdup(ns->mode);
    }
    medium_add_region(m, inv, d->region);
    return m;
}

char *
daxfile_medium_pmem_disk(guint major, guint minor)
{
    g_autofree char *rel = g_strdup_printf("dev/block/%u:%u", major, minor);
    g_autofree char *link = g_build_filename(daxfile_sysfs_root(), rel, NULL);
    g_autofree char *part = g_strconcat(rel, "/partition", NULL);
    g_autofree char *real = realpath(link, NULL);
    g_autofree char *disk = NULL;

    /* .../ndbus0/region0/pfn0.1/block/pmem0[/pmem0p1] */
    if (!real || !strstr(real, "/ndbus"))
        return NULL;
    if (!daxfile_sysfs_exists(part))
        return g_path_get_basename(real);
    disk = g_path_get_dirname(real);
    return g_path_get_basename(disk);
}

static DaxfileMedium *
medium_read_inventory(const char *blockdev, dev_t rdev,
                      DaxfilePmemInventory **inv)
{
    g_autoptr(GError) error = NULL;

    if (!*inv)
        *inv = daxfile_pmem_inventory_read(&error);
    if (!*inv) {
        g_debug("the pmem inventory cannot be read: %s", error->message);
        return medium_new(DAXFILE_MEDIUM_UNKNOWN, g_strdup(error->message));
    }
    if (blockdev)
        return daxfile_medium_from_blockdev(*inv, blockdev);
    return daxfile_medium_from_daxdev(*inv, major(rdev), minor(rdev));
}

DaxfileMedium *
daxfile_medium_read(dev_t dev, gboolean chr, DaxfilePmemInventory **inv)
{
    g_autofree char *disk = NULL;
    g_autofree char *sub = NULL;

    if (chr) {
        g_autofree char *rel =
            g_strdup_printf("dev/char/%u:%u/subsystem", major(dev), minor(dev));

        sub = daxfile_sysfs_link_name(rel);
        if (!sub || STRNEQ(sub, "dax"))
            return medium_new(DAXFILE_MEDIUM_NONE,
                              g_strdup("a character device, not device-dax"));
        return medium_read_inventory(NULL, dev, inv);
    }
    disk = daxfile_medium_pmem_disk(major(dev), minor(dev));
    if (!disk)
        return medium_new(
            DAXFILE_MEDIUM_NONE,
            g_strdup_printf("its device %u:%u is not on an nvdimm bus",
                            major(dev), minor(dev)));
    return medium_read_inventory(disk, 0, inv);
}

static char *
medium_describe_cxl(const DaxfileMedium *m)
{
    g_autoptr(GString) memdevs = g_string_new(NULL);
    guint i;

    if (!m->cxl_region)
        return g_strdup("");
    for (i = 0; i < m->cxl_memdevs->len; i++)
        g_string_append_printf(memdevs, "%s%s", i ? ", " : "",
                               (const char *)m->cxl_memdevs->pdata[i]);
    return g_strdup_printf("CXL region %s (%s; memdevs %s), ", m->cxl_region,
                           m->cxl_decoder,
                           memdevs->len ? memdevs->str : "none");
}

char *
daxfile_medium_describe(const DaxfileMedium *m)
{
    g_autofree char *cxl = NULL;

    if (m->kind == DAXFILE_MEDIUM_NONE || m->kind == DAXFILE_MEDIUM_UNKNOWN)
        return g_strdup_printf(
            "%s (%s)", daxfile_medium_kind_to_string(m->kind), m->reason);
    cxl = medium_describe_cxl(m);
    return g_strdup_printf(
        "%s%s %s (%s) in %s on %s (%s), persistence domain %s", cxl,
        m->namespace ? m->namespace : "no namespace",
        m->mode ? m->mode : "devdax", m->device,
        m->region ? m->region : "no nd region", m->bus ? m->bus : "no bus",
        m->provider ? m->provider : "?",
        daxfile_pmem_persistence_to_string(m->persistence));
}

static void
json_add_cxl(JsonBuilder *b, const DaxfileMedium *m)
{
    guint i;

    json_builder_set_member_name(b, "cxl");
    if (!m->cxl_region) {
        json_builder_add_null_value(b);
        return;
    }
    json_builder_begin_object(b);
    daxfile_json_add_string(b, "region", m->cxl_region);
    daxfile_json_add_string(b, "decoder", m->cxl_decoder);
    json_builder_set_member_name(b, "memdevs");
    json_builder_begin_array(b);
    for (i = 0; i < m->cxl_memdevs->len; i++)
        json_builder_add_string_value(b, g_ptr_array_index(m->cxl_memdevs, i));
    json_builder_end_array(b);
    json_builder_end_object(b);
}

JsonNode *
daxfile_medium_to_json(const DaxfileMedium *m)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    const char *persistence = NULL;

    /* as ndctl list -R prints it: "unknown" when the region says nothing */
    if (m->region)
        persistence = daxfile_pmem_persistence_to_string(m->persistence);

    json_builder_begin_object(b);
    daxfile_json_add_string(b, "kind", daxfile_medium_kind_to_string(m->kind));
    daxfile_json_add_string(b, "device", m->device);
    daxfile_json_add_string(b, "namespace", m->namespace);
    daxfile_json_add_string(b, "mode", m->mode);
    daxfile_json_add_string(b, "region", m->region);
    daxfile_json_add_string(b, "bus", m->bus);
    daxfile_json_add_string(b, "provider", m->provider);
    daxfile_json_add_string(b, "persistence_domain", persistence);
    json_add_cxl(b, m);
    daxfile_json_add_string(b, "reason", m->reason);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

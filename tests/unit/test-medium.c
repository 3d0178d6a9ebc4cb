/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The medium of a file (daxfile-medium.h) from hand-built inventories: an
 * NVDIMM namespace, a CXL pmem region's namespace and its devdax device,
 * the nd region to CXL region match by address; and the pmem disk of a
 * device number from a sysfs tree (tests/data/sysfs/medium): pmem0
 * (259:0) on ndbus0 with its partition pmem0p1 (259:1), loop0 (7:0), the
 * dax device 252:0 and 1:3 (a character device of another subsystem)
 */
#include <string.h>
#include <sys/sysmacros.h>

#include "daxfile-json.h"
#include "daxfile-medium.h"

#define CXL_HPA G_GUINT64_CONSTANT(0x3d0000000)

static DaxfilePmemRegion *
add_region(DaxfilePmemInventory *inv, const char *bus, const char *provider,
           const char *name, guint64 resource)
{
    DaxfilePmemBus *b = g_new0(DaxfilePmemBus, 1);
    DaxfilePmemRegion *r = daxfile_pmem_region_new(name, bus);

    b->name = g_strdup(bus);
    b->provider = g_strdup(provider);
    g_ptr_array_add(inv->buses, b);
    r->resource = resource;
    r->persistence = DAXFILE_PMEM_PERSIST_MEM_CTRL;
    g_ptr_array_add(inv->regions, r);
    return r;
}

static void
add_namespace(DaxfilePmemRegion *r, const char *name, const char *mode,
              const char *blockdev)
{
    DaxfilePmemNamespace *ns = daxfile_pmem_namespace_new(name, r->name, mode);

    ns->blockdev = g_strdup(blockdev);
    g_ptr_array_add(r->namespaces, ns);
}

/* ndbus0 (ACPI.NFIT): region0, namespace0.0 fsdax on pmem0; ndbus1
 * (CXL): region1 at the CXL region's address, namespace1.0 fsdax on
 * pmem1 and namespace1.1 devdax with dax1.0 (252:0); the CXL region0
 * under decoder0.0 over mem0 and mem1 */
static DaxfilePmemInventory *
inventory(guint64 cxl_resource)
{
    DaxfilePmemInventory *inv = daxfile_pmem_inventory_new();
    DaxfilePmemRegion *r;
    DaxfilePmemCxlRegion *c =
        daxfile_pmem_cxl_region_new("region0", "decoder0.0");
    DaxfilePmemDaxDev *d = daxfile_pmem_daxdev_new("dax1.0");

    r = add_region(inv, "ndbus0", "ACPI.NFIT", "region0", 0x140000000);
    add_namespace(r, "namespace0.0", "fsdax", "pmem0");
    r = add_region(inv, "ndbus1", DAXFILE_PMEM_CXL_PROVIDER, "region1",
                   CXL_HPA);
    add_namespace(r, "namespace1.0", "fsdax", "pmem1");
    add_namespace(r, "namespace1.1", "devdax", NULL);
    d->region = g_strdup("region1");
    d->namespace = g_strdup("namespace1.1");
    d->major = 252;
    g_ptr_array_add(inv->daxdevs, d);
    c->resource = cxl_resource;
    g_ptr_array_add(c->memdevs, g_strdup("mem0"));
    g_ptr_array_add(c->memdevs, g_strdup("mem1"));
    g_ptr_array_add(inv->cxl_regions, c);
    daxfile_pmem_cxl_link(inv);
    return inv;
}

static void
test_link(void)
{
    g_autoptr(DaxfilePmemInventory) inv = inventory(CXL_HPA);
    g_autoptr(DaxfilePmemInventory) other = inventory(CXL_HPA + (1 << 28));
    const DaxfilePmemRegion *nvdimm = daxfile_pmem_find_region(inv, "region0");
    const DaxfilePmemRegion *cxl = daxfile_pmem_find_region(inv, "region1");
    DaxfilePmemRegion *unknown = g_ptr_array_index(other->regions, 1);

    g_assert_null(nvdimm->cxl_region);
    g_assert_cmpstr(cxl->cxl_region, ==, "region0");
    /* another address: no link, and none for an address not known */
    g_assert_null(unknown->cxl_region);
    unknown->resource = DAXFILE_PMEM_UNKNOWN;
    ((DaxfilePmemCxlRegion *)g_ptr_array_index(other->cxl_regions, 0))
        ->resource = DAXFILE_PMEM_UNKNOWN;
    daxfile_pmem_cxl_link(other);
    g_assert_null(unknown->cxl_region);
}

static void
test_nvdimm(void)
{
    g_autoptr(DaxfilePmemInventory) inv = inventory(CXL_HPA);
    g_autoptr(DaxfileMedium) m = daxfile_medium_from_blockdev(inv, "pmem0");
    g_autofree char *text = daxfile_medium_describe(m);

    g_assert_cmpint(m->kind, ==, DAXFILE_MEDIUM_NAMESPACE);
    g_assert_cmpstr(m->device, ==, "pmem0");
    g_assert_cmpstr(m->namespace, ==, "namespace0.0");
    g_assert_cmpstr(m->mode, ==, "fsdax");
    g_assert_cmpstr(m->region, ==, "region0");
    g_assert_cmpstr(m->bus, ==, "ndbus0");
    g_assert_cmpstr(m->provider, ==, "ACPI.NFIT");
    g_assert_null(m->cxl_region);
    g_assert_cmpstr(
        text, ==,
        "namespace0.0 fsdax (pmem0) in region0 on ndbus0 (ACPI.NFIT), persistence domain memory_controller");
}

static void
test_cxl(void)
{
    g_autoptr(DaxfilePmemInventory) inv = inventory(CXL_HPA);
    g_autoptr(DaxfileMedium) m = daxfile_medium_from_blockdev(inv, "pmem1");
    g_autofree char *text = daxfile_medium_describe(m);
    g_autoptr(JsonNode) node = daxfile_medium_to_json(m);
    g_autofree char *json = daxfile_json_to_string(node);

    g_assert_cmpint(m->kind, ==, DAXFILE_MEDIUM_NAMESPACE);
    g_assert_cmpstr(m->provider, ==, "CXL");
    g_assert_cmpstr(m->cxl_region, ==, "region0");
    g_assert_cmpstr(m->cxl_decoder, ==, "decoder0.0");
    g_assert_cmpuint(m->cxl_memdevs->len, ==, 2);
    g_assert_cmpstr(
        text, ==,
        "CXL region region0 (decoder0.0; memdevs mem0, mem1), namespace1.0 fsdax (pmem1) in region1 on ndbus1 (CXL), persistence domain memory_controller");
    g_test_message("%s", json);
    g_assert_nonnull(strstr(json, "\"kind\" : \"namespace\""));
    g_assert_nonnull(strstr(json, "\"provider\" : \"CXL\""));
    g_assert_nonnull(
        strstr(json, "\"persistence_domain\" : \"memory_controller\""));
    g_assert_nonnull(strstr(json, "\"decoder\" : \"decoder0.0\""));
    g_assert_nonnull(strstr(json, "\"mem0\",\n"));
    g_assert_nonnull(strstr(json, "\"reason\" : null"));
}

static void
test_daxdev(void)
{
    g_autoptr(DaxfilePmemInventory) inv = inventory(CXL_HPA);
    g_autoptr(DaxfileMedium) m = daxfile_medium_from_daxdev(inv, 252, 0);
    g_autoptr(DaxfileMedium) none = daxfile_medium_from_daxdev(inv, 252, 1);

    g_assert_cmpint(m->kind, ==, DAXFILE_MEDIUM_DEVICE_DAX);
    g_assert_cmpstr(m->device, ==, "dax1.0");
    g_assert_cmpstr(m->namespace, ==, "namespace1.1");
    g_assert_cmpstr(m->mode, ==, "devdax");
    g_assert_cmpstr(m->region, ==, "region1");
    g_assert_cmpstr(m->cxl_region, ==, "region0");
    g_assert_cmpint(none->kind, ==, DAXFILE_MEDIUM_NONE);
}

static void
test_none(void)
{
    g_autoptr(DaxfilePmemInventory) inv = inventory(CXL_HPA);
    g_autoptr(DaxfileMedium) m = daxfile_medium_from_blockdev(inv, "sda");
    g_autofree char *text = daxfile_medium_describe(m);
    g_autoptr(JsonNode) node = daxfile_medium_to_json(m);
    g_autofree char *json = daxfile_json_to_string(node);

    g_assert_cmpint(m->kind, ==, DAXFILE_MEDIUM_NONE);
    g_assert_cmpstr(text, ==, "none ('sda' is no namespace's block device)");
    g_assert_nonnull(strstr(json, "\"kind\" : \"none\""));
    g_assert_nonnull(strstr(json, "\"cxl\" : null"));
    g_assert_nonnull(strstr(json, "\"persistence_domain\" : null"));
}

static void
test_sysfs(void)
{
    g_autofree char *disk = daxfile_medium_pmem_disk(259, 0);
    g_autofree char *part = daxfile_medium_pmem_disk(259, 1);
    g_autofree char *loop = daxfile_medium_pmem_disk(7, 0);
    g_autofree char *missing = daxfile_medium_pmem_disk(0, 42);
    /* none reaches the inventory: not pmem */
    g_autoptr(DaxfilePmemInventory) inv = NULL;
    g_autoptr(DaxfileMedium) on_loop =
        daxfile_medium_read(makedev(7, 0), 0, &inv);
    g_autoptr(DaxfileMedium) on_tmpfs =
        daxfile_medium_read(makedev(0, 42), 0, &inv);
    g_autoptr(DaxfileMedium) null = daxfile_medium_read(makedev(1, 3), 1, &inv);

    g_assert_cmpstr(disk, ==, "pmem0");
    g_assert_cmpstr(part, ==, "pmem0");
    g_assert_null(loop);
    g_assert_null(missing);
    g_assert_cmpint(on_loop->kind, ==, DAXFILE_MEDIUM_NONE);
    g_assert_cmpstr(on_loop->reason, ==,
                    "its device 7:0 is not on an nvdimm bus");
    g_assert_cmpint(on_tmpfs->kind, ==, DAXFILE_MEDIUM_NONE);
    g_assert_cmpint(null->kind, ==, DAXFILE_MEDIUM_NONE);
    g_assert_cmpstr(null->reason, ==, "a character device, not device-dax");
    g_assert_null(inv);
}

int
main(int argc, char **argv)
{
    g_autofree char *root = NULL;

    g_test_init(&argc, &argv, NULL);
    root = g_test_build_filename(G_TEST_DIST, "data", "sysfs", "medium", NULL);
    g_setenv("DAXFILE_SYSFS_ROOT", root, TRUE);
    g_test_add_func("/medium/cxl/link", test_link);
    g_test_add_func("/medium/nvdimm", test_nvdimm);
    g_test_add_func("/medium/cxl/namespace", test_cxl);
    g_test_add_func("/medium/device-dax", test_daxdev);
    g_test_add_func("/medium/none", test_none);
    g_test_add_func("/medium/sysfs", test_sysfs);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `daxfile-guest check` judgement and output on hand-made facts: text, TAP
 * and JSON compared with golden files in data/checks/ (regenerate with
 * DAXFILE_TEST_REGENERATE=1); the TAP is also checked for validity
 */
#include <string.h>

#include "daxfile-json.h"
#include "daxfile-test-util.h"
#include "daxfile-util.h"
#include "daxguest-checks.h"

#define M (G_GUINT64_CONSTANT(1) << 20)
#define G (G_GUINT64_CONSTANT(1) << 30)
#define REGION_SPA G_GUINT64_CONSTANT(0x100000000)

typedef void (*Scenario)(DaxguestFacts *facts);

static DaxguestFacts *
facts_base(void)
{
    DaxguestFacts *f = daxguest_facts_new(daxfile_pmem_inventory_new());

    f->cpu.clflush = TRUE;
    f->cpu.clflushopt = TRUE;
    f->cpu.clwb = TRUE;
    return f;
}

/* One QEMU NVDIMM without labels: ndbus0, nmem0, region0 (1 GiB) */
static DaxfilePmemRegion *
add_nvdimm(DaxguestFacts *f, DaxfilePmemPersistence persistence)
{
    DaxfilePmemBus *bus = g_new0(DaxfilePmemBus, 1);
    DaxfilePmemRegion *r = daxfile_pmem_region_new("region0", "ndbus0");

    f->inv->nfit_table = TRUE;
    bus->name = g_strdup("ndbus0");
    bus->provider = g_strdup("ACPI.NFIT");
    bus->nfit = TRUE;
    g_ptr_array_add(f->inv->buses, bus);
    g_ptr_array_add(f->inv->dimms, g_strdup("nmem0"));
    r->size = G;
    r->resource = REGION_SPA;
    r->persistence = persistence;
    g_ptr_array_add(f->inv->regions, r);
    return r;
}

static DaxfilePmemNamespace *
add_namespace(DaxfilePmemRegion *r, const char *mode, guint64 align)
{
    DaxfilePmemNamespace *ns =
        daxfile_pmem_namespace_new("namespace0.0", r->name, mode);

    ns->size = STREQ(mode, "raw") ? G : 1006 * M;
    ns->align = align;
    ns->data_resource = REGION_SPA + (STREQ(mode, "raw") ? 0 : 18 * M);
    if (!STREQ(mode, "devdax"))
        ns->blockdev = g_strdup("pmem0");
    g_ptr_array_add(r->namespaces, ns);
    return ns;
}

/* fsdax ext4 mounted at /mnt/pmem with everything working */
static DaxguestPmemFacts *
add_mounted_pmem(DaxguestFacts *f, const char *dax_mode)
{
    DaxguestPmemFacts *p =
        daxguest_pmem_facts_new("/dev/pmem0", "namespace0.0");

    p->present = TRUE;
    p->queue_dax = DAXFILE_TRI_YES;
    p->mount_point = g_strdup("/mnt/pmem");
    p->fs_type = g_strdup("ext4");
    p->probe.fs_type = g_strdup("ext4");
    p->probe.dax_mode = g_strdup(dax_mode);
    p->probe.dax = DAXFILE_TRI_YES;
    p->probe.map_sync = TRUE;
    p->probe.extent_physical = 0x1200000;
    p->probe.extent_aligned = TRUE;
    p->probe.pmd.ran = TRUE;
    p->probe.pmd.map_sync = TRUE;
    p->probe.pmd.first_faults = 1;
    p->probe.pmd.extra_faults = 0;
    p->probe.pmd.traced = DAXFILE_TRI_YES;
    p->probe.pmd.trace_pmd = 1;
    g_ptr_array_add(f->pmems, p);
    return p;
}

static void
scenario_no_nvdimm(DaxguestFacts *f)
{
}

static void
scenario_fsdax_ok(DaxguestFacts *f)
{
    add_namespace(add_nvdimm(f, DAXFILE_PMEM_PERSIST_UNKNOWN), "fsdax", 2 * M);
    add_mounted_pmem(f, "always");
}

/* A virtio-pmem-pci device: its own bus, no NFIT, no DIMMs; the region
 * maps the namespace (no pfn device) and refuses MAP_SYNC */
static void
scenario_virtio_pmem(DaxguestFacts *f)
{
    DaxfilePmemBus *bus = g_new0(DaxfilePmemBus, 1);
    DaxfilePmemRegion *r = daxfile_pmem_region_new("region0", "ndbus0");
    DaxfilePmemNamespace *ns =
        daxfile_pmem_namespace_new("namespace0.0", "region0", "fsdax");
    DaxguestPmemFacts *p;

    bus->name = g_strdup("ndbus0");
    bus->provider = g_strdup("virtio-pmem");
    g_ptr_array_add(f->inv->buses, bus);
    r->size = 256 * M;
    r->resource = REGION_SPA;
    r->virtio = TRUE;
    g_ptr_array_add(f->inv->regions, r);
    ns->size = 256 * M;
    ns->enabled = TRUE;
    ns->data_resource = REGION_SPA;
    ns->blockdev = g_strdup("pmem0");
    g_ptr_array_add(r->namespaces, ns);
    p = add_mounted_pmem(f, "always");
    p->probe.map_sync = FALSE;
    p->probe.map_sync_error = g_strdup("Operation not supported");
    p->probe.pmd.map_sync = FALSE;
}

/* A CXL type-3 device's pmem (QEMU cxl-type3, persistent-memdev): the
 * CXL nvdimm bridge's bus, no NFIT, its nmem0; the nd region at the CXL
 * region's address, persistence domain memory_controller; a mounted
 * fsdax namespace */
static void
scenario_cxl(DaxguestFacts *f)
{
    DaxfilePmemRegion *r = add_nvdimm(f, DAXFILE_PMEM_PERSIST_MEM_CTRL);
    DaxfilePmemBus *bus = g_ptr_array_index(f->inv->buses, 0);
    DaxfilePmemCxlRegion *c =
        daxfile_pmem_cxl_region_new("region0", "decoder0.0");

    f->inv->nfit_table = FALSE;
    g_free(bus->provider);
    bus->provider = g_strdup(DAXFILE_PMEM_CXL_PROVIDER);
    bus->nfit = FALSE;
    c->resource = REGION_SPA;
    c->size = G;
    g_ptr_array_add(c->memdevs, g_strdup("mem0"));
    g_ptr_array_add(f->inv->cxl_regions, c);
    daxfile_pmem_cxl_link(f->inv);
    add_namespace(r, "fsdax", 2 * M);
    add_mounted_pmem(f, "always");
}

/* The same, but libcxl shows no CXL region at the nd region's address */
static void
scenario_cxl_unmatched(DaxguestFacts *f)
{
    DaxfilePmemCxlRegion *c;

    scenario_cxl(f);
    c = g_ptr_array_index(f->inv->cxl_regions, 0);
    c->resource = REGION_SPA + G;
    daxfile_pmem_cxl_link(f->inv);
}

static void
scenario_raw(DaxguestFacts *f)
{
    add_namespace(add_nvdimm(f, DAXFILE_PMEM_PERSIST_UNKNOWN), "raw", 0);
}

static void
scenario_devdax_ok(DaxguestFacts *f)
{
    DaxfilePmemRegion *r = add_nvdimm(f, DAXFILE_PMEM_PERSIST_MEM_CTRL);
    DaxfilePmemDaxDev *d = daxfile_pmem_daxdev_new("dax0.0");
    DaxguestDaxFacts *df = daxguest_dax_facts_new("dax0.0");

    add_namespace(r, "devdax", 2 * M);
    d->region = g_strdup("region0");
    d->size = 1006 * M;
    d->align = 2 * M;
    d->resource = REGION_SPA + 18 * M;
    d->major = 252;
    g_ptr_array_add(f->inv->daxdevs, d);
    df->present = TRUE;
    df->probe.ran = TRUE;
    df->probe.map_sync = TRUE;
    df->probe.first_faults = 1;
    df->probe.traced = DAXFILE_TRI_UNKNOWN;
    g_ptr_array_add(f->daxes, df);
}

/* eADR claimed (nvdimm-persistence=cpu): WARN, and libpmem stops flushing */
static void
scenario_cpu_cache(DaxguestFacts *f)
{
    add_namespace(add_nvdimm(f, DAXFILE_PMEM_PERSIST_CPU_CACHE), "fsdax",
                  2 * M);
    add_mounted_pmem(f, "always");
}

/* mounted with dax=never: statx and MAP_SYNC say no */
static void
scenario_dax_never(DaxguestFacts *f)
{
    DaxguestPmemFacts *p;

    add_namespace(add_nvdimm(f, DAXFILE_PMEM_PERSIST_UNKNOWN), "fsdax", 2 * M);
    p = add_mounted_pmem(f, "never");
    p->probe.dax = DAXFILE_TRI_NO;
    p->probe.map_sync = FALSE;
    p->probe.map_sync_error = g_strdup("Operation not supported");
}

/* default mkfs.xfs: extents at 96 KiB mod 2 MiB, PMD faults fall back */
static void
scenario_misaligned(DaxguestFacts *f)
{
    DaxguestPmemFacts *p;

    add_namespace(add_nvdimm(f, DAXFILE_PMEM_PERSIST_UNKNOWN), "fsdax", 2 * M);
    p = add_mounted_pmem(f, "always");
    g_free(p->fs_type);
    p->fs_type = g_strdup("xfs");
    p->probe.extent_physical = 0x418000;
    p->probe.extent_aligned = FALSE;
    p->probe.geometry_fix = g_strdup("mkfs.xfs -d su=2m,sw=1");
    p->probe.pmd.extra_faults = 511;
    p->probe.pmd.traced = DAXFILE_TRI_NO;
    p->probe.pmd.trace_pmd = 0;
    p->probe.pmd.trace_fallback = 1;
}

/* fsdax namespace with 4 KiB pages, not mounted; PMEM_NO_FLUSH=1 set */
static void
scenario_unmounted(DaxguestFacts *f)
{
    DaxguestPmemFacts *p =
        daxguest_pmem_facts_new("/dev/pmem0", "namespace0.0");

    add_namespace(add_nvdimm(f, DAXFILE_PMEM_PERSIST_UNKNOWN), "fsdax", 4096);
    p->present = TRUE;
    p->queue_dax = DAXFILE_TRI_YES;
    g_ptr_array_add(f->pmems, p);
    f->pmem_no_flush = g_strdup("1");
}

/* devdax namespace but the device_dax driver is not loaded; a guest CPU
 * with clflush only */
static void
scenario_no_daxdev(DaxguestFacts *f)
{
    add_namespace(add_nvdimm(f, DAXFILE_PMEM_PERSIST_UNKNOWN), "devdax", 2 * M);
    f->cpu.clflushopt = FALSE;
    f->cpu.clwb = FALSE;
}

/* nfit module not loaded: the table exists but there is no bus */
static void
scenario_no_bus(DaxguestFacts *f)
{
    f->inv->nfit_table = TRUE;
}

static const struct {
    const char *name;
    Scenario func;
    gboolean fails;
} scenarios[] = {
    {"no-nvdimm", scenario_no_nvdimm, TRUE},
    {"no-bus", scenario_no_bus, TRUE},
    {"fsdax-ok", scenario_fsdax_ok, FALSE},
    {"raw", scenario_raw, TRUE},
    {"devdax-ok", scenario_devdax_ok, FALSE},
    {"cpu-cache", scenario_cpu_cache, FALSE},
    {"dax-never", scenario_dax_never, TRUE},
    {"misaligned", scenario_misaligned, FALSE},
    {"unmounted", scenario_unmounted, TRUE},
    {"no-daxdev", scenario_no_daxdev, TRUE},
    {"virtio-pmem", scenario_virtio_pmem, FALSE},
    {"cxl", scenario_cxl, FALSE},
    {"cxl-unmatched", scenario_cxl_unmatched, FALSE},
};

/* The TAP is well-formed: version, plan first, numbered test points whose
 * descriptions hold no '#', comments only as "# " lines. */
static void
assert_valid_tap(const char *tap, const GPtrArray *checks)
{
    g_auto(GStrv) lines = g_strsplit(tap, "\n", -1);
    g_autoptr(GRegex) re =
        g_regex_new("^(not ok|ok) ([0-9]+) - [^#]+$", 0, 0, NULL);
    g_autofree char *plan = g_strdup_printf("1..%u", checks->len);
    guint n = 0;
    guint i;

    g_assert_cmpstr(lines[0], ==, "TAP version 13");
    g_assert_cmpstr(lines[1], ==, plan);
    for (i = 2; lines[i] && *lines[i]; i++) {
        g_autoptr(GMatchInfo) m = NULL;
        g_autofree char *num = NULL;
        g_autofree char *word = NULL;
        const DaxguestCheck *c;

        if (g_str_has_prefix(lines[i], "# "))
            continue;
        g_assert_true(g_regex_match(re, lines[i], 0, &m));
        num = g_match_info_fetch(m, 2);
        word = g_match_info_fetch(m, 1);
        g_assert_cmpuint(g_ascii_strtoull(num, NULL, 10), ==, ++n);
        c = g_ptr_array_index((GPtrArray *)checks, n - 1);
        g_assert_cmpint(STREQ(word, "not ok"), ==,
                        c->result == DAXGUEST_CHECK_FAIL);
    }
    g_assert_cmpuint(n, ==, checks->len);
}

static void
test_scenario(gconstpointer data)
{
    guint idx = GPOINTER_TO_UINT(data);
    g_autoptr(DaxguestFacts) facts = facts_base();
    g_autoptr(GPtrArray) checks = NULL;
    g_autoptr(JsonNode) json = NULL;
    g_autofree char *text = NULL;
    g_autofree char *tap = NULL;
    g_autofree char *json_text = NULL;
    g_autofree char *base = g_strdup_printf("checks/%s", scenarios[idx].name);
    g_autofree char *p_text = g_strconcat(base, ".txt", NULL);
    g_autofree char *p_tap = g_strconcat(base, ".tap", NULL);
    g_autofree char *p_json = g_strconcat(base, ".json", NULL);
    guint i;

    scenarios[idx].func(facts);
    checks = daxguest_checks_run(facts);
    for (i = 0; i < checks->len; i++) {
        const DaxguestCheck *c = g_ptr_array_index(checks, i);

        /* every WARN and FAIL carries a hint */
        g_assert_true(c->result == DAXGUEST_CHECK_PASS || c->hint);
    }
    g_assert_cmpint(daxguest_checks_failed(checks), ==, scenarios[idx].fails);
    text = daxguest_checks_format_text(checks);
    tap = daxguest_checks_format_tap(checks);
    json = daxguest_checks_to_json(checks);
    json_text = daxfile_json_to_string(json);
    assert_valid_tap(tap, checks);
    daxfile_test_golden(p_text, text);
    daxfile_test_golden(p_tap, tap);
    daxfile_test_golden(p_json, json_text);
}

static void
test_trace_parse(void)
{
    const char *trace =
        "# tracer: nop\n"
        "#\n"
        " daxfile-guest-215     [001] .....    41.561347: dax_pmd_fault_done: dev 259:0 ino 0xc shared WRITE|ALLOW_RETRY|KILLABLE|USER address 0x7f2e3f600000 vm_start 0x7f2e3f600000 vm_end 0x7f2e3f800000 pgoff 0x0 max_pgoff 0x3ff NOPAGE\n"
        "      other-task-99    [000] .....    41.561400: dax_pmd_fault_done: dev 259:0 ino 0xd shared WRITE address 0x7f0 vm_start 0x7f0 vm_end 0x7f2 pgoff 0x0 max_pgoff 0x3ff FALLBACK\n"
        " daxfile-guest-215     [001] .....    41.561500: dax_pmd_fault_done: dev 259:0 ino 0xe shared WRITE address 0x7f0 vm_start 0x7f0 vm_end 0x7f2 pgoff 0x0 max_pgoff 0x3ff FALLBACK\n"
        " daxfile-guest-215     [001] .....    41.561600: dax_pmd_insert_mapping: dev 259:0 ino 0xe\n";
    guint pmd, fallback;

    daxguest_trace_count_pmd(trace, 215, &pmd, &fallback);
    g_assert_cmpuint(pmd, ==, 1);
    g_assert_cmpuint(fallback, ==, 1);
    daxguest_trace_count_pmd(trace, 99, &pmd, &fallback);
    g_assert_cmpuint(pmd, ==, 0);
    g_assert_cmpuint(fallback, ==, 1);
    daxguest_trace_count_pmd("", 1, &pmd, &fallback);
    g_assert_cmpuint(pmd + fallback, ==, 0);
}

int
main(int argc, char **argv)
{
    guint i;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < G_N_ELEMENTS(scenarios); i++) {
        g_autofree char *name =
            g_strdup_printf("/checks/%s", scenarios[i].name);

        g_test_add_data_func(name, GUINT_TO_POINTER(i), test_scenario);
    }
    g_test_add_func("/checks/trace-parse", test_trace_parse);
    return g_test_run();
}

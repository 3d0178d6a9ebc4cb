/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Judging the pmem inventory (pure): the NVDIMM presence chain (NFIT, bus,
 * DIMMs, regions), each region's persistence domain and, for a region of
 * a CXL pmem region, that CXL region
 */
#include "daxfile-size.h"
#include "daxfile-util.h"
#include "daxguest-checks-priv.h"

#define HINT_NO_NVDIMM                                                         \
    "give the guest an NVDIMM: QEMU '-machine nvdimm=on' with "                \
    "'-object memory-backend-file,share=on,...' and '-device nvdimm,...', "    \
    "or libvirt <memory model='nvdimm'> (see 'daxfile domain-xml')"

DaxguestCheck *
daxguest_check_add(GPtrArray *out, const char *id, const char *subject,
                   char *title)
{
    DaxguestCheck *c = g_new0(DaxguestCheck, 1);

    c->check = g_strdup(id);
    c->subject = g_strdup(subject);
    c->title = title;
    g_ptr_array_add(out, c);
    return c;
}

/* Takes @detail and @hint. */
void
daxguest_check_set(DaxguestCheck *c, DaxguestCheckResult result, char *detail,
                   char *hint)
{
    c->result = result;
    c->detail = detail;
    c->hint = hint;
    g_assert(result == DAXGUEST_CHECK_PASS || hint);
}

char *
daxguest_check_join(GPtrArray *names)
{
    g_autoptr(GString) s = g_string_new(NULL);
    guint i;

    for (i = 0; i < names->len; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "",
                               (const char *)g_ptr_array_index(names, i));
    return g_string_free(g_steal_pointer(&s), FALSE);
}

static gboolean
bus_is_cxl(const DaxfilePmemBus *b)
{
    return g_strcmp0(b->provider, DAXFILE_PMEM_CXL_PROVIDER) == 0;
}

/* TRUE when there are buses and each is CXL's or virtio-pmem's, and one
 * is CXL's: pmem that no NFIT describes */
static gboolean
all_cxl(const DaxfilePmemInventory *inv)
{
    gboolean cxl = FALSE;
    guint i;

    for (i = 0; i < inv->buses->len; i++) {
        const DaxfilePmemBus *b = g_ptr_array_index(inv->buses, i);

        if (bus_is_cxl(b))
            cxl = TRUE;
        else if (g_strcmp0(b->provider, DAXFILE_PMEM_VIRTIO_PROVIDER) != 0)
            return FALSE;
    }
    return cxl;
}

/* The NVDIMM presence chain; FALSE stops the NVDIMM checks. */
static gboolean
check_nfit(GPtrArray *out, const DaxfilePmemInventory *inv)
{
    DaxguestCheck *c = daxguest_check_add(out, "nfit_table", NULL,
                                          g_strdup("for the ACPI NFIT table"));

    if (inv->nfit_table) {
        daxguest_check_set(c, DAXGUEST_CHECK_PASS, g_strdup("present"), NULL);
    } else if (daxfile_pmem_all_virtio(inv)) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_PASS,
            g_strdup("absent: the pmem is virtio-pmem, which needs none"),
            NULL);
    } else if (all_cxl(inv)) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_PASS,
            g_strdup(
                "absent: the pmem is a CXL memory device's, which the CEDT describes instead"),
            NULL);
    } else if (inv->buses->len > 0) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN,
            g_strdup("absent, but an NVDIMM bus exists"),
            g_strdup(
                "without an NFIT (e.g. memmap= pmem) there is no persistence information; use a QEMU NVDIMM"));
    } else {
        daxguest_check_set(c, DAXGUEST_CHECK_FAIL,
                           g_strdup("absent: this machine has no NVDIMM"),
                           g_strdup(HINT_NO_NVDIMM));
        return FALSE;
    }
    return TRUE;
}

static gboolean
check_bus(GPtrArray *out, const DaxfilePmemInventory *inv)
{
    DaxguestCheck *c = daxguest_check_add(out, "nvdimm_bus", NULL,
                                          g_strdup("for an NVDIMM bus"));
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    guint i;

    if (inv->buses->len == 0) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL, g_strdup("none"),
            g_strdup(
                "load the NVDIMM drivers: 'modprobe nfit nd_pmem dax_pmem device_dax'"));
        return FALSE;
    }
    for (i = 0; i < inv->buses->len; i++) {
        const DaxfilePmemBus *b = g_ptr_array_index(inv->buses, i);

        g_ptr_array_add(names, g_strdup_printf("%s: %s", b->name, b->provider));
    }
    daxguest_check_set(c, DAXGUEST_CHECK_PASS, daxguest_check_join(names),
                       NULL);
    return TRUE;
}

static gboolean
check_dimms(GPtrArray *out, const DaxfilePmemInventory *inv)
{
    DaxguestCheck *c = daxguest_check_add(out, "nvdimm_dimms", NULL,
                                          g_strdup("for NVDIMM devices"));

    if (inv->dimms->len == 0 && inv->regions->len &&
        daxfile_pmem_all_virtio(inv)) {
        daxguest_check_set(c, DAXGUEST_CHECK_PASS,
                           g_strdup("none: virtio-pmem regions have no DIMMs"),
                           NULL);
        return TRUE;
    }
    if (inv->dimms->len == 0) {
        /* e820 (memmap=) pmem has regions but no DIMMs: not fatal */
        DaxguestCheckResult res = DAXGUEST_CHECK_FAIL;

        if (inv->regions->len)
            res = DAXGUEST_CHECK_WARN;
        daxguest_check_set(
            c, res, g_strdup("none on the bus"),
            g_strdup(
                "give the guest an NVDIMM device ('-device nvdimm,memdev=...' or <memory model='nvdimm'>)"));
        return inv->regions->len > 0;
    }
    daxguest_check_set(c, DAXGUEST_CHECK_PASS, daxguest_check_join(inv->dimms),
                       NULL);
    return TRUE;
}

gboolean
daxguest_checks_region_is_pmem(const DaxfilePmemRegion *r)
{
    return r->type && STREQ(r->type, "pmem");
}

static gboolean
check_regions(GPtrArray *out, const DaxfilePmemInventory *inv)
{
    DaxguestCheck *c = daxguest_check_add(
        out, "pmem_region", NULL, g_strdup("for a persistent memory region"));
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    guint i;

    for (i = 0; i < inv->regions->len; i++) {
        const DaxfilePmemRegion *r = g_ptr_array_index(inv->regions, i);
        g_autofree char *size = daxfile_size_format(r->size);

        if (daxguest_checks_region_is_pmem(r))
            g_ptr_array_add(names, g_strdup_printf("%s: %s", r->name, size));
    }
    if (names->len == 0) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL, g_strdup("none"),
            g_strdup(
                "the NVDIMM exposes no pmem region; check its size and label-size against the backing file"));
        return FALSE;
    }
    daxguest_check_set(c, DAXGUEST_CHECK_PASS, daxguest_check_join(names),
                       NULL);
    return TRUE;
}

static void
check_persistence(GPtrArray *out, const DaxfilePmemRegion *r, gboolean cxl)
{
    DaxguestCheck *c =
        daxguest_check_add(out, "persistence_domain", r->name,
                           g_strdup_printf("%s persistence domain", r->name));

    if (r->virtio) {
        /* the kernel marks the region asynchronous: no MAP_SYNC */
        daxguest_check_set(
            c, DAXGUEST_CHECK_PASS,
            g_strdup(
                "virtio-pmem: data is durable once flushed with fsync/msync (the device's flush request; the host syncs its file); MAP_SYNC is not offered"),
            NULL);
        return;
    }
    switch (r->persistence) {
    case DAXFILE_PMEM_PERSIST_CPU_CACHE:
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN, g_strdup("cpu_cache (eADR)"),
            g_strdup(
                "libpmem and applications skip cache flushes: only safe if the host really has eADR and the backing file is on real pmem; otherwise drop nvdimm-persistence=cpu"));
        break;
    case DAXFILE_PMEM_PERSIST_MEM_CTRL:
        if (cxl)
            daxguest_check_set(
                c, DAXGUEST_CHECK_PASS,
                g_strdup(
                    "memory_controller (a CXL region): applications flush CPU caches"),
                NULL);
        else
            daxguest_check_set(
                c, DAXGUEST_CHECK_PASS,
                g_strdup(
                    "memory_controller (ADR): applications flush CPU caches"),
                NULL);
        break;
    case DAXFILE_PMEM_PERSIST_NONE:
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN, g_strdup("none"),
            g_strdup(
                "the platform claims no persistence for this region; do not rely on it across power loss"));
        break;
    case DAXFILE_PMEM_PERSIST_UNKNOWN:
    case DAXFILE_PMEM_PERSIST_LAST:
        daxguest_check_set(
            c, DAXGUEST_CHECK_PASS,
            g_strdup("not reported: applications flush CPU caches"), NULL);
        break;
    }
}

/* A region on the CXL bus is a CXL pmem region's: which one, under which
 * root decoder, over which memdevs */
static void
check_cxl_region(GPtrArray *out, const DaxfilePmemInventory *inv,
                 const DaxfilePmemRegion *r)
{
    const DaxfilePmemBus *b = daxfile_pmem_find_bus(inv, r->bus);
    const DaxfilePmemCxlRegion *cxl = NULL;
    g_autofree char *memdevs = NULL;
    DaxguestCheck *c;

    if (!b || !bus_is_cxl(b))
        return;
    c = daxguest_check_add(out, "cxl_region", r->name,
                           g_strdup_printf("%s CXL region", r->name));
    if (r->cxl_region)
        cxl = daxfile_pmem_find_cxl_region(inv, r->cxl_region);
    if (!cxl) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN,
            g_strdup(
                "on the CXL bus, but libcxl shows no CXL region at its address"),
            g_strdup(
                "compare 'cxl list -R' with 'ndctl list -R': the region's decoders may have been reset"));
        return;
    }
    memdevs = daxguest_check_join(cxl->memdevs);
    daxguest_check_set(c, DAXGUEST_CHECK_PASS,
                       g_strdup_printf("%s under root decoder %s, memdevs %s",
                                       cxl->name, cxl->decoder, memdevs),
                       NULL);
}

gboolean
daxguest_checks_pmem_presence(GPtrArray *out, const DaxfilePmemInventory *inv)
{
    return check_nfit(out, inv) && check_bus(out, inv) &&
           check_dimms(out, inv) && check_regions(out, inv);
}

void
daxguest_checks_pmem_region(GPtrArray *out, const DaxfilePmemInventory *inv,
                            const DaxfilePmemRegion *r)
{
    const DaxfilePmemBus *b = daxfile_pmem_find_bus(inv, r->bus);

    check_persistence(out, r, b && bus_is_cxl(b));
    check_cxl_region(out, inv, r);
}

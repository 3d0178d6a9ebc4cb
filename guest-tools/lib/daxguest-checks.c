/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Judging the facts of a guest into checks (pure: no system access)
 */
#include <string.h>

#include "daxfile-align.h"
#include "daxfile-size.h"
#include "daxfile-util.h"
#include "daxguest-checks-priv.h"

#define SZ_2M DAXFILE_SZ_2M

#define HINT_MKFS                                                              \
    "make and mount a DAX filesystem: 'mkfs.ext4 -b 4096 -E "                  \
    "stride=512,stripe_width=512 %s' (or 'mkfs.xfs -m reflink=0 -d "           \
    "su=2m,sw=1 %s'), then 'mount -o dax %s MOUNTPOINT'"

static void
check_free(gpointer p)
{
    DaxguestCheck *c = p;

    g_free(c->check);
    g_free(c->subject);
    g_free(c->title);
    g_free(c->detail);
    g_free(c->hint);
    g_free(c);
}

static gboolean
ns_is_dax(const DaxfilePmemNamespace *ns)
{
    return STREQ(ns->mode, "fsdax") || STREQ(ns->mode, "devdax");
}

/* FALSE when the namespace cannot do DAX (its other checks are skipped) */
static gboolean
check_ns_mode(GPtrArray *out, const DaxfilePmemNamespace *ns)
{
    DaxguestCheck *c = daxguest_check_add(out, "namespace_mode", ns->name,
                                          g_strdup_printf("%s mode", ns->name));
    g_autofree char *size = daxfile_size_format(ns->size);

    if (!ns->enabled) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL, g_strdup_printf("%s, disabled", ns->mode),
            g_strdup_printf("run 'ndctl enable-namespace %s'", ns->name));
        return FALSE;
    }
    if (ns_is_dax(ns)) {
        daxguest_check_set(c, DAXGUEST_CHECK_PASS,
                           g_strdup_printf("%s, %s", ns->mode, size), NULL);
        return TRUE;
    }
    daxguest_check_set(
        c, DAXGUEST_CHECK_FAIL, g_strdup_printf("%s: no DAX", ns->mode),
        g_strdup_printf(
            "run 'ndctl create-namespace -f -e %s -m fsdax' (or -m devdax); this erases the namespace",
            ns->name));
    return FALSE;
}

static void
check_ns_align(GPtrArray *out, const DaxfilePmemNamespace *ns)
{
    DaxguestCheck *c =
        daxguest_check_add(out, "namespace_align", ns->name,
                           g_strdup_printf("%s alignment", ns->name));
    g_autofree char *align = daxfile_size_format(ns->align);
    gboolean start_ok = ns->data_resource == DAXFILE_PMEM_UNKNOWN ||
                        DAXFILE_IS_ALIGNED(ns->data_resource, SZ_2M);

    if (ns->align == 0 && !ns->claim) {
        /* no pfn device: the region maps it (virtio-pmem) and the page
         * size follows the data's physical alignment */
        daxguest_check_set(
            c, start_ok ? DAXGUEST_CHECK_PASS : DAXGUEST_CHECK_WARN,
            g_strdup_printf(
                "mapped by its region, data at 0x%" G_GINT64_MODIFIER "x%s",
                ns->data_resource,
                start_ok ? ", 2 MiB aligned" : ": no 2 MiB faults"),
            start_ok
                ? NULL
                : g_strdup(
                      "align the device in the host: QEMU memory-backend-file align=2M"));
    } else if (ns->align < SZ_2M) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN,
            g_strdup_printf("%s pages: no 2 MiB faults", align),
            g_strdup_printf(
                "run 'ndctl create-namespace -f -e %s -m %s --align 2M'; this erases the namespace",
                ns->name, ns->mode));
    } else if (!start_ok) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN,
            g_strdup_printf("%s pages, but data starts at 0x%" G_GINT64_MODIFIER
                            "x",
                            align, ns->data_resource),
            g_strdup(
                "align the NVDIMM in the host: QEMU memory-backend-file align=2M"));
    } else {
        daxguest_check_set(c, DAXGUEST_CHECK_PASS,
                           g_strdup_printf("%s pages", align), NULL);
    }
}

static const DaxguestPmemFacts *
find_pmem(const DaxguestFacts *facts, const char *namespace)
{
    guint i;

    for (i = 0; i < facts->pmems->len; i++) {
        const DaxguestPmemFacts *p = g_ptr_array_index(facts->pmems, i);

        if (STREQ(p->namespace, namespace))
            return p;
    }
    return NULL;
}

static gboolean
check_pmem_dax(GPtrArray *out, const DaxfilePmemNamespace *ns,
               const DaxguestPmemFacts *p)
{
    g_autofree char *dev = NULL;
    DaxguestCheck *c;

    if (ns->blockdev)
        dev = g_strdup_printf("/dev/%s", ns->blockdev);
    else
        dev = g_strdup_printf("the block device of %s", ns->name);
    c = daxguest_check_add(out, "pmem_dax", ns->blockdev ? dev : ns->name,
                           g_strdup_printf("if %s supports DAX", dev));

    if (!p || !p->present) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL,
            g_strdup_printf("%s has no block device node", ns->name),
            g_strdup(
                "load the pmem driver ('modprobe nd_pmem') and make sure devtmpfs or udev is running"));
        return FALSE;
    }
    if (p->queue_dax != DAXFILE_TRI_YES) {
        const char *value = p->queue_dax == DAXFILE_TRI_NO ? "0" : "unknown";

        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL,
            g_strdup_printf("%s/queue/dax is %s", dev, value),
            g_strdup(
                "use a kernel with CONFIG_FS_DAX and an fsdax namespace ('ndctl create-namespace -f -e NAMESPACE -m fsdax')"));
        return FALSE;
    }
    daxguest_check_set(c, DAXGUEST_CHECK_PASS, g_strdup("queue/dax=1"), NULL);
    return TRUE;
}

static gboolean
check_mount(GPtrArray *out, const DaxguestPmemFacts *p)
{
    DaxguestCheck *c = daxguest_check_add(
        out, "dax_mount", p->device,
        g_strdup_printf("for a filesystem on %s", p->device));
    g_autofree char *mode = NULL;

    if (!p->mount_point) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL, g_strdup("not mounted"),
            g_strdup_printf(HINT_MKFS, p->device, p->device, p->device));
        return FALSE;
    }
    if (p->probe.dax_mode)
        mode = g_strdup_printf("dax=%s", p->probe.dax_mode);
    else
        mode = g_strdup("no dax option");
    daxguest_check_set(
        c, DAXGUEST_CHECK_PASS,
        g_strdup_printf("%s on %s, %s", p->fs_type, p->mount_point, mode),
        NULL);
    return TRUE;
}

static char *
hint_dax_mount(const DaxguestPmemFacts *p)
{
    if (p->probe.dax_mode && STREQ(p->probe.dax_mode, "inode"))
        return g_strdup_printf(
            "remount with '-o dax=always', or mark the directory: 'xfs_io -c \"chattr +x\" %s' (new files inherit it)",
            p->mount_point);
    return g_strdup_printf("mount %s with '-o dax' (dax=always)", p->device);
}

/* FALSE when DAX is not in effect (MAP_SYNC and PMD are then moot) */
static gboolean
check_statx(GPtrArray *out, const DaxguestPmemFacts *p)
{
    const DaxguestFileProbe *pr = &p->probe;
    DaxguestCheck *c = daxguest_check_add(
        out, "statx_dax", p->mount_point,
        g_strdup_printf("if DAX is in effect in %s", p->mount_point));

    if (pr->error) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN,
            g_strdup_printf("not tested: %s", pr->error),
            g_strdup("run as root on a writable mount with 4 MiB free"));
        return FALSE;
    }
    switch (pr->dax) {
    case DAXFILE_TRI_YES:
        daxguest_check_set(
            c, DAXGUEST_CHECK_PASS,
            g_strdup("statx reports STATX_ATTR_DAX on a new file"), NULL);
        return TRUE;
    case DAXFILE_TRI_NO:
        daxguest_check_set(c, DAXGUEST_CHECK_FAIL,
                           g_strdup("statx: a new file is not DAX"),
                           hint_dax_mount(p));
        return FALSE;
    case DAXFILE_TRI_UNKNOWN:
        break;
    }
    daxguest_check_set(
        c, DAXGUEST_CHECK_WARN,
        g_strdup("statx has no DAX attribute (kernel older than 5.8)"),
        g_strdup(
            "rely on the MAP_SYNC check below, or use a newer guest kernel"));
    return TRUE;
}

static void
check_map_sync(GPtrArray *out, const DaxguestPmemFacts *p,
               const DaxfilePmemRegion *r)
{
    const DaxguestFileProbe *pr = &p->probe;
    DaxguestCheck *c = daxguest_check_add(
        out, "map_sync", p->mount_point,
        g_strdup_printf("if MAP_SYNC works in %s", p->mount_point));

    const char *why = pr->map_sync_error ? pr->map_sync_error : "unknown";

    if (pr->map_sync) {
        daxguest_check_set(c, DAXGUEST_CHECK_PASS,
                           g_strdup("MAP_SHARED_VALIDATE|MAP_SYNC accepted"),
                           NULL);
        return;
    }
    if (r && r->virtio) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_PASS,
            g_strdup_printf(
                "MAP_SHARED_VALIDATE|MAP_SYNC refused (%s), as on any virtio-pmem region: applications make data durable with fsync/msync",
                why),
            NULL);
        return;
    }
    daxguest_check_set(
        c, DAXGUEST_CHECK_FAIL,
        g_strdup_printf("MAP_SHARED_VALIDATE|MAP_SYNC refused: %s", why),
        hint_dax_mount(p));
}

static char *
pmd_detail(const DaxguestPmdProbe *pmd)
{
    const char *how = "";

    if (pmd->traced == DAXFILE_TRI_YES)
        how = "; traced as a PMD fault";
    else if (pmd->traced == DAXFILE_TRI_NO)
        how = "; traced as FALLBACK";
    return g_strdup_printf("%" G_GUINT64_FORMAT
                           " fault(s) for the first access, %" G_GUINT64_FORMAT
                           " for the other 511 pages%s",
                           pmd->first_faults, pmd->extra_faults, how);
}

static gboolean
pmd_ok(const DaxguestPmdProbe *pmd)
{
    return pmd->ran && pmd->extra_faults == 0 && pmd->traced != DAXFILE_TRI_NO;
}

static void
check_pmd(GPtrArray *out, const DaxguestPmemFacts *p,
          const DaxfilePmemNamespace *ns)
{
    const DaxguestFileProbe *pr = &p->probe;
    DaxguestCheck *c = daxguest_check_add(
        out, "pmd_fault", p->mount_point,
        g_strdup_printf("if 2 MiB faults are PMD faults in %s",
                        p->mount_point));
    char *hint;

    if (!pr->pmd.ran) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN,
            g_strdup_printf("not tested: %s", pr->pmd.error),
            g_strdup("run as root with 4 MiB free in the mount"));
        return;
    }
    if (pmd_ok(&pr->pmd)) {
        daxguest_check_set(c, DAXGUEST_CHECK_PASS, pmd_detail(&pr->pmd), NULL);
        return;
    }
    if (ns->align < SZ_2M)
        hint = g_strdup_printf(
            "%s uses 4 KiB pages; recreate it with '--align 2M'", ns->name);
    else if (!pr->extent_aligned && pr->geometry_fix)
        hint = g_strdup_printf(
            "the filesystem does not allocate 2 MiB-aligned extents (a new file starts at device offset 0x%" G_GINT64_MODIFIER
            "x); recreate it with '%s'",
            pr->extent_physical, pr->geometry_fix);
    else if (!pr->extent_aligned)
        hint = g_strdup(
            "the file's extents are not 2 MiB-aligned on the device; make files with 'daxfile create'");
    else
        hint = g_strdup(
            "the kernel fell back to 4 KiB pages; check CONFIG_FS_DAX_PMD and the fs_dax tracepoints");
    daxguest_check_set(c, DAXGUEST_CHECK_WARN, pmd_detail(&pr->pmd), hint);
}

static void
check_fsdax(GPtrArray *out, const DaxguestFacts *facts,
            const DaxfilePmemNamespace *ns)
{
    const DaxguestPmemFacts *p = find_pmem(facts, ns->name);

    gboolean dax;

    if (!check_pmem_dax(out, ns, p) || !check_mount(out, p))
        return;
    dax = check_statx(out, p);
    if (p->probe.error)
        return;
    check_map_sync(out, p, daxfile_pmem_find_region(facts->inv, ns->region));
    if (dax)
        check_pmd(out, p, ns);
}

static const DaxguestDaxFacts *
find_dax(const DaxguestFacts *facts, const char *name)
{
    guint i;

    for (i = 0; i < facts->daxes->len; i++) {
        const DaxguestDaxFacts *d = g_ptr_array_index(facts->daxes, i);

        if (STREQ(d->name, name))
            return d;
    }
    return NULL;
}

static void
check_devdax_ns(GPtrArray *out, const DaxfilePmemInventory *inv,
                const DaxfilePmemNamespace *ns)
{
    DaxguestCheck *c;
    guint i;

    for (i = 0; i < inv->daxdevs->len; i++) {
        const DaxfilePmemDaxDev *d = g_ptr_array_index(inv->daxdevs, i);

        if (d->region && STREQ(d->region, ns->region))
            return;
    }
    c = daxguest_check_add(
        out, "devdax_devices", ns->name,
        g_strdup_printf("for device-dax devices of %s", ns->name));
    daxguest_check_set(
        c, DAXGUEST_CHECK_FAIL, g_strdup("none"),
        g_strdup(
            "load the device-dax driver ('modprobe dax_pmem device_dax')"));
}

/* FALSE when the device cannot be mapped at all */
static gboolean
check_devdax_device(GPtrArray *out, const DaxfilePmemDaxDev *d,
                    const DaxguestDaxFacts *f)
{
    g_autofree char *path = g_strdup_printf("/dev/%s", d->name);
    g_autofree char *size = daxfile_size_format(d->size);
    g_autofree char *align = daxfile_size_format(d->align);
    DaxguestCheck *c = daxguest_check_add(
        out, "devdax_device", path, g_strdup_printf("device-dax %s", path));

    if (!d->enabled) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL, g_strdup("disabled"),
            g_strdup_printf("run 'daxctl enable-device %s'", d->name));
        return FALSE;
    }
    if (!f || !f->present) {
        daxguest_check_set(c, DAXGUEST_CHECK_FAIL, g_strdup("no device node"),
                           g_strdup("make sure devtmpfs or udev is running"));
        return FALSE;
    }
    if (d->align && d->align < SZ_2M) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN,
            g_strdup_printf("%s, %s pages: no 2 MiB faults", size, align),
            g_strdup_printf(
                "recreate the namespace with '--align 2M' (or 'daxctl reconfigure-device --align 2M %s')",
                d->name));
        return TRUE;
    }
    daxguest_check_set(
        c, DAXGUEST_CHECK_PASS,
        g_strdup_printf("%s, %s pages", size, d->align ? align : "unknown"),
        NULL);
    return TRUE;
}

static void
check_devdax_map(GPtrArray *out, const DaxfilePmemDaxDev *d,
                 const DaxguestDaxFacts *f)
{
    g_autofree char *path = g_strdup_printf("/dev/%s", d->name);
    DaxguestCheck *c = daxguest_check_add(
        out, "devdax_map", path,
        g_strdup_printf("if %s maps 2 MiB with one fault", path));
    g_autofree char *faults = NULL;
    const char *sync;

    if (!f->probe.ran) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL,
            g_strdup_printf("cannot map: %s", f->probe.error),
            g_strdup(
                "map device-dax with MAP_SHARED at 2 MiB-aligned addresses and lengths; run as root"));
        return;
    }
    faults = pmd_detail(&f->probe);
    sync = f->probe.map_sync ? "MAP_SYNC accepted" : "MAP_SYNC refused";
    if (!pmd_ok(&f->probe)) {
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN, g_strdup_printf("%s, %s", sync, faults),
            g_strdup("recreate the namespace with '--align 2M'"));
        return;
    }
    daxguest_check_set(c, DAXGUEST_CHECK_PASS,
                       g_strdup_printf("%s, %s", sync, faults), NULL);
}

static void
check_daxdevs(GPtrArray *out, const DaxguestFacts *facts)
{
    guint i;

    for (i = 0; i < facts->inv->daxdevs->len; i++) {
        const DaxfilePmemDaxDev *d = g_ptr_array_index(facts->inv->daxdevs, i);
        const DaxguestDaxFacts *f = find_dax(facts, d->name);

        if (check_devdax_device(out, d, f))
            check_devdax_map(out, d, f);
    }
}

void
daxguest_facts_flush_choice(const DaxguestFacts *facts,
                            DaxguestFlushChoice *ret_choice)
{
    DaxguestFlushEnv env = {facts->pmem_no_clwb, facts->pmem_no_clflushopt,
                            facts->pmem_no_flush};

    daxguest_flush_choose(&facts->cpu, &env,
                          facts->inv && daxfile_pmem_auto_flush(facts->inv),
                          ret_choice);
}

static void
check_flush(GPtrArray *out, const DaxguestFacts *facts)
{
    const DaxguestCpuFeatures *cpu = &facts->cpu;
    DaxguestCheck *c =
        daxguest_check_add(out, "flush_instructions", NULL,
                           g_strdup("for cache flush instructions"));
    g_autoptr(GPtrArray) have = g_ptr_array_new();
    DaxguestFlushChoice choice;
    gboolean eadr = facts->inv && daxfile_pmem_auto_flush(facts->inv);

    if (cpu->clwb)
        g_ptr_array_add(have, (char *)"clwb");
    if (cpu->clflushopt)
        g_ptr_array_add(have, (char *)"clflushopt");
    if (cpu->clflush)
        g_ptr_array_add(have, (char *)"clflush");
    if (have->len == 0)
        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL, g_strdup("none in CPUID"),
            g_strdup(
                "give the guest a CPU model with clwb or clflushopt (QEMU '-cpu host' or '-cpu max')"));
    else
        daxguest_check_set(c, DAXGUEST_CHECK_PASS, daxguest_check_join(have),
                           NULL);

    daxguest_facts_flush_choice(facts, &choice);
    c = daxguest_check_add(out, "flush_choice", NULL,
                           g_strdup("which flush libpmem will use"));
    if (!choice.flush && !eadr)
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN, daxguest_flush_choice_describe(&choice),
            g_strdup(
                "unset PMEM_NO_FLUSH: without eADR, stores reach persistence only when flushed"));
    else if (choice.flush && choice.insn == DAXGUEST_FLUSH_CLFLUSH &&
             (cpu->clwb || cpu->clflushopt))
        daxguest_check_set(
            c, DAXGUEST_CHECK_WARN, daxguest_flush_choice_describe(&choice),
            g_strdup(
                "unset PMEM_NO_CLWB and PMEM_NO_CLFLUSHOPT: clflush is serializing and slow"));
    else
        daxguest_check_set(c, DAXGUEST_CHECK_PASS,
                           daxguest_flush_choice_describe(&choice), NULL);
}

static void
check_namespaces(GPtrArray *out, const DaxguestFacts *facts,
                 const DaxfilePmemRegion *r)
{
    guint i;

    if (r->namespaces->len == 0) {
        DaxguestCheck *c = daxguest_check_add(
            out, "region_namespaces", r->name,
            g_strdup_printf("for a namespace in %s", r->name));

        daxguest_check_set(
            c, DAXGUEST_CHECK_FAIL, g_strdup("none"),
            g_strdup_printf("run 'ndctl create-namespace -r %s -m fsdax'",
                            r->name));
        return;
    }
    for (i = 0; i < r->namespaces->len; i++) {
        const DaxfilePmemNamespace *ns = g_ptr_array_index(r->namespaces, i);

        if (!check_ns_mode(out, ns))
            continue;
        check_ns_align(out, ns);
        if (STREQ(ns->mode, "fsdax"))
            check_fsdax(out, facts, ns);
        else
            check_devdax_ns(out, facts->inv, ns);
    }
}

static void
check_nvdimm(GPtrArray *out, const DaxguestFacts *facts)
{
    const DaxfilePmemInventory *inv = facts->inv;
    guint i;

    if (!daxguest_checks_pmem_presence(out, inv))
        return;
    for (i = 0; i < inv->regions->len; i++) {
        const DaxfilePmemRegion *r = g_ptr_array_index(inv->regions, i);

        if (!daxguest_checks_region_is_pmem(r))
            continue;
        daxguest_checks_pmem_region(out, inv, r);
        check_namespaces(out, facts, r);
    }
    check_daxdevs(out, facts);
}

GPtrArray *
daxguest_checks_run(const DaxguestFacts *facts)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(check_free);

    check_nvdimm(out, facts);
    check_flush(out, facts);
    return out;
}

gboolean
daxguest_checks_failed(const GPtrArray *checks)
{
    guint i;

    for (i = 0; i < checks->len; i++) {
        const DaxguestCheck *c = g_ptr_array_index((GPtrArray *)checks, i);

        if (c->result == DAXGUEST_CHECK_FAIL)
            return TRUE;
    }
    return FALSE;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Gathering the facts `daxfile-guest check` judges: the NVDIMM inventory,
 * the fsdax block devices and their mounts (probed through a temporary
 * file), the device-dax devices (probed read-only), the CPU
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-fs.h"
#include "daxfile-sysfs.h"
#include "daxfile-util.h"
#include "daxguest-checks.h"

static void
pmem_facts_free(gpointer p)
{
    DaxguestPmemFacts *f = p;

    g_free(f->device);
    g_free(f->namespace);
    g_free(f->mount_point);
    g_free(f->fs_type);
    daxguest_file_probe_clear(&f->probe);
    g_free(f);
}

static void
dax_facts_free(gpointer p)
{
    DaxguestDaxFacts *f = p;

    g_free(f->name);
    daxguest_pmd_probe_clear(&f->probe);
    g_free(f);
}

DaxguestFacts *
daxguest_facts_new(DaxfilePmemInventory *inv)
{
    DaxguestFacts *facts = g_new0(DaxguestFacts, 1);

    facts->inv = inv;
    facts->pmems = g_ptr_array_new_with_free_func(pmem_facts_free);
    facts->daxes = g_ptr_array_new_with_free_func(dax_facts_free);
    return facts;
}

void
daxguest_facts_free(DaxguestFacts *facts)
{
    if (!facts)
        return;
    daxfile_pmem_inventory_free(facts->inv);
    g_ptr_array_unref(facts->pmems);
    g_ptr_array_unref(facts->daxes);
    g_free(facts->pmem_no_clwb);
    g_free(facts->pmem_no_clflushopt);
    g_free(facts->pmem_no_flush);
    g_free(facts);
}

DaxguestPmemFacts *
daxguest_pmem_facts_new(const char *device, const char *namespace)
{
    DaxguestPmemFacts *f = g_new0(DaxguestPmemFacts, 1);

    f->device = g_strdup(device);
    f->namespace = g_strdup(namespace);
    f->queue_dax = DAXFILE_TRI_UNKNOWN;
    f->probe.extent_physical = G_MAXUINT64;
    return f;
}

DaxguestDaxFacts *
daxguest_dax_facts_new(const char *name)
{
    DaxguestDaxFacts *f = g_new0(DaxguestDaxFacts, 1);

    f->name = g_strdup(name);
    return f;
}

static DaxfileTristate
read_queue_dax(const char *blockdev)
{
    g_autofree char *rel = g_strdup_printf("block/%s/queue/dax", blockdev);
    g_autofree char *value = daxfile_sysfs_read(rel, NULL);

    if (!value)
        return DAXFILE_TRI_UNKNOWN;
    return STREQ(value, "1") ? DAXFILE_TRI_YES : DAXFILE_TRI_NO;
}

static gboolean
parse_devno(const char *text, guint *ret_major, guint *ret_minor)
{
    g_auto(GStrv) parts = g_strsplit(text, ":", 2);
    guint64 maj, min;

    if (g_strv_length(parts) != 2 ||
        !g_ascii_string_to_unsigned(parts[0], 10, 0, G_MAXUINT32, &maj, NULL) ||
        !g_ascii_string_to_unsigned(parts[1], 10, 0, G_MAXUINT32, &min, NULL))
        return FALSE;
    *ret_major = (guint)maj;
    *ret_minor = (guint)min;
    return TRUE;
}

/* Find where @blockdev is mounted; probe a temporary file there. */
static void
gather_mount(DaxguestPmemFacts *f, const char *blockdev, const char *mountinfo)
{
    g_autofree char *rel = g_strdup_printf("block/%s/dev", blockdev);
    g_autofree char *devno = daxfile_sysfs_read(rel, NULL);
    g_auto(DaxfileMountEntry) entry = {0};
    g_auto(DaxfileFd) dirfd = -1;
    guint maj, min;

    if (!devno || !mountinfo || !parse_devno(devno, &maj, &min) ||
        !daxfile_mountinfo_lookup(mountinfo, maj, min, &entry))
        return;
    f->mount_point = g_strdup(entry.mount_point);
    f->fs_type = g_strdup(entry.fs_type);
    dirfd = open(f->mount_point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        f->probe.error = g_strdup_printf("Cannot open '%s': %s", f->mount_point,
                                         g_strerror(errno));
        return;
    }
    daxguest_probe_dir(dirfd, f->mount_point, &f->probe);
}

static void
gather_pmems(DaxguestFacts *facts)
{
    g_autofree char *mountinfo = NULL;
    guint i, j;

    if (!g_file_get_contents("/proc/self/mountinfo", &mountinfo, NULL, NULL))
        g_debug("Cannot read /proc/self/mountinfo");
    for (i = 0; i < facts->inv->regions->len; i++) {
        const DaxfilePmemRegion *r = g_ptr_array_index(facts->inv->regions, i);

        for (j = 0; j < r->namespaces->len; j++) {
            const DaxfilePmemNamespace *ns =
                g_ptr_array_index(r->namespaces, j);
            g_autofree char *dev = NULL;
            DaxguestPmemFacts *f;
            struct stat st;

            if (!STREQ(ns->mode, "fsdax") || !ns->blockdev)
                continue;
            dev = g_strdup_printf("/dev/%s", ns->blockdev);
            f = daxguest_pmem_facts_new(dev, ns->name);
            f->present = stat(dev, &st) == 0 && S_ISBLK(st.st_mode);
            f->queue_dax = read_queue_dax(ns->blockdev);
            if (f->present && f->queue_dax == DAXFILE_TRI_YES)
                gather_mount(f, ns->blockdev, mountinfo);
            g_ptr_array_add(facts->pmems, f);
        }
    }
}

static void
gather_daxes(DaxguestFacts *facts)
{
    guint i;

    for (i = 0; i < facts->inv->daxdevs->len; i++) {
        const DaxfilePmemDaxDev *d = g_ptr_array_index(facts->inv->daxdevs, i);
        DaxguestDaxFacts *f = daxguest_dax_facts_new(d->name);
        g_autofree char *path = g_strdup_printf("/dev/%s", d->name);
        struct stat st;

        f->present = stat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
                     (int)major(st.st_rdev) == d->major &&
                     (int)minor(st.st_rdev) == d->minor;
        if (f->present && d->enabled)
            daxguest_probe_devdax(path, d->align, d->size, &f->probe);
        g_ptr_array_add(facts->daxes, f);
    }
}

DaxguestFacts *
daxguest_facts_gather(GError **error)
{
    DaxfilePmemInventory *inv = daxfile_pmem_inventory_read(error);
    g_autoptr(DaxguestFacts) facts = NULL;

    if (!inv)
        return NULL;
    facts = daxguest_facts_new(inv);
    gather_pmems(facts);
    gather_daxes(facts);
    daxguest_cpu_features_detect(&facts->cpu);
    facts->pmem_no_clwb = g_strdup(g_getenv("PMEM_NO_CLWB"));
    facts->pmem_no_clflushopt = g_strdup(g_getenv("PMEM_NO_CLFLUSHOPT"));
    facts->pmem_no_flush = g_strdup(g_getenv("PMEM_NO_FLUSH"));
    return g_steal_pointer(&facts);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-print.c: the human text of a report (status), shared by the
 * commands that print one
 */
#include <stdio.h>
#include <sys/sysmacros.h>

#include "daxfile-escape.h"
#include "daxfile-host-json.h"
#include "cli-medium.h"
#include "daxfile-size.h"
#include "daxfile-static.h"
#include "daxfilectl.h"

void
cli_print_problems(const DaxfileReport *report)
{
    DaxfileReason last_fix = DAXFILE_REASON_NONE;
    guint i;

    for (i = 0; i < report->problems->len; i++) {
        const DaxfileRange *r =
            &g_array_index(report->problems, DaxfileRange, i);
        g_autofree char *len = daxfile_size_format(r->length);

        printf("  %s at 0x%" G_GINT64_MODIFIER "x, %s: %s\n",
               daxfile_reason_to_string(r->reason), r->offset, len,
               daxfile_reason_describe(r->reason));
    }
    for (i = 0; i < report->problems->len; i++) {
        DaxfileReason reason =
            g_array_index(report->problems, DaxfileRange, i).reason;
        g_autofree char *fix = daxfile_report_fix(report, reason);

        if (reason == last_fix || !*fix)
            continue;
        printf("  fix (%s): %s\n", daxfile_reason_to_string(reason), fix);
        last_fix = reason;
    }
}

static const char *
tristate_word(DaxfileTristate value)
{
    if (value == DAXFILE_TRI_UNKNOWN)
        return "unknown";
    return value == DAXFILE_TRI_YES ? "yes" : "no";
}

static void
print_geometry(const DaxfileReport *report)
{
    const DaxfileFsInfo *fs = report->fs;
    g_autofree char *align = daxfile_size_format(report->align);
    g_autofree char *stripe = daxfile_size_format(fs->stripe);

    if (fs->geometry_aligned == DAXFILE_TRI_YES)
        printf("geometry:     allocations are %s aligned%s%s\n", align,
               fs->stripe ? ", stripe unit " : "", fs->stripe ? stripe : "");
    else if (fs->geometry_aligned == DAXFILE_TRI_NO)
        printf("geometry:     cannot guarantee %s-aligned extents; fix: %s\n",
               align, fs->geometry_fix);
    else
        printf("geometry:     unknown for %s\n", fs->fs_type);
}

/* the running domain's QEMU, as status attested it */
static void
print_qemu(const DaxfileAttestation *a)
{
    g_autofree char *size = NULL;
    const char *sync;

    if (!a->mapped || !a->attested) {
        printf("qemu:         NOT ATTESTED: %s\n",
               a->problem ? a->problem : "?");
        return;
    }
    size = daxfile_size_format(a->map.end - a->map.start);
    if (a->map.sync)
        sync = "MAP_SYNC";
    else if (!a->dax)
        sync = "without MAP_SYNC (not DAX)";
    else
        sync = "without MAP_SYNC (virtio-pmem: durable at the guest's flush)";
    printf(
        "qemu:         pid %d maps %s of it, shared, %s, at 0x%" G_GINT64_MODIFIER
        "x\n",
        (int)a->pid, size, sync, a->map.start);
}

void
cli_print_static(const DaxfileStaticState *state)
{
    const DaxfileEntry *e = state->entry;

    if (!e) {
        printf("static:       no\n");
        return;
    }
    printf("static:       %s (%s, %s for '%s' since %s%s)\n",
           daxfile_static_state_enabled(state) ? "yes" : "no",
           daxfile_mechanism_to_string(e->mechanism),
           e->unguarded ? "unguarded" : daxfile_entry_state_to_string(e->state),
           e->owner, e->since,
           daxfile_entry_is_stale(e) ? ", STALE: run 'daxfile repair'" : "");
    if (e->unguarded)
        printf("unguarded:    a live hot-plugged device, not static: %s\n",
               e->unguarded);
    if (state->layout_unchanged != DAXFILE_TRI_UNKNOWN)
        printf("layout:       %s since it was made static\n",
               state->layout_unchanged ? "unchanged" : "CHANGED");
    if (state->qemu)
        print_qemu(state->qemu);
}

/* The pmem inventory, read on the first need of a run and kept for it:
 * `list` and a `status` of several paths name each one's medium from it
 * (reading it walks sysfs through libndctl, libdaxctl and libcxl) */
static DaxfilePmemInventory *cli_inventory;

DaxfileMedium *
cli_medium_read(dev_t dev, gboolean chr)
{
    return daxfile_medium_read(dev, chr, &cli_inventory);
}

void
cli_print_medium(dev_t dev, gboolean chr)
{
    g_autoptr(DaxfileMedium) medium = cli_medium_read(dev, chr);
    g_autofree char *text = daxfile_medium_describe(medium);

    printf("medium:       %s\n", text);
}

void
cli_print_status(const DaxfileReport *report, const DaxfileStaticState *state)
{
    const DaxfileFsInfo *fs = report->fs;
    g_autofree char *size = daxfile_size_format(report->size);
    g_autofree char *align = daxfile_size_format(report->align);
    g_autofree char *mnt =
        daxfile_escape(fs->mount_point ? fs->mount_point : "?");
    g_autofree char *dev = daxfile_escape(fs->device ? fs->device : "?");

    printf("path:         %s\n", report->path);
    printf("size:         %" G_GUINT64_FORMAT " (%s)\n", report->size, size);
    printf("filesystem:   %s on %s at %s, block size %u\n", fs->fs_type, dev,
           mnt, fs->block_size);
    printf("dax:          %s (mount option: %s)\n", tristate_word(fs->dax),
           fs->dax_mode ? fs->dax_mode : "none");
    printf("map_sync:     %s%s%s%s\n", fs->map_sync ? "yes" : "no",
           fs->map_sync ? "" : " (", fs->map_sync ? "" : fs->map_sync_error,
           fs->map_sync ? "" : ")");
    print_geometry(report);
    printf("extents:      %u\n", daxfile_extent_map_count(report->map));
    printf("align:        %s\n", align);
    printf("static ready: %s\n", report->static_ready ? "yes" : "no");
    if (state)
        cli_print_static(state);
    cli_print_medium(makedev(fs->dev_major, fs->dev_minor), FALSE);
    if (report->problems->len > 0) {
        printf("problems:\n");
        cli_print_problems(report);
    }
}

JsonNode *
cli_status_to_json(const DaxfileReport *report, const DaxfileStaticState *state)
{
    JsonNode *node = daxfile_report_to_json(report);
    g_autoptr(DaxfileMedium) medium = cli_medium_read(
        makedev(report->fs->dev_major, report->fs->dev_minor), FALSE);

    if (state)
        json_object_set_member(json_node_get_object(node), "static",
                               daxfile_static_state_to_json(state));
    json_object_set_member(json_node_get_object(node), "medium",
                           daxfile_medium_to_json(medium));
    return node;
}

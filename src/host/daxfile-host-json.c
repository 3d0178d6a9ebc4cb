/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-host-json.c: the host library's JSON view (daxfile-host-json.h)
 */
#include "daxfile-host-json.h"
#include "daxfile-escape.h"
#include "daxfile-json.h"

/* A process mapping (daxfile-proc.h) */
JsonNode *
daxfile_mapping_to_json(const DaxfileProcMap *map)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    daxfile_json_add_int(b, "start", (gint64)map->start);
    daxfile_json_add_int(b, "end", (gint64)map->end);
    daxfile_json_add_int(b, "offset", (gint64)map->offset);
    daxfile_json_add_bool(b, "shared", map->shared);
    daxfile_json_add_bool(b, "sync", map->sync);
    daxfile_json_add_int(b, "vmas", map->vmas);
    daxfile_json_add_int(b, "others", map->others);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* An attestation of QEMU's mapping (daxfile-attest.h) */
JsonNode *
daxfile_attestation_to_json(const DaxfileAttestation *a)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "pid");
    if (a->pid > 0)
        json_builder_add_int_value(b, a->pid);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "mapping");
    if (a->mapped)
        json_builder_add_value(b, daxfile_mapping_to_json(&a->map));
    else
        json_builder_add_null_value(b);
    daxfile_json_add_bool(b, "dax", a->dax);
    daxfile_json_add_bool(b, "map_sync_required", a->dax && a->need_sync);
    daxfile_json_add_bool(b, "attested", a->attested);
    daxfile_json_add_string(b, "problem", a->problem);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* A device-dax device (daxfile-devdax.h) */
JsonNode *
daxfile_devdax_to_json(const DaxfileDevdax *d, const char *path)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    daxfile_json_add_string(b, "name", d->name);
    daxfile_json_add_string(b, "path", path);
    daxfile_json_add_int(b, "size", (gint64)d->size);
    daxfile_json_add_int(b, "align", (gint64)d->align);
    daxfile_json_add_string(b, "mode", daxfile_devdax_mode(d));
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* A report: status --json and check --json (daxfile-report.h) */
static void
json_add_problems(JsonBuilder *b, const DaxfileReport *report)
{
    guint i;

    json_builder_set_member_name(b, "problems");
    json_builder_begin_array(b);
    for (i = 0; i < report->problems->len; i++) {
        const DaxfileRange *r =
            &g_array_index(report->problems, DaxfileRange, i);

        json_builder_begin_object(b);
        daxfile_json_add_int(b, "offset", r->offset);
        daxfile_json_add_int(b, "length", r->length);
        daxfile_json_add_string(b, "reason",
                                daxfile_reason_to_string(r->reason));
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

static void
json_add_common(JsonBuilder *b, const DaxfileReport *report)
{
    daxfile_json_add_string(b, "path", report->raw_path);
    daxfile_json_add_int(b, "size", report->size);
    daxfile_json_add_int(b, "align", report->align);
}

JsonNode *
daxfile_report_check_to_json(const DaxfileReport *report)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_add_common(b, report);
    daxfile_json_add_int(b, "extents", daxfile_extent_map_count(report->map));
    json_add_problems(b, report);
    daxfile_json_add_bool(b, "static_ready", report->static_ready);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static void
json_add_geometry(JsonBuilder *b, const DaxfileFsInfo *fs)
{
    json_builder_set_member_name(b, "geometry");
    json_builder_begin_object(b);
    daxfile_json_add_int(b, "stripe", fs->stripe);
    daxfile_json_add_tristate(b, "aligned", fs->geometry_aligned);
    daxfile_json_add_string(b, "fix", fs->geometry_fix);
    json_builder_end_object(b);
}

JsonNode *
daxfile_report_to_json(const DaxfileReport *report)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    const DaxfileFsInfo *fs = report->fs;

    json_builder_begin_object(b);
    json_add_common(b, report);
    daxfile_json_add_string(b, "fs_type", fs->fs_type);
    daxfile_json_add_int(b, "block_size", fs->block_size);
    daxfile_json_add_string(b, "mount_point", fs->mount_point);
    daxfile_json_add_string(b, "device", fs->device);
    daxfile_json_add_tristate(b, "dax", fs->dax);
    daxfile_json_add_string(b, "dax_mode", fs->dax_mode);
    daxfile_json_add_bool(b, "map_sync", fs->map_sync);
    json_add_geometry(b, fs);
    daxfile_json_add_int(b, "extents", daxfile_extent_map_count(report->map));
    daxfile_json_add_string(b, "fingerprint", report->fingerprint);
    json_add_problems(b, report);
    daxfile_json_add_bool(b, "static_ready", report->static_ready);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* Static mode: the "static" object of status --json, list --json and
 * repair --json (daxfile-static.h) */
DAXFILE_ENUM_IMPL(daxfile_repair_finding, DaxfileRepairFinding,
                  DAXFILE_REPAIR_FOUND_LAST, "stale", "interrupted",
                  "start_unfinished", "consumer_gone", "unmapped",
                  "mechanism_lost");

DAXFILE_ENUM_IMPL(daxfile_repair_done, DaxfileRepairDone,
                  DAXFILE_REPAIR_DONE_LAST, "released", "dropped_file_gone",
                  "dropped_superseded", "kept", "reengaged", "kept_unguarded");

/* MTIME_NONE has no name: "mtime" is null */
DAXFILE_ENUM_IMPL(daxfile_repair_mtime, DaxfileRepairMtime,
                  DAXFILE_REPAIR_MTIME_LAST, NULL, "not_found", "stamped",
                  "failed");

/* JSON holds UTF-8 only: a path that is not is given in its display
 * form */
static void
add_path(JsonBuilder *b, const char *path)
{
    g_autofree char *shown = NULL;

    if (!g_utf8_validate(path, -1, NULL))
        shown = daxfile_escape(path);
    daxfile_json_add_string(b, "path", shown ? shown : path);
}

static void
entry_members(JsonBuilder *b, const DaxfileEntry *e)
{
    daxfile_json_add_string(b, "state",
                            daxfile_entry_state_to_string(e->state));
    daxfile_json_add_string(b, "mechanism",
                            daxfile_mechanism_to_string(e->mechanism));
    daxfile_json_add_string(b, "owner", e->owner);
    daxfile_json_add_string(b, "owner_uuid", e->owner_uuid);
    daxfile_json_add_string(b, "device", e->device);
    daxfile_json_add_int(b, "pid", e->pid);
    daxfile_json_add_int(b, "align", (gint64)e->align);
    daxfile_json_add_string(b, "since", e->since);
    daxfile_json_add_bool(b, "stale", daxfile_entry_is_stale(e));
    /* a hot-plugged device held, not static: why */
    if (e->unguarded)
        daxfile_json_add_string(b, "unguarded", e->unguarded);
}

JsonNode *
daxfile_static_state_to_json(const DaxfileStaticState *state)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    const DaxfileEntry *e = state->entry;

    json_builder_begin_object(b);
    daxfile_json_add_bool(b, "enabled", daxfile_static_state_enabled(state));
    if (state->qemu) {
        json_builder_set_member_name(b, "qemu");
        json_builder_add_value(b, daxfile_attestation_to_json(state->qemu));
    }
    if (e) {
        entry_members(b, e);
        daxfile_json_add_tristate(b, "layout_unchanged",
                                  state->layout_unchanged);
        daxfile_json_add_tristate(b, "mechanism_intact",
                                  state->mechanism_intact);
    } else {
        daxfile_json_add_string(b, "mechanism", NULL);
        daxfile_json_add_string(b, "owner", NULL);
        daxfile_json_add_string(b, "since", NULL);
        daxfile_json_add_tristate(b, "layout_unchanged", -1);
    }
    daxfile_json_add_tristate(b, "immutable", state->immutable);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

JsonNode *
daxfile_static_list_to_json(const GPtrArray *entries)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i;

    json_builder_begin_array(b);
    for (i = 0; i < entries->len; i++) {
        const DaxfileEntry *e = g_ptr_array_index(entries, i);

        json_builder_begin_object(b);
        add_path(b, e->path);
        entry_members(b, e);
        daxfile_json_add_string(b, "fingerprint", e->fingerprint);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

JsonNode *
daxfile_repair_result_to_json(const DaxfileRepairResult *result)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i;

    json_builder_begin_array(b);
    for (i = 0; i < result->actions->len; i++) {
        const DaxfileRepairAction *a = g_ptr_array_index(result->actions, i);

        json_builder_begin_object(b);
        add_path(b, a->path);
        daxfile_json_add_string(b, "mechanism",
                                daxfile_mechanism_to_string(a->mechanism));
        daxfile_json_add_string(b, "owner", a->owner);
        daxfile_json_add_string(b, "found",
                                daxfile_repair_finding_to_string(a->found));
        daxfile_json_add_string(b, "action",
                                daxfile_repair_done_to_string(a->done));
        daxfile_json_add_string(b, "mtime",
                                daxfile_repair_mtime_to_string(a->mtime));
        daxfile_json_add_string(b, "error", a->error);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

/* The result of a wipe (daxfile-wipe.h) */
JsonNode *
daxfile_wipe_result_to_json(const DaxfileWipeResult *r, const char *path)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    daxfile_json_add_string(b, "path", path);
    daxfile_json_add_int(b, "size", r->size);
    daxfile_json_add_int(b, "resumed_from", r->resumed_from);
    daxfile_json_add_int(b, "zeroed", r->zeroed);
    daxfile_json_add_bool(b, "map_sync", r->map_sync);
    daxfile_json_add_string(b, "method", r->method);
    daxfile_json_add_bool(b, "interrupted", r->interrupted);
    daxfile_json_add_bool(b, "verified", r->verified);
    json_builder_set_member_name(b, "first_nonzero");
    if (r->sha256 && !r->verified)
        json_builder_add_int_value(b, (gint64)r->first_nonzero);
    else
        json_builder_add_null_value(b);
    daxfile_json_add_string(b, "sha256", r->sha256);
    json_builder_set_member_name(b, "seconds");
    json_builder_add_double_value(b, r->seconds);
    json_builder_set_member_name(b, "verify_seconds");
    json_builder_add_double_value(b, r->verify_seconds);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

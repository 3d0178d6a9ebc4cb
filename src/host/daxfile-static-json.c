/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-json.c: the "static" object of status --json, list
 * --json and repair --json
 */
#include "daxfile-attest-json.h"
#include "daxfile-escape.h"
#include "daxfile-json.h"
#include "daxfile-static-json.h"

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

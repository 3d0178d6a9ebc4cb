/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-json.c: the "static" object of status --json, list
 * --json and repair --json
 */
#include "daxfile-attest-json.h"
#include "daxfile-escape.h"
#include "daxfile-json.h"
#include "daxfile-static-json.h"

static const char *const repair_found[] = {
    [DAXFILE_REPAIR_FOUND_STALE] = "stale",
    [DAXFILE_REPAIR_FOUND_INTERRUPTED] = "interrupted",
    [DAXFILE_REPAIR_FOUND_START_UNFINISHED] = "start_unfinished",
    [DAXFILE_REPAIR_FOUND_CONSUMER_GONE] = "consumer_gone",
    [DAXFILE_REPAIR_FOUND_UNMAPPED] = "unmapped",
    [DAXFILE_REPAIR_FOUND_MECHANISM_LOST] = "mechanism_lost",
};

static const char *const repair_done[] = {
    [DAXFILE_REPAIR_RELEASED] = "released",
    [DAXFILE_REPAIR_DROPPED_FILE_GONE] = "dropped_file_gone",
    [DAXFILE_REPAIR_DROPPED_SUPERSEDED] = "dropped_superseded",
    [DAXFILE_REPAIR_KEPT] = "kept",
};

static const char *const repair_mtime[] = {
    [DAXFILE_REPAIR_MTIME_NONE] = NULL,
    [DAXFILE_REPAIR_MTIME_NOT_FOUND] = "not_found",
    [DAXFILE_REPAIR_MTIME_STAMPED] = "stamped",
    [DAXFILE_REPAIR_MTIME_FAILED] = "failed",
};

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
    daxfile_json_add_string(b, "state", daxfile_entry_state_to_string(e->state));
    daxfile_json_add_string(b, "mechanism",
                       daxfile_mechanism_to_string(e->mechanism));
    daxfile_json_add_string(b, "owner", e->owner);
    daxfile_json_add_string(b, "owner_uuid", e->owner_uuid);
    daxfile_json_add_string(b, "device", e->device);
    daxfile_json_add_int(b, "pid", e->pid);
    daxfile_json_add_int(b, "align", (gint64)e->align);
    daxfile_json_add_string(b, "since", e->since);
    daxfile_json_add_bool(b, "stale", daxfile_entry_is_stale(e));
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
        daxfile_json_add_string(b, "found", repair_found[a->found]);
        daxfile_json_add_string(b, "action", repair_done[a->done]);
        daxfile_json_add_string(b, "mtime", repair_mtime[a->mtime]);
        daxfile_json_add_string(b, "error", a->error);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

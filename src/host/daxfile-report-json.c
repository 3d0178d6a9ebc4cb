/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-report-json.c: status --json and check --json of a report
 */
#include "daxfile-json.h"
#include "daxfile-report-json.h"

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

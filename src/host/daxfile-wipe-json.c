/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-wipe-json.c: the result of a wipe as JSON
 */
#include "daxfile-json.h"
#include "daxfile-wipe-json.h"

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

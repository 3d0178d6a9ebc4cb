/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-proc-json.c: a process mapping as JSON
 */
#include "daxfile-json.h"
#include "daxfile-proc-json.h"

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

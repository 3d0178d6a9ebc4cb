/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-devdax-json.c: a device-dax device as JSON
 */
#include "daxfile-json.h"
#include "daxfile-devdax-json.h"

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

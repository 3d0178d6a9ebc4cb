/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-attest-json.c: an attestation of QEMU's mapping as JSON
 */
#include "daxfile-attest-json.h"
#include "daxfile-json.h"
#include "daxfile-proc-json.h"

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

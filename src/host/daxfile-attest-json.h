/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-attest-json.h: an attestation of QEMU's mapping
 * (daxfile-attest.h) as JSON
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-attest.h"

G_BEGIN_DECLS

/* {"pid", "mapping" (daxfile_mapping_to_json, or null), "dax",
 *  "map_sync_required", "attested", "problem"} */
JsonNode *daxfile_attestation_to_json(const DaxfileAttestation *a);

G_END_DECLS

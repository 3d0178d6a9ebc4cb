/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-host-json.h: the host library's JSON view, one module as ndctl's
 * daxctl/json.c is: a process mapping, an attestation of QEMU's mapping, a
 * device-dax device, a report, static mode's results and a wipe's result
 * as JSON (what `--json` prints; the CLI is its one user)
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-attest.h"
#include "daxfile-devdax.h"
#include "daxfile-proc.h"
#include "daxfile-report.h"
#include "daxfile-static.h"
#include "daxfile-wipe.h"

G_BEGIN_DECLS

/* The mapping as a JSON object: start, end, offset (numbers), shared,
 * sync (booleans), vmas, others */
JsonNode *daxfile_mapping_to_json(const DaxfileProcMap *map);

/* {"pid", "mapping" (daxfile_mapping_to_json, or null), "dax",
 *  "map_sync_required", "attested", "problem"} */
JsonNode *daxfile_attestation_to_json(const DaxfileAttestation *a);

/* {"name", "path", "size", "align", "mode"} */
JsonNode *daxfile_devdax_to_json(const DaxfileDevdax *d, const char *path);

/* The full status object (`daxfile status --json` adds its "static"),
 * or the check subset. */
JsonNode *daxfile_report_to_json(const DaxfileReport *report);
JsonNode *daxfile_report_check_to_json(const DaxfileReport *report);

/* The "static" object of `status --json`: enabled, qemu (when a running
 * domain holds it), state, mechanism, owner, owner_uuid, device, pid,
 * align, since, stale, layout_unchanged, mechanism_intact, immutable */
JsonNode *daxfile_static_state_to_json(const DaxfileStaticState *state);

/* `daxfile list --json` of daxfile_static_list()'s entries */
JsonNode *daxfile_static_list_to_json(const GPtrArray *entries);

/* `daxfile repair --json`: one object per action, {path, mechanism,
 * owner, found, action, mtime, error} */
JsonNode *daxfile_repair_result_to_json(const DaxfileRepairResult *result);

/* Their "found", "action" and "mtime" names ("stale", "released",
 * "stamped", ...; MTIME_NONE has none: NULL) */
DAXFILE_ENUM_DECL(daxfile_repair_finding, DaxfileRepairFinding);
DAXFILE_ENUM_DECL(daxfile_repair_done, DaxfileRepairDone);
DAXFILE_ENUM_DECL(daxfile_repair_mtime, DaxfileRepairMtime);

/* {size, resumed_from, zeroed, map_sync, method, interrupted, verified,
 *  first_nonzero (or null), sha256, seconds, verify_seconds} */
JsonNode *daxfile_wipe_result_to_json(const DaxfileWipeResult *r,
                                      const char *path);

G_END_DECLS

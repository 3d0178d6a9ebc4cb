/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-json.h: static mode's results (daxfile-static.h) as JSON
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-static.h"

G_BEGIN_DECLS

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

G_END_DECLS

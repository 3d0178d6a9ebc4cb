/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-proc-json.h: a process mapping (daxfile-proc.h) as JSON
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-proc.h"

G_BEGIN_DECLS

/* The mapping as a JSON object: start, end, offset (numbers), shared,
 * sync (booleans), vmas, others */
JsonNode *daxfile_mapping_to_json(const DaxfileProcMap *map);

G_END_DECLS

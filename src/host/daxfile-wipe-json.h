/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-wipe-json.h: the result of a wipe (daxfile-wipe.h) as JSON
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-wipe.h"

G_BEGIN_DECLS

/* {size, resumed_from, zeroed, map_sync, method, interrupted, verified,
 *  first_nonzero (or null), sha256, seconds, verify_seconds} */
JsonNode *daxfile_wipe_result_to_json(const DaxfileWipeResult *r,
                                      const char *path);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-devdax-json.h: a device-dax device (daxfile-devdax.h) as JSON
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-devdax.h"

G_BEGIN_DECLS

/* {"name", "path", "size", "align", "mode"} */
JsonNode *daxfile_devdax_to_json(const DaxfileDevdax *d, const char *path);

G_END_DECLS

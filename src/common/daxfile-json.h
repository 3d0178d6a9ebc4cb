/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-json.h: small JsonBuilder helpers for the *_to_json() builders
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* "key": "value", or "key": null when @value is NULL */
void daxfile_json_add_string(JsonBuilder *b, const char *key,
                             const char *value);

/* "key": N (sizes are integer bytes) */
void daxfile_json_add_int(JsonBuilder *b, const char *key, gint64 value);

void daxfile_json_add_bool(JsonBuilder *b, const char *key, gboolean value);

/* "key": true/false, or null when @value is negative (unknown) */
void daxfile_json_add_tristate(JsonBuilder *b, const char *key, int value);

/* Serialise a node as pretty JSON with a trailing newline. */
char *daxfile_json_to_string(JsonNode *node);

G_END_DECLS

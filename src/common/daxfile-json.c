/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daxfile-json.h"

void
daxfile_json_add_string(JsonBuilder *b, const char *key, const char *value)
{
    json_builder_set_member_name(b, key);
    if (value)
        json_builder_add_string_value(b, value);
    else
        json_builder_add_null_value(b);
}

void
daxfile_json_add_int(JsonBuilder *b, const char *key, gint64 value)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, value);
}

void
daxfile_json_add_bool(JsonBuilder *b, const char *key, gboolean value)
{
    json_builder_set_member_name(b, key);
    json_builder_add_boolean_value(b, value);
}

void
daxfile_json_add_tristate(JsonBuilder *b, const char *key, int value)
{
    json_builder_set_member_name(b, key);
    if (value < 0)
        json_builder_add_null_value(b);
    else
        json_builder_add_boolean_value(b, value);
}

char *
daxfile_json_to_string(JsonNode *node)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autofree char *text = NULL;

    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    json_generator_set_root(gen, node);
    text = json_generator_to_data(gen, NULL);
    return g_strconcat(text, "\n", NULL);
}

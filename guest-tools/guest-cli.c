/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>

#include "config.h"
#include "daxfile-error.h"
#include "daxfile-size.h"
#include "guest-cli.h"

gboolean
cli_parse_number(const char *cmd, const char *option, const char *value,
                 guint64 *ret_value, int *ret_exit)
{
    if (!daxfile_size_parse_flags(value, DAXFILE_SIZE_NUMBER, ret_value,
                                  NULL)) {
        *ret_exit =
            cli_usage_error(cmd, "--%s: '%s' is not a number", option, value);
        return FALSE;
    }
    return TRUE;
}

gboolean
cli_check_target(const char *cmd, const char *dir, const char *dev,
                 gboolean optional, int *ret_exit)
{
    if (dir && dev) {
        *ret_exit = cli_usage_error(cmd, "--dir and --dev exclude each other");
        return FALSE;
    }
    if (!dir && !dev && !optional) {
        *ret_exit = cli_usage_error(cmd, "missing --dir DIR or --dev DEVICE");
        return FALSE;
    }
    return TRUE;
}

JsonNode *
cli_json_array_of(JsonNode *object)
{
    JsonArray *array = json_array_new();
    JsonNode *node = json_node_new(JSON_NODE_ARRAY);

    json_array_add_element(array, object);
    json_node_take_array(node, array);
    return node;
}

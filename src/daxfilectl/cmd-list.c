/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile list [--json]: the registry of static files
 * daxfile repair: finish interrupted operations, drop stale entries
 */
#include <stdio.h>

#include "daxfile-static.h"
#include "daxfile-util.h"
#include "daxfilectl.h"

static gboolean arg_json;

static const GOptionEntry list_options[] = {
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json, "Print JSON", NULL},
    {NULL},
};

static void
print_entry(JsonObject *o)
{
    g_autofree char *path = daxfile_escape(
        json_object_get_string_member(o, "path"));
    gboolean stale = json_object_get_boolean_member(o, "stale");

    printf("%-40s %-9s %-16s %-20s %s%s\n", path,
           json_object_get_string_member(o, "state"),
           json_object_get_string_member(o, "mechanism"),
           json_object_get_string_member(o, "owner"),
           json_object_get_string_member(o, "since"),
           stale ? "  (stale: run 'daxfile repair')" : "");
}

int
cmd_list(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) list = NULL;
    JsonArray *arr;
    guint i;
    int ret = CLI_EXIT_OK;

    if (!cli_parse("list", "", "List the files daxfile holds static.",
                   list_options, &argc, &argv, &ret))
        return ret;
    if (argc != 1)
        return cli_usage_error("list", "unexpected argument '%s'", argv[1]);
    list = daxfile_static_list_json(&error);
    if (!list)
        return cli_report_error(error);
    if (arg_json) {
        cli_print_json(g_steal_pointer(&list));
        return CLI_EXIT_OK;
    }
    arr = json_node_get_array(list);
    if (json_array_get_length(arr) > 0)
        printf("%-40s %-9s %-16s %-20s %s\n", "PATH", "STATE", "MECHANISM",
               "OWNER", "SINCE");
    for (i = 0; i < json_array_get_length(arr); i++)
        print_entry(json_array_get_object_element(arr, i));
    return CLI_EXIT_OK;
}

int
cmd_repair(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) actions = NULL;
    int ret = CLI_EXIT_OK;
    guint i;

    if (!cli_parse("repair", "",
                   "Finish or roll back interrupted enable/disable, and "
                   "release entries whose consumer or boot is gone.",
                   NULL, &argc, &argv, &ret))
        return ret;
    if (argc != 1)
        return cli_usage_error("repair", "unexpected argument '%s'", argv[1]);
    actions = daxfile_static_repair(&error);
    if (!actions)
        return cli_report_error(error);
    for (i = 0; i < actions->len; i++)
        fprintf(stderr, "%s\n", (const char *)g_ptr_array_index(actions, i));
    if (actions->len == 0)
        fprintf(stderr, "nothing to repair\n");
    return CLI_EXIT_OK;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile list [--json]: the registry of static files, in JSON with the
 * medium of each (daxfile repair: cmd-repair.c)
 */
#include <stdio.h>

#include "daxfile-escape.h"
#include "cli-medium.h"
#include "daxfile-registry.h"
#include "daxfile-host-json.h"
#include "daxfilectl.h"

static gboolean arg_json;

static const GOptionEntry list_options[] = {
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json, "Print JSON", NULL},
    {NULL},
};

/* One row of the list: path, state, mechanism, owner, since */
static void
add_entry(GPtrArray *cells, const DaxfileEntry *e)
{
    g_ptr_array_add(cells, daxfile_escape(e->path));
    g_ptr_array_add(cells,
                    g_strdup(e->unguarded
                                 ? "unguarded"
                                 : daxfile_entry_state_to_string(e->state)));
    g_ptr_array_add(cells, g_strdup(daxfile_mechanism_to_string(e->mechanism)));
    g_ptr_array_add(cells, daxfile_escape(e->owner));
    g_ptr_array_add(cells, g_strconcat(e->since,
                                       daxfile_entry_is_stale(e)
                                           ? "  (stale: run 'daxfile repair')"
                                           : "",
                                       NULL));
}

/* The medium of an entry: of the device-dax device it is, or of the
 * device its file was on */
static JsonNode *
entry_medium_to_json(const DaxfileEntry *e)
{
    g_autoptr(DaxfileMedium) medium =
        cli_medium_read((dev_t)e->dev, daxfile_static_entry_is_device(e));

    return daxfile_medium_to_json(medium);
}

static JsonNode *
list_to_json(const GPtrArray *entries)
{
    JsonNode *root = daxfile_static_list_to_json(entries);
    JsonArray *array = json_node_get_array(root);
    guint i;

    for (i = 0; i < entries->len; i++)
        json_object_set_member(json_array_get_object_element(array, i),
                               "medium",
                               entry_medium_to_json(entries->pdata[i]));
    return root;
}

static int
cmd_list(int argc, char **argv)
{
    static const char *const header[] = {"PATH", "STATE", "MECHANISM", "OWNER",
                                         "SINCE"};
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) entries = NULL;
    g_autoptr(GPtrArray) cells = g_ptr_array_new_with_free_func(g_free);
    guint i;

    entries = daxfile_static_list(&error);
    if (!entries)
        return cli_report_error(error);
    if (arg_json) {
        cli_print_json(list_to_json(entries));
        return CLI_EXIT_OK;
    }
    for (i = 0; i < entries->len; i++)
        add_entry(cells, g_ptr_array_index(entries, i));
    cli_print_table(header, G_N_ELEMENTS(header), cells);
    return CLI_EXIT_OK;
}

const CliVerb cmd_list_verb = {
    .name = "list",
    .dispatch = cmd_list,
    .summary = "List the files held static",
    .params = "",
    .description = "List the files daxfile holds static.",
    .options = list_options,
};

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile status PATH... [--align A] [--json]: everything about these files
 */
#include <stdio.h>

#include "daxfile-devdax.h"
#include "daxfile-host-json.h"
#include "cli-medium.h"
#include "daxfile-size.h"
#include "daxfilectl.h"

static char *arg_align;
static gboolean arg_json;
static gboolean arg_allow_non_dax;
static gboolean arg_follow;

static const GOptionEntry status_options[] = {
    {"align", 'a', 0, G_OPTION_ARG_STRING, &arg_align,
     "Page size to judge the layout for (default 2M)", "SIZE"},
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json, "Print JSON", NULL},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Do not count a missing DAX mount as a problem (development)", NULL},
    {"follow-symlinks", 0, 0, G_OPTION_ARG_NONE, &arg_follow,
     "Accept a symbolic link and report on its target", NULL},
    {NULL},
};

static void
print_status(const DaxfileReport *report, const DaxfileStaticState *state,
             gboolean separator)
{
    if (separator)
        printf("\n");
    cli_print_status(report, state);
}

static void
print_devdax(const DaxfileFile *f, const DaxfileDevdax *d,
             const DaxfileStaticState *state)
{
    g_autofree char *size = daxfile_size_format(d->size);
    g_autofree char *align = daxfile_size_format(d->align);

    printf("path:         %s\n", f->display);
    printf("size:         %" G_GUINT64_FORMAT " (%s)\n", d->size, size);
    printf("device-dax:   %s, %s mode, %s pages\n", d->name,
           daxfile_devdax_mode(d), d->align ? align : "unknown");
    cli_print_static(state);
    cli_print_medium(d->rdev, TRUE);
}

/* A device-dax device: what it is, its registry entry and its medium */
static gboolean
status_devdax(const char *path, JsonBuilder *json, gboolean separator,
              GError **error)
{
    g_autoptr(DaxfileDevdax) d = NULL;
    g_autoptr(DaxfileFile) f = daxfile_devdax_open(path, &d, error);
    g_autoptr(DaxfileStaticState) state = NULL;
    g_autoptr(DaxfileMedium) medium = NULL;
    JsonNode *node;

    if (!f)
        return FALSE;
    state = daxfile_static_state_read_devdax(f);
    if (!json) {
        if (separator)
            printf("\n");
        print_devdax(f, d, state);
        return TRUE;
    }
    medium = cli_medium_read(d->rdev, TRUE);
    node = daxfile_devdax_to_json(d, path);
    json_object_set_member(json_node_get_object(node), "static",
                           daxfile_static_state_to_json(state));
    json_object_set_member(json_node_get_object(node), "medium",
                           daxfile_medium_to_json(medium));
    json_builder_add_value(json, node);
    return TRUE;
}

static int
cmd_status(int argc, char **argv)
{
    CliReportOptions opts = {
        .fail_unready = FALSE,
        .with_static = TRUE,
        .print = print_status,
        .to_json = cli_status_to_json,
        .devdax = status_devdax,
    };
    int ret = CLI_EXIT_OK;

    if (!cli_parse_align("status", arg_align, &opts.align, &ret))
        return ret;
    opts.json = arg_json;
    opts.allow_non_dax = arg_allow_non_dax;
    opts.follow = arg_follow;
    return cli_for_each_report(argc - 1, argv + 1, &opts);
}

const CliVerb cmd_status_verb = {
    .name = "status",
    .min_args = 1,
    .max_args = CLI_ARGS_ANY,
    .dispatch = cmd_status,
    .summary = "Show everything daxfile knows about files",
    .params = "PATH...",
    .description =
        "Report the filesystem, DAX, MAP_SYNC, extent layout, static state and medium (the pmem namespace or device-dax device and its region) of each file.",
    .options = status_options,
    .too_few = "missing PATH",
};

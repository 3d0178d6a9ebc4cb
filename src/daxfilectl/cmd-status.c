/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile status PATH... [--align A] [--json]: everything about these files
 */
#include <stdio.h>

#include "daxfile-host-json.h"
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

static int
cmd_status(int argc, char **argv)
{
    CliReportOptions opts = {
        .fail_unready = FALSE,
        .with_static = TRUE,
        .print = print_status,
        .to_json = cli_status_to_json,
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
        "Report the filesystem, DAX, MAP_SYNC, extent layout and static state of each file.",
    .options = status_options,
    .too_few = "missing PATH",
};

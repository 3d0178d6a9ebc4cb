/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile check PATH... [--align A] [--json]: can these files be static?
 */
#include <stdio.h>

#include "daxfile-host-json.h"
#include "daxfile-size.h"
#include "daxfilectl.h"

static char *arg_align;
static gboolean arg_json;
static gboolean arg_allow_non_dax;
static gboolean arg_follow;

static const GOptionEntry check_options[] = {
    {"align", 'a', 0, G_OPTION_ARG_STRING, &arg_align,
     "Page size the file must support (default 2M)", "SIZE"},
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json, "Print JSON", NULL},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Do not count a missing DAX mount as a problem (development)", NULL},
    {"follow-symlinks", 0, 0, G_OPTION_ARG_NONE, &arg_follow,
     "Accept a symbolic link and check its target", NULL},
    {NULL},
};

static void
print_verdict(const DaxfileReport *report,
              const DaxfileStaticState *state G_GNUC_UNUSED, gboolean separator)
{
    g_autofree char *align = daxfile_size_format(report->align);

    if (report->static_ready) {
        printf("%s: ready for static mode (%s pages, %u extents)\n",
               report->path, align, daxfile_extent_map_count(report->map));
        return;
    }
    printf("%s: not ready for static mode (%s pages):\n", report->path, align);
    cli_print_problems(report);
}

static JsonNode *
check_to_json(const DaxfileReport *report,
              const DaxfileStaticState *state G_GNUC_UNUSED)
{
    return daxfile_report_check_to_json(report);
}

static int
cmd_check(int argc, char **argv)
{
    CliReportOptions opts = {
        .fail_unready = TRUE,
        .print = print_verdict,
        .to_json = check_to_json,
    };
    int ret = CLI_EXIT_OK;

    if (!cli_parse_align("check", arg_align, &opts.align, &ret))
        return ret;
    opts.json = arg_json;
    opts.allow_non_dax = arg_allow_non_dax;
    opts.follow = arg_follow;
    return cli_for_each_report(argc - 1, argv + 1, &opts);
}

const CliVerb cmd_check_verb = {
    .name = "check",
    .min_args = 1,
    .max_args = CLI_ARGS_ANY,
    .dispatch = cmd_check,
    .summary = "Tell whether files can be made static",
    .params = "PATH...",
    .description =
        "Exit 0 when every file can be made static; list every problem otherwise.",
    .options = check_options,
    .too_few = "missing PATH",
};

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-guest locate (--dir DIR | --dev DEVICE) --offset OFFSET
 */
#include <stdio.h>

#include "daxfile-error.h"
#include "daxguest-target.h"
#include "guest-cli.h"

static char *arg_dir;
static char *arg_dev;
static char *arg_offset;
static gboolean arg_json;

static const GOptionEntry locate_options[] = {
    CLI_TARGET_OPTIONS(arg_dir, arg_dev, arg_json),
    {"offset", 'o', 0, G_OPTION_ARG_STRING, &arg_offset,
     "Offset in the file or device (decimal or 0x-hex; required)", "OFFSET"},
    {NULL},
};

static int
cmd_locate(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxguestTarget) t = NULL;
    g_auto(DaxguestLocation) loc = {0};
    guint64 offset = 0;
    int ret = CLI_EXIT_OK;

    if (!cli_check_target("locate", arg_dir, arg_dev, FALSE, &ret))
        return ret;
    if (!arg_offset)
        return cli_usage_error("locate", "missing --offset OFFSET");
    if (!cli_parse_number("locate", "offset", arg_offset, &offset, &ret))
        return ret;
    t = daxguest_target_open(arg_dir, arg_dev, 0, DAXGUEST_TARGET_NO_MAP,
                             &error);
    if (!t || !daxguest_target_locate(t, offset, &loc, &error))
        return cli_report_error(error);
    if (arg_json) {
        cli_print_json(
            cli_json_array_of(daxguest_location_to_json(t->path, &loc)));
        return CLI_EXIT_OK;
    }
    printf("%s offset 0x%" G_GINT64_MODIFIER
           "x: %s offset 0x%" G_GINT64_MODIFIER
           "x, %s offset 0x%" G_GINT64_MODIFIER
           "x, physical address 0x%" G_GINT64_MODIFIER "x\n",
           t->path, loc.offset, loc.device, loc.device_offset, loc.region,
           loc.region_offset, loc.physical);
    return CLI_EXIT_OK;
}

const CliVerb cmd_locate_verb = {
    .name = "locate",
    .dispatch = cmd_locate,
    .summary = "Tell where a byte of the pattern lives",
    .params = "",
    .description =
        "Print where byte OFFSET of the file or device lives: block or dax device offset, region and offset in the region (for QEMU: the offset in the backing file).",
    .options = locate_options,
};

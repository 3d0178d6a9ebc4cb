/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-guest write|verify (--dir DIR | --dev DEVICE) --seed N ...
 */
#include <stdio.h>

#include "daxfile-error.h"
#include "daxfile-size.h"
#include "daxguest-pattern.h"
#include "daxguest-target.h"
#include "guest-cli.h"

static char *arg_dir;
static char *arg_dev;
static char *arg_seed;
static char *arg_size;
static gboolean arg_json;
static gboolean arg_allow_non_dax;

static const GOptionEntry write_options[] = {
    CLI_TARGET_OPTIONS(arg_dir, arg_dev, arg_json),
    {"seed", 's', 0, G_OPTION_ARG_STRING, &arg_seed,
     "Seed of the pattern (required)", "N"},
    {"size", 0, 0, G_OPTION_ARG_STRING, &arg_size,
     "Bytes to write (default 64M; device-dax: a multiple of its pages)",
     "SIZE"},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Without MAP_SYNC, map MAP_SHARED and msync (development only)", NULL},
    {NULL},
};

static const GOptionEntry verify_options[] = {
    CLI_TARGET_OPTIONS(arg_dir, arg_dev, arg_json),
    {"seed", 's', 0, G_OPTION_ARG_STRING, &arg_seed,
     "Seed the pattern was written with (required)", "N"},
    {"size", 0, 0, G_OPTION_ARG_STRING, &arg_size,
     "Bytes to verify (default: the file size, or the size recorded in the device's pattern header)",
     "SIZE"},
    {NULL},
};

typedef struct {
    guint64 seed;
    guint64 size;
} PatternArgs;

static gboolean
parse_args(const char *cmd, PatternArgs *args, int *ret_exit)
{
    if (!cli_check_target(cmd, arg_dir, arg_dev, FALSE, ret_exit))
        return FALSE;
    if (!arg_seed) {
        *ret_exit = cli_usage_error(cmd, "missing --seed N");
        return FALSE;
    }
    if (!cli_parse_number(cmd, "seed", arg_seed, &args->seed, ret_exit))
        return FALSE;
    return !arg_size ||
           cli_parse_size(cmd, "size", arg_size, &args->size, ret_exit);
}

static int
cmd_write(int argc, char **argv)
{
    PatternArgs args = {0, 0};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxguestTarget) t = NULL;
    g_autofree char *flush = NULL;
    g_autofree char *size = NULL;
    DaxguestTargetFlags flags = DAXGUEST_TARGET_WRITE;
    guint64 sequence = 0;
    int ret = CLI_EXIT_OK;

    if (!parse_args("write", &args, &ret))
        return ret;
    if (arg_allow_non_dax)
        flags |= DAXGUEST_TARGET_ALLOW_NON_DAX;
    t = daxguest_target_write(arg_dir, arg_dev, args.size, flags, args.seed,
                              &sequence, &flush, &error);
    if (!t)
        return cli_report_error(error);
    size = daxfile_size_format(t->size);
    if (arg_json)
        cli_print_json(cli_json_array_of(
            daxguest_target_write_to_json(t, args.seed, sequence, flush)));
    fprintf(stderr,
            "daxfile-guest: wrote %s to '%s' (seed %" G_GUINT64_FORMAT
            ", sequence %" G_GUINT64_FORMAT ", %s, flush: %s)\n",
            size, t->path, args.seed, sequence, daxguest_target_mapping_name(t),
            flush);
    return CLI_EXIT_OK;
}

static int
cmd_verify(int argc, char **argv)
{
    PatternArgs args = {0, 0};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxguestTarget) t = NULL;
    g_autofree char *size = NULL;
    DaxguestPatternResult result;
    gboolean ok;
    int ret = CLI_EXIT_OK;

    if (!parse_args("verify", &args, &ret))
        return ret;
    t = daxguest_target_open(arg_dir, arg_dev, args.size, DAXGUEST_TARGET_READ,
                             &error);
    if (!t)
        return cli_report_error(error);
    ok = daxguest_target_verify(t, args.seed, &result, &error);
    if (arg_json)
        cli_print_json(cli_json_array_of(
            daxguest_pattern_result_to_json(t->path, &result)));
    if (!ok)
        return cli_report_error(error);
    size = daxfile_size_format(t->size);
    fprintf(stderr,
            "daxfile-guest: '%s' holds the pattern (%s, seed %" G_GUINT64_FORMAT
            ", sequence %" G_GUINT64_FORMAT ")\n",
            t->path, size, args.seed, result.sequence);
    return CLI_EXIT_OK;
}

const CliVerb cmd_write_verb = {
    .name = "write",
    .dispatch = cmd_write,
    .summary = "Write a checksummed pattern through MAP_SYNC",
    .params = "",
    .description =
        "Write a self-describing, checksummed pattern through a MAP_SYNC mapping (device-dax: MAP_SHARED), flushing and fencing as libpmem does; the sequence number is committed last.",
    .options = write_options,
};

const CliVerb cmd_verify_verb = {
    .name = "verify",
    .dispatch = cmd_verify,
    .summary = "Verify the pattern; name the first bad offset",
    .params = "",
    .description =
        "Compare the file or device with the pattern of --seed; exit 1 naming the first offset that differs.",
    .options = verify_options,
};

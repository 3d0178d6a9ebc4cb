/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-guest bench [--dir DIR | --dev DEVICE] [--size S] [--json]
 */
#include <stdio.h>

#include "daxfile-error.h"
#include "daxguest-bench.h"
#include "daxguest-checks.h"
#include "guest-cli.h"

static char *arg_dir;
static char *arg_dev;
static char *arg_size;
static gboolean arg_json;
static gboolean arg_allow_non_dax;

static const GOptionEntry bench_options[] = {
    {"dir", 'd', 0, G_OPTION_ARG_FILENAME, &arg_dir,
     "Measure on a temporary file in DIR (default: the first DAX mount)",
     "DIR"},
    {"dev", 'D', 0, G_OPTION_ARG_FILENAME, &arg_dev,
     "Measure on a device-dax device: OVERWRITES its first SIZE bytes",
     "/dev/daxX.Y"},
    {"size", 0, 0, G_OPTION_ARG_STRING, &arg_size,
     "Bytes to use (default 64M, at least 40M)", "SIZE"},
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json, "Print JSON", NULL},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Measure even where MAP_SYNC is refused (development only)", NULL},
    {NULL},
};

/* The mount point of the first fsdax namespace that is mounted. */
static char *
find_dax_mount(GError **error)
{
    g_autoptr(DaxguestFacts) facts = daxguest_facts_gather(error);
    guint i;

    if (!facts)
        return NULL;
    for (i = 0; i < facts->pmems->len; i++) {
        const DaxguestPmemFacts *p = g_ptr_array_index(facts->pmems, i);

        if (p->mount_point)
            return g_strdup(p->mount_point);
    }
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
        "No DAX filesystem is mounted; fix: pass --dir DIR or --dev /dev/daxX.Y (see 'daxfile-guest check')");
    return NULL;
}

static int
cmd_bench(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxguestBenchReport) report = NULL;
    g_autofree char *dir = NULL;
    DaxguestFlushChoice choice;
    guint64 size = 0;
    int ret = CLI_EXIT_OK;

    if (!cli_check_target("bench", arg_dir, arg_dev, TRUE, &ret) ||
        (arg_size && !cli_parse_size("bench", "size", arg_size, &size, &ret)))
        return ret;
    if (!daxguest_flush_choice_detect(&choice, &error))
        return cli_report_error(error);
    if (arg_dev) {
        report = daxguest_bench_dev(arg_dev, size, &choice, &error);
    } else {
        dir = arg_dir ? g_strdup(arg_dir) : find_dax_mount(&error);
        report = dir ? daxguest_bench_dir(dir, size, arg_allow_non_dax, &choice,
                                          &error)
                     : NULL;
    }
    if (!report)
        return cli_report_error(error);
    if (arg_json) {
        cli_print_json(daxguest_bench_to_json(report));
    } else {
        g_autofree char *table = daxguest_bench_format_table(report);

        fputs(table, stdout);
    }
    return CLI_EXIT_OK;
}

const CliVerb cmd_bench_verb = {
    .name = "bench",
    .dispatch = cmd_bench,
    .summary = "Measure fault, flush and write costs",
    .params = "",
    .description =
        "Measure first-write fault latency (4 KiB and 2 MiB pages), flush+fence latency and write bandwidth. Under TCG only ratios mean anything.",
    .options = bench_options,
};

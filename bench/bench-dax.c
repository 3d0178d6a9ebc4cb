/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-dax: the measuring half of daxfile's benchmarks (bench/run). Runs on
 * the host and inside the VM harness's guests; one JSON object per
 * measurement on stdout, errors on stderr. The subcommands are documented
 * where they are done, in bench/lib (the daxbench library):
 *
 *   fault, populate   daxbench-fault.h (fault is daxfile-guest bench's
 *                     fault benchmark, guest-tools/lib/daxguest-bench.h)
 *   fill              daxbench-fill.h
 *   time              daxbench-time.h
 *   touch             daxbench-touch.h (bench/run guest's guest side)
 *   frag, extents     daxbench-extents.h
 *
 * Sizes: daxfile_size_parse() (4096, 2M, 2MiB).
 * Exit status: 0 measured, 1 failed, 2 usage error (time --append: CMD's).
 */
#include <stdio.h>

#include "daxbench-extents.h"
#include "daxbench-fault.h"
#include "daxbench-fill.h"
#include "daxbench-time.h"
#include "daxbench-touch.h"
#include "daxfile-size.h"
#include "daxfile-util.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
} BenchCommand;

static int
usage(void)
{
    fprintf(
        stderr,
        "usage: bench-dax fault PATH --mode 4k|2m --count N [--sync] [--offset BYTES]\n"
        "       bench-dax fill PATH SIZE raw-dd|raw-pwrite|falloc-dd|falloc-pwrite|falloc-populate|create\n"
        "           [--daxfile BIN] [--allow-non-dax]\n"
        "       bench-dax populate PATH --size BYTES [--sync]\n"
        "       bench-dax time [--append FILE] CMD [ARG...]\n"
        "       bench-dax frag A B --chunk BYTES --count N [--write]\n"
        "       bench-dax extents PATH [--repeat N]\n"
        "       bench-dax touch PATH --size BYTES [--fallocate] [--sync] [--marker]\n");
    return 2;
}

/* The error, reported once; exit status 1 */
static int
report(const GError *error)
{
    fprintf(stderr, "bench-dax: %s\n", error->message);
    return 1;
}

/* Print a measurement's line (takes @json), or report @error */
static int
print_line(char *json, const GError *error)
{
    g_autofree char *line = json;

    if (!line)
        return report(error);
    printf("%s\n", line);
    return 0;
}

static int
cmd_fault(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    DaxbenchFaultArgs args;
    char *json;

    if (!daxbench_fault_parse(argc, argv, &args))
        return usage();
    json = daxbench_fault(&args, &error);
    return print_line(json, error);
}

static int
cmd_fill(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    DaxbenchFillArgs args;
    char *json;

    if (!daxbench_fill_parse(argc, argv, &args))
        return usage();
    json = daxbench_fill(&args, &error);
    return print_line(json, error);
}

static int
cmd_populate(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    DaxbenchPopulateArgs args;
    char *json;

    if (!daxbench_populate_parse(argc, argv, &args))
        return usage();
    json = daxbench_populate(&args, &error);
    return print_line(json, error);
}

static int
cmd_touch(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    DaxbenchTouchArgs args;
    char *json;

    if (!daxbench_touch_parse(argc, argv, &args))
        return usage();
    json = daxbench_touch(&args, &error);
    return print_line(json, error);
}

static int
cmd_time(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    char *json;
    int status;

    if (argc >= 5 && STREQ(argv[2], "--append")) {
        status = daxbench_time_append(argv[3], argv + 4, &error);
        if (error)
            report(error);
        return status;
    }
    if (argc < 3)
        return usage();
    json = daxbench_time(argv + 2, &error);
    return print_line(json, error);
}

static int
cmd_frag(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    DaxbenchFragArgs args;

    if (!daxbench_frag_parse(argc, argv, &args))
        return usage();
    if (!daxbench_frag(&args, &error))
        return report(error);
    return 0;
}

static int
cmd_extents(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    guint64 repeat = 0;
    char *json;

    if (argc == 5 && STREQ(argv[3], "--repeat")) {
        if (!daxfile_size_parse(argv[4], &repeat, NULL))
            return usage();
    } else if (argc != 3) {
        return usage();
    }
    json = daxbench_extents(argv[2], repeat, &error);
    return print_line(json, error);
}

static const BenchCommand commands[] = {
    {"fault", cmd_fault}, {"fill", cmd_fill}, {"populate", cmd_populate},
    {"time", cmd_time},   {"frag", cmd_frag}, {"extents", cmd_extents},
    {"touch", cmd_touch},
};

int
main(int argc, char **argv)
{
    gsize i;

    if (argc < 2)
        return usage();
    for (i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (STREQ(argv[1], commands[i].name))
            return commands[i].run(argc, argv);
    }
    return usage();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-guest: inside a guest, check that persistent memory passthrough
 * really works, and prove that data survives reboots and crashes
 */
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "daxfile-util.h"
#include "guest-cli.h"

static const CliCommand commands[] = {
    {"check", cmd_check, "Check NVDIMM, namespace, DAX, MAP_SYNC, flushes"},
    {"write", cmd_write, "Write a checksummed pattern through MAP_SYNC"},
    {"verify", cmd_verify, "Verify the pattern; name the first bad offset"},
    {"locate", cmd_locate, "Tell where a byte of the pattern lives"},
    {"bench", cmd_bench, "Measure fault, flush and write costs"},
};

static void
print_usage(FILE *out)
{
    size_t i;

    fprintf(out, "Usage: daxfile-guest [--version] [--help] COMMAND "
                 "[ARGS...]\n\nCommands:\n");
    for (i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nSee 'daxfile-guest COMMAND --help' and "
                 "guest-tools/README.md.\n");
}

int
main(int argc, char **argv)
{
    size_t i;

    setlocale(LC_ALL, "");
    if (argc < 2) {
        fprintf(stderr, "daxfile-guest: missing command (see "
                        "'daxfile-guest --help')\n");
        return CLI_EXIT_USAGE;
    }
    if (STREQ(argv[1], "--help") || STREQ(argv[1], "-h") ||
        STREQ(argv[1], "help")) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (STREQ(argv[1], "--version") || STREQ(argv[1], "version")) {
        printf("daxfile-guest %s\n", DAXFILE_VERSION);
        return CLI_EXIT_OK;
    }
    for (i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (STREQ(argv[1], commands[i].name))
            return commands[i].func(argc - 1, argv + 1);
    }
    fprintf(stderr, "daxfile-guest: unknown command '%s' (see "
                    "'daxfile-guest --help')\n",
            argv[1]);
    return CLI_EXIT_USAGE;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile: provision, check and freeze files that back guest pmem
 */
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "daxfile-util.h"
#include "daxfilectl.h"

static const CliCommand commands[] = {
    {"create", cmd_create, "Make a new, provisioned file fit for static mode"},
    {"check", cmd_check, "Tell whether files can be made static"},
    {"status", cmd_status, "Show everything daxfile knows about files"},
    {"enable", cmd_enable, "Make a file static now (its consumer has it mapped)"},
    {"disable", cmd_disable, "Release static mode and compare the layout"},
    {"run", cmd_run, "Run a consumer; static while it has the files mapped"},
    {"attach", cmd_attach, "Attach a file to a libvirt domain as an nvdimm"},
    {"detach", cmd_detach, "Remove a file's nvdimm from a libvirt domain"},
    {"domain-xml", cmd_domain_xml, "Print the nvdimm device XML for a file"},
    {"list", cmd_list, "List the files held static"},
    {"repair", cmd_repair, "Finish interrupted operations, drop stale entries"},
    {"selftest", cmd_selftest, "Test whether the immutable guard is safe here"},
};

static void
print_usage(FILE *out)
{
    size_t i;

    fprintf(out, "Usage: daxfile [--version] [--help] COMMAND [ARGS...]\n\n"
                 "Commands:\n");
    for (i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nSee 'daxfile COMMAND --help' and daxfile(8).\n");
}

int
main(int argc, char **argv)
{
    size_t i;

    setlocale(LC_ALL, "");
    if (argc < 2) {
        fprintf(stderr, "daxfile: missing command (see 'daxfile --help')\n");
        return CLI_EXIT_USAGE;
    }
    if (STREQ(argv[1], "--help") || STREQ(argv[1], "-h") ||
        STREQ(argv[1], "help")) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (STREQ(argv[1], "--version") || STREQ(argv[1], "version")) {
        printf("daxfile %s\n", DAXFILE_VERSION);
        return CLI_EXIT_OK;
    }
    for (i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (STREQ(argv[1], commands[i].name))
            return commands[i].func(argc - 1, argv + 1);
    }
    fprintf(stderr, "daxfile: unknown command '%s' (see 'daxfile --help')\n",
            argv[1]);
    return CLI_EXIT_USAGE;
}

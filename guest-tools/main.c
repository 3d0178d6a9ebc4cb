/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-guest: inside a guest, check that persistent memory passthrough
 * really works, and prove that data survives reboots and crashes
 */
#include "guest-cli.h"

static const CliCommand commands[] = {
    {"check", cmd_check, "Check NVDIMM, namespace, DAX, MAP_SYNC, flushes"},
    {"write", cmd_write, "Write a checksummed pattern through MAP_SYNC"},
    {"verify", cmd_verify, "Verify the pattern; name the first bad offset"},
    {"locate", cmd_locate, "Tell where a byte of the pattern lives"},
    {"bench", cmd_bench, "Measure fault, flush and write costs"},
};

int
main(int argc, char **argv)
{
    cli_set_program("daxfile-guest");
    return cli_dispatch(commands, G_N_ELEMENTS(commands), argc, argv);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-guest: inside a guest, check that persistent memory passthrough
 * really works, and prove that data survives reboots and crashes
 */
#include "guest-cli.h"

static const CliVerb *const verbs[] = {
    &cmd_check_verb,  &cmd_write_verb, &cmd_verify_verb,
    &cmd_locate_verb, &cmd_bench_verb,
};

int
main(int argc, char **argv)
{
    cli_set_program("daxfile-guest");
    return cli_dispatch_verb(verbs, G_N_ELEMENTS(verbs), argc, argv);
}

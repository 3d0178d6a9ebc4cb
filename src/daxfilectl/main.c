/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile: provision, check and freeze files that back guest pmem
 */
#include "daxfilectl.h"

/* in the order of `daxfile --help`; each verb's argument counts, options
 * and help are in its cmd-*.c */
static const CliVerb *const verbs[] = {
    &cmd_create_verb,      &cmd_check_verb,       &cmd_status_verb,
    &cmd_enable_verb,      &cmd_disable_verb,     &cmd_run_verb,
    &cmd_virt_attach_verb, &cmd_virt_detach_verb, &cmd_virt_domain_xml_verb,
    &cmd_list_verb,        &cmd_repair_verb,      &cmd_selftest_verb,
    &cmd_wipe_verb,        &cmd_virt_watch_verb,
};

int
main(int argc, char **argv)
{
    cli_set_program("daxfile");
    return cli_dispatch_verb(verbs, G_N_ELEMENTS(verbs), argc, argv);
}

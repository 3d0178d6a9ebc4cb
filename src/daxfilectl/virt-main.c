/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-virt: the commands of daxfile that talk to libvirt (and
 * domain-xml, which shares their options), watch included. daxfile execs it for
 * them; it speaks and fails as daxfile does.
 */
#include "daxfilectl.h"

static const CliVerb *const verbs[] = {
    &cmd_attach_verb,
    &cmd_detach_verb,
    &cmd_domain_xml_verb,
    &cmd_watch_verb,
};

int
main(int argc, char **argv)
{
    cli_set_program("daxfile");
    return cli_dispatch_verb(verbs, G_N_ELEMENTS(verbs), argc, argv);
}

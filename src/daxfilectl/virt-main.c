/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-virt: the commands of daxfile that talk to libvirt (and
 * domain-xml, which shares their options), watch included. daxfile execs it for them;
 * it speaks and fails as daxfile does.
 */
#include "daxfilectl.h"

static const CliCommand commands[] = {
    {"attach", cmd_attach, "Attach a file to a libvirt domain as an nvdimm"},
    {"detach", cmd_detach, "Remove a file's nvdimm from a libvirt domain"},
    {"domain-xml", cmd_domain_xml, "Print the nvdimm device XML for a file"},
    {"watch", cmd_watch, "Wipe the files of domains when they are undefined"},
};

int
main(int argc, char **argv)
{
    cli_set_program("daxfile");
    return cli_dispatch(commands, G_N_ELEMENTS(commands), argc, argv);
}

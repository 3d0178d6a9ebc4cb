/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile: provision, check and freeze files that back guest pmem
 */
#include "daxfilectl.h"

static const CliCommand commands[] = {
    {"create", cmd_create, "Make a new, provisioned file fit for static mode"},
    {"check", cmd_check, "Tell whether files can be made static"},
    {"status", cmd_status, "Show everything daxfile knows about files"},
    {"enable", cmd_enable, "Make a file static now (its consumer has it mapped)"},
    {"disable", cmd_disable, "Release static mode and compare the layout"},
    {"run", cmd_run, "Run a consumer; static while it has the files mapped"},
    {"attach", cmd_virt, "Attach a file to a libvirt domain as an nvdimm"},
    {"detach", cmd_virt, "Remove a file's nvdimm from a libvirt domain"},
    {"domain-xml", cmd_virt, "Print the nvdimm device XML for a file"},
    {"list", cmd_list, "List the files held static"},
    {"repair", cmd_repair, "Finish interrupted operations, drop stale entries"},
    {"selftest", cmd_selftest, "Test whether the immutable guard is safe here"},
    {"wipe", cmd_wipe, "Zero a file no domain holds, durably, and prove it"},
    {"watch", cmd_virt, "Wipe the files of domains when they are undefined"},
};

int
main(int argc, char **argv)
{
    cli_set_program("daxfile");
    return cli_dispatch(commands, G_N_ELEMENTS(commands), argc, argv);
}

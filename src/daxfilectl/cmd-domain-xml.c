/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile domain-xml PATH ...: print the device XML, no libvirt involved
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "daxfile-attach.h"
#include "daxfile-domxml.h"
#include "daxfile-escape.h"
#include "daxfile-nvdimm.h"
#include "daxfilectl.h"

static CliSpecArgs arg_spec;
static gboolean arg_allow_non_dax;
static gboolean arg_no_check;

static const GOptionEntry xml_options[] = {
    CLI_SPEC_OPTIONS(arg_spec),
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Accept a file without DAX (development)", NULL},
    {"no-check", 0, 0, G_OPTION_ARG_NONE, &arg_no_check,
     "Do not check the file (it may not exist yet: give --size), only the options; attach and the hook check it later",
     NULL},
    {NULL},
};

static int
cmd_domain_xml(int argc, char **argv)
{
    g_auto(DaxfileNvdimm) spec = {0};
    g_autoptr(GError) error = NULL;
    g_autofree char *path = NULL;
    g_autofree char *name = NULL;
    g_autofree char *xml = NULL;
    DaxfileAttachOptions opts = {.create = FALSE,
                                 .align_given = arg_spec.align != NULL,
                                 .allow_non_dax = arg_allow_non_dax};
    struct stat st;
    int ret = CLI_EXIT_OK;

    path = g_canonicalize_filename(argv[1], NULL);
    name = daxfile_escape(path);
    if (!cli_spec_from_options("domain-xml", &arg_spec, path, &spec, &ret))
        return ret;
    if (arg_no_check) {
        if (!spec.size && stat(path, &st) == 0)
            spec.size = (guint64)st.st_size;
        if (!spec.size)
            return cli_usage_error(
                "domain-xml", "'%s' does not exist; fix: give --size", name);
        if (!daxfile_attach_check_settings(&spec, &error))
            return cli_report_error(error);
        fprintf(
            stderr,
            "%s domain-xml: '%s' not checked (--no-check); attach and the hook will check it\n",
            cli_program(), name);
    } else {
        /* only for the hint: the open below fails on its own */
        if (lstat(path, &st) < 0 && errno == ENOENT)
            return cli_usage_error(
                "domain-xml",
                "'%s' does not exist; fix: make it with 'daxfile create', or give --no-check and --size for the XML of a file not made yet",
                name);
        if (!daxfile_attach_check(&spec, &opts, NULL, &error))
            return cli_report_error(error);
    }
    xml = daxfile_nvdimm_format(&spec, &error);
    if (!xml)
        return cli_report_error(error);
    fputs(xml, stdout);
    return CLI_EXIT_OK;
}

const CliVerb cmd_domain_xml_verb = {
    .name = "domain-xml",
    .min_args = 1,
    .max_args = 1,
    .dispatch = cmd_domain_xml,
    .summary = CMD_DOMAIN_XML_SUMMARY,
    .params = "PATH",
    .description =
        "Print the <memory model='nvdimm'> (or 'virtio-pmem') device XML for PATH (for virsh attach-device or a domain definition), after the checks attach makes.",
    .options = xml_options,
    .too_few = "expected exactly one PATH",
    .too_many = "expected exactly one PATH",
};

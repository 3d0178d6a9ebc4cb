/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile attach DOMAIN PATH [--create --size S] ...: wire a file as an nvdimm
 *                                 (or, --model virtio-pmem, a virtio-pmem
 * device)
 */
#include <stdio.h>

#include "daxfile-attach.h"
#include "daxfile-conf.h"
#include "daxfile-nvdimm.h"
#include "daxfile-virt.h"
#include "daxfilectl.h"

static CliSpecArgs arg_spec;
static char *arg_uri;
static gboolean arg_create;
static gboolean arg_allow_non_dax;

static const GOptionEntry attach_options[] = {
    CLI_SPEC_OPTIONS(arg_spec),
    {"uri", 'c', 0, G_OPTION_ARG_STRING, &arg_uri,
     "libvirt connection URI (default: libvirt's default)", "URI"},
    {"create", 0, 0, G_OPTION_ARG_NONE, &arg_create,
     "Create and provision the file first (needs --size)", NULL},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Accept a file without DAX (development)", NULL},
    {NULL},
};

static const char *
attached_how(const DaxfileAttachResult *result)
{
    if (result->transient)
        return "live";
    return result->live ? "live and persistent" : "persistent";
}

static int
cmd_attach(int argc, char **argv)
{
    g_auto(DaxfileNvdimm) spec = {0};
    g_auto(DaxfileAttachResult) result = {0};
    g_autoptr(DaxfileReport) created = NULL;
    g_autoptr(DaxfileConf) conf = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *path = NULL;
    DaxfileAttachOptions opts = {.create = arg_create,
                                 .align_given = arg_spec.align != NULL,
                                 .allow_non_dax = arg_allow_non_dax};
    int ret = CLI_EXIT_OK;

    if (arg_create && !arg_spec.size)
        return cli_usage_error("attach", "--create needs --size");
    path = g_canonicalize_filename(argv[2], NULL);
    if (!cli_spec_from_options("attach", &arg_spec, path, &spec, &ret))
        return ret;
    if (!daxfile_attach_create(&spec, &opts, &created, &error))
        return cli_report_error(error);
    if (created)
        fprintf(stderr, "created '%s'\n", created->path);
    if (!daxfile_attach_check(&spec, &opts, created, &error) ||
        !(conf = daxfile_conf_load(NULL, &error)) ||
        !daxfile_virt_attach(arg_uri, argv[1], conf, &spec, &result, &error))
        return cli_report_error(error);
    fprintf(stderr, "attached '%s' to domain '%s' (%s)%s%s\n", path, argv[1],
            attached_how(&result), result.note ? ": " : "",
            result.note ? result.note : "");
    return CLI_EXIT_OK;
}

const CliVerb cmd_attach_verb = {
    .name = "attach",
    .min_args = 2,
    .max_args = 2,
    .dispatch = cmd_attach,
    .summary = CMD_ATTACH_SUMMARY,
    .params = "DOMAIN PATH",
    .description =
        "Attach PATH to DOMAIN as an nvdimm or a virtio-pmem device (persistent; also live when the running domain can hot-plug one).",
    .options = attach_options,
    .too_few = "expected DOMAIN and PATH",
    .too_many = "expected DOMAIN and PATH",
};

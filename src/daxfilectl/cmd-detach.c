/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile detach DOMAIN PATH: remove it from the definition
 */
#include <stdio.h>

#include "daxfile-fd.h"
#include "daxfile-virt.h"
#include "daxfile-wipe.h"
#include "daxfilectl.h"

static char *arg_uri;
static gboolean arg_wipe;

static const GOptionEntry detach_options[] = {
    {"uri", 'c', 0, G_OPTION_ARG_STRING, &arg_uri,
     "libvirt connection URI (default: libvirt's default)", "URI"},
    {"wipe", 0, 0, G_OPTION_ARG_NONE, &arg_wipe,
     "Then wipe the file as 'daxfile wipe' does (refused before anything changes while the file is held)",
     NULL},
    {NULL},
};

static int
cmd_detach(int argc, char **argv)
{
    g_auto(DaxfileAttachResult) result = {0};
    g_autoptr(GError) error = NULL;
    g_autofree char *path = NULL;
    g_autoptr(DaxfileFile) f = NULL;

    path = g_canonicalize_filename(argv[2], NULL);
    if (arg_wipe) {
        /* opened once, by the name given, and checked before the domain
         * changes: a held file refuses both */
        f = daxfile_wipe_open(argv[2], FALSE, &error);
        if (!f || !daxfile_wipe_check(f, &error))
            return cli_report_error(error);
    }
    if (!daxfile_virt_detach(arg_uri, argv[1], path, &result, &error))
        return cli_report_error(error);
    fprintf(stderr, "detached '%s' from domain '%s'%s%s\n", path, argv[1],
            result.note ? ": " : "", result.note ? result.note : "");
    return arg_wipe ? cli_wipe(f, FALSE) : CLI_EXIT_OK;
}

const CliVerb cmd_detach_verb = {
    .name = "detach",
    .min_args = 2,
    .max_args = 2,
    .dispatch = cmd_detach,
    .summary = CMD_DETACH_SUMMARY,
    .params = "DOMAIN PATH",
    .description = "Remove the nvdimm backed by PATH from DOMAIN's definition.",
    .options = detach_options,
    .too_few = "expected DOMAIN and PATH",
    .too_many = "expected DOMAIN and PATH",
};

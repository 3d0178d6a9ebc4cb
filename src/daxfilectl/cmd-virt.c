/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile attach / detach / domain-xml: run by daxfile-virt, the one
 * binary of daxfile that links libvirt, so that every other command starts
 * without loading it (libvirt and its closure are most of daxfile's
 * shared libraries and of its start time).
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "config.h"
#include "daxfilectl.h"

/* Next to this binary (a build tree), else where it is installed. The
 * binary's own directory, not argv[0]: nothing the caller can point
 * elsewhere. */
static char *
virt_helper(void)
{
    g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);

    if (self) {
        g_autofree char *dir = g_path_get_dirname(self);
        g_autofree char *sibling = g_build_filename(dir, "daxfile-virt", NULL);

        if (g_file_test(sibling, G_FILE_TEST_IS_EXECUTABLE))
            return g_steal_pointer(&sibling);
    }
    return g_build_filename(DAXFILE_LIBEXECDIR, "daxfile-virt", NULL);
}

static int
cmd_virt(int argc, char **argv)
{
    g_autofree char *helper = virt_helper();
    g_autofree char **args = g_new0(char *, argc + 2);
    int i;

    args[0] = (char *)"daxfile-virt";
    for (i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    fflush(NULL);
    execv(helper, args);
    fprintf(stderr, "%s %s: cannot run '%s': %s (reinstall daxfile)\n",
            cli_program(), argv[0], helper, g_strerror(errno));
    return CLI_EXIT_FAILURE;
}

/* daxfile's entries for the verbs daxfile-virt runs (virt-main.c) */
#define VIRT_VERB(verb, text)                                                  \
    {                                                                          \
        .name = verb, .max_args = CLI_ARGS_ANY, .flags = CLI_VERB_PASSTHROUGH, \
        .dispatch = cmd_virt, .summary = text,                                 \
    }

const CliVerb cmd_virt_attach_verb = VIRT_VERB("attach", CMD_ATTACH_SUMMARY);
const CliVerb cmd_virt_detach_verb = VIRT_VERB("detach", CMD_DETACH_SUMMARY);
const CliVerb cmd_virt_domain_xml_verb =
    VIRT_VERB("domain-xml", CMD_DOMAIN_XML_SUMMARY);
const CliVerb cmd_virt_watch_verb = VIRT_VERB("watch", CMD_WATCH_SUMMARY);

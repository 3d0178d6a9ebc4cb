/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-verbs.h: the verb table of daxfile, daxfile-virt and daxfile-guest
 * (systemd's src/shared/verbs.h, with each verb's options): the table
 * says how many arguments a verb takes, so that no verb counts its own.
 */
#pragma once

#include <glib.h>

/* max_args of a verb that takes any number of arguments */
#define CLI_ARGS_ANY G_MAXUINT

typedef enum {
    CLI_VERB_DEFAULT = 0,
    /* argv goes to the verb as given: no option parsing, no count (a
     * verb another binary runs, as daxfile execs daxfile-virt attach) */
    CLI_VERB_PASSTHROUGH = 1 << 0,
    /* "VERB [OPTIONS] -- COMMAND [ARGS...]": options are parsed before
     * "--" only, where no argument may stand; the arguments the verb gets
     * and the table counts are COMMAND and its ARGS */
    CLI_VERB_COMMAND = 1 << 1,
} CliVerbFlags;

typedef struct {
    const char *name;
    guint min_args; /* positional arguments, after option parsing */
    guint max_args; /* CLI_ARGS_ANY: no limit */
    CliVerbFlags flags;
    /* argv[0] is the verb's name, argv[1..argc-1] its arguments (between
     * min_args and max_args of them), NULL-terminated; the options are
     * parsed into @options' variables. Returns the exit status. */
    int (*dispatch)(int argc, char **argv);
    const char *summary;     /* its line in `PROGRAM --help` */
    const char *params;      /* its arguments in `PROGRAM VERB --help` */
    const char *description; /* the paragraph of `PROGRAM VERB --help` */
    const GOptionEntry *options;
    /* the usage errors of a wrong count; required when min_args > 0;
     * too_many NULL: "unexpected argument 'ARG'" */
    const char *too_few;
    const char *too_many;
} CliVerb;

/* Run the verb argv[1] names: --help/--version/help of the program, then
 * the verb's options (--help and --version on every verb) and its
 * argument count, each a usage error (exit 2) of one line. */
int cli_dispatch_verb(const CliVerb *const *verbs, gsize n_verbs, int argc,
                      char **argv);

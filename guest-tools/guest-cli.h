/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guest-cli.h: shared pieces of the daxfile-guest command line
 */
#pragma once

#include <json-glib/json-glib.h>

#include "cli-common.h"
#include "daxguest-cpu.h"

/* A number in decimal or 0x-hex (daxfile_size_parse_flags()'s
 * DAXFILE_SIZE_NUMBER); usage error if not. */
gboolean cli_parse_number(const char *cmd, const char *option,
                          const char *value, guint64 *ret_value, int *ret_exit);

/* Exactly one of --dir and --dev (or neither when @optional). */
gboolean cli_check_target(const char *cmd, const char *dir, const char *dev,
                          gboolean optional, int *ret_exit);

/* --dir, --dev and --json of the commands that work on a target (write,
 * verify, locate), over the command's own variables */
#define CLI_TARGET_OPTIONS(dir, dev, json)                                     \
    {"dir",  'd',                                                              \
     0,      G_OPTION_ARG_FILENAME,                                            \
     &(dir), "Use DIR/daxfile-guest.dat on a DAX filesystem",                  \
     "DIR"},                                                                   \
        {"dev",                                                                \
         'D',                                                                  \
         0,                                                                    \
         G_OPTION_ARG_FILENAME,                                                \
         &(dev),                                                               \
         "Use a device-dax device (its data is overwritten by write)",         \
         "/dev/daxX.Y"},                                                       \
    {                                                                          \
        "json", 'j', 0, G_OPTION_ARG_NONE, &(json), "Print JSON", NULL         \
    }

/* One object wrapped in an array, as every --json output is. */
JsonNode *cli_json_array_of(JsonNode *object);

/* The verbs (cli-verbs.h); they take options only, no argument */
extern const CliVerb cmd_check_verb;
extern const CliVerb cmd_write_verb;
extern const CliVerb cmd_verify_verb;
extern const CliVerb cmd_locate_verb;
extern const CliVerb cmd_bench_verb;

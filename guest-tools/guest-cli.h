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
                          const char *value, guint64 *ret_value,
                          int *ret_exit);

/* Exactly one of --dir and --dev (or neither when @optional). */
gboolean cli_check_target(const char *cmd, const char *dir, const char *dev,
                          gboolean optional, int *ret_exit);

/* One object wrapped in an array, as every --json output is. */
JsonNode *cli_json_array_of(JsonNode *object);

/* The verbs (cli-verbs.h); they take options only, no argument */
extern const CliVerb cmd_check_verb;
extern const CliVerb cmd_write_verb;
extern const CliVerb cmd_verify_verb;
extern const CliVerb cmd_locate_verb;
extern const CliVerb cmd_bench_verb;

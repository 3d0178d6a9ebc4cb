/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guest-cli.h: shared pieces of the daxfile-guest command line
 */
#pragma once

#include <json-glib/json-glib.h>

#include "cli-common.h"
#include "daxguest-cpu.h"

/* cli_parse() (src/cli), and no positional argument: the guest commands
 * take options only. */
gboolean guest_cli_parse(const char *cmd, const char *summary,
                         const GOptionEntry *entries, int *argc, char ***argv,
                         int *ret_exit);

/* A number in decimal or 0x-hex; usage error if not. */
gboolean cli_parse_number(const char *cmd, const char *option,
                          const char *value, guint64 *ret_value,
                          int *ret_exit);

/* Exactly one of --dir and --dev (or neither when @optional). */
gboolean cli_check_target(const char *cmd, const char *dir, const char *dev,
                          gboolean optional, int *ret_exit);

/* libpmem's flush choice here (CPUID, environment, persistence domain). */
gboolean cli_flush_choice(DaxguestFlushChoice *ret_choice, GError **error);

/* One object wrapped in an array, as every --json output is. */
JsonNode *cli_json_array_of(JsonNode *object);

int cmd_check(int argc, char **argv);
int cmd_write(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_locate(int argc, char **argv);
int cmd_bench(int argc, char **argv);

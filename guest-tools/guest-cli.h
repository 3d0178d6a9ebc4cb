/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guest-cli.h: shared pieces of the daxfile-guest command line
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-cpu.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAILURE 1
#define CLI_EXIT_USAGE 2

typedef struct {
    const char *name;
    int (*func)(int argc, char **argv);
    const char *summary;
} CliCommand;

/* Parse the options of @cmd. --help prints the help and returns FALSE with
 * *ret_exit = 0; a usage error prints one line and returns FALSE with
 * *ret_exit = 2. */
gboolean cli_parse(const char *cmd, const char *params, const char *summary,
                   const GOptionEntry *entries, int *argc, char ***argv,
                   int *ret_exit);

/* "daxfile-guest CMD: MESSAGE (see 'daxfile-guest CMD --help')"; 2 */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

/* "daxfile-guest: MESSAGE" on stderr; returns 1. */
int cli_report_error(const GError *error);

/* A size ("64M"), or a number in decimal or 0x-hex; usage error if not. */
gboolean cli_parse_size(const char *cmd, const char *option,
                        const char *value, guint64 *ret_size, int *ret_exit);
gboolean cli_parse_number(const char *cmd, const char *option,
                          const char *value, guint64 *ret_value,
                          int *ret_exit);

/* Exactly one of --dir and --dev (or neither when @optional). */
gboolean cli_check_target(const char *cmd, const char *dir, const char *dev,
                          gboolean optional, int *ret_exit);

/* libpmem's flush choice here (CPUID, environment, persistence domain). */
gboolean cli_flush_choice(DaxfileFlushChoice *ret_choice, GError **error);

/* @node on stdout as pretty JSON; takes @node. */
void cli_print_json(JsonNode *node);

/* One object wrapped in an array, as every --json output is. */
JsonNode *cli_json_array_of(JsonNode *object);

int cmd_check(int argc, char **argv);
int cmd_write(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_locate(int argc, char **argv);
int cmd_bench(int argc, char **argv);

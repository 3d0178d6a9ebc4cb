/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-common.h: the command-line plumbing daxfile and daxfile-guest share
 * (systemd's discipline: one-line errors, exit 0/1/2, --help and --version
 * on every command, usage errors say "see --help" instead of dumping it)
 */
#pragma once

#include <json-glib/json-glib.h>

#include "cli-verbs.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAILURE 1
#define CLI_EXIT_USAGE 2

/* The program name in messages ("daxfile", "daxfile-guest") */
void cli_set_program(const char *program);
const char *cli_program(void);

/* "PROGRAM CMD: MESSAGE (see 'PROGRAM CMD --help')" on stderr; returns 2 */
int cli_usage_error(const char *cmd, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* "PROGRAM: MESSAGE" on stderr, once; returns 1 */
int cli_report_error(const GError *error);

/* --OPTION SIZE ("2M", "4096"); a usage error when it is not one */
gboolean cli_parse_size(const char *cmd, const char *option, const char *value,
                        guint64 *ret_size, int *ret_exit);

/* @node (taken) on stdout as pretty JSON */
void cli_print_json(JsonNode *node);

/* A table for people (systemd's format-table, in small): @header's @ncols
 * titles, then @cells (row after row, @ncols each); every column as wide
 * as its widest cell (in characters), two spaces apart, the last not
 * padded. Nothing at all when @cells is empty. */
void cli_print_table(const char *const *header, guint ncols,
                     const GPtrArray *cells);

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfilectl.h: shared pieces of the daxfile command line
 */
#pragma once

#include <glib.h>

#include "cli-common.h"
#include "daxfile-report.h"
#include "daxfile-static.h"

/* --mechanism: auto (default), kernel, immutable-guard or verified-only */
gboolean cli_parse_mechanism(const char *cmd, const char *value,
                             DaxfileMechanism *ret_mech, int *ret_exit);

/* --align (default 2 MiB): a power of two, at least the page size */
gboolean cli_parse_align(const char *cmd, const char *value,
                         guint64 *ret_align, int *ret_exit);

typedef struct {
    guint64 align;
    gboolean allow_non_dax;
    gboolean follow;
    gboolean json;
    gboolean fail_unready; /* exit 1 when a file is not static-ready */
    gboolean with_static;  /* add the static-mode state */
    void (*print)(const DaxfileReport *report, gboolean separator);
    JsonNode *(*to_json)(const DaxfileReport *report);
} CliReportOptions;

/* Open @path safely and build its report. */
DaxfileReport *cli_build_report(const char *path, const CliReportOptions *opts,
                                GError **error);

/* Build a report for each path and print it (human or one JSON array).
 * A path that cannot be opened is reported and makes the exit status 1. */
int cli_for_each_report(int argc, char **argv, const CliReportOptions *opts);

/* Human report for `status`. */
void cli_print_status(const DaxfileReport *report);
void cli_print_problems(const DaxfileReport *report);

/* Summaries of enable/disable on stderr (shared by enable, disable, run);
 * cli_print_disabled returns 1 when the layout changed while static. */
void cli_print_enabled(const char *path, const DaxfileEnableResult *result,
                       const char *owner);
int cli_print_disabled(const char *path, const DaxfileDisableResult *result);

int cmd_create(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_enable(int argc, char **argv);
int cmd_disable(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_selftest(int argc, char **argv);
int cmd_wipe(int argc, char **argv);

/* the exit status of a command stopped by SIGINT, as a shell reports it */
#define CLI_EXIT_INTERRUPTED 130

/* wipe @fd (daxfile_wipe_open()) as `daxfile wipe` does (signals,
 * progress, the result line or @json), returning the exit status */
int cli_wipe(int fd, const char *path, gboolean json);
/* attach, detach, domain-xml: exec daxfile-virt (cmd-virt.c), which runs
 * these three */
int cmd_virt(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_domain_xml(int argc, char **argv);
int cmd_watch(int argc, char **argv);

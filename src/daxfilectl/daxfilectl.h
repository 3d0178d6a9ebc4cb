/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfilectl.h: shared pieces of the daxfile command line
 */
#pragma once

#include <glib.h>

#include "cli-common.h"
#include "daxfile-nvdimm.h"
#include "daxfile-report.h"
#include "daxfile-static.h"

/* --mechanism: auto (default), kernel, immutable-guard or verified-only */
gboolean cli_parse_mechanism(const char *cmd, const char *value,
                             DaxfileMechanism *ret_mech, int *ret_exit);

/* --align (default 2 MiB): a power of two, at least the page size */
gboolean cli_parse_align(const char *cmd, const char *value, guint64 *ret_align,
                         int *ret_exit);

/* The device options of attach and domain-xml (cli-spec.c): each command
 * keeps its own CliSpecArgs, CLI_SPEC_OPTIONS() of it first in its table */
typedef struct {
    char *model;
    char *size;
    char *align;
    char *label;
    gint node;
    gboolean readonly;
} CliSpecArgs;

#define CLI_SPEC_OPTIONS(a)                                                    \
    {"model",    0,                                                            \
     0,          G_OPTION_ARG_STRING,                                          \
     &(a).model, "Device model: nvdimm (default) or virtio-pmem",              \
     "MODEL"},                                                                 \
        {"size",                                                               \
         's',                                                                  \
         0,                                                                    \
         G_OPTION_ARG_STRING,                                                  \
         &(a).size,                                                            \
         "Device size, equal to the file's size (default: the file's size)",   \
         "SIZE"},                                                              \
        {"align",                                                              \
         'a',                                                                  \
         0,                                                                    \
         G_OPTION_ARG_STRING,                                                  \
         &(a).align,                                                           \
         "Device alignsize (nvdimm), and the page size the file must support " \
         "(default 2M)",                                                       \
         "SIZE"},                                                              \
        {"label-size",                                                         \
         'l',                                                                  \
         0,                                                                    \
         G_OPTION_ARG_STRING,                                                  \
         &(a).label,                                                           \
         "NVDIMM label area at the end of the file (at least 128K; nvdimm "    \
         "only)",                                                              \
         "SIZE"},                                                              \
        {"node",    'n',                                                       \
         0,         G_OPTION_ARG_INT,                                          \
         &(a).node, "Guest NUMA node (default 0; nvdimm only)",                \
         "N"},                                                                 \
    {                                                                          \
        "readonly", 0, 0, G_OPTION_ARG_NONE, &(a).readonly,                    \
            "Give the guest a read-only nvdimm (nvdimm only)", NULL            \
    }

/* Fill @spec, the device daxfile makes for @path, from @args; FALSE and
 * the exit status of a usage error in *@ret_exit when they make none */
gboolean cli_spec_from_options(const char *cmd, const CliSpecArgs *args,
                               const char *path, DaxfileNvdimm *spec,
                               int *ret_exit);

typedef struct {
    guint64 align;
    gboolean allow_non_dax;
    gboolean follow;
    gboolean json;
    gboolean fail_unready; /* exit 1 when a file is not static-ready */
    gboolean with_static;  /* read each file's static-mode state too */
    /* @state: the file's static-mode state, or NULL (!with_static) */
    void (*print)(const DaxfileReport *report, const DaxfileStaticState *state,
                  gboolean separator);
    JsonNode *(*to_json)(const DaxfileReport *report,
                         const DaxfileStaticState *state);
    /* a device-dax device given as a path: status reports on it (adds its
     * object to @json, or prints it when @json is NULL); NULL: refused as
     * not a regular file */
    gboolean (*devdax)(const char *path, JsonBuilder *json, gboolean separator,
                       GError **error);
} CliReportOptions;

/* Build a report for each path and print it (human or one JSON array).
 * A path that cannot be opened is reported and makes the exit status 1. */
int cli_for_each_report(int argc, char **argv, const CliReportOptions *opts);

/* `status` (cli-print.c): a file's report and its static-mode state, for
 * people and as JSON (the report's object with the state as "static") */
void cli_print_status(const DaxfileReport *report,
                      const DaxfileStaticState *state);
JsonNode *cli_status_to_json(const DaxfileReport *report,
                             const DaxfileStaticState *state);
void cli_print_problems(const DaxfileReport *report);
/* the "medium:" line of status (daxfile-medium.h) of the block device
 * @dev, or with @chr of the device-dax device @dev */
void cli_print_medium(dev_t dev, gboolean chr);
/* the "static:" lines of status, the file's or a device-dax device's */
void cli_print_static(const DaxfileStaticState *state);

/* Summaries of enable/disable on stderr (shared by enable, disable, run);
 * cli_print_disabled returns 1 when the layout changed while static. */
void cli_print_enabled(const char *path, const DaxfileEnableResult *result,
                       const char *owner);
int cli_print_disabled(const char *path, const DaxfileDisableResult *result);

/* the exit status of a command stopped by SIGINT, as a shell reports it */
#define CLI_EXIT_INTERRUPTED 130

/* wipe @fd (daxfile_wipe_open()) as `daxfile wipe` does (signals,
 * progress, the result line or @json), returning the exit status */
int cli_wipe(const DaxfileFile *f, gboolean json);

/* daxfile repair's part for wipes: finish every wipe owed that needs no
 * libvirt (daxfile_wipe_resume()), one line each on stderr; *@ret_any:
 * there was a record. CLI_EXIT_FAILURE when one is left. */
int cli_wipe_resume(gboolean *ret_any);

/* The verbs (cli-verbs.h): daxfile's */
extern const CliVerb cmd_create_verb;
extern const CliVerb cmd_check_verb;
extern const CliVerb cmd_status_verb;
extern const CliVerb cmd_enable_verb;
extern const CliVerb cmd_disable_verb;
extern const CliVerb cmd_run_verb;
extern const CliVerb cmd_list_verb;
extern const CliVerb cmd_repair_verb;
extern const CliVerb cmd_selftest_verb;
extern const CliVerb cmd_wipe_verb;
/* daxfile's attach, detach, domain-xml and watch: exec daxfile-virt
 * (cmd-virt.c), which runs the four below */
extern const CliVerb cmd_virt_attach_verb;
extern const CliVerb cmd_virt_detach_verb;
extern const CliVerb cmd_virt_domain_xml_verb;
extern const CliVerb cmd_virt_watch_verb;
/* daxfile-virt's */
extern const CliVerb cmd_attach_verb;
extern const CliVerb cmd_detach_verb;
extern const CliVerb cmd_domain_xml_verb;
extern const CliVerb cmd_watch_verb;

/* the summaries the verbs of daxfile-virt have in both binaries */
#define CMD_ATTACH_SUMMARY "Attach a file to a libvirt domain as an nvdimm"
#define CMD_DETACH_SUMMARY "Remove a file's nvdimm from a libvirt domain"
#define CMD_DOMAIN_XML_SUMMARY "Print the nvdimm device XML for a file"
#define CMD_WATCH_SUMMARY "Guard hot-plugs, wipe files of undefined domains"

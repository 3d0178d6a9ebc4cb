/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>

#include "config.h"
#include "daxfile-align.h"
#include "daxfile-devdax.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-size.h"
#include "daxfile-static.h"
#include "daxfile-util.h"
#include "daxfilectl.h"

gboolean
cli_parse_align(const char *cmd, const char *value, guint64 *ret_align,
                int *ret_exit)
{
    g_autoptr(GError) error = NULL;

    if (!value) {
        *ret_align = DAXFILE_DEFAULT_ALIGN;
        return TRUE;
    }
    if (!cli_parse_size(cmd, "align", value, ret_align, ret_exit))
        return FALSE;
    if (!daxfile_align_check(*ret_align, &error)) {
        *ret_exit = cli_usage_error(cmd, "--align: %s", error->message);
        return FALSE;
    }
    return TRUE;
}

/* Open @path safely and build its report, and (opts->with_static) read
 * its static-mode state into *@ret_state */
static DaxfileReport *
build_report(const char *path, const CliReportOptions *opts,
             DaxfileStaticState **ret_state, GError **error)
{
    g_autoptr(DaxfileFile) f = daxfile_file_open(
        path, opts->follow ? DAXFILE_OPEN_FOLLOW : DAXFILE_OPEN_READ, error);
    DaxfileReport *report;

    if (!f)
        return NULL;
    report = daxfile_report_build(f, opts->align, opts->allow_non_dax, error);
    if (report && opts->with_static)
        *ret_state = daxfile_static_state_read(f, report);
    return report;
}

int
cli_for_each_report(int argc, char **argv, const CliReportOptions *opts)
{
    g_autoptr(JsonBuilder) json = json_builder_new();
    g_autoptr(JsonNode) root = NULL;
    int ret = CLI_EXIT_OK;
    int i;

    json_builder_begin_array(json);
    for (i = 0; i < argc; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(DaxfileStaticState) state = NULL;
        g_autoptr(DaxfileReport) report = NULL;

        if (opts->devdax && daxfile_devdax_is(argv[i])) {
            if (!opts->devdax(argv[i], opts->json ? json : NULL, i > 0, &error))
                ret = cli_report_error(error);
            continue;
        }
        report = build_report(argv[i], opts, &state, &error);
        if (!report) {
            ret = cli_report_error(error);
            continue;
        }
        if (opts->fail_unready && !report->static_ready)
            ret = CLI_EXIT_FAILURE;
        if (opts->json)
            json_builder_add_value(json, opts->to_json(report, state));
        else
            opts->print(report, state, i > 0);
    }
    json_builder_end_array(json);
    root = json_builder_get_root(json);
    if (opts->json)
        cli_print_json(g_steal_pointer(&root));
    return ret;
}

gboolean
cli_parse_mechanism(const char *cmd, const char *value,
                    DaxfileMechanism *ret_mech, int *ret_exit)
{
    *ret_mech = DAXFILE_MECH_NONE;
    if (!value || STREQ(value, "auto"))
        return TRUE;
    if (daxfile_mechanism_from_string(value, ret_mech) &&
        *ret_mech != DAXFILE_MECH_NONE && *ret_mech != DAXFILE_MECH_DEVICE_DAX)
        return TRUE;
    *ret_exit = cli_usage_error(
        cmd,
        "unknown --mechanism '%s'; fix: use auto, kernel, immutable-guard or verified-only",
        value);
    return FALSE;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-guest check [--json|--tap]
 */
#include <stdio.h>

#include "daxguest-checks.h"
#include "guest-cli.h"

static gboolean arg_json;
static gboolean arg_tap;

static const GOptionEntry check_options[] = {
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json,
     "Print a JSON array of {check, subject, result, detail, hint}", NULL},
    {"tap", 't', 0, G_OPTION_ARG_NONE, &arg_tap,
     "Print TAP: FAIL is 'not ok', WARN is 'ok' with the hint as a comment",
     NULL},
    {NULL},
};

static void
print_summary(const GPtrArray *checks)
{
    guint counts[3] = {0, 0, 0};
    guint i;

    for (i = 0; i < checks->len; i++) {
        const DaxguestCheck *c = g_ptr_array_index((GPtrArray *)checks, i);

        counts[c->result]++;
    }
    fprintf(
        stderr,
        "daxfile-guest: %u checks: %u passed, %u with a warning, %u failed\n",
        checks->len, counts[DAXGUEST_CHECK_PASS], counts[DAXGUEST_CHECK_WARN],
        counts[DAXGUEST_CHECK_FAIL]);
}

static int
cmd_check(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxguestFacts) facts = NULL;
    g_autoptr(GPtrArray) checks = NULL;
    g_autofree char *text = NULL;

    if (arg_json && arg_tap)
        return cli_usage_error("check", "--json and --tap exclude each other");
    facts = daxguest_facts_gather(&error);
    if (!facts)
        return cli_report_error(error);
    checks = daxguest_checks_run(facts);
    if (arg_json) {
        cli_print_json(daxguest_checks_to_json(checks));
    } else {
        text = arg_tap ? daxguest_checks_format_tap(checks)
                       : daxguest_checks_format_text(checks);
        fputs(text, stdout);
    }
    if (!arg_json && !arg_tap)
        print_summary(checks);
    return daxguest_checks_failed(checks) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

const CliVerb cmd_check_verb = {
    .name = "check",
    .dispatch = cmd_check,
    .summary = "Check NVDIMM, namespace, DAX, MAP_SYNC, flushes",
    .params = "",
    .description =
        "Check that persistent memory passthrough works in this guest: NVDIMM, namespace mode and alignment, persistence domain, DAX mount, MAP_SYNC, 2 MiB faults, device-dax, flush instructions. Exit 1 when a check fails.",
    .options = check_options,
};

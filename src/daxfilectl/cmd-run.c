/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile run --file PATH... -- COMMAND ARGS...
 *
 * Start the consumer, wait until it (or a descendant) has every file
 * mapped, engage static mode, release it when the consumer exits, and exit
 * with the consumer's status (daxfile-run.h does it all).
 */
#include "daxfile-run.h"
#include "daxfilectl.h"

static char **arg_files;
static char *arg_owner;
static char *arg_align;
static char *arg_mechanism;
static gint arg_timeout = 120;
static gboolean arg_allow_non_dax;

static const GOptionEntry run_options[] = {
    {"file", 'f', 0, G_OPTION_ARG_FILENAME_ARRAY, &arg_files,
     "A file the command maps (repeat for several)", "PATH"},
    {"owner", 'o', 0, G_OPTION_ARG_STRING, &arg_owner,
     "Owner name in the registry (default: pid:<command's pid>)", "NAME"},
    {"align", 'a', 0, G_OPTION_ARG_STRING, &arg_align,
     "Page size the layout must support (default 2M)", "SIZE"},
    {"mechanism", 'm', 0, G_OPTION_ARG_STRING, &arg_mechanism,
     "kernel, immutable-guard or verified-only (default: the strongest available)",
     "NAME"},
    {"timeout", 't', 0, G_OPTION_ARG_INT, &arg_timeout,
     "Seconds to wait for the command to map every file (default 120)",
     "SECONDS"},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Register files without DAX, enforcing nothing (development)", NULL},
    {NULL},
};

/* Each event on stderr as enable and disable print theirs */
static void
report(const DaxfileRunEvent *ev, gpointer data)
{
    switch (ev->kind) {
    case DAXFILE_RUN_ENGAGED:
        cli_print_enabled(ev->path, ev->enabled, ev->owner);
        break;
    case DAXFILE_RUN_RELEASED:
        cli_print_disabled(ev->path, ev->disabled);
        break;
    case DAXFILE_RUN_FAILED:
    case DAXFILE_RUN_RELEASE_FAILED:
        cli_report_error(ev->error);
        break;
    }
}

static int
cmd_run(int argc, char **argv)
{
    DaxfileRunParams params = {
        .files = (const char *const *)arg_files,
        .command = argv + 1,
        .owner = arg_owner,
        .allow_non_dax = arg_allow_non_dax,
        .report = report,
    };
    DaxfileRunResult result = {0};
    g_autoptr(GError) error = NULL;
    int ret = CLI_EXIT_OK;

    if (!arg_files || !arg_files[0])
        return cli_usage_error("run", "missing --file");
    if (arg_timeout <= 0)
        return cli_usage_error("run", "--timeout must be positive");
    params.timeout = (guint)arg_timeout;
    if (!cli_parse_align("run", arg_align, &params.align, &ret) ||
        !cli_parse_mechanism("run", arg_mechanism, &params.mechanism, &ret))
        return ret;
    if (!daxfile_run(&params, &result, &error))
        return cli_report_error(error);
    return result.exit_status;
}

const CliVerb cmd_run_verb = {
    .name = "run",
    .min_args = 1,
    .max_args = CLI_ARGS_ANY,
    .flags = CLI_VERB_COMMAND,
    .dispatch = cmd_run,
    .summary = "Run a consumer; static while it has the files mapped",
    .params = "--file PATH... -- COMMAND [ARGS...]",
    .description =
        "Run COMMAND, make every --file static once COMMAND has it mapped, release it when COMMAND exits.",
    .options = run_options,
    .too_few = "missing '-- COMMAND'",
};

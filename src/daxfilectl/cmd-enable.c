/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile enable PATH [--owner NAME] [--consumer PID] ...: make a file
 * static now
 * daxfile disable PATH [--owner NAME]: release it and compare its layout
 */
#include <stdio.h>

#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-static.h"
#include "daxfilectl.h"

#define DEFAULT_OWNER "manual"

static char *arg_owner;
static char *arg_align;
static char *arg_mechanism;
static gint arg_consumer;
static gboolean arg_allow_non_dax;
static gboolean arg_follow;

static const GOptionEntry enable_options[] = {
    {"owner", 'o', 0, G_OPTION_ARG_STRING, &arg_owner,
     "Who holds the file static (default: manual)", "NAME"},
    {"align", 'a', 0, G_OPTION_ARG_STRING, &arg_align,
     "Page size the layout must support (default 2M)", "SIZE"},
    {"mechanism", 'm', 0, G_OPTION_ARG_STRING, &arg_mechanism,
     "kernel, immutable-guard or verified-only (default: the strongest available)",
     "NAME"},
    {"consumer", 0, 0, G_OPTION_ARG_INT, &arg_consumer,
     "The process that has PATH mapped and may keep it open for writing (default: no process may)",
     "PID"},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Register a file without DAX, enforcing nothing (development)", NULL},
    {"follow-symlinks", 0, 0, G_OPTION_ARG_NONE, &arg_follow,
     "Accept a symbolic link and use its target", NULL},
    {NULL},
};

static const GOptionEntry disable_options[] = {
    {"owner", 'o', 0, G_OPTION_ARG_STRING, &arg_owner,
     "Only release it if NAME holds it", "NAME"},
    {"follow-symlinks", 0, 0, G_OPTION_ARG_NONE, &arg_follow,
     "Accept a symbolic link and use its target", NULL},
    {NULL},
};

static DaxfileFile *
open_target(const char *path, GError **error)
{
    return daxfile_file_open(
        path, arg_follow ? DAXFILE_OPEN_FOLLOW : DAXFILE_OPEN_READ, error);
}

void
cli_print_enabled(const char *path, const DaxfileEnableResult *result,
                  const char *owner)
{
    g_autofree char *name = daxfile_escape(path);

    if (result->warning)
        fprintf(stderr, "warning: %s\n", result->warning);
    fprintf(stderr, "'%s' %s static (%s, owner '%s')\n", name,
            result->already ? "was already" : "is now",
            daxfile_mechanism_to_string(result->mechanism), owner);
}

static int
cmd_enable(int argc, char **argv)
{
    DaxfileEnableParams params = {0};
    g_auto(DaxfileEnableResult) result = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(GArray) consumers = g_array_new(FALSE, FALSE, sizeof(pid_t));
    pid_t consumer = arg_consumer;
    int ret = CLI_EXIT_OK;

    if (!cli_parse_align("enable", arg_align, &params.align, &ret) ||
        !cli_parse_mechanism("enable", arg_mechanism, &params.mechanism, &ret))
        return ret;
    if (arg_consumer < 0)
        return cli_usage_error("enable", "--consumer: '%d' is not a process id",
                               arg_consumer);
    params.owner = arg_owner ? arg_owner : DEFAULT_OWNER;
    params.allow_non_dax = arg_allow_non_dax;
    if (consumer > 0) {
        g_array_append_val(consumers, consumer);
        params.consumers = consumers;
    }
    f = open_target(argv[1], &error);
    if (!f ||
        (consumer > 0 && !daxfile_static_check_consumer(f, consumer, &error)) ||
        !daxfile_static_enable(f, &params, &result, &error))
        return cli_report_error(error);
    cli_print_enabled(argv[1], &result, params.owner);
    return CLI_EXIT_OK;
}

/* Report a release; a layout that changed while static is a failure. */
int
cli_print_disabled(const char *path, const DaxfileDisableResult *result)
{
    g_autofree char *name = daxfile_escape(path);

    if (!result->layout_unchanged) {
        fprintf(stderr, "daxfile: '%s' was released (%s, owner '%s') but %s\n",
                name, daxfile_mechanism_to_string(result->mechanism),
                result->owner, result->change);
        return CLI_EXIT_FAILURE;
    }
    fprintf(stderr, "'%s' released (%s, owner '%s'): layout unchanged\n", name,
            daxfile_mechanism_to_string(result->mechanism), result->owner);
    return CLI_EXIT_OK;
}

static int
cmd_disable(int argc, char **argv)
{
    g_auto(DaxfileDisableResult) result = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileFile) f = NULL;

    f = open_target(argv[1], &error);
    if (!f || !daxfile_static_disable(f, arg_owner, FALSE, &result, &error))
        return cli_report_error(error);
    return cli_print_disabled(argv[1], &result);
}

const CliVerb cmd_enable_verb = {
    .name = "enable",
    .min_args = 1,
    .max_args = 1,
    .dispatch = cmd_enable,
    .summary = "Make a file static now (its consumer has it mapped)",
    .params = "PATH",
    .description =
        "Verify PATH and make it static now, for a consumer that already has it mapped.",
    .options = enable_options,
    .too_few = "missing PATH",
    .too_many = "exactly one PATH",
};

const CliVerb cmd_disable_verb = {
    .name = "disable",
    .min_args = 1,
    .max_args = 1,
    .dispatch = cmd_disable,
    .summary = "Release static mode and compare the layout",
    .params = "PATH",
    .description =
        "Release static mode of PATH and report whether its layout changed meanwhile.",
    .options = disable_options,
    .too_few = "missing PATH",
    .too_many = "exactly one PATH",
};

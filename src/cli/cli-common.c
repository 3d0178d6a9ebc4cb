/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>

#include "cli-common.h"
#include "config.h"
#include "daxfile-json.h"
#include "daxfile-size.h"
#include "daxfile-util.h"

static const char *program = "daxfile";

void
cli_set_program(const char *name)
{
    program = name;
}

const char *
cli_program(void)
{
    return program;
}

int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s %s: %s (see '%s %s --help')\n", program, cmd, msg,
            program, cmd);
    return CLI_EXIT_USAGE;
}

int
cli_report_error(const GError *error)
{
    fprintf(stderr, "%s: %s\n", program, error->message);
    return CLI_EXIT_FAILURE;
}

static void
print_usage(const CliCommand *commands, gsize n)
{
    gsize i;

    printf("Usage: %s [--version] [--help] COMMAND [ARGS...]\n\nCommands:\n",
           program);
    for (i = 0; i < n; i++)
        printf("  %-12s %s\n", commands[i].name, commands[i].summary);
    printf("\nSee '%s COMMAND --help' and %s(8).\n", program, program);
}

int
cli_dispatch(const CliCommand *commands, gsize n, int argc, char **argv)
{
    gsize i;

    setlocale(LC_ALL, "");
    if (argc < 2) {
        fprintf(stderr, "%s: missing command (see '%s --help')\n", program,
                program);
        return CLI_EXIT_USAGE;
    }
    if (STREQ(argv[1], "--help") || STREQ(argv[1], "-h") ||
        STREQ(argv[1], "help")) {
        print_usage(commands, n);
        return CLI_EXIT_OK;
    }
    if (STREQ(argv[1], "--version") || STREQ(argv[1], "version")) {
        printf("%s %s\n", program, DAXFILE_VERSION);
        return CLI_EXIT_OK;
    }
    for (i = 0; i < n; i++) {
        if (STREQ(argv[1], commands[i].name))
            return commands[i].func(argc - 1, argv + 1);
    }
    fprintf(stderr, "%s: unknown command '%s' (see '%s --help')\n", program,
            argv[1], program);
    return CLI_EXIT_USAGE;
}

gboolean
cli_parse(const char *cmd, const char *params, const char *summary,
          const GOptionEntry *entries, int *argc, char ***argv,
          int *ret_exit)
{
    gboolean help = FALSE;
    gboolean version = FALSE;
    const GOptionEntry common[] = {
        {"help", 'h', 0, G_OPTION_ARG_NONE, &help, "Show this help", NULL},
        {"version", 0, 0, G_OPTION_ARG_NONE, &version, "Show the version",
         NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(params);
    g_autoptr(GError) error = NULL;
    g_autofree char *usage = g_strdup_printf("%s %s", program, cmd);

    g_set_prgname(usage);
    g_option_context_set_help_enabled(ctx, FALSE);
    g_option_context_set_summary(ctx, summary);
    if (entries)
        g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_add_main_entries(ctx, common, NULL);
    if (!g_option_context_parse(ctx, argc, argv, &error)) {
        *ret_exit = cli_usage_error(cmd, "%s", error->message);
        return FALSE;
    }
    if (help) {
        g_autofree char *text = g_option_context_get_help(ctx, TRUE, NULL);

        fputs(text, stdout);
        *ret_exit = CLI_EXIT_OK;
        return FALSE;
    }
    if (version) {
        printf("%s %s\n", program, DAXFILE_VERSION);
        *ret_exit = CLI_EXIT_OK;
        return FALSE;
    }
    return TRUE;
}

gboolean
cli_parse_size(const char *cmd, const char *option, const char *value,
               guint64 *ret_size, int *ret_exit)
{
    g_autoptr(GError) error = NULL;

    if (!daxfile_size_parse(value, ret_size, &error)) {
        *ret_exit = cli_usage_error(cmd, "--%s: %s", option, error->message);
        return FALSE;
    }
    return TRUE;
}

void
cli_print_json(JsonNode *node)
{
    g_autoptr(JsonNode) owned = node;
    g_autofree char *text = daxfile_json_to_string(owned);

    fputs(text, stdout);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>

#include "config.h"
#include "daxfile-error.h"
#include "daxfile-nvdimm.h"
#include "daxfile-report.h"
#include "daxfile-size.h"
#include "daxfile-util.h"
#include "guest-cli.h"

int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fprintf(stderr, "daxfile-guest %s: %s (see 'daxfile-guest %s --help')\n",
            cmd, msg, cmd);
    return CLI_EXIT_USAGE;
}

int
cli_report_error(const GError *error)
{
    fprintf(stderr, "daxfile-guest: %s\n", error->message);
    return CLI_EXIT_FAILURE;
}

gboolean
cli_parse(const char *cmd, const char *params, const char *summary,
          const GOptionEntry *entries, int *argc, char ***argv,
          int *ret_exit)
{
    gboolean help = FALSE;
    const GOptionEntry common[] = {
        {"help", 'h', 0, G_OPTION_ARG_NONE, &help, "Show this help", NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(params);
    g_autoptr(GError) error = NULL;
    g_autofree char *prgname = g_strdup_printf("daxfile-guest %s", cmd);

    g_set_prgname(prgname);
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
    if (*argc > 1) {
        *ret_exit = cli_usage_error(cmd, "unexpected argument '%s'",
                                    (*argv)[1]);
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

gboolean
cli_parse_number(const char *cmd, const char *option, const char *value,
                 guint64 *ret_value, int *ret_exit)
{
    gboolean hex = g_str_has_prefix(value, "0x") ||
                   g_str_has_prefix(value, "0X");

    if (!g_ascii_string_to_unsigned(hex ? value + 2 : value, hex ? 16 : 10,
                                    0, G_MAXUINT64, ret_value, NULL)) {
        *ret_exit = cli_usage_error(cmd, "--%s: '%s' is not a number", option,
                                    value);
        return FALSE;
    }
    return TRUE;
}

gboolean
cli_check_target(const char *cmd, const char *dir, const char *dev,
                 gboolean optional, int *ret_exit)
{
    if (dir && dev) {
        *ret_exit = cli_usage_error(cmd, "--dir and --dev exclude each other");
        return FALSE;
    }
    if (!dir && !dev && !optional) {
        *ret_exit = cli_usage_error(cmd, "missing --dir DIR or --dev DEVICE");
        return FALSE;
    }
    return TRUE;
}

gboolean
cli_flush_choice(DaxfileFlushChoice *ret_choice, GError **error)
{
    g_autoptr(DaxfileNvInventory) inv = daxfile_nv_inventory_read(error);
    DaxfileCpuFeatures cpu;
    DaxfileFlushEnv env;

    if (!inv)
        return FALSE;
    daxfile_cpu_features_detect(&cpu);
    daxfile_flush_env_get(&env);
    daxfile_flush_choose(&cpu, &env, daxfile_nv_auto_flush(inv), ret_choice);
    return TRUE;
}

void
cli_print_json(JsonNode *node)
{
    g_autoptr(JsonNode) owned = node;
    g_autofree char *text = daxfile_json_to_string(owned);

    fputs(text, stdout);
}

JsonNode *
cli_json_array_of(JsonNode *object)
{
    JsonArray *array = json_array_new();
    JsonNode *node = json_node_new(JSON_NODE_ARRAY);

    json_array_add_element(array, object);
    json_node_take_array(node, array);
    return node;
}

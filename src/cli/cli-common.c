/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli-common.h"
#include "daxfile-json.h"
#include "daxfile-size.h"

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

static gsize
cell_width(const char *cell)
{
    return g_utf8_validate(cell, -1, NULL) ? (gsize)g_utf8_strlen(cell, -1)
                                           : strlen(cell);
}

void
cli_print_table(const char *const *header, guint ncols, const GPtrArray *cells)
{
    g_autofree gsize *width = g_new0(gsize, ncols);
    guint i, c;

    if (cells->len == 0)
        return;
    for (c = 0; c < ncols; c++)
        width[c] = cell_width(header[c]);
    for (i = 0; i < cells->len; i++)
        width[i % ncols] =
            MAX(width[i % ncols],
                cell_width(g_ptr_array_index((GPtrArray *)cells, i)));
    for (i = 0; i < ncols + cells->len; i++) {
        const char *cell =
            i < ncols ? header[i]
                      : g_ptr_array_index((GPtrArray *)cells, i - ncols);
        c = i % ncols;
        if (c + 1 == ncols)
            printf("%s\n", cell);
        else
            printf("%s%*s", cell, (int)(width[c] - cell_width(cell) + 2), "");
    }
}

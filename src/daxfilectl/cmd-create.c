/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile create PATH --size SIZE [--align A]: a new file fit for static mode
 */
#include <stdio.h>
#include <unistd.h>

#include "daxfile-create.h"
#include "daxfile-host-json.h"
#include "daxfile-size.h"
#include "daxfilectl.h"

#define PROGRESS_MIN_SIZE (G_GUINT64_CONSTANT(256) << 20)

static char *arg_size;
static char *arg_align;
static gboolean arg_json;
static gboolean arg_allow_non_dax;

static const GOptionEntry create_options[] = {
    {"size", 's', 0, G_OPTION_ARG_STRING, &arg_size,
     "Size of the file (e.g. 1G); a multiple of the alignment", "SIZE"},
    {"align", 'a', 0, G_OPTION_ARG_STRING, &arg_align,
     "Page size the file must support (default 2M)", "SIZE"},
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json,
     "Print the verification report as JSON", NULL},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Do not warn that the filesystem is not DAX (development)", NULL},
    {NULL},
};

typedef struct {
    gint64 start;
    int last_percent;
} Progress;

static void
show_progress(guint64 done, guint64 total, gpointer user_data)
{
    Progress *p = user_data;
    int percent = (int)(done * 100 / total);
    g_autofree char *d = NULL;
    g_autofree char *t = NULL;

    if (percent == p->last_percent)
        return;
    p->last_percent = percent;
    d = g_format_size_full(done, G_FORMAT_SIZE_IEC_UNITS);
    t = g_format_size_full(total, G_FORMAT_SIZE_IEC_UNITS);
    fprintf(stderr, "\rwriting zeroes: %3d%% (%s of %s)", percent, d, t);
    if (done == total)
        fputs("\r\033[K", stderr);
}

static void
print_summary(const DaxfileReport *report, const DaxfileCreateInfo *info,
              gint64 elapsed_us)
{
    g_autofree char *size = daxfile_size_format(report->size);
    g_autofree char *align = daxfile_size_format(report->align);
    g_autofree char *retried = NULL;
    g_autofree char *collapsed = NULL;

    if (info->attempts > 1)
        retried = g_strdup_printf(
            "; allocated %u times, the filesystem placed the earlier ones misaligned",
            info->attempts);
    if (info->collapses > 0) {
        g_autofree char *bytes = daxfile_size_format(info->collapsed);

        collapsed = g_strdup_printf(
            "; %u misaligned or split range%s (%s) collapsed out of it",
            info->collapses, info->collapses == 1 ? "" : "s", bytes);
    }
    fprintf(
        stderr,
        "created '%s': %s in %u extent%s, every extent written and %s aligned (%s, %.2f s%s%s)\n",
        report->path, size, daxfile_extent_map_count(report->map),
        daxfile_extent_map_count(report->map) == 1 ? "" : "s", align,
        daxfile_fill_method_to_string(info->method), elapsed_us / 1e6,
        collapsed ? collapsed : "", retried ? retried : "");
    if (!report->static_ready) {
        g_autofree char *fix =
            daxfile_report_fix(report, DAXFILE_REASON_NOT_DAX);

        fprintf(
            stderr,
            "note: DAX is not in effect on this filesystem, so the file cannot be made static here; fix: %s\n",
            fix);
    }
}

static int
cmd_create(int argc, char **argv)
{
    DaxfileCreateParams params = {0};
    Progress progress = {g_get_monotonic_time(), -1};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileReport) report = NULL;
    DaxfileCreateInfo info;
    int ret = CLI_EXIT_OK;

    if (!arg_size)
        return cli_usage_error("create", "missing --size");
    if (!cli_parse_size("create", "size", arg_size, &params.size, &ret) ||
        !cli_parse_align("create", arg_align, &params.align, &ret))
        return ret;
    params.allow_non_dax = arg_allow_non_dax;
    if (isatty(STDERR_FILENO) && params.size >= PROGRESS_MIN_SIZE) {
        params.progress = show_progress;
        params.progress_data = &progress;
    }
    report = daxfile_create(argv[1], &params, &info, &error);
    if (!report)
        return cli_report_error(error);
    if (arg_json) {
        JsonNode *node = json_node_new(JSON_NODE_ARRAY);
        JsonArray *arr = json_array_new();

        json_array_add_element(arr, daxfile_report_to_json(report));
        json_node_take_array(node, arr);
        cli_print_json(node);
    }
    print_summary(report, &info, g_get_monotonic_time() - progress.start);
    return CLI_EXIT_OK;
}

const CliVerb cmd_create_verb = {
    .name = "create",
    .min_args = 1,
    .max_args = 1,
    .dispatch = cmd_create,
    .summary = "Make a new, provisioned file fit for static mode",
    .params = "PATH",
    .description =
        "Create PATH, allocate and write every block, verify the layout; nothing is left behind on failure.",
    .options = create_options,
    .too_few = "missing PATH",
    .too_many = "exactly one PATH",
};

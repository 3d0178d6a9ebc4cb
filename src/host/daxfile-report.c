/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fiemap.h"
#include "daxfile-json.h"
#include "daxfile-report.h"
#include "daxfile-size.h"
#include "daxfile-wipe.h"

void
daxfile_report_free(DaxfileReport *report)
{
    if (!report)
        return;
    g_free(report->path);
    g_free(report->raw_path);
    daxfile_fs_info_free(report->fs);
    daxfile_extent_map_free(report->map);
    if (report->problems)
        g_array_unref(report->problems);
    g_free(report->fingerprint);
    if (report->static_state)
        json_node_unref(report->static_state);
    g_free(report);
}

DaxfileReport *
daxfile_report_new(const char *path, guint64 align, gboolean allow_non_dax,
                   DaxfileFsInfo *fs, DaxfileExtentMap *map)
{
    DaxfileReport *report = g_new0(DaxfileReport, 1);

    report->path = daxfile_escape(path);
    report->raw_path = g_utf8_validate(path, -1, NULL) ? g_strdup(path)
                                                       : g_strdup(report->path);
    report->align = align;
    report->allow_non_dax = allow_non_dax;
    report->fs = fs;
    report->map = map;
    map->phys_offset = fs->part_offset;
    report->size = map->size;
    report->fingerprint = daxfile_extent_map_fingerprint(map);
    report->problems = daxfile_extent_problems(map, align);
    report->layout_ok = report->problems->len == 0;
    report->dax_effective =
        fs->dax == DAXFILE_TRI_YES ||
        (fs->dax == DAXFILE_TRI_UNKNOWN && fs->map_sync);
    if (!report->dax_effective && !allow_non_dax) {
        DaxfileRange r = {0, report->size, 0, DAXFILE_REASON_NOT_DAX};

        g_array_prepend_val(report->problems, r);
    }
    report->static_ready = report->problems->len == 0;
    return report;
}

DaxfileReport *
daxfile_report_build(int fd, const char *path, guint64 align,
                     gboolean allow_non_dax, GError **error)
{
    g_autoptr(DaxfileFsInfo) fs = daxfile_fs_probe(fd, align, error);
    g_autoptr(DaxfileExtentMap) map = NULL;
    g_autofree char *name = daxfile_escape(path);
    DaxfileReport *report;
    guint64 wiped = 0;

    if (!fs)
        return NULL;
    map = daxfile_fiemap_read(fd, name, error);
    if (!map)
        return NULL;
    report = daxfile_report_new(path, align, allow_non_dax,
                                g_steal_pointer(&fs), g_steal_pointer(&map));
    if (daxfile_wipe_pending(fd, &wiped)) {
        DaxfileRange r = {MIN(wiped, report->size),
                          report->size - MIN(wiped, report->size), 0,
                          DAXFILE_REASON_WIPE_UNFINISHED};

        g_array_prepend_val(report->problems, r);
        report->static_ready = FALSE;
    }
    return report;
}

static const char *
report_fix_text(DaxfileReason reason)
{
    switch (reason) {
    case DAXFILE_REASON_HOLE:
    case DAXFILE_REASON_UNWRITTEN:
    case DAXFILE_REASON_DELALLOC:
    case DAXFILE_REASON_UNKNOWN:
    case DAXFILE_REASON_EMPTY:
        return "make a provisioned file with 'daxfile create PATH --size "
               "SIZE' and copy the data into it";
    case DAXFILE_REASON_SHARED:
        return "break the sharing: copy the file without reflink "
               "(cp --reflink=never) or make it with 'daxfile create'";
    case DAXFILE_REASON_INLINE:
    case DAXFILE_REASON_ENCODED:
    case DAXFILE_REASON_NOT_ALIGNED:
        return "this filesystem cannot back a static file; use ext4 or xfs "
               "on a DAX device";
    case DAXFILE_REASON_MISALIGNED:
    case DAXFILE_REASON_DISCONTIGUOUS:
        return "recreate the file with 'daxfile create' on a filesystem "
               "made for aligned extents, or use a smaller --align";
    case DAXFILE_REASON_SIZE:
        return "use a size that is a multiple of the alignment";
    case DAXFILE_REASON_NOT_DAX:
        return "mount the filesystem with -o dax on a pmem device (or pass "
               "--allow-non-dax for development without pmem)";
    case DAXFILE_REASON_WIPE_UNFINISHED:
        return "run 'daxfile wipe' on it again to finish";
    case DAXFILE_REASON_NONE:
    case DAXFILE_REASON_LAST:
        break;
    }
    return "";
}

char *
daxfile_report_fix(const DaxfileReport *report, DaxfileReason reason)
{
    gboolean layout = reason == DAXFILE_REASON_MISALIGNED ||
                      reason == DAXFILE_REASON_DISCONTIGUOUS;

    if (layout && report->fs->geometry_fix)
        return g_strdup_printf("the filesystem does not allocate aligned "
                               "extents: recreate it with '%s' and the file "
                               "with 'daxfile create', or use a smaller "
                               "--align", report->fs->geometry_fix);
    return g_strdup(report_fix_text(reason));
}

const DaxfileRange *
daxfile_report_first_problem(const DaxfileReport *report,
                             gboolean layout_only)
{
    guint i;

    for (i = 0; i < report->problems->len; i++) {
        const DaxfileRange *r =
            &g_array_index(report->problems, DaxfileRange, i);

        if (!layout_only || (r->reason != DAXFILE_REASON_NOT_DAX &&
                             r->reason != DAXFILE_REASON_WIPE_UNFINISHED))
            return r;
    }
    return NULL;
}

char *
daxfile_report_describe_problem(const DaxfileReport *report,
                                const DaxfileRange *problem)
{
    g_autofree char *len = daxfile_size_format(problem->length);
    gboolean more = problem != &g_array_index(report->problems, DaxfileRange,
                                              report->problems->len - 1);

    return g_strdup_printf("%s (offset 0x%" G_GINT64_MODIFIER "x, %s%s)",
                           daxfile_reason_describe(problem->reason),
                           problem->offset, len, more ? ", and more" : "");
}

gboolean
daxfile_report_require_ready(const DaxfileReport *report, GError **error)
{
    const DaxfileRange *first;
    g_autofree char *why = NULL;
    g_autofree char *fix = NULL;

    if (report->static_ready)
        return TRUE;
    first = daxfile_report_first_problem(report, FALSE);
    why = daxfile_report_describe_problem(report, first);
    fix = daxfile_report_fix(report, first->reason);
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY,
                "'%s' cannot be made static: %s; %s", report->path, why, fix);
    return FALSE;
}

static void
json_add_problems(JsonBuilder *b, const DaxfileReport *report)
{
    guint i;

    json_builder_set_member_name(b, "problems");
    json_builder_begin_array(b);
    for (i = 0; i < report->problems->len; i++) {
        const DaxfileRange *r =
            &g_array_index(report->problems, DaxfileRange, i);

        json_builder_begin_object(b);
        daxfile_json_add_int(b, "offset", r->offset);
        daxfile_json_add_int(b, "length", r->length);
        daxfile_json_add_string(b, "reason", daxfile_reason_to_string(r->reason));
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

static void
json_add_common(JsonBuilder *b, const DaxfileReport *report)
{
    daxfile_json_add_string(b, "path", report->raw_path);
    daxfile_json_add_int(b, "size", report->size);
    daxfile_json_add_int(b, "align", report->align);
}

JsonNode *
daxfile_report_check_to_json(const DaxfileReport *report)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_add_common(b, report);
    daxfile_json_add_int(b, "extents", daxfile_extent_map_count(report->map));
    json_add_problems(b, report);
    daxfile_json_add_bool(b, "static_ready", report->static_ready);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static void
json_add_geometry(JsonBuilder *b, const DaxfileFsInfo *fs)
{
    json_builder_set_member_name(b, "geometry");
    json_builder_begin_object(b);
    daxfile_json_add_int(b, "stripe", fs->stripe);
    daxfile_json_add_tristate(b, "aligned", fs->geometry_aligned);
    daxfile_json_add_string(b, "fix", fs->geometry_fix);
    json_builder_end_object(b);
}

JsonNode *
daxfile_report_to_json(const DaxfileReport *report)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    const DaxfileFsInfo *fs = report->fs;

    json_builder_begin_object(b);
    json_add_common(b, report);
    daxfile_json_add_string(b, "fs_type", fs->fs_type);
    daxfile_json_add_int(b, "block_size", fs->block_size);
    daxfile_json_add_string(b, "mount_point", fs->mount_point);
    daxfile_json_add_string(b, "device", fs->device);
    daxfile_json_add_tristate(b, "dax", fs->dax);
    daxfile_json_add_string(b, "dax_mode", fs->dax_mode);
    daxfile_json_add_bool(b, "map_sync", fs->map_sync);
    json_add_geometry(b, fs);
    daxfile_json_add_int(b, "extents", daxfile_extent_map_count(report->map));
    daxfile_json_add_string(b, "fingerprint", report->fingerprint);
    json_add_problems(b, report);
    daxfile_json_add_bool(b, "static_ready", report->static_ready);
    if (report->static_state) {
        json_builder_set_member_name(b, "static");
        json_builder_add_value(b, json_node_copy(report->static_state));
    }
    json_builder_end_object(b);
    return json_builder_get_root(b);
}


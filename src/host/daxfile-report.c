/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daxfile-error.h"
#include "daxfile-fiemap.h"
#include "daxfile-report.h"
#include "daxfile-size.h"
#include "daxfile-wipe-mark.h"

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
    g_free(report);
}

DaxfileReport *
daxfile_report_new(const char *path, const char *display, guint64 align,
                   gboolean allow_non_dax, DaxfileFsInfo *fs,
                   DaxfileExtentMap *map)
{
    DaxfileReport *report = g_new0(DaxfileReport, 1);

    report->path = g_strdup(display);
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
    report->dax_effective = daxfile_fs_dax_effective(fs->dax, fs->map_sync);
    if (!report->dax_effective && !allow_non_dax) {
        DaxfileRange r = {0, report->size, 0, DAXFILE_REASON_NOT_DAX};

        g_array_prepend_val(report->problems, r);
    }
    report->static_ready = report->problems->len == 0;
    return report;
}

DaxfileReport *
daxfile_report_build(const DaxfileFile *f, guint64 align,
                     gboolean allow_non_dax, GError **error)
{
    int fd = f->fd;
    g_autoptr(DaxfileFsInfo) fs = daxfile_fs_probe(fd, align, error);
    g_autoptr(DaxfileExtentMap) map = NULL;
    DaxfileReport *report;
    guint64 wiped = 0;

    if (!fs)
        return NULL;
    map = daxfile_fiemap_read(fd, f->display, error);
    if (!map)
        return NULL;
    report = daxfile_report_new(f->path, f->display, align, allow_non_dax,
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
        return "make a provisioned file with 'daxfile create PATH --size SIZE' and copy the data into it";
    case DAXFILE_REASON_SHARED:
        return "break the sharing: copy the file without reflink (cp --reflink=never) or make it with 'daxfile create'";
    case DAXFILE_REASON_INLINE:
    case DAXFILE_REASON_ENCODED:
    case DAXFILE_REASON_NOT_ALIGNED:
        return "use ext4 or xfs on a DAX device: this filesystem cannot back a static file";
    case DAXFILE_REASON_MISALIGNED:
    case DAXFILE_REASON_DISCONTIGUOUS:
        return "recreate the file with 'daxfile create' on a filesystem made for aligned extents, or use a smaller --align";
    case DAXFILE_REASON_SIZE:
        return "use a size that is a multiple of the alignment";
    case DAXFILE_REASON_NOT_DAX:
        return "mount the filesystem with -o dax on a pmem device (or pass --allow-non-dax for development without pmem)";
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
        return g_strdup_printf(
            "the filesystem does not allocate aligned extents: recreate it with '%s' and the file with 'daxfile create', or use a smaller --align",
            report->fs->geometry_fix);
    return g_strdup(report_fix_text(reason));
}

const DaxfileRange *
daxfile_report_first_problem(const DaxfileReport *report, gboolean layout_only)
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

    /* about the whole file (no DAX, empty): no range to name */
    if (problem->length == 0)
        return g_strdup_printf("%s%s", daxfile_reason_describe(problem->reason),
                               more ? " (and more)" : "");
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
                "'%s' cannot be made static: %s; fix: %s", report->path, why,
                fix);
    return FALSE;
}

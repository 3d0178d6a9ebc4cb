/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-report.h: everything daxfile knows about one backing file
 */
#pragma once

#include "daxfile-extent.h"
#include "daxfile-file.h"
#include "daxfile-fs.h"

G_BEGIN_DECLS

/* What static mode says about the file (daxfile-static.h) */

typedef struct {
    char *path;     /* display form (escaped) */
    char *raw_path; /* as given when valid UTF-8 (JSON), else
                     * the display form */
    guint64 size;
    guint64 align;
    DaxfileFsInfo *fs;
    DaxfileExtentMap *map;
    GArray *problems;       /* DaxfileRange with reason != NONE */
    gboolean dax_effective; /* statx DAX, or MAP_SYNC on old kernels */
    gboolean layout_ok;     /* no extent problem */
    gboolean allow_non_dax;
    gboolean static_ready; /* layout_ok and (DAX or allowed) */
    char *fingerprint;
} DaxfileReport;

void daxfile_report_free(DaxfileReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileReport, daxfile_report_free)

/* Judge @map (taking ownership of @fs and @map) for @align; the file is
 * @path, shown as @display (DaxfileFile). */
DaxfileReport *daxfile_report_new(const char *path, const char *display,
                                  guint64 align, gboolean allow_non_dax,
                                  DaxfileFsInfo *fs, DaxfileExtentMap *map);

/* Probe the filesystem of @f, read its block map and walk it for @align. */
DaxfileReport *daxfile_report_build(const DaxfileFile *f, guint64 align,
                                    gboolean allow_non_dax, GError **error);

/* The fix for a problem, for people ("run 'daxfile create' ..."). */
char *daxfile_report_fix(const DaxfileReport *report, DaxfileReason reason);

/* The first problem, or the first extent-layout problem (skipping the
 * file-level not_dax) when @layout_only; NULL when there is none. */
const DaxfileRange *daxfile_report_first_problem(const DaxfileReport *report,
                                                 gboolean layout_only);

/* "<description> at offset 0x.. (<length>[, and more])" for messages */
char *daxfile_report_describe_problem(const DaxfileReport *report,
                                      const DaxfileRange *problem);

/* FALSE with a NOT_READY error naming the first problem and its fix when
 * the file is not static-ready */
gboolean daxfile_report_require_ready(const DaxfileReport *report,
                                      GError **error);

G_END_DECLS

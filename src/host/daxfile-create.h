/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-create.h: make a new backing file fit for static mode
 */
#pragma once

#include "daxfile-report.h"

G_BEGIN_DECLS

typedef void (*DaxfileProgressFunc)(guint64 done, guint64 total,
                                    gpointer user_data);

typedef enum {
    DAXFILE_FILL_PWRITE,   /* zeroes written with pwrite (O_DIRECT if it can) */
    DAXFILE_FILL_POPULATE, /* DAX, aligned: MADV_POPULATE_WRITE (PMD faults) */
} DaxfileFillMethod;

/* How many allocations create made: the filesystem may place the first
 * misaligned (a fragmented ext4 does). create first collapses the
 * misplaced ranges out of the file (keeping every other block where it
 * is); what it cannot fix so, it keeps allocated while it asks again, at
 * most DAXFILE_CREATE_ATTEMPTS times. */
#define DAXFILE_CREATE_ATTEMPTS 3

typedef struct {
    DaxfileFillMethod method;
    guint attempts;    /* allocations made, 1 when the first one was fit */
    guint collapses;   /* misplaced ranges collapsed out of the file */
    guint64 collapsed; /* their bytes (blocks the file no longer holds) */
} DaxfileCreateInfo;

typedef struct {
    guint64 size;
    guint64 align;
    gboolean allow_non_dax; /* only affects the report's verdict */
    DaxfileProgressFunc progress;
    gpointer progress_data;
} DaxfileCreateParams;

const char *daxfile_fill_method_to_string(DaxfileFillMethod method);

/* Create @path: refuse an existing path; build the file unnamed (O_TMPFILE,
 * or a hidden temporary name where unsupported) in the same directory; set
 * the xfs extent-size hint; allocate; when the filesystem could give
 * aligned extents but placed some pages misaligned or split, collapse
 * those ranges out of the file and allocate what they cost at its end;
 * what is still misplaced, hold and allocate again (up to
 * DAXFILE_CREATE_ATTEMPTS); write every
 * block (zeroes) so no extent stays unwritten; fsync; verify with the
 * extent walk; only then link it under @path and fsync the directory. On
 * any failure nothing is left behind, held blocks included. Returns the
 * verification report. */
DaxfileReport *daxfile_create(const char *path,
                              const DaxfileCreateParams *params,
                              DaxfileCreateInfo *ret_info, GError **error);

/* The same in the directory @dirfd, already opened by the caller (who
 * made sure it is the right one); @path names the file for messages and
 * its basename is created there. */
DaxfileReport *daxfile_create_at(int dirfd, const char *path,
                                 const DaxfileCreateParams *params,
                                 DaxfileCreateInfo *ret_info, GError **error);

/* Remove temporary files of earlier, interrupted runs for @path (named
 * fallback only; O_TMPFILE leaves nothing). Returns how many. */
guint daxfile_create_cleanup_stale(int dirfd, const char *base);

G_END_DECLS

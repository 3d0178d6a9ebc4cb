/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-extent.h: a file's offset -> block map and the walk that decides
 * whether every align-sized page is backed by one aligned, contiguous,
 * written run of blocks
 *
 * This is the RFC's bmap_walk() done from user space with FIEMAP: one
 * walker, and a per-use callback (the seed's swapfile_check and
 * daxfile_check) that decides what to do with each classified range.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    guint64 logical;  /* byte offset in the file */
    guint64 physical; /* byte offset on the block device */
    guint64 length;
    guint32 flags; /* FIEMAP_EXTENT_* */
} DaxfileExtent;

typedef struct {
    guint64 size; /* i_size */
    guint32 block_size;
    guint64 phys_offset; /* start of the fs's block device on the DAX device
                          * (a partition's start), added before alignment
                          * checks */
    GArray *extents;     /* DaxfileExtent, sorted by logical */
} DaxfileExtentMap;

DaxfileExtentMap *daxfile_extent_map_new(guint64 size, guint32 block_size);
void daxfile_extent_map_free(DaxfileExtentMap *map);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileExtentMap, daxfile_extent_map_free)

void daxfile_extent_map_add(DaxfileExtentMap *map, guint64 logical,
                            guint64 physical, guint64 length, guint32 flags);
guint daxfile_extent_map_count(const DaxfileExtentMap *map);

/* A digest of the block map (offsets, lengths and layout-relevant flags):
 * equal digests mean the offset -> block map did not change. */
char *daxfile_extent_map_fingerprint(const DaxfileExtentMap *map);

/* Why a range of the file cannot be static. Stable tokens (JSON) come from
 * daxfile_reason_to_string(). */
typedef enum {
    DAXFILE_REASON_NONE = 0,        /* fine: aligned, contiguous, written */
    DAXFILE_REASON_HOLE,            /* no blocks: a write allocates */
    DAXFILE_REASON_UNWRITTEN,       /* fallocated: a write converts */
    DAXFILE_REASON_SHARED,          /* reflinked: a write copies on write */
    DAXFILE_REASON_DELALLOC,        /* not allocated yet */
    DAXFILE_REASON_UNKNOWN,         /* location unknown */
    DAXFILE_REASON_INLINE,          /* data inside metadata */
    DAXFILE_REASON_ENCODED,         /* compressed or encrypted */
    DAXFILE_REASON_NOT_ALIGNED,     /* FIEMAP_EXTENT_NOT_ALIGNED / DATA_TAIL */
    DAXFILE_REASON_MISALIGNED,      /* physical start not a multiple of align */
    DAXFILE_REASON_DISCONTIGUOUS,   /* page backed by more than one run */
    DAXFILE_REASON_SIZE,            /* file size not a multiple of align */
    DAXFILE_REASON_EMPTY,           /* file size 0 */
    DAXFILE_REASON_NOT_DAX,         /* file-level: DAX not in effect */
    DAXFILE_REASON_WIPE_UNFINISHED, /* file-level: from @offset on, a
                                     * 'daxfile wipe' did not get there */
    DAXFILE_REASON_LAST
} DaxfileReason;

const char *daxfile_reason_to_string(DaxfileReason reason);
const char *daxfile_reason_describe(DaxfileReason reason);

typedef struct {
    guint64 offset;
    guint64 length;
    guint64 physical; /* DAXFILE_REASON_NONE: device offset of @offset */
    DaxfileReason reason;
} DaxfileRange;

/* Called for each range, in file order. Return FALSE (setting @error) to
 * stop the walk; daxfile_extent_walk() then returns FALSE with that error. */
typedef gboolean (*DaxfileWalkFunc)(const DaxfileRange *range,
                                    gpointer user_data, GError **error);

/* Classify the whole file for @align (a power of two, already checked):
 * NONE ranges cover the align-sized pages that are fit for static mode
 * (merged while they stay physically contiguous); every other range names
 * what is wrong with its bytes. Extent problems (holes, flags) are reported
 * with their exact byte ranges; alignment and contiguity problems with the
 * pages they affect. Runs in O(extents), not O(size / align). */
gboolean daxfile_extent_walk(const DaxfileExtentMap *map, guint64 align,
                             DaxfileWalkFunc func, gpointer user_data,
                             GError **error);

/* The common callback: collect every problem (reason != NONE) into an
 * array of DaxfileRange, merging adjacent ranges with the same reason. */
GArray *daxfile_extent_problems(const DaxfileExtentMap *map, guint64 align);

/* Where dropping bytes fixes the placement, without moving a block:
 * FALLOC_FL_COLLAPSE_RANGE removes a range of the file and shifts what
 * follows down, each block keeping its place on the device. For the first
 * page below @limit that is not one aligned, contiguous run, the range to
 * collapse: the head of its extent up to the next aligned block
 * (misaligned), or the part of the page before the run breaks (split).
 * Either way the page then starts where it should, and every page before
 * it stays as it was. FALSE when every page below @limit is fit, or when
 * what is wrong cannot be fixed so (a hole, unknown or inline blocks, a
 * page that runs past the last extent, a shift that is not whole blocks).
 * Extents are taken as they will be once written (flags ignored but for
 * those that say the location is not real). */
gboolean daxfile_extent_next_collapse(const DaxfileExtentMap *map,
                                      guint64 align, guint64 limit,
                                      guint64 *ret_offset, guint64 *ret_length);

G_END_DECLS

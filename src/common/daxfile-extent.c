/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <linux/fiemap.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-extent.h"

static const struct {
    const char *token;
    const char *text;
} reasons[DAXFILE_REASON_LAST] = {
    [DAXFILE_REASON_NONE] = {"none", "aligned, contiguous and written"},
    [DAXFILE_REASON_HOLE] = {"hole", "hole: no blocks, a write would allocate"},
    [DAXFILE_REASON_UNWRITTEN] =
        {"unwritten",
         "unwritten (fallocated, never written): the first write would change metadata"},
    [DAXFILE_REASON_SHARED] =
        {"shared",
         "shared with another file (reflink): a write would copy on write"},
    [DAXFILE_REASON_DELALLOC] =
        {"delalloc", "delayed allocation: blocks not allocated yet"},
    [DAXFILE_REASON_UNKNOWN] = {"unknown", "block location unknown"},
    [DAXFILE_REASON_INLINE] = {"inline", "data stored inline in metadata"},
    [DAXFILE_REASON_ENCODED] = {"encoded",
                                "data encoded (compressed or encrypted)"},
    [DAXFILE_REASON_NOT_ALIGNED] = {"not_aligned",
                                    "extent not block aligned (packed tail)"},
    [DAXFILE_REASON_MISALIGNED] =
        {"misaligned",
         "physical start not aligned: the page cannot be mapped with one huge page"},
    [DAXFILE_REASON_DISCONTIGUOUS] =
        {"discontiguous", "page backed by more than one run of blocks"},
    [DAXFILE_REASON_SIZE] = {"size_not_aligned",
                             "file size is not a multiple of the alignment"},
    [DAXFILE_REASON_EMPTY] = {"empty", "file is empty"},
    [DAXFILE_REASON_NOT_DAX] =
        {"not_dax",
         "DAX is not in effect for this file: guest writes would go through the page cache"},
    [DAXFILE_REASON_WIPE_UNFINISHED] =
        {"wipe_unfinished",
         "a 'daxfile wipe' of it did not finish: it may still hold old data"},
};

const char *
daxfile_reason_to_string(DaxfileReason reason)
{
    g_return_val_if_fail(reason < DAXFILE_REASON_LAST, "invalid");
    return reasons[reason].token;
}

const char *
daxfile_reason_describe(DaxfileReason reason)
{
    g_return_val_if_fail(reason < DAXFILE_REASON_LAST, "invalid");
    return reasons[reason].text;
}

DaxfileExtentMap *
daxfile_extent_map_new(guint64 size, guint32 block_size)
{
    DaxfileExtentMap *map = g_new0(DaxfileExtentMap, 1);

    map->size = size;
    map->block_size = block_size;
    map->extents = g_array_new(FALSE, FALSE, sizeof(DaxfileExtent));
    return map;
}

void
daxfile_extent_map_free(DaxfileExtentMap *map)
{
    if (!map)
        return;
    g_array_unref(map->extents);
    g_free(map);
}

void
daxfile_extent_map_add(DaxfileExtentMap *map, guint64 logical, guint64 physical,
                       guint64 length, guint32 flags)
{
    DaxfileExtent e = {logical, physical, length, flags};

    g_array_append_val(map->extents, e);
}

guint
daxfile_extent_map_count(const DaxfileExtentMap *map)
{
    return map->extents->len;
}

static DaxfileReason
reason_from_flags(guint32 flags)
{
    if (flags & FIEMAP_EXTENT_DELALLOC)
        return DAXFILE_REASON_DELALLOC;
    if (flags & FIEMAP_EXTENT_UNKNOWN)
        return DAXFILE_REASON_UNKNOWN;
    if (flags & (FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED))
        return DAXFILE_REASON_ENCODED;
    if (flags & FIEMAP_EXTENT_DATA_INLINE)
        return DAXFILE_REASON_INLINE;
    if (flags & (FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_TAIL))
        return DAXFILE_REASON_NOT_ALIGNED;
    if (flags & FIEMAP_EXTENT_UNWRITTEN)
        return DAXFILE_REASON_UNWRITTEN;
    if (flags & FIEMAP_EXTENT_SHARED)
        return DAXFILE_REASON_SHARED;
    return DAXFILE_REASON_NONE;
}

/* A run of the file with one verdict: for NONE, physically contiguous. */
typedef struct {
    guint64 start;
    guint64 end;
    guint64 physical;
    DaxfileReason reason;
} Segment;

static void
segments_append(GArray *segs, guint64 start, guint64 end, guint64 physical,
                DaxfileReason reason)
{
    Segment seg = {start, end, physical, reason};

    if (segs->len > 0) {
        Segment *last = &g_array_index(segs, Segment, segs->len - 1);
        gboolean touching = last->end == start && last->reason == reason;

        if (touching &&
            (reason != DAXFILE_REASON_NONE ||
             last->physical + (last->end - last->start) == physical)) {
            last->end = end;
            return;
        }
    }
    g_array_append_val(segs, seg);
}

/* Cover [0, size) with segments: extents clipped to the file size, the
 * gaps between them as holes, neighbours with one verdict merged. */
static GArray *
segments_build(const DaxfileExtentMap *map)
{
    GArray *segs = g_array_new(FALSE, FALSE, sizeof(Segment));
    guint64 pos = 0;
    guint i;

    for (i = 0; i < map->extents->len && pos < map->size; i++) {
        const DaxfileExtent *e = &g_array_index(map->extents, DaxfileExtent, i);
        guint64 start = MAX(e->logical, pos);
        guint64 end = MIN(e->logical + e->length, map->size);

        if (end <= start)
            continue;
        if (start > pos)
            segments_append(segs, pos, start, 0, DAXFILE_REASON_HOLE);
        segments_append(segs, start, end, e->physical + (start - e->logical),
                        reason_from_flags(e->flags));
        pos = end;
    }
    if (pos < map->size)
        segments_append(segs, pos, map->size, 0, DAXFILE_REASON_HOLE);
    return segs;
}

static void
ranges_append(GArray *ranges, guint64 offset, guint64 length, guint64 physical,
              DaxfileReason reason)
{
    DaxfileRange r = {offset, length, physical, reason};

    g_array_append_val(ranges, r);
}

/* Pages from @p on that lie wholly inside @seg share one verdict: emit it
 * once and return where the next page starts. */
static guint64
walk_inside(const DaxfileExtentMap *map, const Segment *seg, guint64 p,
            guint64 body_end, guint64 align, GArray *ranges)
{
    guint64 q = MIN(DAXFILE_ALIGN_DOWN(seg->end, align), body_end);
    guint64 phys = seg->physical + (p - seg->start);

    if (seg->reason != DAXFILE_REASON_NONE)
        return q; /* reported with its exact extent range */
    if (!DAXFILE_IS_ALIGNED(phys + map->phys_offset, align))
        ranges_append(ranges, p, q - p, 0, DAXFILE_REASON_MISALIGNED);
    else
        ranges_append(ranges, p, q - p, phys, DAXFILE_REASON_NONE);
    return q;
}

/* A page that straddles segments: discontiguous when every byte is fine
 * on its own; otherwise the extent problem inside it says why. */
static void
walk_straddling(const GArray *segs, guint i, guint64 p, guint64 align,
                GArray *ranges)
{
    for (; i < segs->len; i++) {
        const Segment *seg = &g_array_index(segs, Segment, i);

        if (seg->start >= p + align)
            break;
        if (seg->reason != DAXFILE_REASON_NONE)
            return;
    }
    ranges_append(ranges, p, align, 0, DAXFILE_REASON_DISCONTIGUOUS);
}

static gint
range_compare(gconstpointer a, gconstpointer b)
{
    const DaxfileRange *ra = a;
    const DaxfileRange *rb = b;

    if (ra->offset != rb->offset)
        return ra->offset < rb->offset ? -1 : 1;
    return (gint)ra->reason - (gint)rb->reason;
}

static GArray *
walk_classify(const DaxfileExtentMap *map, guint64 align)
{
    g_autoptr(GArray) segs = segments_build(map);
    GArray *ranges = g_array_new(FALSE, FALSE, sizeof(DaxfileRange));
    guint64 body_end = DAXFILE_ALIGN_DOWN(map->size, align);
    guint64 p = 0;
    guint i = 0;

    for (i = 0; i < segs->len; i++) {
        const Segment *seg = &g_array_index(segs, Segment, i);

        if (seg->reason != DAXFILE_REASON_NONE)
            ranges_append(ranges, seg->start, seg->end - seg->start, 0,
                          seg->reason);
    }
    i = 0;
    while (p < body_end) {
        const Segment *seg;

        while (g_array_index(segs, Segment, i).end <= p)
            i++;
        seg = &g_array_index(segs, Segment, i);
        if (seg->end >= p + align) {
            p = walk_inside(map, seg, p, body_end, align, ranges);
        } else {
            walk_straddling(segs, i, p, align, ranges);
            p += align;
        }
    }
    if (map->size == 0)
        ranges_append(ranges, 0, 0, 0, DAXFILE_REASON_EMPTY);
    else if (body_end < map->size)
        ranges_append(ranges, body_end, map->size - body_end, 0,
                      DAXFILE_REASON_SIZE);
    g_array_sort(ranges, range_compare);
    return ranges;
}

gboolean
daxfile_extent_walk(const DaxfileExtentMap *map, guint64 align,
                    DaxfileWalkFunc func, gpointer user_data, GError **error)
{
    g_autoptr(GArray) ranges = NULL;
    guint i;

    g_return_val_if_fail(align && (align & (align - 1)) == 0, FALSE);

    ranges = walk_classify(map, align);
    for (i = 0; i < ranges->len; i++) {
        if (!func(&g_array_index(ranges, DaxfileRange, i), user_data, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean
collect_problem(const DaxfileRange *range, gpointer user_data, GError **error)
{
    GArray *problems = user_data;

    if (range->reason == DAXFILE_REASON_NONE)
        return TRUE;
    if (problems->len > 0) {
        DaxfileRange *last =
            &g_array_index(problems, DaxfileRange, problems->len - 1);

        if (last->reason == range->reason &&
            last->offset + last->length == range->offset) {
            last->length += range->length;
            return TRUE;
        }
    }
    g_array_append_val(problems, *range);
    return TRUE;
}

GArray *
daxfile_extent_problems(const DaxfileExtentMap *map, guint64 align)
{
    GArray *problems = g_array_new(FALSE, FALSE, sizeof(DaxfileRange));

    daxfile_extent_walk(map, align, collect_problem, problems, NULL);
    return problems;
}

char *
daxfile_extent_map_fingerprint(const DaxfileExtentMap *map)
{
    g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
    g_autoptr(GArray) segs = segments_build(map);
    guint i;

    g_checksum_update(sum, (const guchar *)&map->size, sizeof(map->size));
    for (i = 0; i < segs->len; i++) {
        const Segment *seg = &g_array_index(segs, Segment, i);
        guint64 words[4] = {seg->start, seg->end, seg->physical,
                            (guint64)seg->reason};

        g_checksum_update(sum, (const guchar *)words, sizeof(words));
    }
    return g_strdup(g_checksum_get_string(sum));
}

#define UNPLACED_FLAGS                                                         \
    (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |                          \
     FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED)

gboolean
daxfile_extent_next_collapse(const DaxfileExtentMap *map, guint64 align,
                             guint64 limit, guint64 *ret_offset,
                             guint64 *ret_length)
{
    const GArray *ext = map->extents;
    guint i = 0;
    guint64 page;

    for (page = 0; page < limit; page += align) {
        const DaxfileExtent *e;
        guint64 phys, end, len;
        guint j;

        while (i < ext->len &&
               g_array_index(ext, DaxfileExtent, i).logical +
                       g_array_index(ext, DaxfileExtent, i).length <=
                   page)
            i++;
        if (i == ext->len)
            return FALSE;
        e = &g_array_index(ext, DaxfileExtent, i);
        if (e->logical > page || (e->flags & UNPLACED_FLAGS))
            return FALSE;
        phys = map->phys_offset + e->physical + (page - e->logical);
        end = e->logical + e->length;
        if (phys % align) {
            len = MIN(align - phys % align, end - page);
            if (len % map->block_size)
                return FALSE;
            *ret_offset = page;
            *ret_length = len;
            return TRUE;
        }
        for (j = i; end < page + align; j++) {
            const DaxfileExtent *cur = &g_array_index(ext, DaxfileExtent, j);
            const DaxfileExtent *next;

            if (j + 1 == ext->len)
                return FALSE;
            next = &g_array_index(ext, DaxfileExtent, j + 1);
            if (next->logical != end || (next->flags & UNPLACED_FLAGS))
                return FALSE;
            if (next->physical != cur->physical + cur->length) {
                *ret_offset = page;
                *ret_length = end - page;
                return TRUE;
            }
            end = next->logical + next->length;
        }
    }
    return FALSE;
}

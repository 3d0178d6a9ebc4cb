/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The extent walker's decisions on synthetic block maps: one case per
 * reason, the merging rules, and that it works per extent, not per page.
 */
#include <linux/fiemap.h>

#include "daxfile-error.h"
#include "daxfile-extent.h"

#define K (G_GUINT64_CONSTANT(1) << 10)
#define M (G_GUINT64_CONSTANT(1) << 20)
#define G (G_GUINT64_CONSTANT(1) << 30)
#define T (G_GUINT64_CONSTANT(1) << 40)

typedef struct {
    guint64 offset;
    guint64 length;
    DaxfileReason reason;
} Expect;

/* Walk @map and compare every emitted range (OK ranges included). */
static void assert_walk(const DaxfileExtentMap *map, guint64 align,
                        const Expect *want, guint n_want);

static gboolean
record_range(const DaxfileRange *range, gpointer user_data, GError **error)
{
    g_array_append_val((GArray *)user_data, *range);
    return TRUE;
}

static void
assert_walk(const DaxfileExtentMap *map, guint64 align, const Expect *want,
            guint n_want)
{
    g_autoptr(GArray) got = g_array_new(FALSE, FALSE, sizeof(DaxfileRange));
    guint i;

    g_assert_true(daxfile_extent_walk(map, align, record_range, got, NULL));
    for (i = 0; i < got->len; i++) {
        const DaxfileRange *r = &g_array_index(got, DaxfileRange, i);

        g_test_message(
            "got %s 0x%" G_GINT64_MODIFIER "x+0x%" G_GINT64_MODIFIER "x",
            daxfile_reason_to_string(r->reason), r->offset, r->length);
    }
    g_assert_cmpuint(got->len, ==, n_want);
    for (i = 0; i < n_want; i++) {
        const DaxfileRange *r = &g_array_index(got, DaxfileRange, i);

        g_assert_cmpstr(daxfile_reason_to_string(r->reason), ==,
                        daxfile_reason_to_string(want[i].reason));
        g_assert_cmpuint(r->offset, ==, want[i].offset);
        g_assert_cmpuint(r->length, ==, want[i].length);
    }
}

static DaxfileExtentMap *
map_one(guint64 size, guint64 phys, guint32 flags)
{
    DaxfileExtentMap *map = daxfile_extent_map_new(size, 4096);

    daxfile_extent_map_add(map, 0, phys, size, flags | FIEMAP_EXTENT_LAST);
    return map;
}

static void
test_good(void)
{
    g_autoptr(DaxfileExtentMap) map = map_one(8 * M, 4 * M, 0);
    const Expect want[] = {{0, 8 * M, DAXFILE_REASON_NONE}};
    g_autoptr(GArray) problems = daxfile_extent_problems(map, 2 * M);

    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
    g_assert_cmpuint(problems->len, ==, 0);
}

static void
test_hole(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(8 * M, 4096);
    const Expect want[] = {
        {0, 2 * M, DAXFILE_REASON_NONE},
        {2 * M, 2 * M, DAXFILE_REASON_HOLE},
        {4 * M, 2 * M, DAXFILE_REASON_NONE},
        {6 * M, 2 * M, DAXFILE_REASON_HOLE},
    };

    daxfile_extent_map_add(map, 0, 2 * M, 2 * M, 0);
    daxfile_extent_map_add(map, 4 * M, 10 * M, 2 * M, FIEMAP_EXTENT_LAST);
    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
}

static void
test_sparse(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(64 * M, 4096);
    const Expect want[] = {{0, 64 * M, DAXFILE_REASON_HOLE}};

    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
}

/* One case per FIEMAP flag that makes an extent unfit, with exact ranges */
static void
test_flags(void)
{
    static const struct {
        guint32 flags;
        DaxfileReason reason;
    } cases[] = {
        {FIEMAP_EXTENT_UNWRITTEN, DAXFILE_REASON_UNWRITTEN},
        {FIEMAP_EXTENT_SHARED, DAXFILE_REASON_SHARED},
        {FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN,
         DAXFILE_REASON_DELALLOC},
        {FIEMAP_EXTENT_UNKNOWN, DAXFILE_REASON_UNKNOWN},
        {FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED,
         DAXFILE_REASON_INLINE},
        {FIEMAP_EXTENT_ENCODED, DAXFILE_REASON_ENCODED},
        {FIEMAP_EXTENT_DATA_ENCRYPTED, DAXFILE_REASON_ENCODED},
        {FIEMAP_EXTENT_NOT_ALIGNED, DAXFILE_REASON_NOT_ALIGNED},
        {FIEMAP_EXTENT_DATA_TAIL, DAXFILE_REASON_NOT_ALIGNED},
        {FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_SHARED,
         DAXFILE_REASON_UNWRITTEN},
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(8 * M, 4096);
        /* only the bad extent is reported for page 1, not "discontiguous";
         * pages 2..3 lie in the third extent, physically misaligned */
        const Expect want[] = {
            {0, 2 * M, DAXFILE_REASON_NONE},
            {2 * M + 4 * K, 1 * M, cases[i].reason},
            {4 * M, 4 * M, DAXFILE_REASON_MISALIGNED},
        };

        daxfile_extent_map_add(map, 0, 2 * M, 2 * M + 4 * K, 0);
        daxfile_extent_map_add(map, 2 * M + 4 * K, 40 * M, 1 * M,
                               cases[i].flags);
        daxfile_extent_map_add(map, 3 * M + 4 * K, 80 * M, 5 * M - 4 * K,
                               FIEMAP_EXTENT_LAST);
        g_test_message("case %zu: %s", i,
                       daxfile_reason_to_string(cases[i].reason));
        assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
    }
}

static void
test_fallocated(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(64 * M, 4096);
    g_autoptr(GArray) problems = NULL;
    const DaxfileRange *r;

    /* what ext4 with stride=512 reported for fallocate(64M) */
    daxfile_extent_map_add(map, 0, 2 * M, 2 * M, FIEMAP_EXTENT_UNWRITTEN);
    daxfile_extent_map_add(map, 2 * M, 130 * M, 62 * M,
                           FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST);
    problems = daxfile_extent_problems(map, 2 * M);
    g_assert_cmpuint(problems->len, ==, 1);
    r = &g_array_index(problems, DaxfileRange, 0);
    g_assert_cmpint(r->reason, ==, DAXFILE_REASON_UNWRITTEN);
    g_assert_cmpuint(r->offset, ==, 0);
    g_assert_cmpuint(r->length, ==, 64 * M);
}

static void
test_misaligned(void)
{
    /* xfs default mkfs: physical start 96 KiB past a 2 MiB boundary */
    g_autoptr(DaxfileExtentMap) map = map_one(8 * M, 2 * M + 96 * K, 0);
    const Expect want[] = {{0, 8 * M, DAXFILE_REASON_MISALIGNED}};
    const Expect small[] = {{0, 8 * M, DAXFILE_REASON_NONE}};

    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
    /* the same file is fine for 4 KiB pages */
    assert_walk(map, 4 * K, small, G_N_ELEMENTS(small));
}

static void
test_partition_offset(void)
{
    g_autoptr(DaxfileExtentMap) map = map_one(4 * M, 1 * M, 0);
    const Expect want[] = {{0, 4 * M, DAXFILE_REASON_NONE}};

    /* a partition starting 1 MiB into the pmem device aligns it */
    map->phys_offset = 1 * M;
    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
}

static void
test_discontiguous(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(6 * M, 4096);
    const Expect want[] = {
        {0, 2 * M, DAXFILE_REASON_DISCONTIGUOUS},
        {2 * M, 4 * M, DAXFILE_REASON_NONE},
    };

    daxfile_extent_map_add(map, 0, 2 * M, 1 * M, 0);
    daxfile_extent_map_add(map, 1 * M, 10 * M, 1 * M, 0);
    daxfile_extent_map_add(map, 2 * M, 4 * M, 4 * M, FIEMAP_EXTENT_LAST);
    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
}

static void
test_contiguous_split(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(8 * M, 4096);
    const Expect want[] = {{0, 8 * M, DAXFILE_REASON_NONE}};
    g_autoptr(DaxfileExtentMap) one = map_one(8 * M, 2 * M, 0);
    g_autofree char *fp1 = NULL;
    g_autofree char *fp2 = NULL;

    /* ext4 caps extents at 128 MiB; records that continue physically are
     * one run, and the fingerprint does not care how they are split */
    daxfile_extent_map_add(map, 0, 2 * M, 1 * M, 0);
    daxfile_extent_map_add(map, 1 * M, 3 * M, 3 * M, 0);
    daxfile_extent_map_add(map, 4 * M, 6 * M, 4 * M, FIEMAP_EXTENT_LAST);
    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
    fp1 = daxfile_extent_map_fingerprint(map);
    fp2 = daxfile_extent_map_fingerprint(one);
    g_assert_cmpstr(fp1, ==, fp2);
}

static void
test_size(void)
{
    g_autoptr(DaxfileExtentMap) map = map_one(3 * M, 2 * M, 0);
    const Expect want[] = {
        {0, 2 * M, DAXFILE_REASON_NONE},
        {2 * M, 1 * M, DAXFILE_REASON_SIZE},
    };

    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
}

static void
test_empty(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(0, 4096);
    const Expect want[] = {{0, 0, DAXFILE_REASON_EMPTY}};

    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
}

static void
test_beyond_eof(void)
{
    /* xfs speculative preallocation past EOF is not part of the file */
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(4 * M, 4096);
    const Expect want[] = {{0, 4 * M, DAXFILE_REASON_NONE}};

    daxfile_extent_map_add(map, 0, 2 * M, 4 * M, 0);
    daxfile_extent_map_add(map, 4 * M, 6 * M, 4 * M,
                           FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST);
    assert_walk(map, 2 * M, want, G_N_ELEMENTS(want));
}

static void
test_problems_merge(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(8 * M, 4096);
    g_autoptr(GArray) problems = NULL;
    const DaxfileRange *r;

    /* two misaligned runs back to back report one range */
    daxfile_extent_map_add(map, 0, 1 * M, 4 * M, 0);
    daxfile_extent_map_add(map, 4 * M, 21 * M, 4 * M, FIEMAP_EXTENT_LAST);
    problems = daxfile_extent_problems(map, 2 * M);
    g_assert_cmpuint(problems->len, ==, 1);
    r = &g_array_index(problems, DaxfileRange, 0);
    g_assert_cmpint(r->reason, ==, DAXFILE_REASON_MISALIGNED);
    g_assert_cmpuint(r->length, ==, 8 * M);
}

static guint
count_ranges(const DaxfileExtentMap *map, guint64 align)
{
    g_autoptr(GArray) got = g_array_new(FALSE, FALSE, sizeof(DaxfileRange));

    g_assert_true(daxfile_extent_walk(map, align, record_range, got, NULL));
    return got->len;
}

/* 1 TiB in 128 MiB extent records, 4 KiB pages: 2^28 pages. The walk must
 * visit extents, not pages: a contiguous file is one range; a file whose
 * every other record is unwritten gives one range per record. */
static void
test_scale(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(1 * T, 4096);
    g_autoptr(DaxfileExtentMap) frag = daxfile_extent_map_new(1 * T, 4096);
    guint64 off;
    guint i = 0;

    for (off = 0; off < 1 * T; off += 128 * M, i++) {
        daxfile_extent_map_add(map, off, 2 * M + off, 128 * M, 0);
        daxfile_extent_map_add(frag, off, 2 * M + off * 2, 128 * M,
                               (i % 2) ? FIEMAP_EXTENT_UNWRITTEN : 0);
    }
    g_assert_cmpuint(daxfile_extent_map_count(map), ==, 8192);
    g_assert_cmpuint(count_ranges(map, 4 * K), ==, 1);
    g_assert_cmpuint(count_ranges(frag, 4 * K), ==, 8192);
}

static gboolean
stop_at_problem(const DaxfileRange *range, gpointer user_data, GError **error)
{
    guint *calls = user_data;

    (*calls)++;
    if (range->reason == DAXFILE_REASON_NONE)
        return TRUE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY, "%s",
                daxfile_reason_to_string(range->reason));
    return FALSE;
}

static void
test_callback_stops(void)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_extent_map_new(8 * M, 4096);
    g_autoptr(GError) error = NULL;
    guint calls = 0;

    daxfile_extent_map_add(map, 0, 2 * M, 2 * M, 0);
    daxfile_extent_map_add(map, 4 * M, 8 * M, 4 * M, FIEMAP_EXTENT_LAST);
    g_assert_false(
        daxfile_extent_walk(map, 2 * M, stop_at_problem, &calls, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY);
    g_assert_cmpstr(error->message, ==, "hole");
    g_assert_cmpuint(calls, ==, 2);
}

static void
test_fingerprint(void)
{
    g_autoptr(DaxfileExtentMap) a = map_one(4 * M, 2 * M, 0);
    g_autoptr(DaxfileExtentMap) b = map_one(4 * M, 2 * M, 0);
    g_autoptr(DaxfileExtentMap) moved = map_one(4 * M, 6 * M, 0);
    g_autoptr(DaxfileExtentMap) unwritten =
        map_one(4 * M, 2 * M, FIEMAP_EXTENT_UNWRITTEN);
    g_autofree char *fa = daxfile_extent_map_fingerprint(a);
    g_autofree char *fb = daxfile_extent_map_fingerprint(b);
    g_autofree char *fm = daxfile_extent_map_fingerprint(moved);
    g_autofree char *fu = daxfile_extent_map_fingerprint(unwritten);

    g_assert_cmpstr(fa, ==, fb);
    g_assert_cmpstr(fa, !=, fm);
    g_assert_cmpstr(fa, !=, fu);
    g_assert_cmpuint(strlen(fa), ==, 64);
}

static void
test_reason_tokens(void)
{
    int r;

    /* every reason has a distinct token and a description */
    for (r = 0; r < DAXFILE_REASON_LAST; r++) {
        int s;

        g_assert_cmpuint(strlen(daxfile_reason_describe(r)), >, 5);
        for (s = r + 1; s < DAXFILE_REASON_LAST; s++)
            g_assert_cmpstr(daxfile_reason_to_string(r), !=,
                            daxfile_reason_to_string(s));
    }
}

/* What FALLOC_FL_COLLAPSE_RANGE does to the map: [off, off + len) gone,
 * what follows shifted down, every block where it was. */
static DaxfileExtentMap *
collapse(const DaxfileExtentMap *map, guint64 off, guint64 len)
{
    DaxfileExtentMap *out =
        daxfile_extent_map_new(map->size - len, map->block_size);
    guint i;

    out->phys_offset = map->phys_offset;
    for (i = 0; i < map->extents->len; i++) {
        const DaxfileExtent *e = &g_array_index(map->extents, DaxfileExtent, i);
        guint64 end = e->logical + e->length;
        guint64 from = MAX(e->logical, off + len);

        if (e->logical < off)
            daxfile_extent_map_add(out, e->logical, e->physical,
                                   MIN(end, off) - e->logical, e->flags);
        if (end > from)
            daxfile_extent_map_add(out, from - len,
                                   e->physical + (from - e->logical),
                                   end - from, e->flags);
    }
    return out;
}

/* Collapse as told until nothing is left to do; the bytes dropped, and
 * every page below @limit fit after. */
static guint64
collapse_all(DaxfileExtentMap **map, guint64 align, guint64 limit)
{
    g_autoptr(DaxfileExtentMap) fit = NULL;
    g_autoptr(GArray) problems = NULL;
    guint64 off, len, dropped = 0;
    guint i;

    for (i = 0; daxfile_extent_next_collapse(*map, align, limit, &off, &len);
         i++) {
        DaxfileExtentMap *next;

        g_assert_cmpuint(i, <, 1000);
        g_assert_cmpuint(len, >, 0);
        g_assert_cmpuint(len, <, align);
        g_assert_cmpuint(off % align, ==, 0);
        g_assert_cmpuint(off + len, <, (*map)->size);
        next = collapse(*map, off, len);
        daxfile_extent_map_free(*map);
        *map = next;
        dropped += len;
    }
    /* the pages below @limit, as they will be once written */
    fit = collapse(*map, limit, (*map)->size - limit);
    for (i = 0; i < fit->extents->len; i++)
        g_array_index(fit->extents, DaxfileExtent, i).flags &=
            ~(guint32)FIEMAP_EXTENT_UNWRITTEN;
    problems = daxfile_extent_problems(fit, align);
    g_assert_cmpuint(problems->len, ==, 0);
    return dropped;
}

static void
test_collapse_fit(void)
{
    g_autoptr(DaxfileExtentMap) map = map_one(10 * M, 4 * M, 0);
    guint64 off = 1, len = 1;

    g_assert_false(daxfile_extent_next_collapse(map, 2 * M, 8 * M, &off, &len));
    g_assert_cmpuint(off, ==, 1);
}

static void
test_collapse_misaligned(void)
{
    /* 96 KiB past a boundary: drop the head up to the next one */
    DaxfileExtentMap *map =
        map_one(10 * M, 2 * M + 96 * K, FIEMAP_EXTENT_UNWRITTEN);
    guint64 off, len;

    g_assert_true(daxfile_extent_next_collapse(map, 2 * M, 8 * M, &off, &len));
    g_assert_cmpuint(off, ==, 0);
    g_assert_cmpuint(len, ==, 2 * M - 96 * K);
    g_assert_cmpuint(collapse_all(&map, 2 * M, 8 * M), ==, 2 * M - 96 * K);
    daxfile_extent_map_free(map);
}

static void
test_collapse_split(void)
{
    /* page 1 starts aligned but breaks after 1 MiB: drop that MiB */
    DaxfileExtentMap *map = daxfile_extent_map_new(12 * M, 4096);
    guint64 off, len;

    daxfile_extent_map_add(map, 0, 2 * M, 3 * M, 0);
    daxfile_extent_map_add(map, 3 * M, 20 * M, 9 * M, FIEMAP_EXTENT_LAST);
    g_assert_true(daxfile_extent_next_collapse(map, 2 * M, 8 * M, &off, &len));
    g_assert_cmpuint(off, ==, 2 * M);
    g_assert_cmpuint(len, ==, 1 * M);
    g_assert_cmpuint(collapse_all(&map, 2 * M, 8 * M), ==, 1 * M);
    daxfile_extent_map_free(map);
}

static void
test_collapse_aged(void)
{
    /* an aged filesystem: runs of every length at every offset, some
     * shorter than a page, each misaligned by its own amount */
    DaxfileExtentMap *map = daxfile_extent_map_new(96 * M, 4096);
    guint64 logical = 0, physical = 64 * M;
    GRand *rand = g_rand_new_with_seed(5);
    guint n = 0;

    while (logical < 96 * M) {
        guint64 len = MIN((guint64)g_rand_int_range(rand, 1, 2048) * 4 * K,
                          96 * M - logical);

        physical += (guint64)g_rand_int_range(rand, 1, 1024) * 4 * K;
        daxfile_extent_map_add(map, logical, physical, len, 0);
        logical += len;
        physical += len;
        n++;
    }
    g_rand_free(rand);
    /* each run costs at most a page's worth at its head and at its tail */
    g_assert_cmpuint(collapse_all(&map, 2 * M, 32 * M), <, n * 4 * M);
    daxfile_extent_map_free(map);
}

static void
test_collapse_unfixable(void)
{
    g_autoptr(DaxfileExtentMap) hole = daxfile_extent_map_new(8 * M, 4096);
    g_autoptr(DaxfileExtentMap) inl =
        map_one(8 * M, 3 * M, FIEMAP_EXTENT_DATA_INLINE);
    g_autoptr(DaxfileExtentMap) part = map_one(8 * M, 3 * M, 0);
    g_autoptr(DaxfileExtentMap) tail = daxfile_extent_map_new(8 * M, 4096);
    guint64 off, len;

    daxfile_extent_map_add(hole, 2 * M, 4 * M, 6 * M, FIEMAP_EXTENT_LAST);
    g_assert_false(
        daxfile_extent_next_collapse(hole, 2 * M, 8 * M, &off, &len));
    g_assert_false(daxfile_extent_next_collapse(inl, 2 * M, 8 * M, &off, &len));
    /* a partition 512 bytes in: no whole-block shift aligns it */
    part->phys_offset = 512;
    g_assert_false(
        daxfile_extent_next_collapse(part, 2 * M, 8 * M, &off, &len));
    /* the last page runs past the last extent */
    daxfile_extent_map_add(tail, 0, 4 * M, 7 * M, FIEMAP_EXTENT_LAST);
    g_assert_false(
        daxfile_extent_next_collapse(tail, 2 * M, 8 * M, &off, &len));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/extent/good", test_good);
    g_test_add_func("/extent/hole", test_hole);
    g_test_add_func("/extent/sparse", test_sparse);
    g_test_add_func("/extent/flags", test_flags);
    g_test_add_func("/extent/fallocated", test_fallocated);
    g_test_add_func("/extent/misaligned", test_misaligned);
    g_test_add_func("/extent/partition-offset", test_partition_offset);
    g_test_add_func("/extent/discontiguous", test_discontiguous);
    g_test_add_func("/extent/contiguous-split", test_contiguous_split);
    g_test_add_func("/extent/size-not-aligned", test_size);
    g_test_add_func("/extent/empty", test_empty);
    g_test_add_func("/extent/beyond-eof", test_beyond_eof);
    g_test_add_func("/extent/problems-merge", test_problems_merge);
    g_test_add_func("/extent/scale", test_scale);
    g_test_add_func("/extent/callback-stops", test_callback_stops);
    g_test_add_func("/extent/fingerprint", test_fingerprint);
    g_test_add_func("/extent/reason-tokens", test_reason_tokens);
    g_test_add_func("/extent/collapse/fit", test_collapse_fit);
    g_test_add_func("/extent/collapse/misaligned", test_collapse_misaligned);
    g_test_add_func("/extent/collapse/split", test_collapse_split);
    g_test_add_func("/extent/collapse/aged", test_collapse_aged);
    g_test_add_func("/extent/collapse/unfixable", test_collapse_unfixable);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pattern on a memory buffer: round trip, persist order (commit last),
 * the exact first bad offset for a flipped byte anywhere, interrupted
 * writes, other seeds and sizes
 */
#include <string.h>

#include "daxfile-error.h"
#include "daxfile-json.h"
#include "daxfile-test-util.h"
#include "daxguest-pattern.h"

#define BS DAXGUEST_PATTERN_BLOCK_SIZE
#define SIZE (G_GUINT64_CONSTANT(1) << 20) /* 256 blocks */

/* A log of flush/drain calls, and a snapshot taken at drain N (what
 * would be persistent if the machine died right after it). */
typedef struct {
    GString *log;
    guint drains;
    guint snapshot_at;
    guint8 *buf;
    guint8 *snapshot;
} Recorder;

static void
rec_flush(const void *addr, size_t len, gpointer data)
{
    Recorder *r = data;

    g_string_append_printf(r->log, "flush %zu+%zu\n",
                           (size_t)((const guint8 *)addr - r->buf), len);
}

static void
rec_drain(gpointer data)
{
    Recorder *r = data;

    g_string_append(r->log, "drain\n");
    if (++r->drains == r->snapshot_at)
        memcpy(r->snapshot, r->buf, SIZE);
}

static void
recorder_init(Recorder *r, guint8 *buf, DaxguestPersistOps *ops)
{
    memset(r, 0, sizeof(*r));
    r->log = g_string_new(NULL);
    r->buf = buf;
    r->snapshot = g_malloc0(SIZE);
    ops->flush = rec_flush;
    ops->drain = rec_drain;
    ops->user_data = r;
}

static void
recorder_clear(Recorder *r)
{
    g_string_free(r->log, TRUE);
    g_free(r->snapshot);
}

static guint8 *
written(guint64 seed)
{
    guint8 *buf = g_malloc0(SIZE);
    DaxguestPersistOps ops;
    Recorder rec;
    guint64 seq = 0;
    g_autoptr(GError) error = NULL;

    recorder_init(&rec, buf, &ops);
    g_assert_true(daxguest_pattern_write(buf, SIZE, seed, &ops, &seq, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(seq, ==, 1);
    recorder_clear(&rec);
    return buf;
}

static void
test_fletcher(void)
{
    const guint8 data[8] = {1, 0, 0, 0, 2, 0, 0, 0};
    guint8 zero[64] = {0};

    g_assert_cmphex(daxguest_fletcher64(data, 8), ==,
                    G_GUINT64_CONSTANT(0x0000000400000003));
    g_assert_cmphex(daxguest_fletcher64(zero, 64), ==, 0);
}

static void
test_roundtrip(void)
{
    g_autofree guint8 *buf = written(42);
    DaxguestPatternResult r;
    DaxguestPersistOps ops;
    Recorder rec;
    guint64 seq = 0;
    g_autoptr(GError) error = NULL;

    g_assert_true(daxguest_pattern_verify(buf, SIZE, 42, "buf", &r, &error));
    g_assert_no_error(error);
    g_assert_cmpint(r.status, ==, DAXGUEST_PATTERN_OK);
    g_assert_cmpuint(r.sequence, ==, 1);
    g_assert_cmpuint(r.committed, ==, 1);
    g_assert_cmpuint(daxguest_pattern_peek_size(buf, BS), ==, SIZE);

    /* a second write has the next sequence and a different payload */
    recorder_init(&rec, buf, &ops);
    g_assert_true(daxguest_pattern_write(buf, SIZE, 42, &ops, &seq, &error));
    g_assert_cmpuint(seq, ==, 2);
    recorder_clear(&rec);
    g_assert_true(daxguest_pattern_verify(buf, SIZE, 42, "buf", &r, &error));
    g_assert_cmpuint(r.sequence, ==, 2);
}

static void
test_commit_last(void)
{
    g_autofree guint8 *buf = g_malloc0(SIZE);
    DaxguestPersistOps ops;
    Recorder rec;
    guint64 seq = 0;
    g_auto(GStrv) lines = NULL;
    guint n, i;

    recorder_init(&rec, buf, &ops);
    g_assert_true(daxguest_pattern_write(buf, SIZE, 1, &ops, &seq, NULL));
    lines = g_strsplit(rec.log->str, "\n", -1);
    n = g_strv_length(lines) - 1; /* trailing "" */
    /* header, drain, 255 blocks, drain, commit record, drain */
    g_assert_cmpuint(n, ==, 2 + (SIZE / BS - 1) + 3);
    g_assert_cmpstr(lines[0], ==, "flush 0+4096");
    g_assert_cmpstr(lines[1], ==, "drain");
    for (i = 2; i < n - 3; i++) {
        g_autofree char *want = g_strdup_printf("flush %u+4096", (i - 1) * BS);

        g_assert_cmpstr(lines[i], ==, want);
    }
    g_assert_cmpstr(lines[n - 3], ==, "drain");
    g_assert_cmpstr(lines[n - 2], ==, "flush 64+8");
    g_assert_cmpstr(lines[n - 1], ==, "drain");
    recorder_clear(&rec);
}

typedef struct {
    guint64 offset;
    const char *part;
    DaxguestPatternStatus status;
} Flip;

static const Flip flips[] = {
    {0x0, "header", DAXGUEST_PATTERN_CORRUPT},             /* magic */
    {0x9, "header", DAXGUEST_PATTERN_CORRUPT},             /* version */
    {0x12, "header", DAXGUEST_PATTERN_CORRUPT},            /* size */
    {0x1b, "header", DAXGUEST_PATTERN_CORRUPT},            /* seed */
    {0x20, "header", DAXGUEST_PATTERN_CORRUPT},            /* sequence */
    {0x3f, "header", DAXGUEST_PATTERN_CORRUPT},            /* checksum */
    {0x40, "commit record", DAXGUEST_PATTERN_UNCOMMITTED}, /* commit */
    {0x46, "commit record", DAXGUEST_PATTERN_UNCOMMITTED},
    {0x48, "padding", DAXGUEST_PATTERN_CORRUPT},
    {BS - 1, "padding", DAXGUEST_PATTERN_CORRUPT},
    {BS, "block header", DAXGUEST_PATTERN_CORRUPT},        /* block magic */
    {BS + 0x10, "block header", DAXGUEST_PATTERN_CORRUPT}, /* its sequence */
    {BS + 0x20, "payload", DAXGUEST_PATTERN_CORRUPT},
    {BS + BS - 9, "payload", DAXGUEST_PATTERN_CORRUPT},
    {BS + BS - 8, "block checksum", DAXGUEST_PATTERN_CORRUPT},
    {2 * BS + 0x5064 - 0x4000, "payload", DAXGUEST_PATTERN_CORRUPT},
    {200 * BS + 777, "payload", DAXGUEST_PATTERN_CORRUPT},
    {SIZE - 1, "block checksum", DAXGUEST_PATTERN_CORRUPT},
};

static void
test_flip(gconstpointer data)
{
    const Flip *f = data;
    g_autofree guint8 *buf = written(7);
    g_autoptr(GError) error = NULL;
    DaxguestPatternResult r;
    guint8 orig = buf[f->offset];

    buf[f->offset] ^= 0x10;
    g_assert_false(daxguest_pattern_verify(buf, SIZE, 7, "buf", &r, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED);
    g_assert_cmpint(r.status, ==, f->status);
    g_assert_cmphex(r.bad_offset, ==, f->offset);
    g_assert_cmpstr(r.bad_part, ==, f->part);
    g_assert_cmphex(r.expected, ==, orig);
    g_assert_cmphex(r.found, ==, orig ^ 0x10);
    if (f->status == DAXGUEST_PATTERN_CORRUPT) {
        g_autofree char *want =
            g_strdup_printf("at offset 0x%" G_GINT64_MODIFIER "x (", f->offset);

        g_assert_cmpuint(r.bad_bytes, ==, 1);
        g_assert_cmpuint(r.bad_blocks, ==, 1);
        g_assert_nonnull(strstr(error->message, want));
    }
    buf[f->offset] = orig;
    g_clear_error(&error);
    g_assert_true(daxguest_pattern_verify(buf, SIZE, 7, "buf", &r, &error));
}

static void
test_many_bad(void)
{
    g_autofree guint8 *buf = written(3);
    g_autoptr(GError) error = NULL;
    DaxguestPatternResult r;

    buf[5 * BS + 100] ^= 1;
    buf[5 * BS + 101] ^= 1;
    buf[9 * BS + 3000] ^= 0xff;
    g_assert_false(
        daxguest_pattern_verify(buf, SIZE, 3, "/mnt/x.dat", &r, &error));
    g_assert_cmphex(r.bad_offset, ==, 5 * BS + 100);
    g_assert_cmpuint(r.bad_bytes, ==, 3);
    g_assert_cmpuint(r.bad_blocks, ==, 2);
    g_assert_cmpstr(
        error->message, ==,
        "'/mnt/x.dat' differs from the pattern at offset 0x5064 (payload of block 5): expected 0x57, found 0x56; differing bytes: 3, in 2 block(s)");
}

static void
test_blank(void)
{
    g_autofree guint8 *buf = g_malloc0(SIZE);
    g_autoptr(GError) error = NULL;
    DaxguestPatternResult r;

    g_assert_false(daxguest_pattern_verify(buf, SIZE, 1, "buf", &r, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND);
    g_assert_cmpint(r.status, ==, DAXGUEST_PATTERN_BLANK);
    g_assert_cmpuint(daxguest_pattern_peek_size(buf, BS), ==, 0);
}

/* The machine dies after the data drain of a second write, before the
 * commit record is stored: the snapshot shows an interrupted write. */
static void
test_interrupted(void)
{
    g_autofree guint8 *buf = written(5);
    g_autoptr(GError) error = NULL;
    DaxguestPatternResult r;
    DaxguestPersistOps ops;
    Recorder rec;
    guint64 seq = 0;

    recorder_init(&rec, buf, &ops);
    rec.snapshot_at = 2;
    g_assert_true(daxguest_pattern_write(buf, SIZE, 5, &ops, &seq, NULL));
    g_assert_false(
        daxguest_pattern_verify(rec.snapshot, SIZE, 5, "buf", &r, &error));
    g_assert_cmpint(r.status, ==, DAXGUEST_PATTERN_UNCOMMITTED);
    g_assert_cmpuint(r.sequence, ==, 2);
    g_assert_cmpuint(r.committed, ==, 1);
    g_assert_cmpstr(
        error->message, ==,
        "The write of sequence 2 to 'buf' was interrupted before its commit: the commit record at offset 0x40 holds 1 (or it is damaged)");
    /* after the first drain only the header is new: also interrupted */
    recorder_clear(&rec);
}

static void
test_other_seed_size(void)
{
    g_autofree guint8 *buf = written(11);
    g_autoptr(GError) error = NULL;
    DaxguestPatternResult r;

    g_assert_false(daxguest_pattern_verify(buf, SIZE, 12, "buf", &r, &error));
    g_assert_cmpint(r.status, ==, DAXGUEST_PATTERN_OTHER_SEED);
    g_assert_cmpstr(error->message, ==,
                    "'buf' holds the pattern of seed 11, not 12");
    g_clear_error(&error);
    g_assert_false(
        daxguest_pattern_verify(buf, SIZE / 2, 11, "buf", &r, &error));
    g_assert_cmpint(r.status, ==, DAXGUEST_PATTERN_OTHER_SIZE);
    g_clear_error(&error);
    g_assert_false(daxguest_pattern_check_size(BS, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
}

static void
test_json(void)
{
    g_autofree guint8 *buf = written(9);
    DaxguestPatternResult r;
    g_autoptr(JsonNode) ok = NULL;
    g_autoptr(JsonNode) bad = NULL;
    g_autofree char *ok_text = NULL;
    g_autofree char *bad_text = NULL;

    g_assert_true(daxguest_pattern_verify(buf, SIZE, 9, "p", &r, NULL));
    ok = daxguest_pattern_result_to_json("/mnt/pmem/daxfile-guest.dat", &r);
    ok_text = daxfile_json_to_string(ok);
    daxfile_test_golden("pattern/verify-ok.json", ok_text);
    buf[3 * BS + 0x123] ^= 0x80;
    g_assert_false(daxguest_pattern_verify(buf, SIZE, 9, "p", &r, NULL));
    bad = daxguest_pattern_result_to_json("/mnt/pmem/daxfile-guest.dat", &r);
    bad_text = daxfile_json_to_string(bad);
    daxfile_test_golden("pattern/verify-corrupt.json", bad_text);
}

int
main(int argc, char **argv)
{
    size_t i;

    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pattern/fletcher64", test_fletcher);
    g_test_add_func("/pattern/roundtrip", test_roundtrip);
    g_test_add_func("/pattern/commit-last", test_commit_last);
    for (i = 0; i < G_N_ELEMENTS(flips); i++) {
        g_autofree char *name = g_strdup_printf(
            "/pattern/flip/0x%" G_GINT64_MODIFIER "x", flips[i].offset);

        g_test_add_data_func(name, &flips[i], test_flip);
    }
    g_test_add_func("/pattern/many-bad", test_many_bad);
    g_test_add_func("/pattern/blank", test_blank);
    g_test_add_func("/pattern/interrupted", test_interrupted);
    g_test_add_func("/pattern/other-seed-size", test_other_seed_size);
    g_test_add_func("/pattern/json", test_json);
    return g_test_run();
}

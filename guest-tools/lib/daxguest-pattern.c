/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "daxfile-error.h"
#include "daxfile-seam.h"
#include "daxfile-size.h"
#include "daxguest-pattern.h"

#define BS DAXGUEST_PATTERN_BLOCK_SIZE
#define HEADER_MAGIC "DXFGUEST"
#define BLOCK_MAGIC "DXFB"

/* Header fields (block 0) */
#define H_MAGIC 0
#define H_VERSION 8
#define H_BLOCK_SIZE 12
#define H_SIZE 16
#define H_SEED 24
#define H_SEQUENCE 32
#define H_CHECKSUM 56
#define H_LEN 64
#define H_COMMIT DAXGUEST_PATTERN_COMMIT_OFFSET

/* Block fields (block i >= 1) */
#define B_MAGIC 0
#define B_VERSION 4
#define B_INDEX 8
#define B_SEQUENCE 16
#define B_SEED 24
#define B_PAYLOAD 32
#define B_CHECKSUM (BS - 8)

typedef struct {
    guint32 version;
    guint32 block_size;
    guint64 size;
    guint64 seed;
    guint64 sequence;
    guint64 committed;
} PatternHeader;

static void
put32(guint8 *p, guint32 v)
{
    v = GUINT32_TO_LE(v);
    memcpy(p, &v, sizeof(v));
}

static void
put64(guint8 *p, guint64 v)
{
    v = GUINT64_TO_LE(v);
    memcpy(p, &v, sizeof(v));
}

static guint32
get32(const guint8 *p)
{
    guint32 v;

    memcpy(&v, p, sizeof(v));
    return GUINT32_FROM_LE(v);
}

static guint64
get64(const guint8 *p)
{
    guint64 v;

    memcpy(&v, p, sizeof(v));
    return GUINT64_FROM_LE(v);
}

guint64
daxguest_fletcher64(const void *buf, size_t len)
{
    const guint8 *p = buf;
    guint32 lo = 0;
    guint32 hi = 0;
    size_t i;

    g_return_val_if_fail(len % 4 == 0, 0);
    for (i = 0; i < len; i += 4) {
        lo += get32(p + i);
        hi += lo;
    }
    return ((guint64)hi << 32) | lo;
}

static guint64
splitmix64(guint64 *state)
{
    guint64 z = (*state += G_GUINT64_CONSTANT(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* The expected bytes of data block @index (>= 1) into @buf (BS bytes). */
static void
block_build(guint8 *buf, guint64 index, guint64 sequence, guint64 seed)
{
    guint64 state = seed ^ (index * G_GUINT64_CONSTANT(0xd1342543de82ef95)) ^
                    (sequence * G_GUINT64_CONSTANT(0xff51afd7ed558ccd));
    size_t off;

    memcpy(buf + B_MAGIC, BLOCK_MAGIC, 4);
    put32(buf + B_VERSION, DAXGUEST_PATTERN_VERSION);
    put64(buf + B_INDEX, index);
    put64(buf + B_SEQUENCE, sequence);
    put64(buf + B_SEED, seed);
    for (off = B_PAYLOAD; off < B_CHECKSUM; off += 8)
        put64(buf + off, splitmix64(&state));
    put64(buf + B_CHECKSUM, daxguest_fletcher64(buf, B_CHECKSUM));
}

/* The expected block 0 (BS bytes) for @hdr. */
static void
header_build(guint8 *buf, const PatternHeader *hdr)
{
    memset(buf, 0, BS);
    memcpy(buf + H_MAGIC, HEADER_MAGIC, 8);
    put32(buf + H_VERSION, hdr->version);
    put32(buf + H_BLOCK_SIZE, hdr->block_size);
    put64(buf + H_SIZE, hdr->size);
    put64(buf + H_SEED, hdr->seed);
    put64(buf + H_SEQUENCE, hdr->sequence);
    put64(buf + H_CHECKSUM, daxguest_fletcher64(buf, H_CHECKSUM));
    put64(buf + H_COMMIT, hdr->committed);
}

/* TRUE when @base starts with an intact header of a known version. */
static gboolean
header_read(const guint8 *base, PatternHeader *ret_hdr)
{
    memset(ret_hdr, 0, sizeof(*ret_hdr));
    if (memcmp(base + H_MAGIC, HEADER_MAGIC, 8) != 0 ||
        get64(base + H_CHECKSUM) != daxguest_fletcher64(base, H_CHECKSUM))
        return FALSE;
    ret_hdr->version = get32(base + H_VERSION);
    ret_hdr->block_size = get32(base + H_BLOCK_SIZE);
    ret_hdr->size = get64(base + H_SIZE);
    ret_hdr->seed = get64(base + H_SEED);
    ret_hdr->sequence = get64(base + H_SEQUENCE);
    ret_hdr->committed = get64(base + H_COMMIT);
    return ret_hdr->version == DAXGUEST_PATTERN_VERSION &&
           ret_hdr->block_size == BS;
}

gboolean
daxguest_pattern_check_size(guint64 size, GError **error)
{
    if (size < 2 * BS || size % BS != 0) {
        g_autofree char *pretty = daxfile_size_format(size);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Pattern size %s is not a multiple of %u bytes of at least two blocks",
            pretty, BS);
        return FALSE;
    }
    return TRUE;
}

guint64
daxguest_pattern_peek_size(const guint8 *base, guint64 len)
{
    PatternHeader hdr;

    if (len < H_LEN || !header_read(base, &hdr))
        return 0;
    return hdr.size;
}

gboolean
daxguest_pattern_write(guint8 *base, guint64 size, guint64 seed,
                       const DaxguestPersistOps *ops, guint64 *ret_sequence,
                       GError **error)
{
    PatternHeader old;
    PatternHeader hdr = {DAXGUEST_PATTERN_VERSION, BS, size, seed, 1, 0};
    guint64 nblocks = size / BS;
    guint64 i;

    if (!daxguest_pattern_check_size(size, error))
        return FALSE;
    if (header_read(base, &old)) {
        hdr.sequence = MAX(old.sequence, old.committed) + 1;
        hdr.committed = old.committed;
    }
    /* 1: the header names the write in progress; the old commit record
     * stays, so an interrupted write is seen as one */
    header_build(base, &hdr);
    ops->flush(base, BS, ops->user_data);
    ops->drain(ops->user_data);

    /* 2: every data block */
    for (i = 1; i < nblocks; i++) {
        block_build(base + i * BS, i, hdr.sequence, seed);
        ops->flush(base + i * BS, BS, ops->user_data);
    }
    ops->drain(ops->user_data);
    daxfile_test_crash_point("guest-write-commit");

    /* 3: commit, one aligned 8-byte store (atomic for persistence) */
    *(volatile guint64 *)(base + H_COMMIT) = GUINT64_TO_LE(hdr.sequence);
    ops->flush(base + H_COMMIT, 8, ops->user_data);
    ops->drain(ops->user_data);
    *ret_sequence = hdr.sequence;
    return TRUE;
}

static const char *
part_name(guint64 block, guint off)
{
    if (block == 0) {
        if (off < H_LEN)
            return "header";
        if (off < H_COMMIT + 8)
            return "commit record";
        return "padding";
    }
    if (off < B_PAYLOAD)
        return "block header";
    if (off < B_CHECKSUM)
        return "payload";
    return "block checksum";
}

/* Compare block @block with its expected bytes; count what differs. */
static void
compare_block(DaxguestPatternResult *r, guint64 block, const guint8 *actual,
              const guint8 *expected)
{
    guint64 before = r->bad_bytes;
    guint off;

    if (memcmp(actual, expected, BS) == 0)
        return;
    for (off = 0; off < BS; off++) {
        if (actual[off] == expected[off])
            continue;
        if (r->bad_bytes == 0) {
            r->bad_offset = block * BS + off;
            r->expected = expected[off];
            r->found = actual[off];
            r->bad_part = part_name(block, off);
        }
        r->bad_bytes++;
    }
    if (r->bad_bytes > before)
        r->bad_blocks++;
}

static gboolean
is_zero(const guint8 *p, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (p[i])
            return FALSE;
    }
    return TRUE;
}

/* A damaged header: what it should hold, taking the sequence from block 1
 * when that block is intact. */
static void
header_assume(const guint8 *base, guint64 size, guint64 seed,
              PatternHeader *ret_hdr)
{
    const guint8 *b1 = base + BS;

    ret_hdr->version = DAXGUEST_PATTERN_VERSION;
    ret_hdr->block_size = BS;
    ret_hdr->size = size;
    ret_hdr->seed = seed;
    if (get64(b1 + B_CHECKSUM) == daxguest_fletcher64(b1, B_CHECKSUM))
        ret_hdr->sequence = get64(b1 + B_SEQUENCE);
    else
        ret_hdr->sequence = get64(base + H_SEQUENCE);
    ret_hdr->committed = ret_hdr->sequence;
}

static gboolean
verify_commit(const guint8 *base, const PatternHeader *hdr, const char *name,
              DaxguestPatternResult *r, GError **error)
{
    guint8 want[8];
    guint i;

    put64(want, hdr->sequence);
    for (i = 0; i < 7 && base[H_COMMIT + i] == want[i]; i++)
        ;
    r->status = DAXGUEST_PATTERN_UNCOMMITTED;
    r->bad_offset = H_COMMIT + i;
    r->expected = want[i];
    r->found = base[H_COMMIT + i];
    r->bad_part = part_name(0, H_COMMIT + i);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
        "The write of sequence %" G_GUINT64_FORMAT
        " to '%s' was interrupted before its commit: the commit record at offset 0x%x holds %" G_GUINT64_FORMAT
        " (or it is damaged)",
        hdr->sequence, name, H_COMMIT, hdr->committed);
    return FALSE;
}

static gboolean
verify_header_fields(const guint8 *base, const PatternHeader *hdr, guint64 size,
                     guint64 seed, const char *name, DaxguestPatternResult *r,
                     GError **error)
{
    if (hdr->seed != seed) {
        r->status = DAXGUEST_PATTERN_OTHER_SEED;
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' holds the pattern of seed %" G_GUINT64_FORMAT
                    ", not %" G_GUINT64_FORMAT,
                    name, hdr->seed, seed);
        return FALSE;
    }
    if (hdr->size != size) {
        r->status = DAXGUEST_PATTERN_OTHER_SIZE;
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' holds a pattern of %" G_GUINT64_FORMAT
                    " bytes, not %" G_GUINT64_FORMAT,
                    name, hdr->size, size);
        return FALSE;
    }
    if (hdr->committed != hdr->sequence)
        return verify_commit(base, hdr, name, r, error);
    return TRUE;
}

static gboolean
verify_report_corrupt(const char *name, DaxguestPatternResult *r,
                      GError **error)
{
    r->status = DAXGUEST_PATTERN_CORRUPT;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
        "'%s' differs from the pattern at offset 0x%" G_GINT64_MODIFIER
        "x (%s of block %" G_GUINT64_FORMAT
        "): expected 0x%02x, found 0x%02x; differing bytes: %" G_GUINT64_FORMAT
        ", in %" G_GUINT64_FORMAT " block(s)",
        name, r->bad_offset, r->bad_part, r->bad_offset / BS, r->expected,
        r->found, r->bad_bytes, r->bad_blocks);
    return FALSE;
}

gboolean
daxguest_pattern_verify(const guint8 *base, guint64 size, guint64 seed,
                        const char *name, DaxguestPatternResult *ret_result,
                        GError **error)
{
    DaxguestPatternResult *r = ret_result;
    g_autofree guint8 *expected = g_malloc(BS);
    PatternHeader hdr;
    guint64 i;

    memset(r, 0, sizeof(*r));
    r->size = size;
    if (!daxguest_pattern_check_size(size, error))
        return FALSE;
    if (header_read(base, &hdr)) {
        r->seed = hdr.seed;
        r->sequence = hdr.sequence;
        r->committed = hdr.committed;
        if (!verify_header_fields(base, &hdr, size, seed, name, r, error))
            return FALSE;
    } else if (is_zero(base, BS)) {
        r->status = DAXGUEST_PATTERN_BLANK;
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "'%s' holds no pattern (block 0 is all zeros); fix: run 'daxfile-guest write' first",
            name);
        return FALSE;
    } else {
        header_assume(base, size, seed, &hdr);
        r->seed = seed;
        r->sequence = hdr.sequence;
        r->committed = get64(base + H_COMMIT);
    }
    header_build(expected, &hdr);
    compare_block(r, 0, base, expected);
    for (i = 1; i < size / BS; i++) {
        block_build(expected, i, hdr.sequence, seed);
        compare_block(r, i, base + i * BS, expected);
    }
    if (r->bad_bytes)
        return verify_report_corrupt(name, r, error);
    r->status = DAXGUEST_PATTERN_OK;
    return TRUE;
}

const char *
daxguest_pattern_status_to_string(DaxguestPatternStatus status)
{
    switch (status) {
    case DAXGUEST_PATTERN_OK:
        return "ok";
    case DAXGUEST_PATTERN_BLANK:
        return "blank";
    case DAXGUEST_PATTERN_UNCOMMITTED:
        return "uncommitted";
    case DAXGUEST_PATTERN_OTHER_SEED:
        return "other_seed";
    case DAXGUEST_PATTERN_OTHER_SIZE:
        return "other_size";
    case DAXGUEST_PATTERN_CORRUPT:
        break;
    }
    return "corrupt";
}

static void
json_add_u64(JsonBuilder *b, const char *key, guint64 value)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, (gint64)value);
}

JsonNode *
daxguest_pattern_result_to_json(const char *path,
                                const DaxguestPatternResult *result)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    gboolean bad = result->bad_part != NULL;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "path");
    json_builder_add_string_value(b, path);
    json_builder_set_member_name(b, "result");
    json_builder_add_string_value(
        b, daxguest_pattern_status_to_string(result->status));
    json_add_u64(b, "size", result->size);
    json_add_u64(b, "block_size", BS);
    json_add_u64(b, "seed", result->seed);
    json_add_u64(b, "sequence", result->sequence);
    json_add_u64(b, "committed", result->committed);
    json_builder_set_member_name(b, "first_bad_offset");
    if (bad)
        json_builder_add_int_value(b, (gint64)result->bad_offset);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "bad_part");
    if (bad)
        json_builder_add_string_value(b, result->bad_part);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "expected_byte");
    if (bad)
        json_builder_add_int_value(b, result->expected);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "found_byte");
    if (bad)
        json_builder_add_int_value(b, result->found);
    else
        json_builder_add_null_value(b);
    json_add_u64(b, "bad_bytes", result->bad_bytes);
    json_add_u64(b, "bad_blocks", result->bad_blocks);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxguest-pattern.h: a self-describing, checksummed pattern written through
 * a persistent mapping and verified later (after a reboot or a crash)
 *
 * Layout (little endian, block size 4096, offsets into the file/device):
 *
 *   0x000  header: magic "DXFGUEST", version, block size, size, seed,
 *          sequence of the write, reserved, Fletcher-64 of bytes 0..55
 *   0x040  commit record: the sequence of the last completed write, stored
 *          last, in a cache line of its own (one 8-byte store)
 *   0x048  zeros up to the end of block 0
 *   block i >= 1 at i * 4096:
 *          block header: magic "DXFB", version, index i, sequence, seed;
 *          payload from a PRNG (splitmix64) keyed by seed, sequence, i;
 *          Fletcher-64 of the block (all but its last 8 bytes) at the end
 *
 * A write persists the header (new sequence, old commit record), then every
 * data block, then the commit record. Verify rebuilds every expected byte
 * and names the first one that differs.
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define DAXGUEST_PATTERN_BLOCK_SIZE 4096u
#define DAXGUEST_PATTERN_VERSION 1u
#define DAXGUEST_PATTERN_COMMIT_OFFSET 64u

/* How the writer makes stores persistent: flush(range) then drain(). */
typedef struct {
    void (*flush)(const void *addr, size_t len, gpointer user_data);
    void (*drain)(gpointer user_data);
    gpointer user_data;
} DaxguestPersistOps;

typedef enum {
    DAXGUEST_PATTERN_OK = 0,
    DAXGUEST_PATTERN_BLANK,       /* no header at all: never written */
    DAXGUEST_PATTERN_UNCOMMITTED, /* a write was interrupted before commit */
    DAXGUEST_PATTERN_OTHER_SEED,  /* intact header of another seed */
    DAXGUEST_PATTERN_OTHER_SIZE,  /* intact header of another size */
    DAXGUEST_PATTERN_CORRUPT,     /* bytes differ from the pattern */
} DaxguestPatternStatus;

typedef struct {
    DaxguestPatternStatus status;
    guint64 size;       /* bytes examined */
    guint64 seed;       /* from the header, when it is intact */
    guint64 sequence;   /* the header's sequence (or the one assumed) */
    guint64 committed;  /* the commit record */
    guint64 bad_offset; /* CORRUPT: the first byte that differs */
    guint8 expected;
    guint8 found;
    const char *bad_part; /* "header", "commit record", "padding",
                           * "block header", "payload", "block checksum" */
    guint64 bad_bytes;    /* every differing byte */
    guint64 bad_blocks;   /* blocks (header block included) with any */
} DaxguestPatternResult;

/* Fletcher-64 over little-endian 32-bit words (PMDK's util_checksum);
 * @len must be a multiple of 4. */
guint64 daxguest_fletcher64(const void *buf, size_t len);

/* FALSE when @size cannot hold a pattern (at least 2 blocks, a multiple of
 * the block size). */
gboolean daxguest_pattern_check_size(guint64 size, GError **error);

/* The size recorded in an intact header at @base (@len readable bytes), or
 * 0 when there is none. */
guint64 daxguest_pattern_peek_size(const guint8 *base, guint64 len);

/* Write the pattern for @seed over [@base, @base + @size), with the next
 * sequence number after the one already there. */
gboolean daxguest_pattern_write(guint8 *base, guint64 size, guint64 seed,
                                const DaxguestPersistOps *ops,
                                guint64 *ret_sequence, GError **error);

/* Compare [@base, @base + @size) with the pattern for @seed. @ret_result
 * is always filled; FALSE with an error naming @name and the first bad
 * offset unless the status is OK. */
gboolean daxguest_pattern_verify(const guint8 *base, guint64 size, guint64 seed,
                                 const char *name,
                                 DaxguestPatternResult *ret_result,
                                 GError **error);

const char *daxguest_pattern_status_to_string(DaxguestPatternStatus status);

/* One JSON object (stable snake_case keys) for a verify result. */
JsonNode *daxguest_pattern_result_to_json(const char *path,
                                          const DaxguestPatternResult *result);

G_END_DECLS

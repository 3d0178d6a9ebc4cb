/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxguest-target.h: where `write`, `verify`, `locate` and `bench` work:
 * the file daxfile-guest.dat in a directory of a DAX filesystem (mapped
 * with MAP_SHARED_VALIDATE|MAP_SYNC), or a device-dax device (MAP_SHARED,
 * 2 MiB-aligned length); and where a byte of it lives on the NVDIMM
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-mmap.h"
#include "daxguest-cpu.h"
#include "daxguest-pattern.h"

G_BEGIN_DECLS

#define DAXGUEST_TARGET_FILE_NAME "daxfile-guest.dat"
#define DAXGUEST_TARGET_DEFAULT_SIZE (G_GUINT64_CONSTANT(64) << 20)

typedef enum {
    DAXGUEST_TARGET_FILE,
    DAXGUEST_TARGET_DEVDAX,
} DaxguestTargetKind;

typedef enum {
    DAXGUEST_TARGET_READ = 0,
    DAXGUEST_TARGET_WRITE = 1 << 0,         /* create/provision, map RW */
    DAXGUEST_TARGET_ALLOW_NON_DAX = 1 << 1, /* no MAP_SYNC: msync instead */
    DAXGUEST_TARGET_NO_MAP = 1 << 2,        /* open only (locate) */
} DaxguestTargetFlags;

typedef struct {
    DaxguestTargetKind kind;
    char *path; /* for messages: ".../daxfile-guest.dat" */
    int fd;
    guint64 size;     /* bytes of the pattern (mapped) */
    guint64 dev_size; /* device-dax: the whole device */
    guint64 align;    /* device-dax page size */
    DaxfileMapping map;
    gboolean map_sync; /* mapped with MAP_SYNC */
    gboolean virtio;   /* on a virtio-pmem device: never MAP_SYNC; the
                        * msync after writing is the device's flush */
    gboolean created;  /* the file was (re)made for this write */
} DaxguestTarget;

void daxguest_target_free(DaxguestTarget *target);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxguestTarget, daxguest_target_free)

/* DIR/daxfile-guest.dat. Writing: @size (0: 64 MiB) bytes, made with
 * fallocate + zeros + fsync unless it already has that size. Reading: the
 * file's size (@size must be 0 or equal). */
DaxguestTarget *daxguest_target_open_dir(const char *dir, guint64 size,
                                         DaxguestTargetFlags flags,
                                         GError **error);

/* A device-dax device. Writing: @size (0: 64 MiB, at most the device) in
 * multiples of its alignment. Reading: @size, or 0 for the size recorded
 * in the pattern header. */
DaxguestTarget *daxguest_target_open_dev(const char *dev, guint64 size,
                                         DaxguestTargetFlags flags,
                                         GError **error);

/* daxguest_target_open_dir(@dir) when @dir is set, else
 * daxguest_target_open_dev(@dev) */
DaxguestTarget *daxguest_target_open(const char *dir, const char *dev,
                                     guint64 size, DaxguestTargetFlags flags,
                                     GError **error);

/* How the target is mapped, for messages: "MAP_SYNC", "device-dax
 * MAP_SHARED", "MAP_SHARED + msync" ... */
const char *daxguest_target_mapping_name(const DaxguestTarget *target);

/* Write the pattern through the mapping, flushing as @choice says (and
 * msync when the mapping has no MAP_SYNC). */
gboolean daxguest_target_write_pattern(DaxguestTarget *target, guint64 seed,
                                       const DaxguestFlushChoice *choice,
                                       guint64 *ret_sequence, GError **error);

/* `write`: how this guest flushes (daxguest_flush_choice_detect()),
 * @dir or @dev opened for writing (daxguest_target_open(), @flags with
 * DAXGUEST_TARGET_WRITE) and the pattern of @seed written through it
 * (daxguest_target_write_pattern()). The target, its sequence number in
 * *@ret_sequence and the flush in *@ret_flush
 * (daxguest_flush_choice_describe()). */
DaxguestTarget *daxguest_target_write(const char *dir, const char *dev,
                                      guint64 size, DaxguestTargetFlags flags,
                                      guint64 seed, guint64 *ret_sequence,
                                      char **ret_flush, GError **error);

/* daxguest_pattern_verify() of the mapped target for @seed */
gboolean daxguest_target_verify(const DaxguestTarget *target, guint64 seed,
                                DaxguestPatternResult *ret_result,
                                GError **error);

typedef struct {
    guint64 offset; /* in the file or device */
    char *device;   /* "/dev/pmem0", "/dev/dax0.0" */
    guint64 device_offset;
    char *region;          /* "region0" */
    guint64 region_offset; /* for QEMU: the offset in the backing file */
    guint64 physical;      /* system physical address */
} DaxguestLocation;

void daxguest_location_clear(DaxguestLocation *loc);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxguestLocation, daxguest_location_clear)

/* Where byte @offset of the target lives: FIEMAP, then the fsdax data
 * start (libndctl pfn resource) or the device-dax resource, relative to
 * the region start. */
gboolean daxguest_target_locate(const DaxguestTarget *target, guint64 offset,
                                DaxguestLocation *ret_loc, GError **error);

JsonNode *daxguest_location_to_json(const char *path,
                                    const DaxguestLocation *loc);

/* `write --json`'s object: path, size, seed, sequence, map_sync, flush */
JsonNode *daxguest_target_write_to_json(const DaxguestTarget *target,
                                        guint64 seed, guint64 sequence,
                                        const char *flush);

G_END_DECLS

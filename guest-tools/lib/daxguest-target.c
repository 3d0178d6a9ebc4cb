/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-fiemap.h"
#include "daxfile-mmap.h"
#include "daxfile-size.h"
#include "daxfile-sysfs.h"
#include "daxfile-pmem.h"
#include "daxguest-pattern.h"
#include "daxguest-probe.h"
#include "daxguest-target.h"

#define SZ_2M DAXFILE_SZ_2M

void
daxguest_target_free(DaxguestTarget *target)
{
    if (!target)
        return;
    daxfile_mapping_clear(&target->map);
    daxfile_fd_close(target->fd);
    g_free(target->path);
    g_free(target);
}

static DaxguestTarget *
target_new(DaxguestTargetKind kind, char *path)
{
    DaxguestTarget *t = g_new0(DaxguestTarget, 1);

    t->kind = kind;
    t->path = path;
    t->fd = -1;
    return t;
}

static gboolean
file_provision(DaxguestTarget *t, guint64 size, GError **error)
{
    if (ftruncate(t->fd, 0) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot truncate '%s'", t->path);
        return FALSE;
    }
    if (!daxguest_file_provision(t->fd, size, t->path, error))
        return FALSE;
    t->created = TRUE;
    return TRUE;
}

static gboolean
target_map(DaxguestTarget *t, gboolean write, gboolean allow_non_dax,
           GError **error)
{
    int prot = write ? PROT_READ | PROT_WRITE : PROT_READ;
    g_autoptr(GError) local = NULL;
    void *addr = NULL;

    if (t->kind == DAXGUEST_TARGET_DEVDAX) {
        /* device-dax: plain MAP_SHARED, aligned address and length */
        if (!daxfile_map_aligned(t->fd, t->size, 0, prot, MAP_SHARED,
                                 MAX(t->align, SZ_2M), &addr, error))
            return FALSE;
    } else if (daxfile_map_aligned(t->fd, t->size, 0, prot,
                                   MAP_SHARED_VALIDATE | MAP_SYNC, SZ_2M, &addr,
                                   &local)) {
        t->map_sync = TRUE;
    } else if (!write || allow_non_dax || t->virtio) {
        if (!daxfile_map_aligned(t->fd, t->size, 0, prot, MAP_SHARED, SZ_2M,
                                 &addr, error))
            return FALSE;
    } else {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
            "'%s' cannot be mapped with MAP_SYNC (%s); fix: put it on a filesystem mounted with -o dax, or pass --allow-non-dax",
            t->path, local->message);
        return FALSE;
    }
    t->map.addr = addr;
    t->map.length = t->size;
    return TRUE;
}

/* Before any block is allocated: will the data file map with MAP_SYNC?
 * If not, remove it again when this run created it. */
static gboolean
dir_check_map_sync(DaxguestTarget *t, int dirfd, gboolean new_file,
                   GError **error)
{
    void *addr =
        mmap(NULL, 4096, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, t->fd, 0);
    int errsv = errno;

    if (addr != MAP_FAILED) {
        munmap(addr, 4096);
        return TRUE;
    }
    if (new_file)
        unlinkat(dirfd, DAXGUEST_TARGET_FILE_NAME, 0);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
        "'%s' cannot be mapped with MAP_SYNC (%s); fix: put it on a filesystem mounted with -o dax, or pass --allow-non-dax",
        t->path, g_strerror(errsv));
    return FALSE;
}

/* The file @t->fd is on a virtio-pmem device (daxfile-pmem.h) */
static gboolean
on_virtio_pmem(const DaxguestTarget *t)
{
    struct stat st;

    return fstat(t->fd, &st) == 0 &&
           daxfile_pmem_blockdev_is_virtio(major(st.st_dev), minor(st.st_dev));
}

static gboolean
dir_open_file(DaxguestTarget *t, const char *dir, gboolean write,
              gboolean need_sync, GError **error)
{
    g_auto(DaxfileFd) dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    gboolean new_file = FALSE;
    struct stat st;

    if (dirfd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open directory '%s'",
                                dir);
        return FALSE;
    }
    if (write) {
        t->fd =
            openat(dirfd, DAXGUEST_TARGET_FILE_NAME,
                   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        new_file = t->fd >= 0;
        /* the new directory entry must survive a crash as the data will */
        if (new_file)
            fsync(dirfd);
    }
    if (t->fd < 0)
        t->fd = openat(dirfd, DAXGUEST_TARGET_FILE_NAME,
                       (write ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
    t->virtio = t->fd >= 0 && on_virtio_pmem(t);
    if (t->fd >= 0 && need_sync && !t->virtio &&
        !dir_check_map_sync(t, dirfd, new_file, error))
        return FALSE;
    if (t->fd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", t->path);
        return FALSE;
    }
    if (fstat(t->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is not a regular file", t->path);
        return FALSE;
    }
    t->size = (guint64)st.st_size;
    return TRUE;
}

DaxguestTarget *
daxguest_target_open_dir(const char *dir, guint64 size,
                         DaxguestTargetFlags flags, GError **error)
{
    gboolean write = (flags & DAXGUEST_TARGET_WRITE) != 0;
    g_autofree char *name =
        g_build_filename(dir, DAXGUEST_TARGET_FILE_NAME, NULL);
    g_autoptr(DaxguestTarget) t =
        target_new(DAXGUEST_TARGET_FILE, daxfile_escape(name));

    if (!dir_open_file(t, dir, write,
                       write && !(flags & DAXGUEST_TARGET_ALLOW_NON_DAX),
                       error))
        return NULL;
    if (write) {
        size = size ? size : DAXGUEST_TARGET_DEFAULT_SIZE;
        if (!daxguest_pattern_check_size(size, error))
            return NULL;
        if (t->size != size && !file_provision(t, size, error))
            return NULL;
        t->size = size;
    } else if (size && size != t->size) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' has %" G_GUINT64_FORMAT
                    " bytes, not %" G_GUINT64_FORMAT,
                    t->path, t->size, size);
        return NULL;
    }
    if (!(flags & DAXGUEST_TARGET_NO_MAP) && t->size == 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is empty; fix: run 'daxfile-guest write' first",
                    t->path);
        return NULL;
    }
    if (!(flags & DAXGUEST_TARGET_NO_MAP) &&
        !target_map(t, write, (flags & DAXGUEST_TARGET_ALLOW_NON_DAX) != 0,
                    error))
        return NULL;
    return g_steal_pointer(&t);
}

/* the device-dax device @st (of @t->fd) is, in @inv */
static const DaxfilePmemDaxDev *
target_daxdev(const DaxguestTarget *t, const DaxfilePmemInventory *inv,
              const struct stat *st, GError **error)
{
    const DaxfilePmemDaxDev *d = daxfile_pmem_find_daxdev(
        inv, (int)major(st->st_rdev), (int)minor(st->st_rdev));

    if (!d)
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                    "'%s' is not a device-dax device known to libdaxctl",
                    t->path);
    return d;
}

/* size and alignment of the device-dax device behind @t->fd (libdaxctl) */
static gboolean
dev_identify(DaxguestTarget *t, GError **error)
{
    g_autoptr(DaxfilePmemInventory) inv = NULL;
    const DaxfilePmemDaxDev *d;
    struct stat st;

    if (fstat(t->fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' is not a device-dax character device; fix: use /dev/daxX.Y (or --dir for fsdax)",
            t->path);
        return FALSE;
    }
    inv = daxfile_pmem_inventory_read(error);
    if (!inv)
        return FALSE;
    d = target_daxdev(t, inv, &st, error);
    if (!d)
        return FALSE;
    t->dev_size = d->size;
    t->align = d->align ? d->align : SZ_2M;
    return TRUE;
}

/* Reading without a size: the size the pattern header records. */
static gboolean
dev_size_from_header(DaxguestTarget *t, GError **error)
{
    guint64 len = MAX(t->align, SZ_2M);
    g_auto(DaxfileMapping) map = {NULL, 0};

    if (len > t->dev_size) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is smaller than its alignment", t->path);
        return FALSE;
    }
    if (!daxfile_map_aligned(t->fd, len, 0, PROT_READ, MAP_SHARED, len,
                             &map.addr, error))
        return FALSE;
    map.length = len;
    t->size = daxguest_pattern_peek_size(map.addr, len);
    if (t->size == 0 || t->size > t->dev_size ||
        !DAXFILE_IS_ALIGNED(t->size, t->align)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "'%s' holds no intact pattern header; fix: pass --size, or run 'daxfile-guest write' first",
            t->path);
        return FALSE;
    }
    return TRUE;
}

static gboolean
dev_choose_size(DaxguestTarget *t, guint64 size, gboolean write, GError **error)
{
    g_autofree char *align = daxfile_size_format(t->align);

    if (size == 0 && !write)
        return dev_size_from_header(t, error);
    if (size == 0)
        size = MIN(DAXGUEST_TARGET_DEFAULT_SIZE,
                   DAXFILE_ALIGN_DOWN(t->dev_size, t->align));
    if (!DAXFILE_IS_ALIGNED(size, t->align) || size > t->dev_size) {
        g_autofree char *pretty = daxfile_size_format(size);
        g_autofree char *dev = daxfile_size_format(t->dev_size);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Size %s does not fit '%s' (%s, %s pages); fix: use a multiple of %s",
            pretty, t->path, dev, align, align);
        return FALSE;
    }
    t->size = size;
    return daxguest_pattern_check_size(size, error);
}

DaxguestTarget *
daxguest_target_open_dev(const char *dev, guint64 size,
                         DaxguestTargetFlags flags, GError **error)
{
    gboolean write = (flags & DAXGUEST_TARGET_WRITE) != 0;
    g_autoptr(DaxguestTarget) t =
        target_new(DAXGUEST_TARGET_DEVDAX, daxfile_escape(dev));

    t->fd = open(dev, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (t->fd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", t->path);
        return NULL;
    }
    if (!dev_identify(t, error))
        return NULL;
    if (flags & DAXGUEST_TARGET_NO_MAP)
        return g_steal_pointer(&t);
    if (!dev_choose_size(t, size, write, error) ||
        !target_map(t, write, FALSE, error))
        return NULL;
    return g_steal_pointer(&t);
}

/* ------------------------------------------------------------ writing */

typedef struct {
    const DaxguestFlushChoice *choice;
    DaxguestTarget *target;
    int msync_errno;
} PersistCtx;

static void
persist_flush(const void *addr, size_t len, gpointer data)
{
    PersistCtx *ctx = data;

    if (ctx->choice->flush)
        daxguest_flush_range(ctx->choice->insn, addr, len);
}

static void
persist_drain(gpointer data)
{
    PersistCtx *ctx = data;
    DaxguestTarget *t = ctx->target;

    if (ctx->choice->fence)
        daxguest_fence();
    /* no MAP_SYNC: the filesystem may hold dirty metadata (and, without
     * DAX, the page cache holds the data): msync makes it durable */
    if (!t->map_sync && t->kind == DAXGUEST_TARGET_FILE &&
        msync(t->map.addr, t->map.length, MS_SYNC) < 0 && !ctx->msync_errno)
        ctx->msync_errno = errno;
}

gboolean
daxguest_target_write_pattern(DaxguestTarget *target, guint64 seed,
                              const DaxguestFlushChoice *choice,
                              guint64 *ret_sequence, GError **error)
{
    PersistCtx ctx = {choice, target, 0};
    DaxguestPersistOps ops = {persist_flush, persist_drain, &ctx};

    g_return_val_if_fail(target->map.addr, FALSE);
    if (!daxguest_pattern_write(target->map.addr, target->size, seed, &ops,
                                ret_sequence, error))
        return FALSE;
    if (ctx.msync_errno) {
        daxfile_set_error_errno(error, ctx.msync_errno, "Cannot msync '%s'",
                                target->path);
        return FALSE;
    }
    return TRUE;
}

DaxguestTarget *
daxguest_target_write(const char *dir, const char *dev, guint64 size,
                      DaxguestTargetFlags flags, guint64 seed,
                      guint64 *ret_sequence, char **ret_flush, GError **error)
{
    g_autoptr(DaxguestTarget) t = NULL;
    DaxguestFlushChoice choice;

    if (!daxguest_flush_choice_detect(&choice, error))
        return NULL;
    t = daxguest_target_open(dir, dev, size, flags | DAXGUEST_TARGET_WRITE,
                             error);
    if (!t ||
        !daxguest_target_write_pattern(t, seed, &choice, ret_sequence, error))
        return NULL;
    *ret_flush = daxguest_flush_choice_describe(&choice);
    return g_steal_pointer(&t);
}

gboolean
daxguest_target_verify(const DaxguestTarget *target, guint64 seed,
                       DaxguestPatternResult *ret_result, GError **error)
{
    g_return_val_if_fail(target->map.addr, FALSE);
    return daxguest_pattern_verify(target->map.addr, target->size, seed,
                                   target->path, ret_result, error);
}

/* ------------------------------------------------------------ locating */

void
daxguest_location_clear(DaxguestLocation *loc)
{
    g_free(loc->device);
    g_free(loc->region);
    memset(loc, 0, sizeof(*loc));
}

#define EXTENT_NOT_ON_DEVICE                                                   \
    (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED |  \
     FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED |                   \
     FIEMAP_EXTENT_UNWRITTEN)

/* The device offset of byte @offset of the file (FIEMAP). */
static gboolean
file_device_offset(const DaxguestTarget *t, guint64 offset, guint64 *ret_offset,
                   GError **error)
{
    g_autoptr(DaxfileExtentMap) map =
        daxfile_fiemap_read(t->fd, t->path, error);
    guint i;

    if (!map)
        return FALSE;
    for (i = 0; i < map->extents->len; i++) {
        const DaxfileExtent *e = &g_array_index(map->extents, DaxfileExtent, i);

        if (offset < e->logical || offset >= e->logical + e->length)
            continue;
        if (e->flags & EXTENT_NOT_ON_DEVICE) {
            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY,
                "Offset 0x%" G_GINT64_MODIFIER
                "x of '%s' has no fixed place on the device (extent flags 0x%x)",
                offset, t->path, e->flags);
            return FALSE;
        }
        *ret_offset = e->physical + (offset - e->logical);
        return TRUE;
    }
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                "Offset 0x%" G_GINT64_MODIFIER "x of '%s' is in a hole", offset,
                t->path);
    return FALSE;
}

/* The whole disk ("pmem0") holding the file's filesystem, and the
 * partition start when it is on a partition. */
static char *
file_disk(const DaxguestTarget *t, guint64 *ret_part_start, GError **error)
{
    struct stat st;
    g_autofree char *rel = NULL;
    g_autofree char *link = NULL;
    g_autofree char *target = NULL;
    g_autofree char *part = NULL;
    guint64 start = 0;

    if (fstat(t->fd, &st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", t->path);
        return NULL;
    }
    rel =
        g_strdup_printf("dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
    link = g_build_filename(daxfile_sysfs_root(), rel, NULL);
    target = g_file_read_link(link, NULL);
    if (!target) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
                    "'%s' is not on a block device", t->path);
        return NULL;
    }
    part = g_strdup_printf("%s/partition", rel);
    if (daxfile_sysfs_exists(part)) {
        g_autofree char *start_rel = g_strdup_printf("%s/start", rel);
        g_autofree char *parent = g_path_get_dirname(target);

        if (!daxfile_sysfs_read_u64(start_rel, &start, error))
            return NULL;
        *ret_part_start = start * 512;
        return g_path_get_basename(parent);
    }
    *ret_part_start = 0;
    return g_path_get_basename(target);
}

static gboolean
locate_in_region(const DaxfilePmemInventory *inv, const char *region,
                 guint64 data_start, DaxguestLocation *loc, GError **error)
{
    const DaxfilePmemRegion *r = NULL;

    if (region)
        r = daxfile_pmem_find_region(inv, region);

    if (!r || r->resource == DAXFILE_PMEM_UNKNOWN ||
        data_start == DAXFILE_PMEM_UNKNOWN) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "The physical address of '%s' is unknown (no NVDIMM region or resource)",
            loc->device);
        return FALSE;
    }
    loc->region = g_strdup(r->name);
    loc->physical = data_start + loc->device_offset;
    loc->region_offset = loc->physical - r->resource;
    return TRUE;
}

static gboolean
locate_file(const DaxguestTarget *t, const DaxfilePmemInventory *inv,
            DaxguestLocation *loc, GError **error)
{
    guint64 part_start = 0;
    g_autofree char *disk = file_disk(t, &part_start, error);
    const DaxfilePmemNamespace *ns;

    if (!disk ||
        !file_device_offset(t, loc->offset, &loc->device_offset, error))
        return FALSE;
    loc->device_offset += part_start;
    loc->device = g_strdup_printf("/dev/%s", disk);
    ns = daxfile_pmem_find_blockdev(inv, disk);
    if (!ns) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                    "'%s' is on '%s', which is not an NVDIMM namespace",
                    t->path, loc->device);
        return FALSE;
    }
    return locate_in_region(inv, ns->region, ns->data_resource, loc, error);
}

static gboolean
locate_dev(const DaxguestTarget *t, const DaxfilePmemInventory *inv,
           DaxguestLocation *loc, GError **error)
{
    struct stat st;
    const DaxfilePmemDaxDev *d;

    if (fstat(t->fd, &st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", t->path);
        return FALSE;
    }
    d = target_daxdev(t, inv, &st, error);
    if (!d)
        return FALSE;
    loc->device = g_strdup_printf("/dev/%s", d->name);
    loc->device_offset = loc->offset;
    return locate_in_region(inv, d->region, d->resource, loc, error);
}

gboolean
daxguest_target_locate(const DaxguestTarget *target, guint64 offset,
                       DaxguestLocation *ret_loc, GError **error)
{
    g_autoptr(DaxfilePmemInventory) inv = daxfile_pmem_inventory_read(error);
    gboolean dev = target->kind == DAXGUEST_TARGET_DEVDAX;
    guint64 size = dev ? target->dev_size : target->size;

    memset(ret_loc, 0, sizeof(*ret_loc));
    ret_loc->offset = offset;
    if (!inv)
        return FALSE;
    if (offset >= size) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Offset 0x%" G_GINT64_MODIFIER
                    "x is beyond the end of '%s' (%" G_GUINT64_FORMAT " bytes)",
                    offset, target->path, size);
        return FALSE;
    }
    if (target->kind == DAXGUEST_TARGET_DEVDAX)
        return locate_dev(target, inv, ret_loc, error);
    return locate_file(target, inv, ret_loc, error);
}

static void
json_add_u64(JsonBuilder *b, const char *key, guint64 value)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, (gint64)value);
}

JsonNode *
daxguest_location_to_json(const char *path, const DaxguestLocation *loc)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "path");
    json_builder_add_string_value(b, path);
    json_add_u64(b, "offset", loc->offset);
    json_builder_set_member_name(b, "device");
    json_builder_add_string_value(b, loc->device);
    json_add_u64(b, "device_offset", loc->device_offset);
    json_builder_set_member_name(b, "region");
    json_builder_add_string_value(b, loc->region);
    json_add_u64(b, "region_offset", loc->region_offset);
    json_add_u64(b, "physical_address", loc->physical);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* `write --json`: what was written, where and how */
JsonNode *
daxguest_target_write_to_json(const DaxguestTarget *t, guint64 seed,
                              guint64 sequence, const char *flush)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "path");
    json_builder_add_string_value(b, t->path);
    json_add_u64(b, "size", t->size);
    json_add_u64(b, "seed", seed);
    json_add_u64(b, "sequence", sequence);
    json_builder_set_member_name(b, "map_sync");
    json_builder_add_boolean_value(b, t->map_sync);
    json_builder_set_member_name(b, "flush");
    json_builder_add_string_value(b, flush);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

const char *
daxguest_target_mapping_name(const DaxguestTarget *t)
{
    if (t->kind == DAXGUEST_TARGET_DEVDAX)
        return "device-dax MAP_SHARED";
    if (t->map_sync)
        return "MAP_SYNC";
    return t->virtio ? "MAP_SHARED + msync (virtio-pmem: the device's flush)"
                     : "MAP_SHARED + msync";
}

DaxguestTarget *
daxguest_target_open(const char *dir, const char *dev, guint64 size,
                     DaxguestTargetFlags flags, GError **error)
{
    if (dir)
        return daxguest_target_open_dir(dir, size, flags, error);
    return daxguest_target_open_dev(dev, size, flags, error);
}

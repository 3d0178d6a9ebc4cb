/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "daxfile-align.h"
#include "daxfile-create.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-extent.h"
#include "daxfile-fd.h"
#include "daxfile-fiemap.h"
#include "daxfile-mmap.h"
#include "daxfile-seam.h"
#include "daxfile-size.h"
#include "daxfile-util.h"

#define FILL_CHUNK (G_GUINT64_CONSTANT(8) << 20)
#define POPULATE_CHUNK (G_GUINT64_CONSTANT(64) << 20)

/* The file being built: unnamed (O_TMPFILE) or under a hidden name that
 * is removed unless it was renamed into place. */
typedef struct {
    int dirfd; /* borrowed */
    int fd;
    char *tmpname;
    gboolean linked;
} TmpFile;

static void
tmpfile_clear(TmpFile *t)
{
    if (t->fd >= 0)
        close(t->fd);
    if (t->tmpname && !t->linked)
        unlinkat(t->dirfd, t->tmpname, 0);
    g_free(t->tmpname);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TmpFile, tmpfile_clear)

const char *
daxfile_fill_method_to_string(DaxfileFillMethod method)
{
    return method == DAXFILE_FILL_POPULATE ? "populate" : "pwrite";
}

static char *
tmp_prefix(const char *base)
{
    return g_strdup_printf(".%s.daxfile-", base);
}

guint
daxfile_create_cleanup_stale(int dirfd, const char *base)
{
    g_autofree char *prefix = tmp_prefix(base);
    g_auto(DaxfileFd) fd =
        openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;
    guint removed = 0;

    if (!dir)
        return 0;
    fd = -1; /* owned by dir now */
    while ((de = readdir(dir))) {
        const char *rest;
        guint64 pid = 0;
        g_autofree char *pidstr = NULL;

        if (!g_str_has_prefix(de->d_name, prefix) ||
            !g_str_has_suffix(de->d_name, ".tmp"))
            continue;
        /* PID.ATTEMPT.tmp (PID.tmp before create allocated again) */
        rest = de->d_name + strlen(prefix);
        pidstr = g_strndup(rest, strcspn(rest, "."));
        if (!g_ascii_string_to_unsigned(pidstr, 10, 1, G_MAXINT32, &pid, NULL))
            continue;
        if (kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
            unlinkat(dirfd, de->d_name, 0) == 0)
            removed++;
    }
    closedir(dir);
    return removed;
}

/* Whether an unnamed file made in @dirfd can be linked into a name: one
 * is made, linked as @tmpname and removed at once (linking the file being
 * built itself would take it its O_TMPFILE right to be linked again). An
 * LSM that judges files by their path refuses to link a file that has
 * none: AppArmor does to libvirtd's profile, in which the hook runs
 * (Debian 13, a migration's destination creating the file). */
static gboolean
tmpfile_linkable(int dirfd, const char *tmpname, const char *dirname)
{
    g_auto(DaxfileFd) fd =
        openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    g_autofree char *proc = g_strdup_printf("/proc/self/fd/%d", fd);
    int rc = -1;

    if (fd >= 0 && daxfile_test_no_tmpfile_link())
        errno = EACCES;
    else if (fd >= 0)
        rc = linkat(AT_FDCWD, proc, dirfd, tmpname, AT_SYMLINK_FOLLOW);
    if (rc < 0) {
        g_debug(
            "an unnamed file cannot be linked into '%s' (%s): creating under a hidden name",
            dirname, g_strerror(errno));
        return FALSE;
    }
    unlinkat(dirfd, tmpname, 0);
    return TRUE;
}

static gboolean
tmpfile_open(TmpFile *t, const char *base, const char *dirname, guint attempt,
             GError **error)
{
    g_autofree char *prefix = tmp_prefix(base);
    g_autofree char *tmpname =
        g_strdup_printf("%s%d.%u.tmp", prefix, (int)getpid(), attempt);

    if (daxfile_test_no_tmpfile())
        errno = EOPNOTSUPP;
    else
        t->fd = openat(t->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (t->fd >= 0 && tmpfile_linkable(t->dirfd, tmpname, dirname))
        return TRUE;
    if (t->fd >= 0) {
        close(t->fd);
        t->fd = -1;
    } else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
        daxfile_set_error_errno(error, errno, "Cannot create a file in '%s'",
                                dirname);
        return FALSE;
    }
    t->tmpname = g_steal_pointer(&tmpname);
    t->fd = openat(t->dirfd, t->tmpname,
                   O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (t->fd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot create a file in '%s'",
                                dirname);
        g_clear_pointer(&t->tmpname, g_free);
        return FALSE;
    }
    return TRUE;
}

static gboolean
tmpfile_link(TmpFile *t, const char *base, const char *name, GError **error)
{
    int rc;

    if (t->tmpname) {
        rc = renameat2(t->dirfd, t->tmpname, t->dirfd, base, RENAME_NOREPLACE);
    } else {
        g_autofree char *proc = g_strdup_printf("/proc/self/fd/%d", t->fd);

        rc = linkat(AT_FDCWD, proc, t->dirfd, base, AT_SYMLINK_FOLLOW);
    }
    if (rc < 0 && errno == EEXIST) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_EXISTS,
            "'%s' appeared while it was being created; nothing was overwritten",
            name);
        return FALSE;
    }
    if (rc < 0) {
        daxfile_set_error_errno(error, errno, "Cannot link '%s' into place",
                                name);
        return FALSE;
    }
    t->linked = TRUE;
    return TRUE;
}

/* xfs aligns file offsets and lengths of allocations to the hint; ext4
 * accepts and ignores it, so only xfs gets it. */
static void
set_extsize_hint(int fd, const DaxfileFsInfo *fs, guint64 align)
{
    struct fsxattr fsx;

    if (STRNEQ(fs->fs_type, "xfs") || align <= fs->block_size)
        return;
    if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx) < 0)
        return;
    fsx.fsx_xflags |= FS_XFLAG_EXTSIZE;
    fsx.fsx_extsize = (guint32)MIN(align, G_GUINT64_CONSTANT(1) << 30);
    if (ioctl(fd, FS_IOC_FSSETXATTR, &fsx) < 0)
        g_debug("xfs extent size hint refused: %s", g_strerror(errno));
}

static gboolean
fill_pwrite(int fd, const char *name, const DaxfileCreateParams *params,
            GError **error)
{
    g_autofree guint8 *buf = g_aligned_alloc0(1, FILL_CHUNK, 4096);
    int fl = fcntl(fd, F_GETFL);
    gboolean direct = fl >= 0 && fcntl(fd, F_SETFL, fl | O_DIRECT) == 0;
    guint64 off = 0;

    while (off < params->size) {
        size_t n = (size_t)MIN(FILL_CHUNK, params->size - off);
        ssize_t w = pwrite(fd, buf, n, (off_t)off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EINVAL && direct) {
            direct = FALSE;
            fcntl(fd, F_SETFL, fl);
            continue;
        }
        if (w <= 0) {
            daxfile_set_error_errno(error, w < 0 ? errno : EIO,
                                    "Cannot write zeroes to '%s'", name);
            return FALSE;
        }
        off += (guint64)w;
        if (params->progress)
            params->progress(off, params->size, params->progress_data);
    }
    if (direct)
        fcntl(fd, F_SETFL, fl);
    return TRUE;
}

/* On a DAX file with aligned extents every 2 MiB write fault zeroes and
 * converts a whole extent at once: faster than pwrite. Returns FALSE with
 * no error when the kernel lacks MADV_POPULATE_WRITE (before 5.14). */
static gboolean
fill_populate(int fd, const char *name, const DaxfileCreateParams *params,
              GError **error)
{
    g_auto(DaxfileMapping) map = {NULL, params->size};
    guint64 off;

    map.addr =
        mmap(NULL, params->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map.addr == MAP_FAILED) {
        daxfile_set_error_errno(error, errno, "Cannot map '%s'", name);
        return FALSE;
    }
    for (off = 0; off < params->size; off += POPULATE_CHUNK) {
        size_t n = (size_t)MIN(POPULATE_CHUNK, params->size - off);

        if (madvise((guint8 *)map.addr + off, n, MADV_POPULATE_WRITE) < 0) {
            if (off == 0 &&
                (errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS))
                return FALSE;
            daxfile_set_error_errno(error, errno, "Cannot write zeroes to '%s'",
                                    name);
            return FALSE;
        }
        if (params->progress)
            params->progress(off + n, params->size, params->progress_data);
    }
    return TRUE;
}

static gboolean
allocate(int fd, const char *name, const DaxfileFsInfo *fs,
         const DaxfileCreateParams *params, GError **error)
{
    g_autofree char *size = NULL;

    set_extsize_hint(fd, fs, params->align);
    if (fallocate(fd, 0, 0, (off_t)params->size) == 0 || errno == EOPNOTSUPP)
        return TRUE;
    size = daxfile_size_format(params->size);
    daxfile_set_error_errno(error, errno, "Cannot allocate %s for '%s'", size,
                            name);
    return FALSE;
}

static gboolean
fill(int fd, const char *name, const DaxfileFsInfo *fs,
     const DaxfileCreateParams *params, DaxfileFillMethod *ret_method,
     GError **error)
{
    g_autoptr(GError) local = NULL;

    *ret_method = DAXFILE_FILL_PWRITE;
    if (fs->map_sync && fs->geometry_aligned == DAXFILE_TRI_YES) {
        if (fill_populate(fd, name, params, &local)) {
            *ret_method = DAXFILE_FILL_POPULATE;
            return TRUE;
        }
        if (local) {
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        }
    }
    return fill_pwrite(fd, name, params, error);
}

/* The pages of the allocated, not yet written file that will not be fit
 * once written because of where the blocks are (misaligned or split):
 * writing converts unwritten extents in place and moves no block, so this
 * is known before the fill. NULL when nothing is misplaced or the map
 * cannot be read (the verification after the fill then speaks). */
static GArray *
misplaced_pages(int fd, const char *name, const DaxfileFsInfo *fs,
                guint64 align, guint attempt)
{
    g_autoptr(DaxfileExtentMap) map = daxfile_fiemap_read(fd, name, NULL);
    g_autoptr(DaxfileExtentMap) written = NULL;
    g_autoptr(GArray) problems = NULL;
    GArray *pages = NULL;
    guint i;

    if (!map)
        return NULL;
    written = daxfile_extent_map_new(map->size, map->block_size);
    written->phys_offset = fs->part_offset;
    for (i = 0; i < map->extents->len; i++) {
        const DaxfileExtent *e = &g_array_index(map->extents, DaxfileExtent, i);

        daxfile_extent_map_add(written, e->logical, e->physical, e->length,
                               e->flags & ~(guint32)FIEMAP_EXTENT_UNWRITTEN);
    }
    problems = daxfile_extent_problems(written, align);
    for (i = 0; i < problems->len; i++) {
        const DaxfileRange *r = &g_array_index(problems, DaxfileRange, i);

        if (r->reason != DAXFILE_REASON_MISALIGNED &&
            r->reason != DAXFILE_REASON_DISCONTIGUOUS)
            continue;
        if (!pages)
            pages = g_array_new(FALSE, FALSE, sizeof(DaxfileRange));
        g_array_append_val(pages, *r);
    }
    if (!pages && daxfile_test_misplaced(attempt)) {
        DaxfileRange first = {0, align, 0, DAXFILE_REASON_MISALIGNED};

        pages = g_array_new(FALSE, FALSE, sizeof(DaxfileRange));
        g_array_append_val(pages, first);
    }
    return pages;
}

/* Collapse away what keeps pages from being fit, instead of allocating the
 * whole file again: the misaligned head of an extent, or the part of a
 * page before its run breaks (daxfile_extent_next_collapse()).
 * FALLOC_FL_COLLAPSE_RANGE keeps every block where it is and shifts what
 * follows down; the space it drops is allocated again at the end. While
 * this runs the file is a page longer than asked, so that no collapse
 * reaches its end (which the call refuses); then it is cut back. Stops
 * where the filesystem cannot go on (no COLLAPSE_RANGE, no space): what is
 * still misplaced is then allocate_placed()'s. */
static gboolean
collapse_misplaced(int fd, const char *name, const DaxfileFsInfo *fs,
                   const DaxfileCreateParams *params, DaxfileCreateInfo *info,
                   GError **error)
{
    guint64 want = params->size + params->align;
    guint64 unit = fs->stripe && fs->stripe % params->align == 0
                       ? fs->stripe
                       : params->align;
    guint64 chunk = MAX(unit, params->size / 16 / unit * unit);
    guint steps = 64 + 8 * (guint)MIN(params->size / params->align, 1 << 20);
    gboolean grown = FALSE;
    guint grows = 0;

    while (steps--) {
        g_autoptr(DaxfileExtentMap) map = daxfile_fiemap_read(fd, name, NULL);
        guint64 off = 0, len = 0;
        gboolean found;

        if (!map)
            break;
        map->phys_offset = fs->part_offset;
        found = daxfile_extent_next_collapse(map, params->align, params->size,
                                             &off, &len);
        /* done, unless collapses left the file shorter than asked: its
         * tail would be a hole that the fill allocates anywhere */
        if (!found && map->size >= params->size)
            break;
        if (map->size < want) {
            /* whole stripes (or pages): an allocator that aligns to the
             * stripe (ext4 with stripe_width, xfs with su) does so only
             * for requests that are multiples of it. First several, then
             * (where that kept bringing in misplaced runs: on an aged
             * filesystem, the blocks just collapsed away, free again at
             * the allocator's goal) one at a time: ext4 takes a request
             * of exactly one stripe at its goal only when aligned there,
             * and otherwise from an aligned buddy. Measured on an aged
             * ext4 on fsdax: several at a time forever churned through
             * the same misaligned blocks until the steps ran out. */
            guint64 step = grows++ < 2 ? chunk : unit;
            guint64 grow = (want - map->size + step - 1) / step * step;

            if (fallocate(fd, 0, (off_t)map->size, (off_t)grow) < 0)
                break;
            grown = TRUE;
            continue;
        }
        if (!found)
            break;
        if (fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, (off_t)off, (off_t)len) <
            0) {
            g_debug("'%s': cannot collapse [%" G_GUINT64_FORMAT
                    ", +%" G_GUINT64_FORMAT "): %s",
                    name, off, len, g_strerror(errno));
            break;
        }
        info->collapses++;
        info->collapsed += len;
    }
    if (grown && ftruncate(fd, (off_t)params->size) < 0) {
        daxfile_set_error_errno(error, errno,
                                "Cannot cut '%s' back to its size", name);
        return FALSE;
    }
    return TRUE;
}

/* Keep the misplaced pages' blocks allocated (so that the next allocation
 * cannot land there again) and give the rest back. */
static void
hold_misplaced(int fd, guint64 size, const GArray *pages)
{
    guint64 off = 0;
    guint i;

    for (i = 0; i <= pages->len; i++) {
        const DaxfileRange *r =
            i < pages->len ? &g_array_index(pages, DaxfileRange, i) : NULL;
        guint64 end = r ? r->offset : size;

        if (end > off &&
            fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      (off_t)off, (off_t)(end - off)) < 0)
            g_debug("cannot give back [%" G_GUINT64_FORMAT
                    ", +%" G_GUINT64_FORMAT "): %s",
                    off, end - off, g_strerror(errno));
        if (r)
            off = r->offset + r->length;
    }
}

/* Room for another allocation of @size once only @pages stay held? The
 * current file's other blocks are given back first, so that is: is the
 * space free now at least what stays held? */
static gboolean
room_to_retry(int fd, const GArray *pages)
{
    struct statvfs sv;
    guint64 kept = 0;
    guint i;

    for (i = 0; i < pages->len; i++)
        kept += g_array_index(pages, DaxfileRange, i).length;
    return fstatvfs(fd, &sv) == 0 && (guint64)sv.f_bavail * sv.f_frsize >= kept;
}

/* Allocate into @tmp; while the filesystem could give aligned extents but
 * placed pages misaligned or split, hold those blocks in @held and ask
 * again with a new file. The last attempt's file is kept whatever its
 * placement: the verification after the fill reports it. */
static gboolean
allocate_placed(TmpFile *tmp, GArray *held, const char *name, const char *base,
                const char *dirname, const DaxfileCreateParams *params,
                DaxfileFsInfo **ret_fs, DaxfileCreateInfo *info, GError **error)
{
    guint attempt;

    for (attempt = 1;; attempt++) {
        g_autoptr(GArray) pages = NULL;

        if (!tmpfile_open(tmp, base, dirname, attempt, error))
            return FALSE;
        if (!*ret_fs) {
            *ret_fs = daxfile_fs_probe(tmp->fd, params->align, error);
            if (!*ret_fs || !daxfile_fiemap_supported(tmp->fd, name, error))
                return FALSE;
        }
        if (!allocate(tmp->fd, name, *ret_fs, params, error))
            return FALSE;
        daxfile_test_crash_point("create-allocated");
        daxfile_test_pause_point("create-allocated");
        info->attempts = attempt;
        if ((*ret_fs)->geometry_aligned == DAXFILE_TRI_YES &&
            !collapse_misplaced(tmp->fd, name, *ret_fs, params, info, error))
            return FALSE;
        if (attempt == DAXFILE_CREATE_ATTEMPTS ||
            (*ret_fs)->geometry_aligned != DAXFILE_TRI_YES ||
            !(pages = misplaced_pages(tmp->fd, name, *ret_fs, params->align,
                                      attempt)) ||
            !room_to_retry(tmp->fd, pages))
            return TRUE;
        g_debug(
            "'%s': allocation %u placed %u range(s) misaligned or split; allocating again",
            name, attempt, pages->len);
        hold_misplaced(tmp->fd, params->size, pages);
        g_array_append_val(held, *tmp);
        *tmp = (TmpFile){tmp->dirfd, -1, NULL, FALSE};
    }
}

static gboolean
create_validate(const char *name, const char *base,
                const DaxfileCreateParams *params, GError **error)
{
    if (!daxfile_align_check(params->align, error))
        return FALSE;
    if (params->size == 0 || params->size % params->align != 0) {
        g_autofree char *size = daxfile_size_format(params->size);
        g_autofree char *align = daxfile_size_format(params->align);
        guint64 fit = DAXFILE_ALIGN_UP(MAX(params->size, 1), params->align);
        g_autofree char *up = NULL;

        /* the largest size is G_MAXINT64: round down when up is past it */
        if (fit > (guint64)G_MAXINT64 || fit < params->size)
            fit = DAXFILE_ALIGN_DOWN(params->size, params->align);
        up = daxfile_size_format_arg(fit);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Size %s of '%s' is not a multiple of the alignment %s; fix: use --size %s",
            size, name, align, up);
        return FALSE;
    }
    if (!*base || STREQ(base, ".") || STREQ(base, "..") || STREQ(base, "/") ||
        g_str_has_suffix(name, "/")) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' does not name a file", name);
        return FALSE;
    }
    return TRUE;
}

static gboolean
create_precheck(int dirfd, const char *name, const char *base,
                const DaxfileCreateParams *params, GError **error)
{
    struct stat st;
    struct statvfs sv;
    guint64 avail;

    if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_EXISTS,
            "'%s' already exists; daxfile create never overwrites a file; fix: remove it or choose another path",
            name);
        return FALSE;
    }
    if (fstatvfs(dirfd, &sv) == 0) {
        avail = (guint64)sv.f_bavail * sv.f_frsize;
        if (avail < params->size) {
            g_autofree char *need = daxfile_size_format(params->size);
            g_autofree char *have = daxfile_size_format(avail);

            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_NO_SPACE,
                "Not enough space for '%s': it needs %s, the filesystem has %s available",
                name, need, have);
            return FALSE;
        }
    }
    return TRUE;
}

/* What to say when a filesystem made for aligned extents could not place
 * the file: how much aligned space it has, the file's own fit pages
 * included (the file still holds them), against what was asked; NULL
 * where that is not the problem or cannot be known. */
static char *
placement_fix(int fd, const DaxfileFsInfo *fs,
              const DaxfileCreateParams *params, const DaxfileReport *report,
              DaxfileReason reason)
{
    g_autoptr(GArray) problems = NULL;
    g_autofree char *usable = NULL;
    g_autofree char *all = NULL;
    g_autofree char *asked = NULL;
    g_autofree char *align = NULL;
    guint64 free_bytes, aligned, misplaced = 0;
    guint i;

    if ((reason != DAXFILE_REASON_MISALIGNED &&
         reason != DAXFILE_REASON_DISCONTIGUOUS) ||
        fs->geometry_aligned != DAXFILE_TRI_YES ||
        !daxfile_fs_free_space(fd, params->align, fs->part_offset, &free_bytes,
                               &aligned))
        return NULL;
    problems = daxfile_extent_problems(report->map, params->align);
    for (i = 0; i < problems->len; i++)
        misplaced += g_array_index(problems, DaxfileRange, i).length;
    usable = daxfile_size_format(aligned + params->size -
                                 MIN(misplaced, params->size));
    all = daxfile_size_format(free_bytes + params->size);
    asked = daxfile_size_format(params->size);
    align = daxfile_size_format(params->align);
    return g_strdup_printf(
        "the filesystem has only %s in aligned %s pages for the %s asked (%s free in all): free space, defragment it (e4defrag, xfs_fsr), or use a smaller --align",
        usable, align, asked, all);
}

static DaxfileReport *
create_verify(int fd, const char *path, const char *name,
              const DaxfileFsInfo *fs, const DaxfileCreateParams *params,
              GError **error)
{
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(DaxfileReport) report = NULL;
    g_autofree char *why = NULL;
    g_autofree char *fix = NULL;
    g_autofree char *align = daxfile_size_format(params->align);
    const DaxfileRange *first;

    if (fsync(fd) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot sync '%s'", name);
        return NULL;
    }
    /* the temporary file, by the name it is about to get */
    f = daxfile_file_new_from_fd(fcntl(fd, F_DUPFD_CLOEXEC, 0), path, error);
    if (!f)
        return NULL;
    report =
        daxfile_report_build(f, params->align, params->allow_non_dax, error);
    if (!report)
        return NULL;
    if (report->layout_ok)
        return g_steal_pointer(&report);
    first = daxfile_report_first_problem(report, TRUE);
    why = daxfile_report_describe_problem(report, first);
    fix = placement_fix(fd, fs, params, report, first->reason);
    if (!fix)
        fix = daxfile_report_fix(report, first->reason);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY,
        "'%s' was allocated but cannot back %s pages: %s; fix: %s (nothing was created)",
        name, align, why, fix);
    return NULL;
}

/* daxfile_create_at(), @path shown as @name */
static DaxfileReport *
create_in(int dirfd, const char *path, const char *name,
          const DaxfileCreateParams *params, DaxfileCreateInfo *ret_info,
          GError **error)
{
    /* escaping keeps every '/': the directory of the display name */
    g_autofree char *dirname = g_path_get_dirname(name);
    g_autofree char *base = g_path_get_basename(path);
    g_auto(TmpFile) tmp = {dirfd, -1, NULL, FALSE};
    g_autoptr(GArray) held = g_array_new(FALSE, FALSE, sizeof(TmpFile));
    g_autoptr(DaxfileFsInfo) fs = NULL;
    g_autoptr(DaxfileReport) report = NULL;
    DaxfileCreateInfo info = {DAXFILE_FILL_PWRITE, 0, 0, 0};

    g_array_set_clear_func(held, (GDestroyNotify)tmpfile_clear);
    if (!create_validate(name, base, params, error))
        return NULL;
    daxfile_create_cleanup_stale(dirfd, base);
    if (!create_precheck(dirfd, name, base, params, error) ||
        !allocate_placed(&tmp, held, name, base, dirname, params, &fs, &info,
                         error) ||
        !fill(tmp.fd, name, fs, params, &info.method, error))
        return NULL;
    daxfile_test_crash_point("create-filled");
    report = create_verify(tmp.fd, path, name, fs, params, error);
    if (!report || !tmpfile_link(&tmp, base, name, error))
        return NULL;
    if (fsync(dirfd) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot sync directory '%s'",
                                dirname);
        return NULL;
    }
    if (ret_info)
        *ret_info = info;
    return g_steal_pointer(&report);
}

DaxfileReport *
daxfile_create_at(int dirfd, const char *path,
                  const DaxfileCreateParams *params,
                  DaxfileCreateInfo *ret_info, GError **error)
{
    g_autofree char *name = daxfile_escape(path);

    return create_in(dirfd, path, name, params, ret_info, error);
}

DaxfileReport *
daxfile_create(const char *path, const DaxfileCreateParams *params,
               DaxfileCreateInfo *ret_info, GError **error)
{
    /* the one display of @path, where it enters */
    g_autofree char *name = daxfile_escape(path);
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *dirname = g_path_get_dirname(name);
    g_autofree char *base = g_path_get_basename(path);
    g_auto(DaxfileFd) dirfd = -1;

    /* bad sizes and names first, before the directory is even opened */
    if (!create_validate(name, base, params, error))
        return NULL;
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        daxfile_set_error_errno(
            error, errno, "Cannot create '%s': cannot open directory '%s'",
            name, dirname);
        return NULL;
    }
    return create_in(dirfd, path, name, params, ret_info, error);
}

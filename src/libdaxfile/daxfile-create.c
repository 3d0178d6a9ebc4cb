/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "daxfile-create.h"
#include "daxfile-error.h"
#include "daxfile-fiemap.h"
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
    g_auto(DaxfileFd) fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY |
                                                  O_CLOEXEC);
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
        rest = de->d_name + strlen(prefix);
        pidstr = g_strndup(rest, strlen(rest) - strlen(".tmp"));
        if (!g_ascii_string_to_unsigned(pidstr, 10, 1, G_MAXINT32, &pid,
                                        NULL))
            continue;
        if (kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
            unlinkat(dirfd, de->d_name, 0) == 0)
            removed++;
    }
    closedir(dir);
    return removed;
}

static gboolean
tmpfile_open(TmpFile *t, const char *base, const char *dirname,
             GError **error)
{
    g_autofree char *prefix = NULL;

    if (daxfile_test_no_tmpfile())
        errno = EOPNOTSUPP;
    else
        t->fd = openat(t->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (t->fd >= 0)
        return TRUE;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
        daxfile_set_error_errno(error, errno, "Cannot create a file in '%s'",
                                dirname);
        return FALSE;
    }
    prefix = tmp_prefix(base);
    t->tmpname = g_strdup_printf("%s%d.tmp", prefix, (int)getpid());
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
        rc = renameat2(t->dirfd, t->tmpname, t->dirfd, base,
                       RENAME_NOREPLACE);
    } else {
        g_autofree char *proc = g_strdup_printf("/proc/self/fd/%d", t->fd);

        rc = linkat(AT_FDCWD, proc, t->dirfd, base, AT_SYMLINK_FOLLOW);
    }
    if (rc < 0 && errno == EEXIST) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_EXISTS,
                    "'%s' appeared while it was being created; nothing was "
                    "overwritten", name);
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

    map.addr = mmap(NULL, params->size, PROT_READ | PROT_WRITE, MAP_SHARED,
                    fd, 0);
    if (map.addr == MAP_FAILED) {
        daxfile_set_error_errno(error, errno, "Cannot map '%s'", name);
        return FALSE;
    }
    for (off = 0; off < params->size; off += POPULATE_CHUNK) {
        size_t n = (size_t)MIN(POPULATE_CHUNK, params->size - off);

        if (madvise((guint8 *)map.addr + off, n, MADV_POPULATE_WRITE) < 0) {
            if (off == 0 && (errno == EINVAL || errno == EOPNOTSUPP ||
                             errno == ENOSYS))
                return FALSE;
            daxfile_set_error_errno(error, errno,
                                    "Cannot write zeroes to '%s'", name);
            return FALSE;
        }
        if (params->progress)
            params->progress(off + n, params->size, params->progress_data);
    }
    return TRUE;
}

static gboolean
allocate_and_fill(int fd, const char *name, const DaxfileFsInfo *fs,
                  const DaxfileCreateParams *params,
                  DaxfileFillMethod *ret_method, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autofree char *size = daxfile_size_format(params->size);

    set_extsize_hint(fd, fs, params->align);
    if (fallocate(fd, 0, 0, (off_t)params->size) < 0 && errno != EOPNOTSUPP) {
        daxfile_set_error_errno(error, errno, "Cannot allocate %s for '%s'",
                                size, name);
        return FALSE;
    }
    daxfile_test_crash_point("create-allocated");
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

static gboolean
create_validate(const char *name, const char *base,
                const DaxfileCreateParams *params, GError **error)
{
    if (!daxfile_align_check(params->align, error))
        return FALSE;
    if (params->size == 0 || params->size % params->align != 0) {
        g_autofree char *size = daxfile_size_format(params->size);
        g_autofree char *align = daxfile_size_format(params->align);
        g_autofree char *up = daxfile_size_format_arg(
            DAXFILE_ALIGN_UP(MAX(params->size, 1), params->align));

        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Size %s of '%s' is not a multiple of the alignment %s; "
                    "use --size %s", size, name, align, up);
        return FALSE;
    }
    if (!*base || STREQ(base, ".") || STREQ(base, "..") ||
        STREQ(base, "/") || g_str_has_suffix(name, "/")) {
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
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_EXISTS,
                    "'%s' already exists; daxfile create never overwrites "
                    "a file (remove it or choose another path)", name);
        return FALSE;
    }
    if (fstatvfs(dirfd, &sv) == 0) {
        avail = (guint64)sv.f_bavail * sv.f_frsize;
        if (avail < params->size) {
            g_autofree char *need = daxfile_size_format(params->size);
            g_autofree char *have = daxfile_size_format(avail);

            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NO_SPACE,
                        "Not enough space for '%s': it needs %s, the "
                        "filesystem has %s available", name, need, have);
            return FALSE;
        }
    }
    return TRUE;
}

static DaxfileReport *
create_verify(int fd, const char *path, const char *name,
              const DaxfileCreateParams *params, GError **error)
{
    g_autoptr(DaxfileReport) report = NULL;
    g_autofree char *why = NULL;
    g_autofree char *fix = NULL;
    g_autofree char *align = daxfile_size_format(params->align);
    const DaxfileRange *first;

    if (fsync(fd) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot sync '%s'", name);
        return NULL;
    }
    report = daxfile_report_build(fd, path, params->align,
                                  params->allow_non_dax, error);
    if (!report)
        return NULL;
    if (report->layout_ok)
        return g_steal_pointer(&report);
    first = daxfile_report_first_problem(report, TRUE);
    why = daxfile_report_describe_problem(report, first);
    fix = daxfile_report_fix(report, first->reason);
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY,
                "'%s' was allocated but cannot back %s pages: %s; %s "
                "(nothing was created)", name, align, why, fix);
    return NULL;
}

DaxfileReport *
daxfile_create_at(int dirfd, const char *path,
                  const DaxfileCreateParams *params,
                  DaxfileFillMethod *ret_method, GError **error)
{
    g_autofree char *name = daxfile_escape(path);
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *dirname = daxfile_escape(dir);
    g_autofree char *base = g_path_get_basename(path);
    g_auto(TmpFile) tmp = {dirfd, -1, NULL, FALSE};
    g_autoptr(DaxfileFsInfo) fs = NULL;
    g_autoptr(DaxfileReport) report = NULL;
    DaxfileFillMethod method = DAXFILE_FILL_PWRITE;

    if (!create_validate(name, base, params, error))
        return NULL;
    daxfile_create_cleanup_stale(dirfd, base);
    if (!create_precheck(dirfd, name, base, params, error) ||
        !tmpfile_open(&tmp, base, dirname, error))
        return NULL;
    fs = daxfile_fs_probe(tmp.fd, params->align, error);
    if (!fs || !daxfile_fiemap_supported(tmp.fd, name, error) ||
        !allocate_and_fill(tmp.fd, name, fs, params, &method, error))
        return NULL;
    daxfile_test_crash_point("create-filled");
    report = create_verify(tmp.fd, path, name, params, error);
    if (!report || !tmpfile_link(&tmp, base, name, error))
        return NULL;
    if (fsync(dirfd) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot sync directory '%s'",
                                dirname);
        return NULL;
    }
    if (ret_method)
        *ret_method = method;
    return g_steal_pointer(&report);
}

DaxfileReport *
daxfile_create(const char *path, const DaxfileCreateParams *params,
               DaxfileFillMethod *ret_method, GError **error)
{
    g_autofree char *name = daxfile_escape(path);
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *dirname = daxfile_escape(dir);
    g_autofree char *base = g_path_get_basename(path);
    g_auto(DaxfileFd) dirfd = -1;

    /* bad sizes and names first, before the directory is even opened */
    if (!create_validate(name, base, params, error))
        return NULL;
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        daxfile_set_error_errno(error, errno,
                                "Cannot create '%s': cannot open directory "
                                "'%s'", name, dirname);
        return NULL;
    }
    return daxfile_create_at(dirfd, path, params, ret_method, error);
}

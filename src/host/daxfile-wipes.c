/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-mount.h"
#include "daxfile-registry.h"
#include "daxfile-util.h"
#include "daxfile-wipes.h"

#define GROUP "wipe"
#define SUFFIX ".wipe"
/* a record is a few lines; its path, escaped, at most 4 bytes a byte */
#define RECORD_MAX (64 * 1024)

DAXFILE_ENUM_IMPL(daxfile_wipe_state, DaxfileWipeState, DAXFILE_WIPE_STATE_LAST,
                  "undefined", "wiping");

void
daxfile_wipe_record_free(DaxfileWipeRecord *r)
{
    if (!r)
        return;
    g_free(r->path);
    g_free(r->handle);
    g_free(r->domain);
    g_free(r->uuid);
    g_free(r->since);
    g_free(r);
}

void
daxfile_wipe_key(const DaxfileFile *f, guint64 *ret_dev, guint64 *ret_ino)
{
    gboolean device = S_ISCHR(f->st.st_mode);

    *ret_dev = device ? f->st.st_rdev : f->st.st_dev;
    *ret_ino = device ? 0 : f->st.st_ino;
}

DaxfileWipeRecord *
daxfile_wipe_record_new(const DaxfileFile *f, DaxfileWipeState state,
                        const char *domain, const char *uuid)
{
    DaxfileWipeRecord *r = g_new0(DaxfileWipeRecord, 1);
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    char *target = daxfile_fd_target(f->fd);

    if (!target || !g_path_is_absolute(target)) {
        g_free(target);
        target = g_canonicalize_filename(f->path, NULL);
    }
    r->path = target;
    daxfile_wipe_key(f, &r->dev, &r->ino);
    if (!S_ISCHR(f->st.st_mode))
        r->handle = daxfile_fd_handle(f->fd);
    r->state = state;
    r->domain = g_strdup(domain);
    r->uuid = g_strdup(uuid);
    r->since = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
    return r;
}

static char *
records_dir(void)
{
    g_autofree char *lib = daxfile_state_lib_dir();

    return g_build_filename(lib, "wipes", NULL);
}

static char *
record_name(guint64 dev, guint64 ino)
{
    return g_strdup_printf("%" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT SUFFIX,
                           dev, ino);
}

/* The directory of the records, made when @create; -1 with no error when
 * it does not exist and is not to be made */
static int
dir_open(gboolean create, GError **error)
{
    g_autofree char *dir = records_dir();
    int fd;

    if (create && g_mkdir_with_parents(dir, 0700) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot create '%s'", dir);
        return -1;
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && (create || errno != ENOENT))
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", dir);
    return fd;
}

static gboolean
dir_sync(int dirfd, GError **error)
{
    g_autofree char *dir = NULL;

    if (fsync(dirfd) == 0)
        return TRUE;
    dir = records_dir();
    daxfile_set_error_errno(
        error, errno,
        "Cannot make the wipe records in '%s' durable (fsync of the directory)",
        dir);
    return FALSE;
}

static char *
record_text(const DaxfileWipeRecord *r)
{
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autofree char *path = g_strescape(r->path, NULL);

    g_key_file_set_string(kf, GROUP, "path", path);
    g_key_file_set_uint64(kf, GROUP, "dev", r->dev);
    g_key_file_set_uint64(kf, GROUP, "ino", r->ino);
    if (r->handle)
        g_key_file_set_string(kf, GROUP, "handle", r->handle);
    g_key_file_set_string(kf, GROUP, "state",
                          daxfile_wipe_state_to_string(r->state));
    if (r->domain) {
        g_autofree char *domain = g_strescape(r->domain, NULL);

        g_key_file_set_string(kf, GROUP, "domain", domain);
    }
    if (r->uuid)
        g_key_file_set_string(kf, GROUP, "uuid", r->uuid);
    g_key_file_set_string(kf, GROUP, "since", r->since);
    return g_key_file_to_data(kf, NULL, NULL);
}

gboolean
daxfile_wipe_record_save(const DaxfileWipeRecord *r, GError **error)
{
    g_auto(DaxfileFd) dirfd = dir_open(TRUE, error);
    g_autofree char *name = record_name(r->dev, r->ino);
    g_autofree char *tmp = g_strconcat(".", name, ".tmp", NULL);
    g_autofree char *text = record_text(r);
    g_autofree char *dir = NULL;
    g_auto(DaxfileFd) fd = -1;
    size_t len = strlen(text);

    if (dirfd < 0)
        return FALSE;
    fd = openat(dirfd, tmp,
                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0 ||
        renameat(dirfd, tmp, dirfd, name) < 0) {
        int errsv = errno;

        dir = records_dir();
        unlinkat(dirfd, tmp, 0);
        daxfile_set_error_errno(error, errsv,
                                "Cannot write the wipe record '%s' in '%s'",
                                name, dir);
        return FALSE;
    }
    return dir_sync(dirfd, error);
}

gboolean
daxfile_wipe_record_remove(guint64 dev, guint64 ino, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_auto(DaxfileFd) dirfd = dir_open(FALSE, &local);
    g_autofree char *name = record_name(dev, ino);
    g_autofree char *dir = NULL;

    if (dirfd < 0) {
        if (!local)
            return TRUE; /* no directory: no record */
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    if (unlinkat(dirfd, name, 0) < 0) {
        if (errno == ENOENT)
            return TRUE;
        dir = records_dir();
        daxfile_set_error_errno(error, errno,
                                "Cannot remove the wipe record '%s' in '%s'",
                                name, dir);
        return FALSE;
    }
    return dir_sync(dirfd, error);
}

static gboolean
key_uint64(GKeyFile *kf, const char *key, guint64 *ret)
{
    g_autofree char *text = g_key_file_get_string(kf, GROUP, key, NULL);

    return text &&
           g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, ret, NULL);
}

static char *
key_raw(GKeyFile *kf, const char *key)
{
    g_autofree char *text = g_key_file_get_string(kf, GROUP, key, NULL);

    return text ? g_strcompress(text) : NULL;
}

/* The record in @name (in the directory @dirfd), or NULL with @error */
static DaxfileWipeRecord *
record_read(int dirfd, const char *name, GError **error)
{
    g_autoptr(DaxfileWipeRecord) r = g_new0(DaxfileWipeRecord, 1);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autofree char *dir = records_dir();
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *state = NULL;
    g_autofree char *text = g_malloc(RECORD_MAX + 1);
    g_auto(DaxfileFd) fd =
        openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n = -1;

    if (fd >= 0)
        n = read(fd, text, RECORD_MAX);
    if (n < 0) {
        daxfile_set_error_errno(error, errno,
                                "Cannot read the wipe record '%s'", path);
        return NULL;
    }
    text[n] = '\0';
    state = g_key_file_load_from_data(kf, text, n, G_KEY_FILE_NONE, NULL)
                ? g_key_file_get_string(kf, GROUP, "state", NULL)
                : NULL;
    r->path = key_raw(kf, "path");
    r->handle = g_key_file_get_string(kf, GROUP, "handle", NULL);
    r->domain = key_raw(kf, "domain");
    r->uuid = g_key_file_get_string(kf, GROUP, "uuid", NULL);
    r->since = g_key_file_get_string(kf, GROUP, "since", NULL);
    if (!state || !daxfile_wipe_state_from_string(state, &r->state) ||
        !r->path || !key_uint64(kf, "dev", &r->dev) ||
        !key_uint64(kf, "ino", &r->ino)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "The wipe record '%s' cannot be read (no path, key or state in it); fix: find its file, wipe it with 'daxfile wipe', then remove the record",
            path);
        return NULL;
    }
    if (!r->since)
        r->since = g_strdup("");
    return g_steal_pointer(&r);
}

static gint
record_cmp(gconstpointer a, gconstpointer b)
{
    const DaxfileWipeRecord *x = *(DaxfileWipeRecord *const *)a;
    const DaxfileWipeRecord *y = *(DaxfileWipeRecord *const *)b;

    return g_strcmp0(x->since, y->since);
}

GPtrArray *
daxfile_wipe_records(GError **error)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)daxfile_wipe_record_free);
    g_autoptr(GError) local = NULL;
    g_auto(DaxfileFd) dirfd = dir_open(FALSE, &local);
    g_autoptr(GDir) dir = NULL;
    g_autofree char *where = NULL;
    const char *name;

    if (dirfd < 0) {
        if (!local)
            return g_steal_pointer(&out);
        g_propagate_error(error, g_steal_pointer(&local));
        return NULL;
    }
    where = records_dir();
    dir = g_dir_open(where, 0, error);
    if (!dir)
        return NULL;
    while ((name = g_dir_read_name(dir))) {
        DaxfileWipeRecord *r;

        if (name[0] == '.' || !g_str_has_suffix(name, SUFFIX))
            continue;
        r = record_read(dirfd, name, error);
        if (!r)
            return NULL;
        g_ptr_array_add(out, r);
    }
    g_ptr_array_sort(out, record_cmp);
    return g_steal_pointer(&out);
}

gboolean
daxfile_wipe_record_find(guint64 dev, guint64 ino, DaxfileWipeRecord **ret,
                         GError **error)
{
    g_autoptr(GError) local = NULL;
    g_auto(DaxfileFd) dirfd = dir_open(FALSE, &local);
    g_autofree char *name = record_name(dev, ino);

    *ret = NULL;
    if (dirfd < 0) {
        if (!local)
            return TRUE;
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    if (faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
        g_autofree char *dir = NULL;

        if (errno == ENOENT)
            return TRUE;
        dir = records_dir();
        daxfile_set_error_errno(error, errno,
                                "Cannot look for the wipe record '%s' in '%s'",
                                name, dir);
        return FALSE;
    }
    *ret = record_read(dirfd, name, error);
    return *ret != NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-registry-format.h"
#include "daxfile-registry.h"
#include "daxfile-seam.h"
#include "daxfile-util.h"

struct _DaxfileRegistry {
    int lock_fd;
    char *path;
    GPtrArray *entries; /* DaxfileEntry * */
    gboolean dirty;
};

DAXFILE_ENUM_IMPL(daxfile_mechanism, DaxfileMechanism, DAXFILE_MECH_LAST,
                  "none", "kernel", "immutable-guard", "verified-only",
                  "device-dax");

DAXFILE_ENUM_IMPL(daxfile_entry_state, DaxfileEntryState, DAXFILE_STATE_LAST,
                  "reserved", "engaging", "engaged", "releasing");

void
daxfile_entry_free(DaxfileEntry *entry)
{
    if (!entry)
        return;
    g_free(entry->path);
    g_free(entry->owner);
    g_free(entry->owner_uuid);
    g_free(entry->device);
    g_free(entry->fingerprint);
    g_free(entry->since);
    g_free(entry->boot_id);
    g_free(entry->handle);
    g_free(entry->fsid);
    g_free(entry->fs_uuid);
    g_free(entry->unguarded);
    g_free(entry);
}

DaxfileEntry *
daxfile_entry_copy(const DaxfileEntry *entry)
{
    DaxfileEntry *copy = g_memdup2(entry, sizeof(*entry));

    copy->path = g_strdup(entry->path);
    copy->owner = g_strdup(entry->owner);
    copy->owner_uuid = g_strdup(entry->owner_uuid);
    copy->device = g_strdup(entry->device);
    copy->fingerprint = g_strdup(entry->fingerprint);
    copy->since = g_strdup(entry->since);
    copy->boot_id = g_strdup(entry->boot_id);
    copy->handle = g_strdup(entry->handle);
    copy->fsid = g_strdup(entry->fsid);
    copy->fs_uuid = g_strdup(entry->fs_uuid);
    copy->unguarded = g_strdup(entry->unguarded);
    return copy;
}

static char *
state_dir(const char *sub, const char *fallback)
{
    const char *root = g_getenv("DAXFILE_STATE_DIR");

    if (root && *root)
        return g_build_filename(root, sub, NULL);
    return g_strdup(fallback);
}

/* root uses the system locations; another user (a libvirt session
 * daemon's hook, say) keeps a registry of its own in its XDG dirs */
char *
daxfile_state_run_dir(void)
{
    g_autofree char *user =
        g_build_filename(g_get_user_runtime_dir(), "daxfile", NULL);

    return state_dir("run", geteuid() == 0 ? DAXFILE_RUNSTATEDIR : user);
}

char *
daxfile_state_lib_dir(void)
{
    g_autofree char *user =
        g_build_filename(g_get_user_state_dir(), "daxfile", NULL);

    return state_dir("lib", geteuid() == 0 ? DAXFILE_LIBSTATEDIR : user);
}

const char *
daxfile_boot_id(void)
{
    static char *boot_id;

    if (!boot_id) {
        char *contents = NULL;

        if (g_file_get_contents("/proc/sys/kernel/random/boot_id", &contents,
                                NULL, NULL))
            g_strstrip(contents);
        boot_id = contents ? contents : g_strdup("unknown");
    }
    return boot_id;
}

gboolean
daxfile_entry_is_stale(const DaxfileEntry *entry)
{
    return !entry->boot_id || STRNEQ(entry->boot_id, daxfile_boot_id());
}

static gboolean
ensure_dir(const char *dir, GError **error)
{
    if (g_mkdir_with_parents(dir, 0700) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot create '%s'", dir);
        return FALSE;
    }
    return TRUE;
}

static char *
tmp_path(const DaxfileRegistry *reg)
{
    return g_strdup_printf("%s.tmp", reg->path);
}

static void
registry_drop_tmp(const DaxfileRegistry *reg)
{
    g_autofree char *tmp = tmp_path(reg);

    if (unlink(tmp) < 0 && errno != ENOENT)
        g_debug("cannot remove '%s': %s", tmp, g_strerror(errno));
}

DaxfileRegistry *
daxfile_registry_open(GError **error)
{
    g_autoptr(DaxfileRegistry) reg = g_new0(DaxfileRegistry, 1);
    g_autofree char *run = daxfile_state_run_dir();
    g_autofree char *lib = daxfile_state_lib_dir();
    g_autofree char *lock = g_build_filename(run, "registry.lock", NULL);

    reg->lock_fd = -1;
    reg->entries =
        g_ptr_array_new_with_free_func((GDestroyNotify)daxfile_entry_free);
    reg->path = g_build_filename(lib, DAXFILE_REGISTRY_FILE, NULL);
    if (!ensure_dir(run, error) || !ensure_dir(lib, error))
        return NULL;
    reg->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (reg->lock_fd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", lock);
        return NULL;
    }
    while (flock(reg->lock_fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            daxfile_set_error_errno(error, errno, "Cannot lock '%s'", lock);
            return NULL;
        }
    }
    if (g_file_test(reg->path, G_FILE_TEST_EXISTS) &&
        !daxfile_registry_parse(reg->path, reg->entries, error))
        return NULL;
    /* a save killed before its rename leaves its temporary file */
    registry_drop_tmp(reg);
    return g_steal_pointer(&reg);
}

void
daxfile_registry_free(DaxfileRegistry *reg)
{
    if (!reg)
        return;
    if (reg->lock_fd >= 0)
        close(reg->lock_fd); /* drops the flock */
    g_ptr_array_unref(reg->entries);
    g_free(reg->path);
    g_free(reg);
}

static gint
registry_index(DaxfileRegistry *reg, guint64 dev, guint64 ino)
{
    guint i;

    for (i = 0; i < reg->entries->len; i++) {
        DaxfileEntry *e = g_ptr_array_index(reg->entries, i);

        if (e->dev == dev && e->ino == ino)
            return (gint)i;
    }
    return -1;
}

DaxfileEntry *
daxfile_registry_lookup(DaxfileRegistry *reg, guint64 dev, guint64 ino)
{
    gint i = registry_index(reg, dev, ino);

    return i < 0 ? NULL : g_ptr_array_index(reg->entries, i);
}

void
daxfile_registry_put(DaxfileRegistry *reg, DaxfileEntry *entry)
{
    gint i = registry_index(reg, entry->dev, entry->ino);

    if (i >= 0) {
        daxfile_entry_free(g_ptr_array_index(reg->entries, i));
        g_ptr_array_index(reg->entries, i) = entry;
    } else {
        g_ptr_array_add(reg->entries, entry);
    }
    reg->dirty = TRUE;
}

void
daxfile_registry_touch(DaxfileRegistry *reg)
{
    reg->dirty = TRUE;
}

gboolean
daxfile_registry_remove(DaxfileRegistry *reg, guint64 dev, guint64 ino)
{
    gint i = registry_index(reg, dev, ino);

    if (i < 0)
        return FALSE;
    g_ptr_array_remove_index(reg->entries, i);
    reg->dirty = TRUE;
    return TRUE;
}

GPtrArray *
daxfile_registry_entries(DaxfileRegistry *reg)
{
    return reg->entries;
}

gboolean
daxfile_registry_save(DaxfileRegistry *reg, GError **error)
{
    g_autofree char *text = NULL;
    g_autofree char *dir = g_path_get_dirname(reg->path);
    g_autofree char *tmp = tmp_path(reg);
    g_auto(DaxfileFd) fd = -1;
    g_auto(DaxfileFd) dirfd = -1;
    size_t len;

    if (!reg->dirty)
        return TRUE;
    text = daxfile_registry_serialise(reg->entries);
    len = strlen(text);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot write '%s'", tmp);
        unlink(tmp);
        return FALSE;
    }
    daxfile_test_crash_point("registry-written");
    if (rename(tmp, reg->path) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot replace '%s'", reg->path);
        unlink(tmp);
        return FALSE;
    }
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0 || fsync(dirfd) < 0) {
        daxfile_set_error_errno(
            error, errno, "Cannot make '%s' durable (fsync of its directory)",
            reg->path);
        return FALSE;
    }
    reg->dirty = FALSE;
    return TRUE;
}

int
daxfile_registry_lock_inode(guint64 dev, guint64 ino, const char *name,
                            gboolean wait, GError **error)
{
    g_autofree char *run = daxfile_state_run_dir();
    g_autofree char *dir = g_build_filename(run, "locks", NULL);
    g_autofree char *base = g_strdup_printf(
        "%" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT ".lock", dev, ino);
    g_autofree char *path = g_build_filename(dir, base, NULL);
    g_auto(DaxfileFd) fd = -1;

    if (!ensure_dir(dir, error))
        return -1;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", path);
        return -1;
    }
    while (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
        if (errno == EINTR)
            continue;
        if (errno == EWOULDBLOCK) {
            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                "'%s' is busy: another daxfile operation on it is in progress; fix: try again",
                name);
            return -1;
        }
        daxfile_set_error_errno(error, errno, "Cannot lock '%s'", path);
        return -1;
    }
    return g_steal_fd(&fd);
}

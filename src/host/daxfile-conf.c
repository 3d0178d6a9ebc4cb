/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "daxfile-conf.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-mount.h"
#include "daxfile-trust.h"
#include "daxfile-util.h"

#define GROUP "hook"
#define DEFAULT_TRUSTED "root;libvirt-qemu"

static void
root_free(DaxfileRoot *root)
{
    g_free(root->path);
    g_free(root->conf);
    g_free(root);
}

void
daxfile_conf_free(DaxfileConf *conf)
{
    if (!conf)
        return;
    g_free(conf->path);
    g_ptr_array_unref(conf->roots);
    g_array_unref(conf->trusted_uids);
    g_ptr_array_unref(conf->path_map);
    g_free(conf->qemu_pid_dir);
    g_free(conf->pool_state_dir);
    g_free(conf);
}

static DaxfileConf *
conf_new(const char *path)
{
    DaxfileConf *conf = g_new0(DaxfileConf, 1);

    conf->path = g_strdup(path);
    conf->roots = g_ptr_array_new_with_free_func((GDestroyNotify)root_free);
    conf->trusted_uids = g_array_new(FALSE, FALSE, sizeof(uid_t));
    conf->path_map = g_ptr_array_new_with_free_func(g_free);
    /* libvirt's own choice: the system daemon's run directory, or a
     * session daemon's under $XDG_RUNTIME_DIR (else ~/.cache) */
    conf->qemu_pid_dir = geteuid() == 0
                             ? g_strdup(DAXFILE_QEMU_PID_DIR)
                             : g_build_filename(g_get_user_runtime_dir(),
                                                "libvirt", "qemu", "run", NULL);
    conf->pool_state_dir =
        geteuid() == 0 ? g_strdup(DAXFILE_POOL_STATE_DIR)
                       : g_build_filename(g_get_user_runtime_dir(), "libvirt",
                                          "storage", "run", NULL);
    return conf;
}

const char *
daxfile_conf_path(void)
{
    const char *env = g_getenv("DAXFILE_CONF");

    return env && *env ? env : DAXFILE_CONF_PATH;
}

/* An absolute path without "." or ".." components, trailing slash dropped */
static char *
normalise_root(const char *conf_path, const char *key, const char *root,
               GError **error)
{
    g_auto(GStrv) parts = NULL;
    guint i;

    if (!g_path_is_absolute(root)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid %s entry '%s' in '%s': not an absolute path", key,
                    root, conf_path);
        return NULL;
    }
    parts = g_strsplit(root, "/", -1);
    for (i = 0; parts[i]; i++) {
        if (STREQ(parts[i], ".") || STREQ(parts[i], "..")) {
            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "Invalid %s entry '%s' in '%s': '.' and '..' are not allowed",
                key, root, conf_path);
            return NULL;
        }
    }
    return g_canonicalize_filename(root, "/");
}

static const char *const known_keys[] = {
    "managed_roots",  "allow_non_dax",    "trusted_owners",
    "create_missing", "path_map",         "qemu_pid_dir",
    "device_dax",     "wipe_on_undefine", "pool_state_dir",
};

/* A key that is absent is fine; a value GKeyFile cannot read is not: the
 * hook fails closed on whatever it cannot understand. */
static gboolean
key_error(GError *local, const char *key, const char *path, GError **error)
{
    if (!local ||
        g_error_matches(local, G_KEY_FILE_ERROR,
                        G_KEY_FILE_ERROR_KEY_NOT_FOUND) ||
        g_error_matches(local, G_KEY_FILE_ERROR,
                        G_KEY_FILE_ERROR_GROUP_NOT_FOUND))
        return TRUE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "Invalid %s in '%s': %s", key, path, local->message);
    return FALSE;
}

static gboolean
check_keys(GKeyFile *kf, const char *path, GError **error)
{
    g_auto(GStrv) keys = g_key_file_get_keys(kf, GROUP, NULL, NULL);
    guint i, j;

    for (i = 0; keys && keys[i]; i++) {
        gboolean known = FALSE;

        for (j = 0; j < G_N_ELEMENTS(known_keys) && !known; j++)
            known = STREQ(keys[i], known_keys[j]);
        if (!known) {
            g_autofree char *shown = daxfile_escape(keys[i]);

            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        "Unknown key '%s' in [" GROUP
                        "] of '%s'; see daxfile.conf(5)",
                        shown, path);
            return FALSE;
        }
    }
    return TRUE;
}

/* GKeyFile stops at a NUL byte and drops what it cannot decode: refuse
 * both before it sees the text. */
static gboolean
check_text(const char *data, gsize len, const char *path, GError **error)
{
    const char *end = NULL;
    guint line = 1;
    const char *p;

    if (g_utf8_validate_len(data, len, &end))
        return TRUE;
    for (p = data; p < end; p++)
        line += *p == '\n';
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "Cannot parse '%s': line %u is not UTF-8 text%s", path, line,
                memchr(data, '\0', len) ? " (it holds a NUL byte)" : "");
    return FALSE;
}

static gboolean
conf_roots(DaxfileConf *conf, GKeyFile *kf, const char *path,
           gboolean allow_non_dax, gboolean create_missing,
           gboolean wipe_on_undefine, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_auto(GStrv) roots =
        g_key_file_get_string_list(kf, GROUP, "managed_roots", NULL, &local);
    guint i;

    if (!key_error(local, "managed_roots", path, error))
        return FALSE;

    for (i = 0; roots && roots[i]; i++) {
        DaxfileRoot *root;
        char *norm;

        if (!*g_strstrip(roots[i]))
            continue;
        norm = normalise_root(path, "managed_roots", roots[i], error);
        if (!norm)
            return FALSE;
        root = g_new0(DaxfileRoot, 1);
        root->path = norm;
        root->allow_non_dax = allow_non_dax;
        root->create_missing = create_missing;
        root->wipe_on_undefine = wipe_on_undefine;
        root->conf = g_strdup(path);
        g_ptr_array_add(conf->roots, root);
    }
    return TRUE;
}

static gboolean
conf_bool(GKeyFile *kf, const char *key, const char *path, gboolean *ret,
          GError **error)
{
    g_autoptr(GError) local = NULL;

    if (!g_key_file_has_key(kf, GROUP, key, NULL))
        return TRUE;
    *ret = g_key_file_get_boolean(kf, GROUP, key, &local);
    if (local) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid %s in '%s': %s; fix: use true or false", key, path,
                    local->message);
        return FALSE;
    }
    return TRUE;
}

/* Add the users of @raw (NULL: the defaults, silently skipping users
 * that are not installed here) to the trusted owners. */
static gboolean
conf_owners(DaxfileConf *conf, const char *raw, const char *path,
            GError **error)
{
    g_auto(GStrv) names = g_strsplit(raw ? raw : DEFAULT_TRUSTED, ";", -1);
    guint i;

    for (i = 0; names[i]; i++) {
        const char *name = g_strstrip(names[i]);
        struct passwd *pw;
        guint64 uid;
        uid_t u;

        if (!*name)
            continue;
        if (g_ascii_string_to_unsigned(name, 10, 0, G_MAXUINT32 - 1, &uid,
                                       NULL)) {
            u = (uid_t)uid;
        } else if ((pw = getpwnam(name))) {
            u = pw->pw_uid;
        } else if (!raw) {
            continue; /* a default user that is not installed here */
        } else {
            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "Invalid trusted_owners entry '%s' in '%s': no such user", name,
                path);
            return FALSE;
        }
        g_array_append_val(conf->trusted_uids, u);
    }
    return TRUE;
}

static gboolean
conf_path_map(DaxfileConf *conf, GKeyFile *kf, const char *path, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_auto(GStrv) pairs =
        g_key_file_get_string_list(kf, GROUP, "path_map", NULL, &local);
    guint i;

    if (!key_error(local, "path_map", path, error))
        return FALSE;

    for (i = 0; pairs && pairs[i]; i++) {
        g_auto(GStrv) kv = g_strsplit(g_strstrip(pairs[i]), "=", 2);
        char *from, *to;

        if (!*pairs[i])
            continue;
        if (!kv[0] || !kv[1] ||
            !(from = normalise_root(path, "path_map", kv[0], error)))
            goto bad;
        if (!(to = normalise_root(path, "path_map", kv[1], error))) {
            g_free(from);
            return FALSE;
        }
        g_ptr_array_add(conf->path_map, from);
        g_ptr_array_add(conf->path_map, to);
    }
    return TRUE;
bad:
    g_clear_error(error);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
        "Invalid path_map entry '%s' in '%s': expected /source/dir=/destination/dir",
        pairs[i], path);
    return FALSE;
}

/* A directory of libvirt's (qemu_pid_dir, pool_state_dir) into @ret_dir;
 * the last file that sets it wins */
static gboolean
conf_dir(GKeyFile *kf, const char *key, const char *path, char **ret_dir,
         GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autofree char *dir = g_key_file_get_string(kf, GROUP, key, &local);
    char *norm;

    if (!key_error(local, key, path, error))
        return FALSE;
    if (!dir)
        return TRUE;
    norm = normalise_root(path, key, g_strstrip(dir), error);
    if (!norm)
        return FALSE;
    g_free(*ret_dir);
    *ret_dir = norm;
    return TRUE;
}

/* Add what one configuration file says to @conf. */
static gboolean
conf_merge(DaxfileConf *conf, const char *data, gsize len, const char *path,
           gboolean *ret_owners_given, GError **error)
{
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) local = NULL;
    g_autofree char *owners = NULL;
    gboolean allow_non_dax = FALSE;
    gboolean create_missing = FALSE;
    gboolean device_dax = FALSE;
    gboolean wipe_on_undefine = FALSE;

    if (!check_text(data, len, path, error))
        return FALSE;
    if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, &local)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Cannot parse '%s': %s", path, local->message);
        return FALSE;
    }
    if (!check_keys(kf, path, error) ||
        !conf_bool(kf, "allow_non_dax", path, &allow_non_dax, error) ||
        !conf_bool(kf, "create_missing", path, &create_missing, error) ||
        !conf_bool(kf, "device_dax", path, &device_dax, error) ||
        !conf_bool(kf, "wipe_on_undefine", path, &wipe_on_undefine, error) ||
        !conf_roots(conf, kf, path, allow_non_dax, create_missing,
                    wipe_on_undefine, error) ||
        !conf_path_map(conf, kf, path, error) ||
        !conf_dir(kf, "qemu_pid_dir", path, &conf->qemu_pid_dir, error) ||
        !conf_dir(kf, "pool_state_dir", path, &conf->pool_state_dir, error))
        return FALSE;
    conf->device_dax |= device_dax;
    conf->wipe_devdax |= device_dax && wipe_on_undefine;
    owners = g_key_file_get_string(kf, GROUP, "trusted_owners", &local);
    if (!key_error(local, "trusted_owners", path, error))
        return FALSE;
    if (!owners)
        return TRUE;
    *ret_owners_given = TRUE;
    return conf_owners(conf, owners, path, error);
}

DaxfileConf *
daxfile_conf_load_data(const char *data, gsize len, const char *path,
                       GError **error)
{
    g_autoptr(DaxfileConf) conf = conf_new(path);
    gboolean owners = FALSE;

    if (!conf_merge(conf, data, len, path, &owners, error) ||
        (!owners && !conf_owners(conf, NULL, path, error)))
        return NULL;
    return g_steal_pointer(&conf);
}

/* Read @path into @conf; a missing file adds nothing. */
static gboolean
conf_merge_file(DaxfileConf *conf, const char *path, gboolean *owners,
                GError **error)
{
    g_autofree char *data = NULL;
    gsize len = 0;

    if (!daxfile_trusted_read(path, &data, &len, error))
        return FALSE;
    return !data || conf_merge(conf, data, len, path, owners, error);
}

static gint
compare_paths(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(char *const *)a, *(char *const *)b);
}

/* The drop-ins of @path, in name order; NULL when their directory is
 * not trusted (daxfile-trust.h) */
static GPtrArray *
dropins(const char *path, GError **error)
{
    g_autofree char *dir = g_strconcat(path, ".d", NULL);
    g_autoptr(DaxfileFile) f = daxfile_trusted_open(dir, TRUE, error);
    g_autoptr(GDir) d = NULL;
    GPtrArray *files = NULL;
    const char *name;

    if (!f && error && *error)
        return NULL;
    d = f ? g_dir_open(dir, 0, NULL) : NULL;
    files = g_ptr_array_new_with_free_func(g_free);

    while (d && (name = g_dir_read_name(d))) {
        if (g_str_has_suffix(name, ".conf") && name[0] != '.')
            g_ptr_array_add(files, g_build_filename(dir, name, NULL));
    }
    g_ptr_array_sort(files, compare_paths);
    return files;
}

DaxfileConf *
daxfile_conf_load(const char *path, GError **error)
{
    g_autoptr(DaxfileConf) conf = NULL;
    g_autoptr(GPtrArray) extra = NULL;
    gboolean owners = FALSE;
    guint i;

    if (!path)
        path = daxfile_conf_path();
    conf = conf_new(path);
    if (!conf_merge_file(conf, path, &owners, error))
        return NULL;
    extra = dropins(path, error);
    if (!extra)
        return NULL;
    for (i = 0; i < extra->len; i++) {
        if (!conf_merge_file(conf, g_ptr_array_index(extra, i), &owners, error))
            return NULL;
    }
    if (!owners && !conf_owners(conf, NULL, path, error))
        return NULL;
    return g_steal_pointer(&conf);
}

static gboolean
path_under(const char *path, const char *root)
{
    size_t n = strlen(root);

    if (STREQ(root, "/"))
        return path[0] == '/';
    return strncmp(path, root, n) == 0 && path[n] == '/';
}

const DaxfileRoot *
daxfile_conf_managed_root(const DaxfileConf *conf, const char *path)
{
    guint i;

    if (!path || !g_path_is_absolute(path))
        return NULL;
    for (i = 0; i < conf->roots->len; i++) {
        const DaxfileRoot *root = g_ptr_array_index(conf->roots, i);

        if (path_under(path, root->path))
            return root;
    }
    return NULL;
}

gboolean
daxfile_path_is_plain(const char *path)
{
    g_autofree char *canon = NULL;

    if (!path || !g_path_is_absolute(path))
        return FALSE;
    canon = g_canonicalize_filename(path, "/");
    return STREQ(canon, path);
}

/* What the kernel says a file is: its path from our root (d_path), its
 * device and the mount it is reached through */
typedef struct {
    int fd; /* borrowed */
    char *seen;
    guint64 dev;
    guint mnt_id;
    gboolean have_mnt;
} Location;

static void
location_clear(Location *loc)
{
    g_clear_pointer(&loc->seen, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Location, location_clear)

/* @fd, opened by @path, located; FALSE when the kernel does not name it
 * by a path from our root */
static gboolean
locate_fd(int fd, const char *path, Location *loc, GError **error)
{
    g_autofree char *name = NULL;
    struct stat st;

    loc->fd = fd;
    loc->seen = daxfile_fd_target(fd);
    if (loc->seen && g_path_is_absolute(loc->seen) && fstat(fd, &st) == 0) {
        loc->dev = st.st_dev;
        loc->have_mnt = daxfile_fd_mount_id(fd, &loc->mnt_id);
        return TRUE;
    }
    name = daxfile_escape(path);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
        "Cannot tell where '%s' is: the kernel names it by no path from this process's root",
        name);
    return FALSE;
}

/* The same filesystem as @root through another mount (a bind mount):
 * where @loc is inside that filesystem, from mountinfo; FALSE when
 * mountinfo cannot place one of them */
static gboolean
inside_fs(const DaxfileRoot *root, const Location *loc, const Location *rloc,
          char **ret_rest, GError **error)
{
    g_autofree char *fs_path = NULL;
    g_autofree char *root_fs_path = NULL;
    g_autofree char *name = NULL;
    guint64 dev = 0;

    if (daxfile_fd_locate(loc->fd, &dev, &fs_path, NULL) &&
        daxfile_fd_locate(rloc->fd, &dev, &root_fs_path, NULL)) {
        if (daxfile_path_is_under(fs_path, root_fs_path))
            *ret_rest =
                g_strdup(fs_path +
                         (STREQ(root_fs_path, "/") ? 0 : strlen(root_fs_path)));
        return TRUE;
    }
    name = daxfile_escape(loc->seen);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
        "'%s' is on the filesystem of the managed root '%s' through another mount, and /proc/self/mountinfo cannot place both (a chroot whose '/' is not a mount point), so the hook cannot tell whether it is in the root; fix: make the chroot directory a mount point ('mount --bind DIR DIR') before 'chroot DIR'",
        name, root->path);
    return FALSE;
}

/* Whether what @loc is lies in @root: *ret_plain its plain path under the
 * root, NULL when it does not; FALSE when that cannot be told */
static gboolean
inside_root(const DaxfileRoot *root, const Location *loc, char **ret_plain,
            GError **error)
{
    g_auto(DaxfileFd) rfd = open(root->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    g_auto(Location) rloc = {0};
    g_autofree char *rest = NULL;

    *ret_plain = NULL;
    if (rfd < 0)
        return TRUE; /* a root that is not there holds nothing */
    if (!locate_fd(rfd, root->path, &rloc, error))
        return FALSE;
    if (daxfile_path_is_under(loc->seen, rloc.seen))
        rest = g_strdup(loc->seen +
                        (STREQ(rloc.seen, "/") ? 0 : strlen(rloc.seen)));
    else if (loc->dev != rloc.dev ||
             (loc->have_mnt && rloc.have_mnt && loc->mnt_id == rloc.mnt_id))
        return TRUE; /* another filesystem, or elsewhere on the root's mount */
    else if (!inside_fs(root, loc, &rloc, &rest, error))
        return FALSE;
    if (rest)
        *ret_plain =
            g_canonicalize_filename(*rest == '/' ? rest + 1 : rest, root->path);
    return TRUE;
}

gboolean
daxfile_conf_locate(const DaxfileConf *conf, const char *path,
                    const DaxfileRoot **ret_root, char **ret_plain,
                    GError **error)
{
    g_auto(DaxfileFd) slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    g_auto(DaxfileFd) fd = -1;
    g_autofree char *base = NULL;
    g_auto(Location) loc = {0};
    guint i;

    *ret_root = NULL;
    *ret_plain = NULL;
    if (!path || !*path)
        return TRUE;
    if (slash < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '/'");
        return FALSE;
    }
    fd = openat(slash, path, O_PATH | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        /* a file QEMU would create: placed by its directory */
        g_autofree char *dir = g_path_get_dirname(path);

        base = g_path_get_basename(path);
        fd = openat(slash, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0)
        return TRUE; /* it names nothing, and QEMU could not open it */
    if (!locate_fd(fd, path, &loc, error))
        return FALSE;
    for (i = 0; i < conf->roots->len; i++) {
        const DaxfileRoot *root = g_ptr_array_index(conf->roots, i);
        g_autofree char *plain = NULL;

        if (!inside_root(root, &loc, &plain, error))
            return FALSE;
        if (!plain)
            continue;
        *ret_plain = base ? g_build_filename(plain, base, NULL)
                          : g_steal_pointer(&plain);
        *ret_root = root;
        return TRUE;
    }
    return TRUE;
}

char *
daxfile_conf_map_path(const DaxfileConf *conf, const char *path)
{
    guint i;

    for (i = 0; i + 1 < conf->path_map->len; i += 2) {
        const char *from = g_ptr_array_index(conf->path_map, i);
        const char *to = g_ptr_array_index(conf->path_map, i + 1);

        if (path_under(path, from)) {
            const char *rest = path + strlen(from);

            /* by components: FROM '/' leaves no separator in front */
            while (*rest == '/')
                rest++;
            return *rest ? g_build_filename(to, rest, NULL) : g_strdup(to);
        }
    }
    return NULL;
}

gboolean
daxfile_conf_trusts_uid(const DaxfileConf *conf, uid_t uid)
{
    guint i;

    for (i = 0; i < conf->trusted_uids->len; i++) {
        if (g_array_index(conf->trusted_uids, uid_t, i) == uid)
            return TRUE;
    }
    return FALSE;
}

DaxfileFile *
daxfile_conf_open_managed(const DaxfileConf *conf, const DaxfileRoot *root,
                          const char *path, DaxfileOpenFlags flags,
                          GError **error)
{
    g_autoptr(DaxfileFile) f =
        daxfile_file_open_beneath(root->path, path, flags, error);

    if (!f)
        return NULL;
    if (f->st.st_nlink > 1) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "'%s' has %lu hard links, and a hard link can lead outside the managed root; fix: give the domain a file of its own ('daxfile create')",
            f->display, (unsigned long)f->st.st_nlink);
        return NULL;
    }
    if (!daxfile_conf_trusts_uid(conf, f->st.st_uid)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "'%s' is owned by uid %u, which is not in trusted_owners of '%s'; fix: chown it to root, or trust that user",
            f->display, (unsigned)f->st.st_uid, conf->path);
        return NULL;
    }
    return g_steal_pointer(&f);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <pwd.h>
#include <string.h>

#include "config.h"
#include "daxfile-conf.h"
#include "daxfile-error.h"
#include "daxfile-util.h"

#define GROUP "hook"
#define DEFAULT_TRUSTED "root;libvirt-qemu"

void
daxfile_conf_free(DaxfileConf *conf)
{
    if (!conf)
        return;
    g_free(conf->path);
    g_strfreev(conf->managed_roots);
    g_array_unref(conf->trusted_uids);
    g_ptr_array_unref(conf->path_map);
    g_free(conf);
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
                    "Invalid %s entry '%s' in '%s': not an absolute path",
                    key, root, conf_path);
        return NULL;
    }
    parts = g_strsplit(root, "/", -1);
    for (i = 0; parts[i]; i++) {
        if (STREQ(parts[i], ".") || STREQ(parts[i], "..")) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        "Invalid %s entry '%s' in '%s': '.' and '..' are not "
                        "allowed", key, root, conf_path);
            return NULL;
        }
    }
    return g_canonicalize_filename(root, "/");
}

static gboolean
conf_roots(DaxfileConf *conf, GKeyFile *kf, GError **error)
{
    g_auto(GStrv) roots = g_key_file_get_string_list(kf, GROUP,
                                                     "managed_roots", NULL,
                                                     NULL);
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);
    guint i;

    for (i = 0; roots && roots[i]; i++) {
        char *root;

        if (!*g_strstrip(roots[i]))
            continue;
        root = normalise_root(conf->path, "managed_roots", roots[i], error);
        if (!root)
            return FALSE;
        g_ptr_array_add(out, root);
    }
    g_ptr_array_add(out, NULL);
    conf->managed_roots = (char **)g_ptr_array_free(g_steal_pointer(&out),
                                                    FALSE);
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
                    "Invalid %s in '%s': %s; use true or false", key, path,
                    local->message);
        return FALSE;
    }
    return TRUE;
}

static gboolean
conf_owners(DaxfileConf *conf, GKeyFile *kf, GError **error)
{
    g_autofree char *raw = g_key_file_get_string(kf, GROUP, "trusted_owners",
                                                 NULL);
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
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        "Invalid trusted_owners entry '%s' in '%s': no such "
                        "user", name, conf->path);
            return FALSE;
        }
        g_array_append_val(conf->trusted_uids, u);
    }
    return TRUE;
}

static gboolean
conf_path_map(DaxfileConf *conf, GKeyFile *kf, GError **error)
{
    g_auto(GStrv) pairs = g_key_file_get_string_list(kf, GROUP, "path_map",
                                                     NULL, NULL);
    guint i;

    for (i = 0; pairs && pairs[i]; i++) {
        g_auto(GStrv) kv = g_strsplit(g_strstrip(pairs[i]), "=", 2);
        char *from, *to;

        if (!*pairs[i])
            continue;
        if (!kv[0] || !kv[1] ||
            !(from = normalise_root(conf->path, "path_map", kv[0], error)))
            goto bad;
        if (!(to = normalise_root(conf->path, "path_map", kv[1], error))) {
            g_free(from);
            return FALSE;
        }
        g_ptr_array_add(conf->path_map, from);
        g_ptr_array_add(conf->path_map, to);
    }
    return TRUE;
 bad:
    g_clear_error(error);
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "Invalid path_map entry '%s' in '%s': expected "
                "/source/dir=/destination/dir", pairs[i], conf->path);
    return FALSE;
}

DaxfileConf *
daxfile_conf_load_data(const char *data, gsize len, const char *path,
                       GError **error)
{
    g_autoptr(DaxfileConf) conf = g_new0(DaxfileConf, 1);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) local = NULL;

    conf->path = g_strdup(path);
    conf->trusted_uids = g_array_new(FALSE, FALSE, sizeof(uid_t));
    conf->path_map = g_ptr_array_new_with_free_func(g_free);
    if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, &local)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Cannot parse '%s': %s", path, local->message);
        return NULL;
    }
    if (!conf_roots(conf, kf, error) ||
        !conf_bool(kf, "allow_non_dax", path, &conf->allow_non_dax, error) ||
        !conf_bool(kf, "create_missing", path, &conf->create_missing,
                   error) ||
        !conf_owners(conf, kf, error) || !conf_path_map(conf, kf, error))
        return NULL;
    return g_steal_pointer(&conf);
}

DaxfileConf *
daxfile_conf_load(const char *path, GError **error)
{
    g_autofree char *data = NULL;
    g_autoptr(GError) local = NULL;
    gsize len = 0;

    if (!path)
        path = daxfile_conf_path();
    if (!g_file_get_contents(path, &data, &len, &local)) {
        if (!g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                        "Cannot read '%s': %s", path, local->message);
            return NULL;
        }
        return daxfile_conf_load_data("", 0, path, error);
    }
    return daxfile_conf_load_data(data, len, path, error);
}

static gboolean
path_under(const char *path, const char *root)
{
    size_t n = strlen(root);

    if (STREQ(root, "/"))
        return path[0] == '/';
    return strncmp(path, root, n) == 0 && path[n] == '/';
}

const char *
daxfile_conf_managed_root(const DaxfileConf *conf, const char *path)
{
    guint i;

    if (!path || !g_path_is_absolute(path))
        return NULL;
    for (i = 0; conf->managed_roots && conf->managed_roots[i]; i++) {
        if (path_under(path, conf->managed_roots[i]))
            return conf->managed_roots[i];
    }
    return NULL;
}

char *
daxfile_conf_map_path(const DaxfileConf *conf, const char *path)
{
    guint i;

    for (i = 0; i + 1 < conf->path_map->len; i += 2) {
        const char *from = g_ptr_array_index(conf->path_map, i);
        const char *to = g_ptr_array_index(conf->path_map, i + 1);

        if (path_under(path, from))
            return g_strconcat(to, path + strlen(from), NULL);
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

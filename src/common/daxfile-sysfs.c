/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-sysfs.h"

const char *
daxfile_sysfs_root(void)
{
    const char *root = g_getenv("DAXFILE_SYSFS_ROOT");

    return root && *root ? root : "/sys";
}

char *
daxfile_sysfs_read(const char *relpath, GError **error)
{
    g_autofree char *path =
        g_build_filename(daxfile_sysfs_root(), relpath, NULL);
    g_autofree char *contents = NULL;
    g_autoptr(GError) local = NULL;

    if (!g_file_get_contents(path, &contents, NULL, &local)) {
        g_set_error(error, DAXFILE_ERROR,
                    g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT)
                        ? DAXFILE_ERROR_NOT_FOUND
                        : DAXFILE_ERROR_FAILED,
                    "Cannot read '%s': %s", path, local->message);
        return NULL;
    }
    g_strchomp(contents);
    return g_steal_pointer(&contents);
}

gboolean
daxfile_sysfs_read_u64(const char *relpath, guint64 *ret_value, GError **error)
{
    g_autofree char *value = daxfile_sysfs_read(relpath, error);
    g_autoptr(GError) local = NULL;

    if (!value)
        return FALSE;
    if (!g_ascii_string_to_unsigned(value, 10, 0, G_MAXUINT64, ret_value,
                                    &local)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "Unexpected contents in '%s/%s': %s", daxfile_sysfs_root(),
                    relpath, local->message);
        return FALSE;
    }
    return TRUE;
}

gboolean
daxfile_sysfs_exists(const char *relpath)
{
    g_autofree char *path =
        g_build_filename(daxfile_sysfs_root(), relpath, NULL);

    return access(path, F_OK) == 0;
}

char *
daxfile_sysfs_link_name(const char *relpath)
{
    g_autofree char *path =
        g_build_filename(daxfile_sysfs_root(), relpath, NULL);
    g_autofree char *target = g_file_read_link(path, NULL);

    return target ? g_path_get_basename(target) : NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-fd.h"
#include "daxfile-identity.h"
#include "daxfile-sysfs.h"

static void
add_identity(GArray *out, const struct stat *st)
{
    DaxfileIdentity id = {st->st_dev, st->st_ino};

    g_array_append_val(out, id);
}

/* The backing files of the loop devices under the block device at
 * @sysdir (relative to the sysfs root), through partitions and stacked
 * devices (slaves/), at most @depth levels down. */
static void
loop_backing(const char *sysdir, guint depth, GArray *out)
{
    g_autofree char *part = g_build_filename(sysdir, "partition", NULL);
    g_autofree char *whole = g_build_filename(sysdir, "..", NULL);
    const char *dir = daxfile_sysfs_exists(part) ? whole : sysdir;
    g_autofree char *rel = g_build_filename(dir, "loop", "backing_file", NULL);
    g_autofree char *backing = daxfile_sysfs_read(rel, NULL);
    g_autofree char *slaves =
        g_build_filename(daxfile_sysfs_root(), dir, "slaves", NULL);
    g_autoptr(GDir) d = depth > 0 ? g_dir_open(slaves, 0, NULL) : NULL;
    const char *name;
    struct stat st;

    if (backing) {
        if (g_str_has_suffix(backing, " (deleted)"))
            backing[strlen(backing) - strlen(" (deleted)")] = '\0';
        if (stat(backing, &st) == 0)
            add_identity(out, &st);
    }
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *sub = g_build_filename("class", "block", name, NULL);

        loop_backing(sub, depth - 1, out);
    }
}

void
daxfile_path_identities(const char *path, GArray *out)
{
    g_auto(DaxfileFd) slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    g_auto(DaxfileFd) fd = -1;
    struct stat st;

    if (slash < 0 || !path || !*path)
        return;
    fd = openat(slash, path, O_PATH | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return;
    add_identity(out, &st);
    if (S_ISBLK(st.st_mode)) {
        g_autofree char *sysdir = g_strdup_printf(
            "dev/block/%u:%u", major(st.st_rdev), minor(st.st_rdev));

        loop_backing(sysdir, 4, out);
    }
}

gboolean
daxfile_identities_have(GArray *ids, guint64 dev, guint64 ino)
{
    guint i;

    for (i = 0; i < ids->len; i++) {
        const DaxfileIdentity *id = &g_array_index(ids, DaxfileIdentity, i);

        if (id->dev == dev && id->ino == ino)
            return TRUE;
    }
    return FALSE;
}

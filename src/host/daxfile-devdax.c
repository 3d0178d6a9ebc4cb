/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-devdax.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-size.h"
#include "daxfile-sysfs.h"
#include "daxfile-util.h"

void
daxfile_devdax_free(DaxfileDevdax *d)
{
    if (!d)
        return;
    g_free(d->name);
    g_free(d->driver);
    g_free(d);
}

DaxfileDevdax *
daxfile_devdax_read(dev_t rdev, const char *name, GError **error)
{
    g_autofree char *dir =
        g_strdup_printf("dev/char/%u:%u", major(rdev), minor(rdev));
    g_autofree char *subsystem = g_strconcat(dir, "/subsystem", NULL);
    g_autofree char *sub = daxfile_sysfs_link_name(subsystem);
    g_autofree char *self = daxfile_sysfs_link_name(dir);
    g_autofree char *size = g_strconcat(dir, "/size", NULL);
    g_autofree char *align = g_strconcat(dir, "/align", NULL);
    g_autofree char *driver = g_strconcat(dir, "/driver", NULL);
    g_autoptr(DaxfileDevdax) d = g_new0(DaxfileDevdax, 1);
    g_autoptr(GError) local = NULL;

    if (!sub || STRNEQ(sub, "dax") || !self) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "'%s' is not a device-dax device (no dax device %u:%u in sysfs)",
            name, major(rdev), minor(rdev));
        return NULL;
    }
    d->name = g_steal_pointer(&self);
    d->rdev = rdev;
    d->driver = daxfile_sysfs_link_name(driver);
    if (!daxfile_sysfs_read_u64(size, &d->size, &local)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "Cannot read the size of '%s' (%s): %s", name, d->name,
                    local->message);
        return NULL;
    }
    /* "align" exists since Linux 5.10; older kernels: not known */
    if (daxfile_sysfs_exists(align) &&
        !daxfile_sysfs_read_u64(align, &d->align, error))
        return NULL;
    return g_steal_pointer(&d);
}

gboolean
daxfile_devdax_is(const char *path)
{
    g_autoptr(DaxfileDevdax) d = NULL;
    struct stat st;

    if (!path || stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
        return FALSE;
    d = daxfile_devdax_read(st.st_rdev, path, NULL);
    return d != NULL;
}

DaxfileFile *
daxfile_devdax_open(const char *path, DaxfileDevdax **ret_dev, GError **error)
{
    g_autoptr(DaxfileFile) f = daxfile_file_open_node(
        path, O_RDONLY | O_NOFOLLOW,
        " (a symbolic link: name the device itself, /dev/daxX.Y)", error);

    if (!f)
        return NULL;
    if (!S_ISCHR(f->st.st_mode)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is not a character device", f->display);
        return NULL;
    }
    *ret_dev = daxfile_devdax_read(f->st.st_rdev, f->display, error);
    if (!*ret_dev)
        return NULL;
    return g_steal_pointer(&f);
}

const char *
daxfile_devdax_mode(const DaxfileDevdax *d)
{
    if (!d->driver)
        return "disabled";
    if (STREQ(d->driver, "device_dax"))
        return "devdax";
    if (STREQ(d->driver, "kmem"))
        return "system-ram";
    return d->driver;
}

gboolean
daxfile_devdax_check_mode(const DaxfileDevdax *d, const char *name,
                          GError **error)
{
    if (d->driver && STREQ(d->driver, "device_dax"))
        return TRUE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
        "'%s' (%s) is in %s mode, not devdax, so it cannot be mapped%s; fix: 'daxctl reconfigure-device --mode=devdax %s'",
        name, d->name, daxfile_devdax_mode(d),
        d->driver && STREQ(d->driver, "kmem") ? " (the host uses it as RAM)"
                                              : "",
        d->name);
    return FALSE;
}

gboolean
daxfile_devdax_check(const DaxfileDevdax *d, const char *name, guint64 size,
                     guint64 align, GError **error)
{
    g_autofree char *have = daxfile_size_format(d->size);
    g_autofree char *want = daxfile_size_format(size);
    g_autofree char *page = daxfile_size_format(d->align);
    g_autofree char *asked = daxfile_size_format(align);

    if (!daxfile_devdax_check_mode(d, name, error))
        return FALSE;
    if (align && d->align && align != d->align) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' (%s) has %s pages but <alignsize> is %s, and its mappings must be aligned to its pages; fix: <alignsize unit='KiB'>%" G_GUINT64_FORMAT
            "</alignsize>",
            name, d->name, page, asked, d->align >> 10);
        return FALSE;
    }
    if (size != d->size) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' (%s) is %s but <target><size> is %s; fix: <size unit='KiB'>%" G_GUINT64_FORMAT
            "</size>",
            name, d->name, have, want, d->size >> 10);
        return FALSE;
    }
    return TRUE;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-devdax.h: a device-dax device (/dev/daxX.Y) as a pmem backend
 *
 * A device-dax device has no filesystem and no block map: nothing can
 * allocate, convert or move its blocks, so there is nothing to freeze.
 * What can go wrong is the wiring: a device reconfigured as system RAM
 * (kmem), an <alignsize> other than the device's page size (QEMU's mmap
 * fails, or the guest loses huge pages), a <size> other than the
 * device's, and two domains on one device. It is found by its device
 * number in sysfs (/sys/dev/char/MAJ:MIN: subsystem "dax"), read through
 * daxfile-sysfs.h.
 */
#pragma once

#include <glib.h>

#include "daxfile-file.h"
#include <sys/stat.h>

G_BEGIN_DECLS

typedef struct {
    char *name; /* "dax0.0" */
    dev_t rdev;
    guint64 size;  /* bytes */
    guint64 align; /* its page size; 0 when the kernel does not say */
    char *driver;  /* "device_dax" (devdax), "kmem" (system-ram), ...;
                    * NULL when no driver is bound */
} DaxfileDevdax;

void daxfile_devdax_free(DaxfileDevdax *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileDevdax, daxfile_devdax_free)

/* The device-dax device whose device number is @rdev, or NULL: with
 * @error NOT_FOUND when @rdev is no dax device at all, else why its
 * attributes cannot be read. @name (a display name, DaxfileFile) names it
 * in messages. */
DaxfileDevdax *daxfile_devdax_read(dev_t rdev, const char *name,
                                   GError **error);

/* @path (followed) is a device-dax device: a character device of the dax
 * subsystem. For deciding what a path is; no error is reported. */
gboolean daxfile_devdax_is(const char *path);

/* Open the device-dax device @path (O_RDONLY, O_NOFOLLOW: its plain name,
 * not a symbolic link to it) and read it; NULL with @error when it is not
 * one or cannot be read. */
DaxfileFile *daxfile_devdax_open(const char *path, DaxfileDevdax **ret_dev,
                                 GError **error);

/* @d is bound to device_dax (devdax mode), so it can be mapped; else the
 * error names @name (a display name), its mode and the daxctl command
 * that fixes it */
gboolean daxfile_devdax_check_mode(const DaxfileDevdax *d, const char *name,
                                   GError **error);

/* @d can back a device of @size bytes with <alignsize> @align (0: do not
 * check it): bound to device_dax, that page size, that size. The error
 * names @name (a display name), the cause and the fix. */
gboolean daxfile_devdax_check(const DaxfileDevdax *d, const char *name,
                              guint64 size, guint64 align, GError **error);

/* "devdax", "system-ram" (kmem), "disabled" (no driver), or the driver */
const char *daxfile_devdax_mode(const DaxfileDevdax *d);

G_END_DECLS

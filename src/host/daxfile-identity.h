/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-identity.h: what a path names (device and inode), through loop
 * devices to their backing files
 */
#pragma once

#include <glib.h>
#include <sys/stat.h>

G_BEGIN_DECLS

/* What a path names: device and inode number */
typedef struct {
    guint64 dev;
    guint64 ino;
} DaxfileIdentity;

/* The identity of what @st is, as the registry keys it: a file's device
 * and inode; a character device's device number and inode 0 (a
 * device-dax device is the same device through whichever node names it:
 * QEMU under libvirt opens one of its own /dev) */
DaxfileIdentity daxfile_identity_of(const struct stat *st);

/* Append to @out (DaxfileIdentity) what @path names as QEMU under libvirt
 * would open it: relative to "/", following symbolic links, with O_PATH
 * (no side effects on device nodes or FIFOs), as daxfile_identity_of()
 * says. A loop block device, a partition of one, or a device stacked on
 * one (device-mapper, md) also adds the loop's backing file, which the
 * kernel names by device and inode (LOOP_GET_STATUS64), not by the path
 * sysfs shows. Nothing when @path names nothing; FALSE when it names a
 * block device whose loops cannot be told (no sysfs, no node to ask). */
gboolean daxfile_path_identities(const char *path, GArray *out, GError **error);

/* Whether @ids (DaxfileIdentity) holds @dev/@ino */
gboolean daxfile_identities_have(GArray *ids, guint64 dev, guint64 ino);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-sysfs.h: every sysfs read goes through here, so tests can point
 * the library at a fake tree (DAXFILE_SYSFS_ROOT=tests/data/sysfs/<case>)
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

const char *daxfile_sysfs_root(void);

/* Read a sysfs attribute below the root (@relpath like
 * "dev/block/7:0/start"), without the trailing newline. */
char *daxfile_sysfs_read(const char *relpath, GError **error);
gboolean daxfile_sysfs_read_u64(const char *relpath, guint64 *ret_value,
                                GError **error);
gboolean daxfile_sysfs_exists(const char *relpath);
/* The last component of the symbolic link @relpath's target (a driver,
 * subsystem or device name), or NULL when it is no link */
char *daxfile_sysfs_link_name(const char *relpath);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-kernel.h: the daxctl() backend
 *
 * A kernel with the daxfile patches advertises the syscall number in
 * /sys/kernel/mm/daxfile/syscall_nr. Nothing else is trusted: daxfile never
 * calls a number the running kernel has not advertised (the RFC's 333 is
 * io_pgetevents upstream). The file is named by /proc/self/fd/N, so the
 * kernel acts on the inode daxfile already opened and checked.
 */
#pragma once

#include <glib.h>

#include "daxfile-file.h"

G_BEGIN_DECLS

/* uapi constants of the RFC (include/uapi/linux/dax.h) */
#define DAXCTL_F_GET (1 << 0)
#define DAXCTL_F_DAX (1 << 1)
#define DAXCTL_F_STATIC (1 << 2)

#define DAXFILE_KERNEL_SYSFS_NR "kernel/mm/daxfile/syscall_nr"

/* The advertised syscall number, or FALSE when the kernel has none */
gboolean daxfile_kernel_syscall_nr(long *ret_nr);

/* DAXCTL_F_GET: TRUE in *ret_static when the inode is static */
gboolean daxfile_kernel_get(long nr, const DaxfileFile *f, gboolean *ret_static,
                            GError **error);

/* DAXCTL_F_STATIC (on) or 0 (off) with @align */
gboolean daxfile_kernel_set(long nr, const DaxfileFile *f, gboolean on,
                            guint64 align, GError **error);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-fiemap.h: read a file's extent map with FS_IOC_FIEMAP
 */
#pragma once

#include "daxfile-extent.h"

G_BEGIN_DECLS

/* Read every extent of the open file @fd, in batches. The first request
 * carries FIEMAP_FLAG_SYNC so delayed allocations are resolved first.
 * @name is the file's name for messages. */
DaxfileExtentMap *daxfile_fiemap_read(int fd, const char *name, GError **error);

/* FALSE with an error naming @name when the filesystem has no FIEMAP. */
gboolean daxfile_fiemap_supported(int fd, const char *name, GError **error);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-wipe-mark.h: the mark a wipe leaves on a file until it has
 * finished (the extended attribute user.daxfile.wipe: how far it got),
 * which the report reads without knowing wipes (daxfile-wipe.h writes it)
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define DAXFILE_WIPE_XATTR "user.daxfile.wipe"

/* TRUE when a wipe of @fd did not finish; *@ret_done: how many bytes from
 * the start it had zeroed for sure */
gboolean daxfile_wipe_pending(int fd, guint64 *ret_done);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-fd.h: owned file descriptors
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* An owned file descriptor: g_auto(DaxfileFd) fd = -1; */
typedef int DaxfileFd;
void daxfile_fd_close(DaxfileFd fd);
G_DEFINE_AUTO_CLEANUP_FREE_FUNC(DaxfileFd, daxfile_fd_close, -1)

/* What the kernel says @fd refers to (the target of /proc/self/fd/N, raw
 * bytes), or NULL when it cannot be read: the one readlink of
 * /proc/self/fd in daxfile. For messages: daxfile_fd_path(). */
char *daxfile_fd_target(int fd);

G_END_DECLS

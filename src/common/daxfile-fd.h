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

/* The path an fd refers to, for messages ("/proc/self/fd/N" target) */
char *daxfile_fd_path(int fd);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-proc.h: which processes map a file or hold it open for writing
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

/* TRUE when process @pid has a mapping of inode @dev/@ino */
gboolean daxfile_proc_maps_inode(pid_t pid, guint64 dev, guint64 ino);

/* PIDs (GArray of pid_t) of every process mapping the inode */
GArray *daxfile_proc_mappers(guint64 dev, guint64 ino);

/* PIDs (GArray of pid_t) holding an fd open for writing on the inode,
 * the calling process excluded */
GArray *daxfile_proc_writers(guint64 dev, guint64 ino);

/* @pid and every descendant of it (GArray of pid_t) */
GArray *daxfile_proc_tree(pid_t pid);

gboolean daxfile_proc_alive(pid_t pid);

/* The start time of @pid (field 22 of /proc/PID/stat, clock ticks since
 * boot), 0 when it does not exist */
guint64 daxfile_proc_start_time(pid_t pid);

/* @pid is alive and is still the process that started at @start */
gboolean daxfile_proc_same(pid_t pid, guint64 start);

/* "comm" of @pid, for messages */
char *daxfile_proc_comm(pid_t pid);

gboolean daxfile_pid_in(const GArray *pids, pid_t pid);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxbench-time.h: bench-dax time, the wall time of a command
 *
 *   bench-dax time [--append FILE] CMD [ARG...]
 *       Run CMD (from PATH, its stdout to /dev/null) and print its wall
 *       time. With --append: a transparent wrapper (a libvirt hook): CMD
 *       keeps its stdio, one JSON line with its arguments, time and wait
 *       status is appended to FILE, and the exit status is CMD's.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Run @argv with its stdout to /dev/null: one line of JSON (no newline),
 * or NULL when it cannot run or does not exit 0 */
char *daxbench_time(char **argv, GError **error);

/* Run @argv with this process's stdio and append its line to @file.
 * Returns what bench-dax exits with: CMD's exit status, 128 when it was
 * killed, 127 when it could not run (with @error set). @error is also set
 * when the line could not be appended, which does not change the status. */
int daxbench_time_append(const char *file, char **argv, GError **error);

G_END_DECLS

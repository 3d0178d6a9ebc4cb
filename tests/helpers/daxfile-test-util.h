/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-test-util.h: golden-file comparison for gtest programs
 */
#pragma once

#include <glib.h>

/* Compare @actual with tests/data/@relpath. On a difference, print a
 * unified diff as TAP diagnostics and fail the test. With
 * DAXFILE_TEST_REGENERATE=1 the file is rewritten instead. */
void daxfile_test_golden(const char *relpath, const char *actual);

/* Remove @path and everything below it (no symlinks followed). */
void daxfile_test_rmtree(const char *path);

/* The test program's scratch directory, made on the first call
 * (daxfile-test-@name-XXXXXX in the temp dir, or in /var/tmp when files
 * there report no extents: tmpfs, Debian 13's /tmp; later calls return
 * it). */
const char *daxfile_test_scratch(const char *name);

/* g_test_run(), then the scratch directory removed */
int daxfile_test_run(void);

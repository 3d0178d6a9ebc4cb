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

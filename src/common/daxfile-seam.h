/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-seam.h: test-only seams, driven by environment variables
 *
 * Compiled in only with meson -Dtest_seams=true (./run-tests sets it; the
 * default, release builds and the Debian package leave it off). Without
 * it every seam is an inline no-op and no binary reads these variables.
 */
#pragma once

#include <glib.h>

#include "config.h" /* DAXFILE_TEST_SEAMS */

G_BEGIN_DECLS

#if DAXFILE_TEST_SEAMS

/* Test-only fault injection: when DAXFILE_TEST_CRASH names @point, the
 * process kills itself with SIGKILL right there (crash-safety tests). */
void daxfile_test_crash_point(const char *point);

/* Test-only: when DAXFILE_TEST_PAUSE names @point, the process stops itself
 * (SIGSTOP) there until a test sends SIGCONT (race tests). */
void daxfile_test_pause_point(const char *point);

/* Test-only: with DAXFILE_TEST_HOLD_DIR set, the calling thread marks
 * that it reached @point (creates DIR/@point.reached), then waits while
 * DIR/@point exists (race tests on one thread of several). */
void daxfile_test_hold_point(const char *point);

/* Test-only: DAXFILE_TEST_NO_TMPFILE=1 makes create use its named
 * temporary file, as on filesystems without O_TMPFILE. */
gboolean daxfile_test_no_tmpfile(void);

/* Test-only: DAXFILE_TEST_NO_TMPFILE=link: O_TMPFILE works, but linking
 * such a file into a name is refused (EACCES), as AppArmor refuses it to
 * a confined process. */
gboolean daxfile_test_no_tmpfile_link(void);

/* Test-only: DAXFILE_TEST_MISPLACED=N makes create treat its first N
 * allocations as placed misaligned (as a fragmented ext4 places some), so
 * that holding and allocating again can be tested on any filesystem. */
gboolean daxfile_test_misplaced(guint attempt);

#else /* !DAXFILE_TEST_SEAMS: release builds read no test variable */

static inline void
daxfile_test_crash_point(const char *point)
{
}

static inline void
daxfile_test_pause_point(const char *point)
{
}

static inline void
daxfile_test_hold_point(const char *point)
{
}

static inline gboolean
daxfile_test_no_tmpfile(void)
{
    return FALSE;
}

static inline gboolean
daxfile_test_no_tmpfile_link(void)
{
    return FALSE;
}

static inline gboolean
daxfile_test_misplaced(guint attempt)
{
    return FALSE;
}

#endif /* DAXFILE_TEST_SEAMS */

G_END_DECLS

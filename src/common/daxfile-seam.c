/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <signal.h>
#include <unistd.h>

#include "daxfile-seam.h"
#include "daxfile-util.h"

void
daxfile_test_crash_point(const char *point)
{
    const char *want = g_getenv("DAXFILE_TEST_CRASH");

    if (want && STREQ(want, point))
        kill(getpid(), SIGKILL);
}

void
daxfile_test_pause_point(const char *point)
{
    const char *want = g_getenv("DAXFILE_TEST_PAUSE");

    if (want && STREQ(want, point))
        kill(getpid(), SIGSTOP);
}

gboolean
daxfile_test_no_tmpfile(void)
{
    const char *v = g_getenv("DAXFILE_TEST_NO_TMPFILE");

    return v && STREQ(v, "1");
}

gboolean
daxfile_test_no_tmpfile_link(void)
{
    const char *v = g_getenv("DAXFILE_TEST_NO_TMPFILE");

    return v && STREQ(v, "link");
}

gboolean
daxfile_test_misplaced(guint attempt)
{
    const char *v = g_getenv("DAXFILE_TEST_MISPLACED");

    return v && attempt <= g_ascii_strtoull(v, NULL, 10);
}

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

void
daxfile_test_hold_point(const char *point)
{
    const char *dir = g_getenv("DAXFILE_TEST_HOLD_DIR");
    g_autofree char *hold = NULL;
    g_autofree char *reached = NULL;

    if (!dir)
        return;
    hold = g_build_filename(dir, point, NULL);
    reached = g_strconcat(hold, ".reached", NULL);
    g_file_set_contents(reached, "", 0, NULL);
    while (g_file_test(hold, G_FILE_TEST_EXISTS))
        g_usleep(20 * 1000);
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-util.h"
#include "daxfile-size.h"

void
daxfile_fd_close(DaxfileFd fd)
{
    if (fd >= 0)
        close(fd);
}

void
daxfile_mapping_clear(DaxfileMapping *map)
{
    if (map->addr && map->addr != MAP_FAILED)
        munmap(map->addr, map->length);
    map->addr = NULL;
    map->length = 0;
}

guint64
daxfile_page_size(void)
{
    return (guint64)sysconf(_SC_PAGESIZE);
}

gboolean
daxfile_align_check(guint64 align, GError **error)
{
    g_autofree char *pretty = daxfile_size_format(align);

    if (align == 0 || (align & (align - 1)) != 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Alignment %s is not a power of two; use e.g. 2M or 4K",
                    pretty);
        return FALSE;
    }
    if (align < daxfile_page_size()) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Alignment %s is smaller than the page size (%" G_GUINT64_FORMAT
                    " bytes); use 4K or larger",
                    pretty, daxfile_page_size());
        return FALSE;
    }
    return TRUE;
}

char *
daxfile_fd_path(int fd)
{
    g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", fd);
    g_autofree char *target = g_file_read_link(link, NULL);

    if (!target)
        return g_strdup_printf("fd %d", fd);
    return daxfile_escape(target);
}

char *
daxfile_escape(const char *str)
{
    GString *out;
    const char *p = str;

    if (!str)
        return g_strdup("(null)");
    out = g_string_sized_new(strlen(str));
    while (*p) {
        gunichar c = g_utf8_get_char_validated(p, -1);

        if (c == (gunichar)-1 || c == (gunichar)-2) {
            g_string_append_printf(out, "\\x%02x", (guchar)*p);
            p++;
            continue;
        }
        if (c < 0x20 || c == 0x7f || c == '\\')
            g_string_append_printf(out, "\\x%02x", (guchar)c);
        else
            g_string_append_unichar(out, c);
        p = g_utf8_next_char(p);
    }
    return g_string_free(out, FALSE);
}

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
daxfile_test_misplaced(guint attempt)
{
    const char *v = g_getenv("DAXFILE_TEST_MISPLACED");

    return v && attempt <= g_ascii_strtoull(v, NULL, 10);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "daxfile-escape.h"

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

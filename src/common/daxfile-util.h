/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-util.h: string comparisons (libvirt's STREQ, and a string in a
 * list)
 */
#pragma once

#include <glib.h>
#include <string.h>

#define STREQ(a, b) (strcmp((a), (b)) == 0)
#define STRNEQ(a, b) (strcmp((a), (b)) != 0)
#define STRPREFIX(a, b) (strncmp((a), (b), strlen(b)) == 0)
/* @s is one of the NULL-terminated @list; a NULL @s is in none (GLib's
 * g_strv_contains() wants a string) */
static inline gboolean
daxfile_str_in_list(const char *s, const char *const *list)
{
    return s && g_strv_contains(list, s);
}

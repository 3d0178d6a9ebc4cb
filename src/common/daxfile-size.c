/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-size.h"

static const struct {
    char letter;
    unsigned int shift;
    const char *unit;
} size_units[] = {
    {'P', 50, "PiB"},
    {'T', 40, "TiB"},
    {'G', 30, "GiB"},
    {'M', 20, "MiB"},
    {'K', 10, "KiB"},
};

static gboolean
size_suffix_shift(const char *suffix, unsigned int *ret_shift)
{
    size_t i;

    if (*suffix == '\0') {
        *ret_shift = 0;
        return TRUE;
    }
    for (i = 0; i < G_N_ELEMENTS(size_units); i++) {
        if (g_ascii_toupper(suffix[0]) != size_units[i].letter)
            continue;
        if (suffix[1] == '\0' || g_ascii_strcasecmp(suffix + 1, "iB") == 0) {
            *ret_shift = size_units[i].shift;
            return TRUE;
        }
        return FALSE;
    }
    return FALSE;
}

gboolean
daxfile_size_parse(const char *str, guint64 *ret_size, GError **error)
{
    g_autofree char *shown = daxfile_escape(str);
    const char *p = str;
    guint64 value = 0;
    unsigned int shift = 0;

    if (!str || !g_ascii_isdigit(*str)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid size '%s': expected a positive number such as "
                    "4096, 2M, 2MiB or 4G", shown);
        return FALSE;
    }
    for (; g_ascii_isdigit(*p); p++) {
        guint digit = *p - '0';

        if (value > ((guint64)G_MAXINT64 - digit) / 10) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        "Invalid size '%s': too large", shown);
            return FALSE;
        }
        value = value * 10 + digit;
    }
    if (!size_suffix_shift(p, &shift)) {
        g_autofree char *unit = daxfile_escape(p);

        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid size '%s': unknown unit '%s'; use K, M, G, T "
                    "or P (binary, optionally written KiB, MiB, ...)",
                    shown, unit);
        return FALSE;
    }
    if (shift && value > (guint64)G_MAXINT64 >> shift) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid size '%s': too large", shown);
        return FALSE;
    }
    value <<= shift;
    if (value == 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid size '%s': must be greater than zero", shown);
        return FALSE;
    }
    *ret_size = value;
    return TRUE;
}

/* The largest unit @size is an exact multiple of, or -1 */
static int
exact_unit(guint64 size)
{
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(size_units); i++) {
        guint64 unit = G_GUINT64_CONSTANT(1) << size_units[i].shift;

        if (size >= unit && size % unit == 0)
            return (int)i;
    }
    return -1;
}

char *
daxfile_size_format(guint64 size)
{
    int i = exact_unit(size);

    if (i < 0)
        return g_strdup_printf("%" G_GUINT64_FORMAT " bytes", size);
    return g_strdup_printf("%" G_GUINT64_FORMAT " %s",
                           size >> size_units[i].shift, size_units[i].unit);
}

char *
daxfile_size_format_arg(guint64 size)
{
    int i = exact_unit(size);

    if (i < 0)
        return g_strdup_printf("%" G_GUINT64_FORMAT, size);
    return g_strdup_printf("%" G_GUINT64_FORMAT "%c",
                           size >> size_units[i].shift, size_units[i].letter);
}

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
    {'P', 50, "PiB"}, {'T', 40, "TiB"}, {'G', 30, "GiB"},
    {'M', 20, "MiB"}, {'K', 10, "KiB"},
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

/* Digits of @base from *@p on into *@ret_value, *@p moved past them;
 * FALSE when the value exceeds @max */
static gboolean
size_digits(const char **p, guint base, guint64 max, guint64 *ret_value)
{
    guint64 value = 0;
    int digit;

    for (; (digit = g_ascii_xdigit_value(**p)) >= 0 && (guint)digit < base;
         (*p)++) {
        if (value > (max - (guint)digit) / base)
            return FALSE;
        value = value * base + (guint)digit;
    }
    *ret_value = value;
    return TRUE;
}

/* DAXFILE_SIZE_NUMBER: decimal or 0x-hex digits, nothing else */
static gboolean
number_parse(const char *str, guint64 *ret_value, GError **error)
{
    g_autofree char *shown = daxfile_escape(str);
    gboolean hex = g_str_has_prefix(str, "0x") || g_str_has_prefix(str, "0X");
    const char *p = hex ? str + 2 : str;
    guint64 value = 0;

    if (!size_digits(&p, hex ? 16 : 10, G_MAXUINT64, &value)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid number '%s': too large", shown);
        return FALSE;
    }
    if (p == (hex ? str + 2 : str) || *p) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Invalid number '%s': expected decimal digits, or 0x and hex digits",
            shown);
        return FALSE;
    }
    *ret_value = value;
    return TRUE;
}

gboolean
daxfile_size_parse_flags(const char *str, DaxfileSizeFlags flags,
                         guint64 *ret_size, GError **error)
{
    g_autofree char *shown = NULL;
    const char *p = str;
    guint64 value = 0;
    unsigned int shift = 0;

    if (str && (flags & DAXFILE_SIZE_NUMBER))
        return number_parse(str, ret_size, error);
    shown = daxfile_escape(str);
    if (!str || !g_ascii_isdigit(*str)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Invalid size '%s': expected a positive number such as 4096, 2M, 2MiB or 4G",
            shown);
        return FALSE;
    }
    if (!size_digits(&p, 10, G_MAXINT64, &value)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid size '%s': too large", shown);
        return FALSE;
    }
    if (!size_suffix_shift(p, &shift)) {
        g_autofree char *unit = daxfile_escape(p);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Invalid size '%s': unknown unit '%s'; fix: use K, M, G, T or P (binary, optionally written KiB, MiB, ...)",
            shown, unit);
        return FALSE;
    }
    if (shift && value > (guint64)G_MAXINT64 >> shift) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid size '%s': too large", shown);
        return FALSE;
    }
    value <<= shift;
    if (value == 0 && !(flags & DAXFILE_SIZE_ZERO)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid size '%s': must be greater than zero", shown);
        return FALSE;
    }
    *ret_size = value;
    return TRUE;
}

gboolean
daxfile_size_parse(const char *str, guint64 *ret_size, GError **error)
{
    return daxfile_size_parse_flags(str, DAXFILE_SIZE_DEFAULT, ret_size, error);
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

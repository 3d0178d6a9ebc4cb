/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daxfile-enum.h"
#include "daxfile-util.h"

const char *
daxfile_enum_to_string(const char *const *names, guint n_names, int value)
{
    if (value < 0 || (guint)value >= n_names)
        return NULL;
    return names[value];
}

int
daxfile_enum_from_string(const char *const *names, guint n_names,
                         const char *str)
{
    guint i;

    if (!str)
        return -1;
    for (i = 0; i < n_names; i++) {
        if (names[i] && STREQ(str, names[i]))
            return (int)i;
    }
    return -1;
}

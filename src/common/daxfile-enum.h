/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-enum.h: one table of names per enum, and its two lookups
 * (libvirt's VIR_ENUM_DECL/VIR_ENUM_IMPL, src/util/virenum.h)
 *
 * In the header of an enum whose last member is FOO_LAST:
 *
 *     DAXFILE_ENUM_DECL(daxfile_foo, DaxfileFoo);
 *
 * and in one .c file, its names in the order of the enum:
 *
 *     DAXFILE_ENUM_IMPL(daxfile_foo, DaxfileFoo, DAXFILE_FOO_LAST,
 *                       "a", "b", "c");
 *
 * which defines
 *
 *     const char *daxfile_foo_to_string(DaxfileFoo value);
 *         the name, NULL for a value out of range (or a NULL entry:
 *         a member with no name)
 *     gboolean daxfile_foo_from_string(const char *str, DaxfileFoo *ret);
 *         FALSE for NULL or a string that names no member
 *
 * A table with more or fewer names than the enum has members does not
 * compile.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The table lookups behind the generated functions */
const char *daxfile_enum_to_string(const char *const *names, guint n_names,
                                   int value);
int daxfile_enum_from_string(const char *const *names, guint n_names,
                             const char *str);

#define DAXFILE_ENUM_DECL(name, type)                                          \
    const char *name##_to_string(type value);                                  \
    gboolean name##_from_string(const char *str, type *ret_value)

#define DAXFILE_ENUM_IMPL(name, type, last, ...)                               \
    static const char *const name##_names[] = {__VA_ARGS__};                   \
    G_STATIC_ASSERT(G_N_ELEMENTS(name##_names) == (last));                     \
    const char *name##_to_string(type value)                                   \
    {                                                                          \
        return daxfile_enum_to_string(name##_names,                            \
                                      G_N_ELEMENTS(name##_names), (int)value); \
    }                                                                          \
    gboolean name##_from_string(const char *str, type *ret_value)              \
    {                                                                          \
        int i = daxfile_enum_from_string(name##_names,                         \
                                         G_N_ELEMENTS(name##_names), str);     \
        if (i < 0)                                                             \
            return FALSE;                                                      \
        *ret_value = (type)i;                                                  \
        return TRUE;                                                           \
    }

G_END_DECLS

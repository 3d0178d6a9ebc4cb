/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: the size parser (CLI options) and libvirt's scaled integers
 * (domain XML); a parsed size must format and parse back to itself.
 */
#include <stddef.h>
#include <stdint.h>

#include "daxfile-domxml.h"
#include "daxfile-size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *text = g_strndup((const char *)data, size);
    const char *unit = strchr(text, '|');
    guint64 v = 0, again = 0;

    if (daxfile_size_parse(text, &v, NULL)) {
        g_autofree char *arg = daxfile_size_format_arg(v);
        g_autofree char *pretty = daxfile_size_format(v);

        g_assert_true(daxfile_size_parse(arg, &again, NULL));
        g_assert_cmpuint(again, ==, v);
        g_assert_nonnull(pretty);
    }
    if (unit) {
        g_autofree char *num = g_strndup(text, unit - text);

        daxfile_scale_parse(num, unit + 1, 1024, &v, NULL);
    }
    return 0;
}

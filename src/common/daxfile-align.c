/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <unistd.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-size.h"

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
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Alignment %s is not a power of two; fix: use e.g. 2M or 4K",
            pretty);
        return FALSE;
    }
    if (align < daxfile_page_size()) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Alignment %s is smaller than the page size (%" G_GUINT64_FORMAT
            " bytes); fix: use 4K or larger",
            pretty, daxfile_page_size());
        return FALSE;
    }
    return TRUE;
}

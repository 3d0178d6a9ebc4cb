/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "daxfile-error.h"

G_DEFINE_QUARK(daxfile - error - quark, daxfile_error)

DaxfileErrorCode
daxfile_error_code_from_errno(int errsv)
{
    switch (errsv) {
    case ENOENT:
    case ENOTDIR:
        return DAXFILE_ERROR_NOT_FOUND;
    case EEXIST:
        return DAXFILE_ERROR_EXISTS;
    case EOPNOTSUPP:
    case ENOTTY:
    case ENOSYS:
        return DAXFILE_ERROR_NOT_SUPPORTED;
    case EBUSY:
    case ETXTBSY:
    case EWOULDBLOCK:
        return DAXFILE_ERROR_BUSY;
    case EPERM:
    case EACCES:
        return DAXFILE_ERROR_PERMISSION;
    case ENOSPC:
    case EDQUOT:
        return DAXFILE_ERROR_NO_SPACE;
    case EINVAL:
        return DAXFILE_ERROR_INVALID;
    default:
        return DAXFILE_ERROR_FAILED;
    }
}

void
daxfile_set_error_errno(GError **error, int errsv, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *prefix = NULL;

    va_start(ap, fmt);
    prefix = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, DAXFILE_ERROR, daxfile_error_code_from_errno(errsv),
                "%s: %s", prefix, g_strerror(errsv));
}

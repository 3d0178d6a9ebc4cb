/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-error.h: the error domain of the daxfile library
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define DAXFILE_ERROR (daxfile_error_quark())

typedef enum {
    DAXFILE_ERROR_FAILED,        /* a system call failed */
    DAXFILE_ERROR_INVALID,       /* bad user input */
    DAXFILE_ERROR_NOT_FOUND,     /* no such file, device, entry */
    DAXFILE_ERROR_EXISTS,        /* refusing to overwrite */
    DAXFILE_ERROR_NOT_SUPPORTED, /* the filesystem or kernel lacks it */
    DAXFILE_ERROR_NOT_READY,     /* the file fails the extent walk */
    DAXFILE_ERROR_BUSY,          /* held by another owner or operation */
    DAXFILE_ERROR_PERMISSION,    /* missing privilege or capability */
    DAXFILE_ERROR_NO_SPACE,      /* not enough free space */
} DaxfileErrorCode;

GQuark daxfile_error_quark(void);

/* Set @error from @errsv (an errno value) with a formatted prefix:
 * "<prefix>: <strerror>". The code is derived from @errsv. */
void daxfile_set_error_errno(GError **error, int errsv, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

DaxfileErrorCode daxfile_error_code_from_errno(int errsv);

G_END_DECLS

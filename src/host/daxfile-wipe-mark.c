/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/xattr.h>

#include "daxfile-wipe-mark.h"

gboolean
daxfile_wipe_pending(int fd, guint64 *ret_done)
{
    char buf[32] = "";
    ssize_t n = fgetxattr(fd, DAXFILE_WIPE_XATTR, buf, sizeof(buf) - 1);
    guint64 done = 0;

    if (n < 0)
        return FALSE;
    buf[n] = '\0';
    if (!g_ascii_string_to_unsigned(buf, 10, 0, G_MAXUINT64, &done, NULL))
        done = 0; /* unreadable: nothing is known to be zeroed */
    if (ret_done)
        *ret_done = done;
    return TRUE;
}

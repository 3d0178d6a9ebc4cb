/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <unistd.h>

#include "daxfile-escape.h"
#include "daxfile-fd.h"

void
daxfile_fd_close(DaxfileFd fd)
{
    if (fd >= 0)
        close(fd);
}

char *
daxfile_fd_path(int fd)
{
    g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", fd);
    g_autofree char *target = g_file_read_link(link, NULL);

    if (!target)
        return g_strdup_printf("fd %d", fd);
    return daxfile_escape(target);
}

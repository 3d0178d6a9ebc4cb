/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <unistd.h>

#include "daxfile-fd.h"

void
daxfile_fd_close(DaxfileFd fd)
{
    if (fd >= 0)
        close(fd);
}

char *
daxfile_fd_target(int fd)
{
    g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", fd);

    return g_file_read_link(link, NULL);
}

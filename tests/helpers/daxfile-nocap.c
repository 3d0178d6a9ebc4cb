/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-nocap CMD [ARGS...]: run CMD as root but without
 * CAP_LINUX_IMMUTABLE (dropped from the bounding set, so execve cannot
 * give it back). For testing daxfile's refusal without the capability.
 */
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/prctl.h>
#include <unistd.h>

#define CAP_LINUX_IMMUTABLE 9

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: daxfile-nocap CMD [ARGS...]\n");
        return 2;
    }
    if (prctl(PR_CAPBSET_DROP, CAP_LINUX_IMMUTABLE, 0, 0, 0) < 0) {
        fprintf(stderr, "daxfile-nocap: cannot drop the capability: %s\n",
                strerror(errno));
        return 1;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "daxfile-nocap: cannot run '%s': %s\n", argv[1],
            strerror(errno));
    return 127;
}

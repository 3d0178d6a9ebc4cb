/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-attest PID ALIGN FILE...: what the hook's attestation at started
 * costs, per device: daxfile_attest() of each FILE against the QEMU
 * process PID (its /proc/PID/smaps read and parsed, the file's statx),
 * the way the hook calls it. Prints one JSON object:
 *   {"smaps_bytes": N, "files": [{"path", "attested", "median_us",
 *    "p90_us"}...]}
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daxfile-attest.h"

#define ROUNDS 201

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double
now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int
main(int argc, char **argv)
{
    g_autofree char *smaps = NULL;
    g_autofree char *path = NULL;
    gsize smaps_len = 0;
    pid_t pid;
    guint64 align;
    int i, r;

    if (argc < 4) {
        fprintf(stderr, "usage: bench-attest PID ALIGN FILE...\n");
        return 2;
    }
    pid = (pid_t)atoi(argv[1]);
    align = g_ascii_strtoull(argv[2], NULL, 10);
    path = g_strdup_printf("/proc/%d/smaps", (int)pid);
    if (!g_file_get_contents(path, &smaps, &smaps_len, NULL)) {
        fprintf(stderr, "bench-attest: cannot read '%s'\n", path);
        return 1;
    }
    printf("{\"smaps_bytes\": %zu, \"files\": [", (size_t)smaps_len);
    for (i = 3; i < argc; i++) {
        double t[ROUNDS];
        gboolean ok = FALSE;
        struct stat st;
        int fd = open(argv[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0 || fstat(fd, &st) < 0) {
            fprintf(stderr, "bench-attest: cannot open '%s'\n", argv[i]);
            return 1;
        }
        for (r = 0; r < ROUNDS; r++) {
            g_auto(DaxfileAttestation) a = {0};
            double t0 = now_us();

            ok = daxfile_attest(pid, fd, &st, argv[i], st.st_size, align, &a,
                                NULL);
            t[r] = now_us() - t0;
        }
        close(fd);
        qsort(t, ROUNDS, sizeof(t[0]), cmp_double);
        printf("%s{\"path\": \"%s\", \"attested\": %s, \"median_us\": %.1f, "
               "\"p90_us\": %.1f}", i > 3 ? ", " : "", argv[i],
               ok ? "true" : "false", t[ROUNDS / 2], t[ROUNDS * 9 / 10]);
    }
    printf("]}\n");
    return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-attest PID ALIGN FILE...: what the hook's attestation at started
 * costs, as the hook does it: /proc/PID/smaps of the QEMU read once, then
 * daxfile_attest() of each FILE (its mapping found and judged, the file's
 * statx). Prints one JSON object:
 *   {"smaps_bytes": N, "read_median_us", "all_median_us" (read + every
 *    file), "per_device_us" (all / files), "files": [{"path", "attested",
 *    "median_us", "p90_us"}...] (each file's attestation, read excluded)}
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static double
median_of(double *t)
{
    qsort(t, ROUNDS, sizeof(t[0]), cmp_double);
    return t[ROUNDS / 2];
}

int
main(int argc, char **argv)
{
    g_autofree char *smaps = NULL;
    double t_read[ROUNDS], t_all[ROUNDS];
    int nfiles = argc - 3;
    pid_t pid;
    guint64 align;
    DaxfileFile **files;
    int i, r;

    if (argc < 4) {
        fprintf(stderr, "usage: bench-attest PID ALIGN FILE...\n");
        return 2;
    }
    pid = (pid_t)atoi(argv[1]);
    align = g_ascii_strtoull(argv[2], NULL, 10);
    files = g_new0(DaxfileFile *, nfiles);
    for (i = 0; i < nfiles; i++) {
        files[i] = daxfile_file_open_node(argv[3 + i], O_RDONLY | O_NOFOLLOW,
                                          NULL, NULL);
        if (!files[i]) {
            fprintf(stderr, "bench-attest: cannot open '%s'\n", argv[3 + i]);
            return 1;
        }
    }
    for (r = 0; r < ROUNDS; r++) {
        double t0 = now_us(), t1;
        g_autofree char *text = daxfile_attest_read_smaps(pid, NULL);

        if (!text) {
            fprintf(stderr, "bench-attest: cannot read process %d\n", pid);
            return 1;
        }
        t1 = now_us();
        for (i = 0; i < nfiles; i++) {
            g_auto(DaxfileAttestation) a = {0};

            daxfile_attest(pid, text, files[i], files[i]->st.st_size, align,
                           TRUE, &a, NULL);
        }
        t_read[r] = t1 - t0;
        t_all[r] = now_us() - t0;
        if (r == 0)
            smaps = g_steal_pointer(&text);
    }
    printf(
        "{\"smaps_bytes\": %zu, \"read_median_us\": %.1f, \"all_median_us\": %.1f, \"per_device_us\": %.1f, \"files\": [",
        strlen(smaps), median_of(t_read), median_of(t_all),
        median_of(t_all) / nfiles);
    for (i = 0; i < nfiles; i++) {
        double t[ROUNDS];
        gboolean ok = FALSE;

        for (r = 0; r < ROUNDS; r++) {
            g_auto(DaxfileAttestation) a = {0};
            double t0 = now_us();

            ok = daxfile_attest(pid, smaps, files[i], files[i]->st.st_size,
                                align, TRUE, &a, NULL);
            t[r] = now_us() - t0;
        }
        qsort(t, ROUNDS, sizeof(t[0]), cmp_double);
        printf(
            "%s{\"path\": \"%s\", \"attested\": %s, \"median_us\": %.1f, \"p90_us\": %.1f}",
            i ? ", " : "", argv[3 + i], ok ? "true" : "false", t[ROUNDS / 2],
            t[ROUNDS * 9 / 10]);
        daxfile_file_free(files[i]);
    }
    printf("]}\n");
    g_free(files);
    return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of dax-probe (the guest scripts' checks), a small program that
 * runs in the VM harness's guests. It links daxfile-common for sizes and
 * aligned mappings (daxfile-size.h, daxfile-mmap.h): glib is all that adds
 * to a guest (with pcre2), not json-glib.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "daxfile-mmap.h"
#include "daxfile-size.h"

#define DAX_PMD_SIZE ((uint64_t)2 << 20)

/* Page faults of this process so far (minor + major). */
static inline long
dax_faults_now(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt + ru.ru_majflt;
}

/* A shared read-write mapping of @len bytes of @fd from @offset at a
 * 2 MiB-aligned address (so that 2 MiB faults can map PMDs), with
 * MAP_SHARED_VALIDATE | MAP_SYNC when @sync: daxfile_map_aligned(). NULL
 * with errno set when it cannot be had. */
static inline char *
dax_map_aligned(int fd, uint64_t len, uint64_t offset, bool sync)
{
    int flags = sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
    void *addr = NULL;

    if (!daxfile_map_aligned(fd, len, offset, PROT_READ | PROT_WRITE, flags,
                             DAX_PMD_SIZE, &addr, NULL))
        return NULL;
    return addr;
}

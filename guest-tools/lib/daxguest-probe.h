/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxguest-probe.h: what DAX really does here, found by trying it: statx,
 * MAP_SYNC and whether a 2 MiB mapping is served by one PMD fault
 *
 * PMD faults are counted with getrusage(): after the first access to a
 * 2 MiB-aligned, provisioned chunk, touching its other 511 pages must add
 * no fault. /proc/self/smaps cannot tell (FilePmdMapped stays 0 for DAX on
 * 6.1). When tracefs has fs_dax:dax_pmd_fault_done, a private trace
 * instance records the fault result as well.
 */
#pragma once

#include <glib.h>

#include "daxfile-fs.h"

G_BEGIN_DECLS

#define DAXGUEST_PROBE_FILE_SIZE (G_GUINT64_CONSTANT(4) << 20)

typedef struct {
    gboolean ran;           /* FALSE: see error */
    char *error;            /* why the probe could not run */
    gboolean map_sync;      /* the mapping used MAP_SYNC */
    guint64 first_faults;   /* faults taken by the first access */
    guint64 extra_faults;   /* faults taken by the other 511 pages */
    DaxfileTristate traced; /* YES: traced as PMD, NO: traced FALLBACK,
                             * UNKNOWN: no tracepoint (or not ours) */
    guint trace_pmd;        /* dax_pmd_fault_done events that mapped */
    guint trace_fallback;   /* ... that fell back to 4 KiB pages */
} DaxguestPmdProbe;

void daxguest_pmd_probe_clear(DaxguestPmdProbe *probe);

typedef struct {
    char *error;         /* no test file could be made: why */
    DaxfileTristate dax; /* statx STATX_ATTR_DAX of a new file */
    char *dax_mode;      /* mount option dax=: always/inode/never */
    char *fs_type;
    gboolean map_sync;       /* MAP_SHARED_VALIDATE|MAP_SYNC accepted */
    char *map_sync_error;    /* strerror when not */
    guint64 extent_physical; /* device offset of the test file's first
                              * block, G_MAXUINT64 when unknown */
    gboolean extent_aligned; /* first 2 MiB physically aligned and
                              * contiguous */
    char *geometry_fix;      /* mkfs line that gives aligned extents */
    DaxguestPmdProbe pmd;
} DaxguestFileProbe;

void daxguest_file_probe_clear(DaxguestFileProbe *probe);

/* Make an unnamed 4 MiB file (O_TMPFILE) in the directory @dirfd (@name
 * for messages), provision it, and probe statx, MAP_SYNC and a 2 MiB write
 * fault through it. Never fails: what went wrong is in @ret_probe. */
void daxguest_probe_dir(int dirfd, const char *name,
                        DaxguestFileProbe *ret_probe);

/* Map the first MAX(@align, 2 MiB) of the device-dax @path read-only and
 * count the faults of reading its first 2 MiB. Changes no data. */
void daxguest_probe_devdax(const char *path, guint64 align, guint64 size,
                           DaxguestPmdProbe *ret_probe);

/* Count dax_pmd_fault_done events of task @pid in trace text. */
void daxguest_trace_count_pmd(const char *trace, int pid, guint *ret_pmd,
                              guint *ret_fallback);

/* fallocate @size bytes, write zeros over them and fsync: written extents,
 * so that later write faults neither allocate nor convert. @name is the
 * file's name for messages. */
gboolean daxguest_file_provision(int fd, guint64 size, const char *name,
                                 GError **error);

/* Page faults of this process so far (minor + major). */
guint64 daxguest_fault_count(void);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-attest.h: what the domain's QEMU really mapped of a pmem file
 *
 * QEMU maps a memory-backend-file with pmem=on through MAP_SYNC, and when
 * the kernel refuses that it only warns and maps without it. So the hook
 * does not take the domain XML's word: at started it reads QEMU's own
 * mapping of each file from /proc/PID/smaps and refuses the start unless
 * it is shared, whole, aligned to <alignsize> and, on DAX, synchronous.
 */
#pragma once

#include <glib.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "daxfile-file.h"
#include "daxfile-proc.h"

G_BEGIN_DECLS

typedef struct {
    pid_t pid;       /* QEMU's, -1 when unknown */
    gboolean mapped; /* @map is QEMU's mapping of the file */
    DaxfileProcMap map;
    gboolean dax;       /* the file is DAX */
    gboolean need_sync; /* the device wants MAP_SYNC on DAX (an nvdimm;
                         * virtio-pmem is made durable by fsync()) */
    gboolean attested;  /* every check passed */
    char *problem;      /* else what is wrong, with the fix */
} DaxfileAttestation;

void daxfile_attestation_clear(DaxfileAttestation *a);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileAttestation, daxfile_attestation_clear)

/* libvirt's pid of the QEMU of @domain, from @pid_dir/@domain.pid (a file
 * only root can have written, daxfile-trust.h); -1 with @error set, naming
 * @conf_path's qemu_pid_dir as the fix, when there is none alive. */
pid_t daxfile_attest_qemu_pid(const char *pid_dir, const char *domain,
                              const char *conf_path, GError **error);

/* /proc/@pid/smaps, read once for all of a domain's devices (the kernel
 * walks every mapping to make it: ~1.5 ms for a small QEMU) */
char *daxfile_attest_read_smaps(pid_t pid, GError **error);

/* Attest QEMU (@pid)'s mapping of the file @f for a device of @size bytes
 * with <alignsize> @align (0: none), that on DAX must be synchronous when
 * @need_sync, from @smaps (daxfile_attest_read_smaps(); NULL: read it
 * now). Fills @ret; FALSE with @error set to its problem when a check
 * fails. */
gboolean daxfile_attest(pid_t pid, const char *smaps, const DaxfileFile *f,
                        guint64 size, guint64 align, gboolean need_sync,
                        DaxfileAttestation *ret, GError **error);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-hook.h: what the libvirt qemu hook does for each operation
 *
 *   prepare begin    validate every managed nvdimm, then reserve it
 *   started begin    QEMU has the files mapped: engage static mode
 *   stopped end,
 *   release end      release, compare the layout
 *   reconnect begin  rebuild registry state, leave the guest alone
 *   migrate begin,
 *   restore begin    make sure the (possibly re-mapped) file is there and
 *                    fit; print rewritten XML only when a path changed
 *
 * An nvdimm is managed when its path lies under one of the configured
 * managed roots. The hook never calls libvirt (libvirt waits for it).
 */
#pragma once

#include "daxfile-conf.h"
#include "daxfile-domxml.h"

G_BEGIN_DECLS

typedef struct {
    const char *object; /* domain name (argv[1]) */
    const char *op;
    const char *subop;
    const char *xml; /* stdin */
    gsize xml_len;
    /* the process that ran the hook (libvirtd) and its start time, read
     * as the hook starts: a reservation lives as long as it does. (Read
     * later, getppid() would name init or a subreaper once libvirtd died,
     * and the reservation would never be found left over.) 0: none;
     * parent_start is read for prepare only, the one phase that needs it. */
    pid_t parent;
    guint64 parent_start;
} DaxfileHookCall;

/* Run the hook. FALSE with one-line @error makes the caller exit 1.
 * *ret_stdout is set (to XML) only when migrate/restore rewrote a path.
 * Notes for the log (a weaker mechanism than asked for, a file created on
 * this host) go to @notes (strings) when it is not NULL. */
gboolean daxfile_hook_run(const DaxfileHookCall *call, const DaxfileConf *conf,
                          char **ret_stdout, GPtrArray *notes, GError **error);

G_END_DECLS

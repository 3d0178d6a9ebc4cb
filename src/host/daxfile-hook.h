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

/* Hot-plug (daxfile-hook-plug.c). libvirt runs no hook when a device is
 * added to a running domain, so 'daxfile attach' and 'daxfile watch' run
 * the hook's phases over that one device themselves: prepare (every
 * check of a start, then a reservation), engage (attest the new mapping
 * of the domain's QEMU, make the file static with that QEMU as its
 * consumer), release (the reservation back, when libvirt refused the
 * device), or hold it unguarded (QEMU maps it, and it could not be made
 * static: DaxfileEntry.unguarded). */
typedef struct {
    const DaxfileConf *conf;
    DaxfileDomain *dom;      /* the running domain's live XML... */
    const DaxfileNvdimm *nv; /* ...and the device, one of dom->nvdimms
                              * (appended by the caller when it is still
                              * to be added) */
    pid_t holder;            /* who holds the reservation until the
                              * device is engaged, and its start time */
    guint64 holder_start;
    pid_t qemu;       /* > 0: the domain's QEMU maps the file
                       * already (a device someone else added) */
    GPtrArray *notes; /* as daxfile_hook_run()'s, may be NULL */
} DaxfilePlug;

/* *@ret_managed: the device's file is in a managed root (or a managed
 * device-dax device); FALSE with @error when it names a managed file by
 * another spelling, or one the hook cannot place */
gboolean daxfile_plug_managed(const DaxfilePlug *plug, gboolean *ret_managed,
                              GError **error);
gboolean daxfile_plug_prepare(const DaxfilePlug *plug, GError **error);
gboolean daxfile_plug_engage(const DaxfilePlug *plug, GError **error);
gboolean daxfile_plug_release(const DaxfilePlug *plug, GError **error);
gboolean daxfile_plug_hold_unguarded(const DaxfilePlug *plug,
                                     const char *reason, GError **error);

/* @message of an error about the device, without the "domain 'NAME'
 * DEVICE 'PATH': " it begins with (what a line that names them already
 * says of it) */
char *daxfile_plug_cause(const DaxfilePlug *plug, const char *message);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-watch.h: wipe what an undefined domain leaves behind, through
 * libvirt's domain events (libvirt runs no hook at undefine)
 */
#pragma once

#include "daxfile-conf.h"
#include "daxfile-wipe.h"

G_BEGIN_DECLS

/* What daxfile_virt_watch() saw or did */
typedef enum {
    DAXFILE_WATCH_READY,        /* connected; @domains known, @files */
    DAXFILE_WATCH_WIPED,        /* @path of undefined @domain wiped: @wipe */
    DAXFILE_WATCH_KEPT,         /* @path not wiped, and not to be: @why */
    DAXFILE_WATCH_WAITING,      /* @domain undefined while it runs: its
                                 * files are wiped when it stops */
    DAXFILE_WATCH_FAILED,       /* @path: not wiped, @why; with @pending its
                                 * wipe stays owed and is tried again */
    DAXFILE_WATCH_LOST,         /* the connection closed (@why); reconnecting */
    DAXFILE_WATCH_UNREADABLE,   /* @domain's definition cannot be read (@why):
                                 * it counts as defined, nothing of it is
                                 * wiped */
    DAXFILE_WATCH_UNKNOWN,      /* @domain was undefined before its definition
                                 * could be read: which files it used is
                                 * not known, none is wiped */
    DAXFILE_WATCH_PLUGGED,      /* @path, hot-plugged into the running @domain
                                 * as @device, made static */
    DAXFILE_WATCH_UNGUARDED,    /* ... not made static (@why): held for the
                                 * domain, unguarded, until it stops */
    DAXFILE_WATCH_PLUG_REFUSED, /* ... not made static nor held (@why:
                                 * another owner holds it, or it cannot
                                 * be placed) */
} DaxfileWatchKind;

typedef struct {
    DaxfileWatchKind kind;
    const char *domain;
    const char *device; /* a hot-plugged device's alias */
    const char *path;
    const char *why;
    gboolean pending;
    const DaxfileWipeResult *wipe;
    guint domains; /* defined domains known */
    guint files;   /* their backends that would be wiped */
} DaxfileWatchEvent;

typedef void (*DaxfileWatchFunc)(const DaxfileWatchEvent *event, gpointer data);

/* Follow libvirt's domain life cycle at @uri (NULL = default) until
 * *@stop is set, and wipe what an undefined domain leaves behind where
 * @conf asks for it (wipe_on_undefine):
 *
 * - every persistent domain's nvdimm and virtio-pmem backends that @conf
 *   manages and wants wiped are kept in memory from its definition, read
 *   when libvirt says it was defined (on a thread of its own, so that no
 *   wipe or rescan delays the read); a domain undefined before even that
 *   read leaves files no one knows, and that is reported;
 * - a domain counts as undefined only when libvirt says it no longer
 *   exists (virDomainLookupByUUID: VIR_ERR_NO_DOMAIN), never because its
 *   definition could not be read; a rename (same UUID) is no undefine;
 * - its files are then opened as the hook opens them
 *   (daxfile_conf_open_managed(): beneath the root, no symbolic link,
 *   trusted owner, one link) and recorded as owed (daxfile-wipes.h)
 *   before the domain is forgotten;
 * - each is wiped (daxfile_wipe(), which refuses a file the registry
 *   holds or a process maps or holds open) once the domain no longer runs
 *   and no element of any domain (every file reference of the definition
 *   of each persistent domain and of the live XML of each running one,
 *   transient ones included) names it; else kept;
 * - a wipe that cannot happen yet stays recorded and is tried again every
 *   few seconds, and after a restart: records left by an earlier watch
 *   are taken up first.
 *
 * And since libvirt runs no hook at hot-plug either, a pmem device on a
 * managed file that anyone adds to a running domain (libvirt's
 * DEVICE_ADDED; on connecting, every such device of a running domain that
 * the registry does not hold for it) goes through what a start does for
 * it (daxfile_virt_plug_added()): made static, or held for the domain
 * unguarded, or, when another owner holds the file, reported.
 *
 * Every outcome goes to @report, one call at a time but from either of
 * two threads (a lost connection is said at once, whatever the watch is
 * busy with). FALSE with @error only when the first connection fails;
 * later losses are reported and retried. */
gboolean daxfile_virt_watch(const char *uri, const DaxfileConf *conf,
                            volatile gint *stop, DaxfileWatchFunc report,
                            gpointer data, GError **error);

G_END_DECLS

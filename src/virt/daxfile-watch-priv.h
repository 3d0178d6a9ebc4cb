/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-watch-priv.h: what the two halves of daxfile watch share:
 * daxfile-watch.c (the threads, libvirt's events, the domains known) and
 * daxfile-watch-wipes.c (what an undefined domain leaves: whether it is
 * gone, who else names a file, the wipes owed)
 */
#pragma once

#include <libvirt/libvirt.h>

#include "daxfile-watch.h"

G_BEGIN_DECLS

typedef struct {
    char *name;
    GPtrArray *paths; /* the backends to wipe when it is undefined */
    gint64 read_at;   /* when its definition was asked for (monotonic) */
} WatchDomain;

void daxfile_watch_domain_free(gpointer p);

/* Two threads share a Watch. The event thread runs libvirt's event
 * loop: it reads a definition the moment libvirt says it was defined (a
 * domain undefined soon after must not take its files' names with it),
 * says at once that the connection closed, and hands everything else to
 * the main thread as a WatchJob, in the order libvirt sent it. The main
 * thread owns @domains, @said and @settled, and does what takes time
 * (rescans, wipes, hot-plugs), so none of it delays an event. Reports
 * from both are serialized by @report_lock. */
typedef struct {
    const DaxfileConf *conf;
    volatile gint *stop; /* also stops a wipe after its current chunk */
    DaxfileWatchFunc report;
    gpointer data;
    GMutex report_lock;
    GHashTable *domains; /* UUID string -> WatchDomain */
    GHashTable *said;    /* a retried thing -> what was last said of it */
    GHashTable *settled; /* UUID of a domain it saw go -> gint64 when */
    GAsyncQueue *jobs;   /* WatchJob, from the event thread */
    virConnectPtr conn;
    int callback;
    int plug_callback; /* DEVICE_ADDED */
    gint lost;         /* set by the event thread when the connection closes */
    gint quit;         /* tells the event thread to end */
    guint reported_domains, reported_files; /* at the last READY */
} Watch;

/* daxfile-watch.c, the main thread's */
void daxfile_watch_report(Watch *w, DaxfileWatchKind kind, const char *domain,
                          const char *path, const char *why,
                          const DaxfileWipeResult *wipe);
void daxfile_watch_say(Watch *w, const char *key, DaxfileWatchKind kind,
                       const char *domain, const char *path, const char *why);
void daxfile_watch_scan(Watch *w, virDomainPtr dom);

/* daxfile-watch-wipes.c, the main thread's */
void daxfile_watch_settle(Watch *w, const char *uuid, const char *name);
void daxfile_watch_process(Watch *w);

G_END_DECLS

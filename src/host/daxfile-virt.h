/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-virt.h: attach and detach nvdimms through the libvirt API
 * (never used by the hook: libvirt waits for the hook)
 */
#pragma once

#include "daxfile-conf.h"
#include "daxfile-domxml.h"
#include "daxfile-wipe.h"

G_BEGIN_DECLS

typedef struct {
    gboolean live; /* also hot-plugged into the running domain */
    char *note;    /* e.g. why it waits for the next boot */
} DaxfileAttachResult;

void daxfile_attach_result_clear(DaxfileAttachResult *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileAttachResult,
                                 daxfile_attach_result_clear)

/* Check the domain's prerequisites, then virDomainAttachDeviceFlags with
 * AFFECT_CONFIG (and AFFECT_LIVE when the domain runs and booted with an
 * nvdimm, which is when QEMU can hot-plug one) for @nv, a device that
 * daxfile_nvdimm_check() passed. @uri NULL = default. */
gboolean daxfile_virt_attach(const char *uri, const char *domain,
                             const DaxfileNvdimm *nv,
                             DaxfileAttachResult *ret_result, GError **error);

/* Remove the nvdimm backed by @path from the persistent definition (QEMU
 * cannot unplug an nvdimm: a running domain keeps it until shutdown). */
gboolean daxfile_virt_detach(const char *uri, const char *domain,
                             const char *path, DaxfileAttachResult *ret_result,
                             GError **error);

/* What daxfile_virt_watch() saw or did */
typedef enum {
    DAXFILE_WATCH_READY,   /* connected; @domains known, @files */
    DAXFILE_WATCH_WIPED,   /* @path of undefined @domain wiped: @wipe */
    DAXFILE_WATCH_KEPT,    /* @path not wiped: @why */
    DAXFILE_WATCH_WAITING, /* @domain undefined while it runs: its files
                            * are wiped when it stops */
    DAXFILE_WATCH_FAILED,  /* @path: the wipe failed or was refused, @why */
    DAXFILE_WATCH_LOST,    /* the connection closed (@why); reconnecting */
} DaxfileWatchKind;

typedef struct {
    DaxfileWatchKind kind;
    const char *domain;
    const char *path;
    const char *why;
    const DaxfileWipeResult *wipe;
    guint domains; /* defined domains known */
    guint files;   /* their backends that would be wiped */
} DaxfileWatchEvent;

typedef void (*DaxfileWatchFunc)(const DaxfileWatchEvent *event, gpointer data);

/* Follow libvirt's domain life cycle at @uri (NULL = default) until
 * *@stop is set: remember every defined domain's nvdimm and virtio-pmem
 * backends that @conf manages and wants wiped (wipe_on_undefine), and when
 * a domain is undefined wipe each of them that no other defined domain
 * uses (daxfile_wipe(), which refuses a file the registry holds). A domain
 * undefined while it runs is wiped for when it stops. Every outcome goes
 * to @report. FALSE with @error only when the first connection fails;
 * later losses are reported and retried. */
gboolean daxfile_virt_watch(const char *uri, const DaxfileConf *conf,
                            volatile gint *stop, DaxfileWatchFunc report,
                            gpointer data, GError **error);

G_END_DECLS

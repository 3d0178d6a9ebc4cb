/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-hook-priv.h: what daxfile-hook.c (the phases) and
 * daxfile-hook-refs.c (what else a domain names) share; not for other
 * modules
 */
#pragma once

#include <glib.h>

#include "daxfile-hook.h"
#include "daxfile-static.h"

G_BEGIN_DECLS

/* One run of the hook on one domain */
typedef struct {
    const DaxfileHookCall *call;
    const DaxfileConf *conf;
    DaxfileDomain *dom;
    char *owner;           /* "domain:NAME" */
    GPtrArray *notes;      /* borrowed, may be NULL */
    const GArray *mappers; /* pids that may map a file at prepare already
                            * (the QEMU a device is hot-plugged into);
                            * NULL: none */
} DaxfileHookCtx;

/* A device the hook acts on, and what a phase does with it: its file,
 * once the phase opened it (owned), and its static-mode item (item.file
 * is that file; item.result and item.released say what static mode did) */
typedef struct {
    DaxfileNvdimm *nv;
    const DaxfileRoot *root; /* NULL: a device-dax device */
    DaxfileFile *file;
    DaxfileStaticItem item;
} DaxfileHookDev;

/* An empty array of DaxfileHookDev that frees their files and items */
GArray *daxfile_hook_devs_new(void);

/* "domain 'vm1' nvdimm0 '/mnt/pmem/vm1.img'" */
char *daxfile_hook_dev_label(const DaxfileHookCtx *h, const DaxfileNvdimm *nv);

/* @message without the label it begins with, when it does (a copy) */
char *daxfile_hook_dev_cause(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
                             const char *message);

/* Prefix @local (moved into @error) with the device it is about; FALSE */
gboolean daxfile_hook_dev_fail(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
                               GError *local, GError **error);

/* The managed root of @nv (*@ret_root NULL: not in one); FALSE when it
 * names a managed file by another spelling than the plain one, or one
 * the hook cannot place */
gboolean daxfile_hook_dev_root(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
                               const DaxfileRoot **ret_root, GError **error);

/* A device-dax nvdimm the hook manages (device_dax=true) */
gboolean daxfile_hook_dev_is_devdax(const DaxfileHookCtx *h,
                                    const DaxfileNvdimm *nv);

/* prepare over @devs (DaxfileHookDev, of @h->dom's nvdimms): every
 * check, then one reservation of them all for @h->owner, held by
 * @h->call->parent */
gboolean daxfile_hook_prepare_devs(const DaxfileHookCtx *h, GArray *devs,
                                   GError **error);

/* started over @devs: attest the domain's QEMU's mapping of each, then
 * make them static, all or none, with that QEMU as their consumer */
gboolean daxfile_hook_engage_devs(const DaxfileHookCtx *h, GArray *devs,
                                  GError **error);

/* stopped/release over @devs: release every one this domain holds
 * (reserved, unguarded or static), one registry write */
gboolean daxfile_hook_release_devs(const DaxfileHookCtx *h, GArray *devs,
                                   GError **error);

/* Hold the file of @d for the domain unguarded, for @reason
 * (daxfile_static_hold_unguarded(): its holder the domain's QEMU) */
gboolean daxfile_hook_hold_unguarded(const DaxfileHookCtx *h,
                                     const DaxfileHookDev *d,
                                     const char *reason, GError **error);

/* Two pmem devices of the domain on the same file (or device-dax
 * device), by what they are: the guest would see two devices over one
 * storage. Refused when @devs (DaxfileHookDev) holds any. */
gboolean daxfile_hook_check_no_alias(const DaxfileHookCtx *h, GArray *devs,
                                     GError **error);

/* Nothing else reaches a managed file: no other file reference of the
 * domain (daxfile_domain_file_refs(), and its storage volumes, placed
 * through their pools' state) is the file of one of @devs (each opened),
 * or a file the registry holds for another owner. Compared by what they
 * are, however spelt; what cannot be identified is refused. */
gboolean daxfile_hook_check_refs(const DaxfileHookCtx *h, GArray *devs,
                                 GError **error);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-hook-priv.h: what daxfile-hook.c (the phases) and
 * daxfile-hook-refs.c (what else a domain names) share; not for other
 * modules
 */
#pragma once

#include <glib.h>

#include "daxfile-hook.h"

G_BEGIN_DECLS

/* One run of the hook on one domain */
typedef struct {
    const DaxfileHookCall *call;
    const DaxfileConf *conf;
    DaxfileDomain *dom;
    char *owner;      /* "domain:NAME" */
    GPtrArray *notes; /* borrowed, may be NULL */
} DaxfileHookCtx;

/* A device the hook acts on */
typedef struct {
    DaxfileNvdimm *nv;
    const DaxfileRoot *root; /* NULL: a device-dax device */
} DaxfileHookDev;

/* "domain 'vm1' nvdimm0 '/mnt/pmem/vm1.img'" */
char *daxfile_hook_dev_label(const DaxfileHookCtx *h, const DaxfileNvdimm *nv);

/* Prefix @local (moved into @error) with the device it is about; FALSE */
gboolean daxfile_hook_dev_fail(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
                               GError *local, GError **error);

/* Two pmem devices of the domain on the same file (or device-dax
 * device), by what they are: the guest would see two devices over one
 * storage. Refused when @devs (DaxfileHookDev) holds any. */
gboolean daxfile_hook_check_no_alias(const DaxfileHookCtx *h, GArray *devs,
                                     GError **error);

/* Nothing else reaches a managed file: no other file reference of the
 * domain (daxfile_domain_file_refs(), and its storage volumes, placed
 * through their pools' state) is the file of one of @devs (whose opened
 * files are @files, parallel), or a file the registry holds for another
 * owner. Compared by what they are, however spelt; what cannot be
 * identified is refused. */
gboolean daxfile_hook_check_refs(const DaxfileHookCtx *h, GArray *devs,
                                 GPtrArray *files, GError **error);

G_END_DECLS

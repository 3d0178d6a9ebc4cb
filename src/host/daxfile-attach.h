/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-attach.h: what 'daxfile attach' and 'daxfile domain-xml' check
 * before a device is wired or printed: the backing file (or device-dax
 * device) of the pmem device daxfile makes for it, checked as the hook
 * checks it at start, and the device completed from it (size, and a
 * device-dax device's page size). No libvirt here: attaching itself is
 * daxfile_virt_attach() (daxfile-virt.h).
 */
#pragma once

#include <glib.h>

#include "daxfile-nvdimm.h"
#include "daxfile-report.h"

G_BEGIN_DECLS

/* What attach and domain-xml were asked for besides the device */
typedef struct {
    gboolean create;        /* attach --create: make the file first */
    gboolean align_given;   /* --align given: a device-dax device's page
                             * size must agree with it, not replace it */
    gboolean allow_non_dax; /* accept a file without DAX (development) */
} DaxfileAttachOptions;

/* attach --create: make @spec's file (@spec->size bytes, aligned for
 * @spec->alignsize) and put its report in *@ret_report. Without
 * @opts->create, or when @spec->path is a device-dax device
 * (daxfile_attach_check() refuses --create there), nothing is made and
 * *@ret_report is not set. */
gboolean daxfile_attach_create(const DaxfileNvdimm *spec,
                               const DaxfileAttachOptions *opts,
                               DaxfileReport **ret_report, GError **error);

/* @spec's settings, checked as the hook will check them at start
 * (daxfile_nvdimm_check()), the error prefixed with the quoted path */
gboolean daxfile_attach_check_settings(const DaxfileNvdimm *spec,
                                       GError **error);

/* Check @spec's file or device-dax device and complete @spec from it.
 * A file: its report (@created, the one daxfile_attach_create() made, or
 * built here), static-ready unless @spec is read-only, and its size,
 * which @spec->size must equal when set and is set to. A device-dax
 * device: an nvdimm only and nothing to create; its page size becomes
 * @spec->alignsize unless @opts->align_given, its size @spec->size unless
 * set, and both must suit it (daxfile_devdax_check()). Then the settings
 * (daxfile_attach_check_settings()). */
gboolean daxfile_attach_check(DaxfileNvdimm *spec,
                              const DaxfileAttachOptions *opts,
                              const DaxfileReport *created, GError **error);

G_END_DECLS

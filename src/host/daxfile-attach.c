/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-attach.c: the checks of attach and domain-xml (daxfile-attach.h)
 */
#include "daxfile-attach.h"
#include "daxfile-create.h"
#include "daxfile-devdax.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-size.h"

gboolean
daxfile_attach_check_settings(const DaxfileNvdimm *spec, GError **error)
{
    g_autofree char *name = daxfile_escape(spec->path);

    if (daxfile_nvdimm_check(spec, error))
        return TRUE;
    g_prefix_error(error, "'%s': ", name);
    return FALSE;
}

/* A device-dax device: its size, and its page size for <alignsize>
 * unless --align says (then they must agree), checked as the hook does */
static gboolean
attach_check_devdax(DaxfileNvdimm *spec, const DaxfileAttachOptions *opts,
                    GError **error)
{
    g_autoptr(DaxfileDevdax) d = NULL;
    g_autoptr(DaxfileFile) f = daxfile_devdax_open(spec->path, &d, error);

    if (!f)
        return FALSE;
    if (spec->model != DAXFILE_DEVICE_NVDIMM || opts->create) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' is a device-dax device (%s): it is given to a guest as an nvdimm, and there is nothing to create; fix: drop %s",
            f->display, d->name, opts->create ? "--create" : "--model");
        return FALSE;
    }
    if (!opts->align_given && d->align)
        spec->alignsize = d->align;
    if (!spec->size)
        spec->size = d->size;
    if (!daxfile_devdax_check(d, f->display, spec->size, spec->alignsize,
                              error))
        return FALSE;
    return daxfile_attach_check_settings(spec, error);
}

gboolean
daxfile_attach_check(DaxfileNvdimm *spec, const DaxfileAttachOptions *opts,
                     const DaxfileReport *created, GError **error)
{
    g_autoptr(DaxfileReport) built = NULL;
    const DaxfileReport *report = created;
    g_autoptr(DaxfileFile) f = NULL;

    if (!created && daxfile_devdax_is(spec->path))
        return attach_check_devdax(spec, opts, error);
    if (!created) {
        f = daxfile_file_open(spec->path, DAXFILE_OPEN_READ, error);
        if (!f)
            return FALSE;
        report = built = daxfile_report_build(f, spec->alignsize,
                                              opts->allow_non_dax, error);
    }
    if (!report ||
        (!spec->readonly && !daxfile_report_require_ready(report, error)))
        return FALSE;
    if (spec->size && spec->size != report->size) {
        g_autofree char *have = daxfile_size_format(report->size);
        g_autofree char *want = daxfile_size_format(spec->size);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' is %s, not %s; the device size must equal the file's size; fix: drop --size",
            report->path, have, want);
        return FALSE;
    }
    spec->size = report->size;
    return daxfile_attach_check_settings(spec, error);
}

gboolean
daxfile_attach_create(const DaxfileNvdimm *spec,
                      const DaxfileAttachOptions *opts,
                      DaxfileReport **ret_report, GError **error)
{
    DaxfileCreateParams params = {.size = spec->size,
                                  .align = spec->alignsize,
                                  .allow_non_dax = opts->allow_non_dax};

    if (!opts->create || daxfile_devdax_is(spec->path))
        return TRUE; /* attach_check_devdax() refuses --create */
    *ret_report = daxfile_create(spec->path, &params, NULL, error);
    return *ret_report != NULL;
}

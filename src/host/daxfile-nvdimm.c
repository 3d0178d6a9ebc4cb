/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-nvdimm.h"
#include "daxfile-size.h"
#include "daxfile-util.h"

DAXFILE_ENUM_IMPL(daxfile_device_model, DaxfileDeviceModel, DAXFILE_DEVICE_LAST,
                  "nvdimm", "virtio-pmem");

void
daxfile_nvdimm_init(DaxfileNvdimm *nv, DaxfileDeviceModel model,
                    const char *path)
{
    *nv = (DaxfileNvdimm){
        .model = model,
        .access = g_strdup("shared"),
        .path = g_strdup(path),
        .pmem = model == DAXFILE_DEVICE_NVDIMM,
        .node = -1,
    };
}

void
daxfile_nvdimm_clear(DaxfileNvdimm *nv)
{
    g_clear_pointer(&nv->alias, g_free);
    g_clear_pointer(&nv->access, g_free);
    g_clear_pointer(&nv->path, g_free);
}

void
daxfile_nvdimm_free(DaxfileNvdimm *nv)
{
    if (!nv)
        return;
    daxfile_nvdimm_clear(nv);
    g_free(nv);
}

guint64
daxfile_nvdimm_page(const DaxfileNvdimm *nv)
{
    return nv->model == DAXFILE_DEVICE_VIRTIO_PMEM ? DAXFILE_DEFAULT_ALIGN
                                                   : nv->alignsize;
}

static gboolean
check_size(const DaxfileNvdimm *nv, GError **error)
{
    if (nv->size)
        return TRUE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "<target> has no <size>; fix: set it to the file's size");
    return FALSE;
}

/* <pmem/> and <alignsize> of an nvdimm */
static gboolean
check_mapping(const DaxfileNvdimm *nv, GError **error)
{
    g_autoptr(GError) align_error = NULL;

    if (!nv->pmem) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "<source> has no <pmem/>, so QEMU maps the file without MAP_SYNC and libvirt preallocates it; fix: add <pmem/> to <source>");
        return FALSE;
    }
    if (!nv->alignsize) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "<source> has no <alignsize>, so the mapping is not aligned for huge pages; fix: add <alignsize unit='KiB'>2048</alignsize> to <source>");
        return FALSE;
    }
    if (!daxfile_align_check(nv->alignsize, &align_error)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "<alignsize>: %s", align_error->message);
        return FALSE;
    }
    return TRUE;
}

/* The label of an nvdimm, and what it leaves the guest */
static gboolean
check_label(const DaxfileNvdimm *nv, GError **error)
{
    g_autofree char *size = daxfile_size_format(nv->size);
    g_autofree char *label = daxfile_size_format(nv->label_size);
    guint64 visible;

    if (nv->label_size && nv->label_size < DAXFILE_MIN_LABEL_SIZE) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "label size %s is below QEMU's minimum of 128 KiB; fix: <label><size unit='KiB'>128</size></label>",
            label);
        return FALSE;
    }
    visible = nv->label_size < nv->size
                  ? DAXFILE_ALIGN_DOWN(nv->size - nv->label_size, nv->alignsize)
                  : 0;
    if (visible == 0) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "the guest would see 0 bytes (size %s minus label %s, aligned down to <alignsize>); fix: a larger file and <size>, or a smaller label",
            size, label);
        return FALSE;
    }
    return TRUE;
}

gboolean
daxfile_nvdimm_check(const DaxfileNvdimm *nv, GError **error)
{
    if (!nv->access || STRNEQ(nv->access, "shared")) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "access is '%s', so guest writes never reach the file; fix: <memory model='%s' access='shared'>",
            nv->access ? nv->access : "unset (private)",
            daxfile_device_model_to_string(nv->model));
        return FALSE;
    }
    /* virtio-pmem: no MAP_SYNC, no alignment, no label: QEMU maps the
     * file shared and serves the guest's flush requests with fsync() */
    if (nv->model == DAXFILE_DEVICE_VIRTIO_PMEM)
        return check_size(nv, error);
    return check_mapping(nv, error) && check_size(nv, error) &&
           check_label(nv, error);
}

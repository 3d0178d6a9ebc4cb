/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-spec.c: the device options that attach and domain-xml share
 */
#include "daxfilectl.h"

gboolean
cli_spec_from_options(const char *cmd, const CliSpecArgs *args,
                      const char *path, DaxfileNvdimm *spec, int *ret_exit)
{
    DaxfileDeviceModel model = DAXFILE_DEVICE_NVDIMM;

    if (args->model && !daxfile_device_model_from_string(args->model, &model)) {
        *ret_exit = cli_usage_error(
            cmd, "--model must be nvdimm or virtio-pmem, not '%s'",
            args->model);
        return FALSE;
    }
    daxfile_nvdimm_init(spec, model, path);
    spec->node = args->node;
    spec->readonly = args->readonly;
    if (spec->model == DAXFILE_DEVICE_VIRTIO_PMEM &&
        (args->label || args->node || args->readonly)) {
        /* libvirt would drop them without a word */
        *ret_exit = cli_usage_error(
            cmd,
            "a virtio-pmem device has no %s; fix: drop it, or use --model nvdimm",
            args->label  ? "--label-size"
            : args->node ? "--node"
                         : "--readonly");
        return FALSE;
    }
    if (!cli_parse_align(cmd, args->align, &spec->alignsize, ret_exit) ||
        (args->size &&
         !cli_parse_size(cmd, "size", args->size, &spec->size, ret_exit)) ||
        (args->label && !cli_parse_size(cmd, "label-size", args->label,
                                        &spec->label_size, ret_exit)))
        return FALSE;
    if (args->node < 0) {
        *ret_exit = cli_usage_error(cmd, "--node must not be negative");
        return FALSE;
    }
    return TRUE;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: the daxfile.conf parser, and the lookups the hook makes with
 * what it parsed.
 */
#include <stddef.h>
#include <stdint.h>

#include "daxfile-conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(DaxfileConf) conf = daxfile_conf_load_data(
        (const char *)data, size, "/fuzz/daxfile.conf", NULL);
    g_autofree char *mapped = NULL;

    if (!conf)
        return 0;
    daxfile_conf_managed_root(conf, "/mnt/pmem/vm.img");
    daxfile_conf_managed_root(conf, "/");
    daxfile_conf_trusts_uid(conf, 0);
    mapped = daxfile_conf_map_path(conf, "/mnt/pmem/a/b.img");
    return 0;
}

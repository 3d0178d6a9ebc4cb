/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: the domain-XML reader and the hook's per-device validator,
 * and the path rewriter migrate uses. Untrusted input, root process.
 */
#include <stddef.h>
#include <stdint.h>

#include "daxfile-domxml.h"
#include "daxfile-hook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(DaxfileDomain) dom = daxfile_domain_parse((const char *)data,
                                                        size, NULL);
    g_autoptr(GHashTable) paths = NULL;
    g_autofree char *out = NULL;
    guint i;

    if (!dom)
        return 0;
    paths = g_hash_table_new(NULL, NULL);
    for (i = 0; i < dom->nvdimms->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(dom->nvdimms, i);
        DaxfileNvdimmSpec spec = {nv->path ? nv->path : "/x", nv->size,
                                  nv->alignsize ? nv->alignsize : 4096,
                                  nv->label_size, nv->node, nv->readonly};
        g_autofree char *xml = daxfile_domain_nvdimm_xml(dom, nv->index);
        g_autofree char *dev = daxfile_nvdimm_device_xml(&spec, NULL);

        daxfile_hook_check_device(nv, NULL);
        daxfile_domain_check_attach(dom, &spec, NULL);
        g_hash_table_insert(paths, GUINT_TO_POINTER(nv->index),
                            (char *)"/fuzz/new path.img");
    }
    out = daxfile_domain_rewrite_paths(dom, paths, NULL);
    return 0;
}

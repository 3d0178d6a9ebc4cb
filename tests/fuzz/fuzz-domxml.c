/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: the domain-XML reader, the device formatter and checks,
 * and the path rewriter migrate uses. Untrusted input, root process.
 */
#include <stddef.h>
#include <stdint.h>

#include "daxfile-domxml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(DaxfileDomain) dom =
        daxfile_domain_parse((const char *)data, size, NULL);
    g_autoptr(GHashTable) paths = NULL;
    g_autofree char *out = NULL;
    guint i;

    if (!dom)
        return 0;
    paths = g_hash_table_new(NULL, NULL);
    for (i = 0; i < dom->nvdimms->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(dom->nvdimms, i);
        DaxfileNvdimm spec = *nv;
        g_autofree char *xml = daxfile_domain_nvdimm_xml(dom, nv->index);
        g_autofree char *dev = daxfile_nvdimm_format(nv, NULL);

        if (!spec.path)
            spec.path = (char *)"/x";
        daxfile_nvdimm_check(nv, NULL);
        daxfile_domain_check_attach(dom, &spec, NULL);
        g_hash_table_insert(paths, GUINT_TO_POINTER(nv->index),
                            (char *)"/fuzz/new path.img");
    }
    out = daxfile_domain_rewrite_paths(dom, paths, NULL);
    return 0;
}

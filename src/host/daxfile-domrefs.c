/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The files a domain XML names (daxfile_domain_file_refs(),
 * daxfile-domxml.h): every element and attribute that names a file, and
 * the paths in <qemu:commandline> and <qemu:override> values.
 */
#include <libxml/tree.h>
#include <string.h>

#include "daxfile-domxml-priv.h"
#include "daxfile-domxml.h"
#include "daxfile-util.h"

void
daxfile_file_ref_free(DaxfileFileRef *ref)
{
    if (!ref)
        return;
    g_free(ref->where);
    g_free(ref->path);
    g_free(ref);
}

#define QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

/* Attributes that name a file wherever they appear; "dev" only on
 * <source> (elsewhere it is a target name: <target dev='vda'>). */
static const char *const file_attrs[] = {
    "file", "path", "dir", "socket", "evdev", "template", "rendernode",
};

/* Elements whose text is a file: <os> boot files, <emulator>, memory
 * devices' <source><path>, host device <block>/<char>, ACPI <table>,
 * smartcard <database>, rng <backend>, blkiotune <path>. */
static const char *const file_texts[] = {
    "kernel", "initrd", "dtb",  "loader", "nvram",    "emulator",
    "path",   "block",  "char", "table",  "database", "backend",
};

static gboolean
in_list(const char *name, const char *const *list, gsize n)
{
    gsize i;

    for (i = 0; i < n; i++) {
        if (STREQ(name, list[i]))
            return TRUE;
    }
    return FALSE;
}

static void
add_ref(GPtrArray *refs, xmlNode *node, const char *path, gint nvdimm)
{
    DaxfileFileRef *ref;
    xmlChar *where;

    if (!path || !*path)
        return;
    ref = g_new0(DaxfileFileRef, 1);
    where = xmlGetNodePath(node);
    ref->where = g_strdup(where ? (const char *)where : "?");
    xmlFree(where);
    ref->path = g_strdup(path);
    ref->nvdimm = nvdimm;
    g_ptr_array_add(refs, ref);
}

/* "-drive file=/x,if=none" and the like: every token after '=' or ','
 * that is an absolute path */
static void
add_qemu_value(GPtrArray *refs, xmlAttr *attr, const char *value)
{
    g_auto(GStrv) parts = g_strsplit(value, ",", -1);
    guint i;

    for (i = 0; parts[i]; i++) {
        const char *eq = strchr(parts[i], '=');
        const char *v = eq ? eq + 1 : parts[i];

        if (v[0] == '/')
            add_ref(refs, (xmlNode *)attr, v, -1);
    }
}

static void
collect_refs(xmlNode *node, gint nvdimm, guint *n_nvdimm, GPtrArray *refs)
{
    const char *name = (const char *)node->name;
    gboolean qemu = node->ns && node->ns->href &&
                    STREQ((const char *)node->ns->href, QEMU_NS);
    xmlAttr *a;
    xmlNode *c;

    if (daxfile_xml_is_pmem(node))
        nvdimm = (gint)(*n_nvdimm)++;
    for (a = node->properties; a; a = a->next) {
        const char *an = (const char *)a->name;
        g_autofree char *v = daxfile_xml_attr(node, an);

        if (!v)
            continue;
        if (qemu && STREQ(an, "value"))
            add_qemu_value(refs, a, v);
        else if (in_list(an, file_attrs, G_N_ELEMENTS(file_attrs)) ||
                 (STREQ(an, "dev") && STREQ(name, "source")))
            add_ref(refs, (xmlNode *)a, v, -1);
    }
    if (!qemu && in_list(name, file_texts, G_N_ELEMENTS(file_texts))) {
        g_autofree char *text = daxfile_xml_text(node);
        gboolean own = nvdimm >= 0 && STREQ(name, "path") && node->parent &&
                       STREQ((const char *)node->parent->name, "source") &&
                       daxfile_xml_is_pmem(node->parent->parent);

        /* an rng <backend> names a device only as an absolute path */
        if (text && (STRNEQ(name, "backend") || g_strstrip(text)[0] == '/'))
            add_ref(refs, node, g_strstrip(text), own ? nvdimm : -1);
    }
    for (c = node->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE)
            collect_refs(c, nvdimm, n_nvdimm, refs);
    }
}

GPtrArray *
daxfile_domain_file_refs(const DaxfileDomain *dom)
{
    GPtrArray *refs =
        g_ptr_array_new_with_free_func((GDestroyNotify)daxfile_file_ref_free);
    xmlNode *root = dom->doc ? xmlDocGetRootElement(dom->doc) : NULL;
    guint n = 0;

    if (root)
        collect_refs(root, -1, &n, refs);
    return refs;
}

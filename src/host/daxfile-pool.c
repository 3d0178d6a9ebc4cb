/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <string.h>

#include "daxfile-domxml-priv.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-pool.h"
#include "daxfile-trust.h"
#include "daxfile-util.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(xmlDoc, xmlFreeDoc)

/* Pools whose volume NAME is TARGET/NAME: a file, or a device node */
static const char *const placed_types[] = {
    "dir", "fs", "netfs", "vstorage", "logical", "disk", "zfs", NULL,
};

/* Pools whose volumes QEMU reaches over the network: no file here */
static const char *const network_types[] = {
    "rbd", "gluster", "sheepdog", "iscsi-direct", NULL,
};

/* @name (NULL: none) is in the NULL-terminated @list */
/* A single path component, nothing that could lead out of a directory */
static gboolean
plain_name(const char *name)
{
    return name && *name && !strchr(name, '/') && STRNEQ(name, ".") &&
           STRNEQ(name, "..");
}

/* The <pool> of the state file @file (@text, @len bytes): libvirt writes
 * <poolstate><pool>; a plain <pool> is read too */
static xmlDoc *
pool_state_parse(const char *text, gsize len, const char *file,
                 xmlNode **ret_pool, GError **error)
{
    g_autoptr(xmlDoc) doc = NULL;
    xmlNode *root = NULL;

    if (len <= G_MAXINT)
        doc = xmlReadMemory(text, (int)len, NULL, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR |
                                XML_PARSE_NOWARNING);
    if (doc && !doc->intSubset && !doc->extSubset)
        root = xmlDocGetRootElement(doc);
    if (root && STREQ((const char *)root->name, "poolstate"))
        root = daxfile_xml_child(root, "pool");
    if (!root || STRNEQ((const char *)root->name, "pool")) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is not the state of a libvirt storage pool", file);
        return NULL;
    }
    *ret_pool = root;
    return g_steal_pointer(&doc);
}

gboolean
daxfile_pool_volume_path(const char *state_dir, const char *pool,
                         const char *volume, char **ret_path, GError **error)
{
    g_autofree char *shown_pool = daxfile_escape(pool ? pool : "");
    g_autofree char *shown_vol = daxfile_escape(volume ? volume : "");
    g_autofree char *base = NULL;
    g_autofree char *file = NULL;
    g_autofree char *shown = NULL;
    g_autofree char *text = NULL;
    g_autofree char *type = NULL;
    g_autofree char *target = NULL;
    g_autoptr(xmlDoc) doc = NULL;
    xmlNode *node = NULL;
    gsize len = 0;

    *ret_path = NULL;
    if (!plain_name(pool) || !plain_name(volume)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "volume '%s' of storage pool '%s' is not a name libvirt gives a volume",
            shown_vol, shown_pool);
        return FALSE;
    }
    base = g_strconcat(pool, ".xml", NULL);
    file = g_build_filename(state_dir, base, NULL);
    shown = daxfile_escape(file);
    if (!daxfile_trusted_read(file, &text, &len, error))
        return FALSE;
    if (!text) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
            "storage pool '%s' has no state '%s' (it is not active, or libvirt keeps its state elsewhere), so the hook cannot place its volume '%s'",
            shown_pool, shown, shown_vol);
        return FALSE;
    }
    doc = pool_state_parse(text, len, shown, &node, error);
    if (!doc)
        return FALSE;
    type = daxfile_xml_attr(node, "type");
    target = daxfile_xml_text(
        daxfile_xml_child(daxfile_xml_child(node, "target"), "path"));
    if (daxfile_str_in_list(type, network_types))
        return TRUE;
    if (!daxfile_str_in_list(type, placed_types) || !target ||
        !g_path_is_absolute(g_strstrip(target))) {
        g_autofree char *shown_type = daxfile_escape(type ? type : "");

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "the hook cannot tell which file or device volume '%s' of storage pool '%s' (type '%s', state '%s') is",
            shown_vol, shown_pool, shown_type, shown);
        return FALSE;
    }
    *ret_path = g_build_filename(target, volume, NULL);
    return TRUE;
}

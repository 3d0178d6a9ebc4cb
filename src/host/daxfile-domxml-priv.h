/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-domxml-priv.h: the libxml2 helpers of daxfile-domxml.c that
 * daxfile-domrefs.c (the files a domain names) shares; not for other
 * modules
 */
#pragma once

#include <glib.h>
#include <libxml/tree.h>

G_BEGIN_DECLS

/* The first element child of @node named @name, or NULL */
xmlNode *daxfile_xml_child(xmlNode *node, const char *name);

/* The text of @node, or its attribute @name (NULL: no node, no such
 * attribute) */
char *daxfile_xml_text(xmlNode *node);
char *daxfile_xml_attr(xmlNode *node, const char *name);

/* A pmem device: <memory model='nvdimm'> or <memory model='virtio-pmem'>
 * right under <devices> */
gboolean daxfile_xml_is_pmem(xmlNode *node);

G_END_DECLS

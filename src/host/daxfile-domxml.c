/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <string.h>
#include <sys/stat.h>

#include "daxfile-align.h"
#include "daxfile-domxml-priv.h"
#include "daxfile-domxml.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-identity.h"
#include "daxfile-size.h"
#include "daxfile-util.h"

#define PARSE_OPTIONS                                                          \
    (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)

G_DEFINE_AUTOPTR_CLEANUP_FUNC(xmlXPathContext, xmlXPathFreeContext)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(xmlXPathObject, xmlXPathFreeObject)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(xmlDoc, xmlFreeDoc)

void
daxfile_domain_free(DaxfileDomain *dom)
{
    if (!dom)
        return;
    g_free(dom->name);
    g_free(dom->uuid);
    g_ptr_array_unref(dom->nvdimms);
    if (dom->doc)
        xmlFreeDoc(dom->doc);
    g_free(dom);
}

static const struct {
    const char *unit;
    guint64 scale;
} scales[] = {
    {"b", 1},
    {"byte", 1},
    {"bytes", 1},
    {"KB", 1000ULL},
    {"k", 1ULL << 10},
    {"KiB", 1ULL << 10},
    {"MB", 1000000ULL},
    {"M", 1ULL << 20},
    {"MiB", 1ULL << 20},
    {"GB", 1000000000ULL},
    {"G", 1ULL << 30},
    {"GiB", 1ULL << 30},
    {"TB", 1000000000000ULL},
    {"T", 1ULL << 40},
    {"TiB", 1ULL << 40},
    {"PB", 1000000000000000ULL},
    {"P", 1ULL << 50},
    {"PiB", 1ULL << 50},
};

gboolean
daxfile_scale_parse(const char *value, const char *unit, guint64 default_scale,
                    guint64 *ret, GError **error)
{
    g_autofree char *num = NULL;
    guint64 scale = 0, n = 0;
    size_t i;

    if (!unit || !*unit)
        scale = default_scale;
    /* libvirt: units are case-insensitive except that "KB" (1000) differs
     * from "k"/"KiB" (1024) only by the trailing "B" */
    for (i = 0; !scale && i < G_N_ELEMENTS(scales); i++) {
        if (g_ascii_strcasecmp(unit, scales[i].unit) == 0)
            scale = scales[i].scale;
    }
    if (!scale) {
        g_autofree char *shown = daxfile_escape(unit);

        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Unknown unit '%s'", shown);
        return FALSE;
    }
    num = g_strstrip(g_strdup(value ? value : ""));
    if (!g_ascii_string_to_unsigned(num, 10, 0, G_MAXUINT64 / scale, &n,
                                    NULL)) {
        g_autofree char *shown = daxfile_escape(num);

        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Invalid number '%s'", shown);
        return FALSE;
    }
    *ret = n * scale;
    return TRUE;
}

xmlNode *
daxfile_xml_child(xmlNode *node, const char *name)
{
    xmlNode *c;

    for (c = node ? node->children : NULL; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE && STREQ((const char *)c->name, name))
            return c;
    }
    return NULL;
}

char *
daxfile_xml_text(xmlNode *node)
{
    xmlChar *t;
    char *out;

    if (!node)
        return NULL;
    t = xmlNodeGetContent(node);
    out = g_strdup((const char *)t);
    xmlFree(t);
    return out;
}

char *
daxfile_xml_attr(xmlNode *node, const char *name)
{
    xmlChar *v = node ? xmlGetProp(node, (const xmlChar *)name) : NULL;
    char *out = g_strdup((const char *)v);

    xmlFree(v);
    return out;
}

/* A scaled size element (<size unit='KiB'>N</size>); 0 when absent */
static gboolean
size_of(xmlNode *node, const char *what, guint64 *ret, GError **error)
{
    g_autofree char *text = daxfile_xml_text(node);
    g_autofree char *unit = daxfile_xml_attr(node, "unit");
    g_autoptr(GError) local = NULL;

    *ret = 0;
    if (!node)
        return TRUE;
    if (daxfile_scale_parse(text, unit, 1024, ret, &local))
        return TRUE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "Invalid %s in the domain XML: %s", what, local->message);
    return FALSE;
}

gboolean
daxfile_xml_is_pmem(xmlNode *node)
{
    g_autofree char *model = NULL;
    DaxfileDeviceModel kind;

    if (!node || node->type != XML_ELEMENT_NODE ||
        STRNEQ((const char *)node->name, "memory") || !node->parent ||
        STRNEQ((const char *)node->parent->name, "devices"))
        return FALSE;
    model = daxfile_xml_attr(node, "model");
    return daxfile_device_model_from_string(model, &kind);
}

static DaxfileNvdimm *
nvdimm_parse(xmlNode *mem, DaxfileDeviceModel model, guint index,
             GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(DaxfileNvdimm) nv = g_new0(DaxfileNvdimm, 1);
    xmlNode *source = daxfile_xml_child(mem, "source");
    xmlNode *target = daxfile_xml_child(mem, "target");
    g_autofree char *node = daxfile_xml_text(daxfile_xml_child(target, "node"));
    guint64 n = 0;

    nv->index = index;
    nv->model = model;
    nv->access = daxfile_xml_attr(mem, "access");
    nv->alias = daxfile_xml_attr(daxfile_xml_child(mem, "alias"), "name");
    nv->path = daxfile_xml_text(daxfile_xml_child(source, "path"));
    nv->pmem = daxfile_xml_child(source, "pmem") != NULL;
    nv->readonly = daxfile_xml_child(target, "readonly") != NULL;
    nv->node = -1;
    if (node &&
        g_ascii_string_to_unsigned(g_strstrip(node), 10, 0, 1024, &n, NULL))
        nv->node = (gint)n;
    if (!size_of(daxfile_xml_child(source, "alignsize"), "nvdimm alignsize",
                 &nv->alignsize, error) ||
        !size_of(daxfile_xml_child(target, "size"), "nvdimm size", &nv->size,
                 error) ||
        !size_of(daxfile_xml_child(daxfile_xml_child(target, "label"), "size"),
                 "nvdimm label size", &nv->label_size, error))
        return NULL;
    return g_steal_pointer(&nv);
}

static gboolean
parse_devices(DaxfileDomain *dom, xmlNode *devices, GError **error)
{
    xmlNode *c;
    guint index = 0;

    for (c = devices ? devices->children : NULL; c; c = c->next) {
        g_autofree char *model = NULL;
        DaxfileDeviceModel kind;
        guint64 size = 0;

        if (c->type != XML_ELEMENT_NODE ||
            STRNEQ((const char *)c->name, "memory"))
            continue;
        if (!size_of(daxfile_xml_child(daxfile_xml_child(c, "target"), "size"),
                     "memory device size", &size, error))
            return FALSE;
        dom->devices_memory += size;
        dom->memory_devices++;
        model = daxfile_xml_attr(c, "model");
        if (daxfile_device_model_from_string(model, &kind)) {
            DaxfileNvdimm *nv = nvdimm_parse(c, kind, index++, error);

            if (!nv)
                return FALSE;
            g_ptr_array_add(dom->nvdimms, nv);
        }
    }
    return TRUE;
}

static guint
count_cells(xmlNode *root)
{
    xmlNode *numa = daxfile_xml_child(daxfile_xml_child(root, "cpu"), "numa");
    xmlNode *c;
    guint n = 0;

    for (c = numa ? numa->children : NULL; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE && STREQ((const char *)c->name, "cell"))
            n++;
    }
    return n;
}

static gboolean
parse_domain(DaxfileDomain *dom, xmlNode *root, GError **error)
{
    xmlNode *maxmem = daxfile_xml_child(root, "maxMemory");
    g_autofree char *slots = daxfile_xml_attr(maxmem, "slots");
    guint64 n = 0;

    dom->name = daxfile_xml_text(daxfile_xml_child(root, "name"));
    dom->uuid = daxfile_xml_text(daxfile_xml_child(root, "uuid"));
    if (!dom->name || !*dom->name) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "The domain XML has no <name>");
        return FALSE;
    }
    if (!size_of(daxfile_xml_child(root, "memory"), "memory", &dom->memory,
                 error) ||
        !size_of(maxmem, "maxMemory", &dom->max_memory, error))
        return FALSE;
    if (slots && g_ascii_string_to_unsigned(slots, 10, 0, 4096, &n, NULL))
        dom->max_slots = (guint)n;
    dom->numa_cells = count_cells(root);
    dom->acpi =
        daxfile_xml_child(daxfile_xml_child(root, "features"), "acpi") != NULL;
    return parse_devices(dom, daxfile_xml_child(root, "devices"), error);
}

/* Any DTD stops the parser where it starts, in whatever encoding the
 * document is: entities (bombs, external ones) need a DTD, and domain XML
 * never has one. */
static void
refuse_dtd(void *ctx, const xmlChar *name, const xmlChar *external_id,
           const xmlChar *system_id)
{
    xmlParserCtxtPtr ctxt = ctx;

    ctxt->_private = GINT_TO_POINTER(1);
    xmlStopParser(ctxt);
}

static xmlDoc *
read_xml(const char *xml, gsize len, GError **error)
{
    xmlParserCtxtPtr ctxt = NULL;
    xmlDoc *doc = NULL;
    gboolean dtd;
    xmlErrorPtr err;

    if (len == 0 || !xml) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "The domain XML is empty");
        return NULL;
    }
    if (len > DAXFILE_DOMXML_MAX || len > G_MAXINT) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "The domain XML is larger than %" G_GUINT64_FORMAT " MiB",
                    DAXFILE_DOMXML_MAX >> 20);
        return NULL;
    }
    xmlResetLastError();
    ctxt = xmlCreateMemoryParserCtxt(xml, (int)len);
    if (ctxt) {
        ctxt->sax->internalSubset = refuse_dtd;
        ctxt->sax->externalSubset = refuse_dtd;
        xmlCtxtUseOptions(ctxt, PARSE_OPTIONS);
        xmlParseDocument(ctxt);
        doc = ctxt->myDoc;
        ctxt->myDoc = NULL;
    }
    dtd =
        ctxt && (ctxt->_private || (doc && (doc->intSubset || doc->extSubset)));
    if (doc && (dtd || !ctxt->wellFormed)) {
        xmlFreeDoc(doc);
        doc = NULL;
    }
    err = ctxt ? xmlCtxtGetLastError(ctxt) : xmlGetLastError();
    if (dtd)
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "The domain XML has a DOCTYPE; entity declarations are not accepted");
    else if (!doc)
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "Cannot parse the domain XML: %s",
                    err && err->message ? g_strchomp(err->message)
                                        : "malformed");
    if (ctxt)
        xmlFreeParserCtxt(ctxt);
    return doc;
}

DaxfileDomain *
daxfile_domain_parse(const char *xml, gsize len, GError **error)
{
    g_autoptr(DaxfileDomain) dom = g_new0(DaxfileDomain, 1);
    xmlDoc *doc = read_xml(xml, len, error);
    xmlNode *root;

    dom->nvdimms =
        g_ptr_array_new_with_free_func((GDestroyNotify)daxfile_nvdimm_free);
    if (!doc)
        return NULL;
    dom->doc = doc;
    root = xmlDocGetRootElement(doc);
    if (!root || STRNEQ((const char *)root->name, "domain")) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "The XML is not a libvirt domain (root element is not <domain>)");
        return NULL;
    }
    if (!parse_domain(dom, root, error))
        return NULL;
    return g_steal_pointer(&dom);
}

static char *
doc_to_string(xmlDoc *doc)
{
    xmlChar *buf = NULL;
    int len = 0;
    char *out;

    xmlDocDumpFormatMemory(doc, &buf, &len, 0);
    out = g_strndup((const char *)buf, len);
    xmlFree(buf);
    return out;
}

char *
daxfile_domain_rewrite_paths(DaxfileDomain *dom, GHashTable *paths,
                             GError **error)
{
    xmlNode *devices =
        daxfile_xml_child(xmlDocGetRootElement(dom->doc), "devices");
    xmlNode *c;
    guint index = 0;

    for (c = devices ? devices->children : NULL; c; c = c->next) {
        const char *to;

        if (!daxfile_xml_is_pmem(c))
            continue;
        to = g_hash_table_lookup(paths, GUINT_TO_POINTER(index++));
        if (!to)
            continue;
        if (!g_utf8_validate(to, -1, NULL)) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        "Cannot put a path that is not UTF-8 in domain XML");
            return NULL;
        }
        xmlNodeSetContent(
            daxfile_xml_child(daxfile_xml_child(c, "source"), "path"), NULL);
        xmlNodeAddContent(
            daxfile_xml_child(daxfile_xml_child(c, "source"), "path"),
            (const xmlChar *)to);
    }
    return doc_to_string(dom->doc);
}

static void
add_size(xmlNode *parent, const char *name, guint64 bytes)
{
    g_autofree char *kib = g_strdup_printf("%" G_GUINT64_FORMAT, bytes >> 10);
    xmlNode *n = xmlNewTextChild(parent, NULL, (const xmlChar *)name,
                                 (const xmlChar *)kib);

    xmlNewProp(n, (const xmlChar *)"unit", (const xmlChar *)"KiB");
}

/* <source> and <target> of an nvdimm (a virtio-pmem device has only
 * <path> and <size>: libvirt keeps nothing else of it) */
static void
format_nvdimm(const DaxfileNvdimm *nv, xmlNode *source, xmlNode *target)
{
    g_autofree char *node = g_strdup_printf("%d", nv->node);

    if (nv->alignsize)
        add_size(source, "alignsize", nv->alignsize);
    if (nv->pmem)
        xmlNewChild(source, NULL, (const xmlChar *)"pmem", NULL);
    if (nv->node >= 0)
        xmlNewTextChild(target, NULL, (const xmlChar *)"node",
                        (const xmlChar *)node);
    if (nv->label_size)
        add_size(xmlNewChild(target, NULL, (const xmlChar *)"label", NULL),
                 "size", nv->label_size);
    if (nv->readonly)
        xmlNewChild(target, NULL, (const xmlChar *)"readonly", NULL);
}

char *
daxfile_nvdimm_format(const DaxfileNvdimm *nv, GError **error)
{
    g_autoptr(xmlDoc) doc = xmlNewDoc((const xmlChar *)"1.0");
    xmlNode *mem = xmlNewNode(NULL, (const xmlChar *)"memory");
    xmlNode *source, *target;
    xmlBuffer *buf;
    char *out;

    xmlDocSetRootElement(doc, mem);
    if (nv->path && !g_utf8_validate(nv->path, -1, NULL)) {
        g_autofree char *name = daxfile_escape(nv->path);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' is not valid UTF-8 and cannot be written into domain XML; fix: rename the file",
            name);
        return NULL;
    }
    xmlNewProp(mem, (const xmlChar *)"model",
               (const xmlChar *)daxfile_device_model_to_string(nv->model));
    if (nv->access)
        xmlNewProp(mem, (const xmlChar *)"access", (const xmlChar *)nv->access);
    source = xmlNewChild(mem, NULL, (const xmlChar *)"source", NULL);
    if (nv->path)
        xmlNewTextChild(source, NULL, (const xmlChar *)"path",
                        (const xmlChar *)nv->path);
    target = xmlNewChild(mem, NULL, (const xmlChar *)"target", NULL);
    if (nv->size)
        add_size(target, "size", nv->size);
    if (nv->model == DAXFILE_DEVICE_NVDIMM)
        format_nvdimm(nv, source, target);
    if (nv->alias)
        xmlNewProp(xmlNewChild(mem, NULL, (const xmlChar *)"alias", NULL),
                   (const xmlChar *)"name", (const xmlChar *)nv->alias);
    buf = xmlBufferCreate();
    xmlNodeDump(buf, doc, mem, 0, 1);
    out = g_strconcat((const char *)xmlBufferContent(buf), "\n", NULL);
    xmlBufferFree(buf);
    return out;
}

gint
daxfile_domain_find_nvdimm(const DaxfileDomain *dom, const char *path)
{
    struct stat want = {0};
    gboolean known = stat(path, &want) == 0;
    guint i;

    for (i = 0; i < dom->nvdimms->len; i++) {
        const DaxfileNvdimm *nv = g_ptr_array_index(dom->nvdimms, i);
        struct stat st;

        if (!nv->path)
            continue;
        /* the same file by any spelling: two NVDIMMs over one storage */
        if (STREQ(nv->path, path) ||
            (known && stat(nv->path, &st) == 0 && st.st_dev == want.st_dev &&
             st.st_ino == want.st_ino))
            return (gint)nv->index;
    }
    return -1;
}

char *
daxfile_domain_nvdimm_xml(DaxfileDomain *dom, guint index)
{
    xmlNode *devices =
        daxfile_xml_child(xmlDocGetRootElement(dom->doc), "devices");
    xmlNode *c;
    guint i = 0;

    for (c = devices ? devices->children : NULL; c; c = c->next) {
        xmlBuffer *buf;
        char *out;

        if (!daxfile_xml_is_pmem(c) || i++ != index)
            continue;
        buf = xmlBufferCreate();
        xmlNodeDump(buf, dom->doc, c, 0, 1);
        out = g_strdup((const char *)xmlBufferContent(buf));
        xmlBufferFree(buf);
        return out;
    }
    return NULL;
}

static gboolean
check_memory_room(const DaxfileDomain *dom, const DaxfileNvdimm *nv,
                  const char *name, GError **error)
{
    guint64 need = dom->memory + dom->devices_memory + nv->size;
    g_autofree char *max = daxfile_size_format(dom->max_memory);
    g_autofree char *want = daxfile_size_format(nv->size);

    if (dom->memory_devices >= dom->max_slots) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Domain '%s' uses all %u memory slots; fix: raise <maxMemory slots='%u'>",
            name, dom->max_slots, dom->max_slots + 1);
        return FALSE;
    }
    if (need > dom->max_memory) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Domain '%s' has no room for %s more under <maxMemory> (%s); fix: <maxMemory slots='%u' unit='KiB'>%" G_GUINT64_FORMAT
            "</maxMemory>",
            name, want, max, dom->max_slots, need >> 10);
        return FALSE;
    }
    return TRUE;
}

/* Another element of @dom (a disk, a chardev log, a qemu:arg, ...) that
 * names the file at @path, however spelt; an error naming it */
static gboolean
check_not_named(const DaxfileDomain *dom, const char *path, const char *name,
                GError **error)
{
    g_autoptr(GPtrArray) refs = daxfile_domain_file_refs(dom);
    g_autoptr(GArray) want = g_array_new(FALSE, FALSE, sizeof(DaxfileIdentity));
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(DaxfileIdentity));
    guint i;

    if (!daxfile_path_identities(path, want, error))
        return FALSE;
    for (i = 0; want->len > 0 && i < refs->len; i++) {
        const DaxfileFileRef *ref = g_ptr_array_index(refs, i);
        const DaxfileIdentity *w = &g_array_index(want, DaxfileIdentity, 0);
        g_autofree char *file = NULL;
        g_autofree char *where = NULL;
        g_autofree char *as = NULL;

        g_array_set_size(ids, 0);
        if (!daxfile_path_identities(ref->path, ids, error))
            return FALSE;
        if (!daxfile_identities_have(ids, w->dev, w->ino))
            continue;
        file = daxfile_escape(path);
        where = daxfile_escape(ref->where);
        as = daxfile_escape(ref->path);
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_EXISTS,
            "'%s' is already used by domain '%s' (%s '%s'), and QEMU would open it there outside the nvdimm's backend, past static mode; fix: remove that reference, or give the nvdimm a file of its own",
            file, name, where, as);
        return FALSE;
    }
    return TRUE;
}

gboolean
daxfile_domain_check_attach(const DaxfileDomain *dom, const DaxfileNvdimm *nv,
                            GError **error)
{
    g_autofree char *name = daxfile_escape(dom->name);
    g_autofree char *path = daxfile_escape(nv->path);
    guint64 suggest = (dom->memory + nv->size) * 2;
    gint index;

    if (!dom->max_memory || !dom->max_slots) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Domain '%s' has no <maxMemory slots=...>, so it cannot take memory devices; fix: add <maxMemory slots='4' unit='KiB'>%" G_GUINT64_FORMAT
            "</maxMemory> (virsh edit)",
            name, suggest >> 10);
        return FALSE;
    }
    if (dom->numa_cells == 0) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Domain '%s' has no NUMA cell; fix: add <cpu><numa><cell id='0' cpus='0' memory='%" G_GUINT64_FORMAT
            "' unit='KiB'/></numa></cpu>",
            name, dom->memory >> 10);
        return FALSE;
    }
    if (nv->node < 0 || (guint)nv->node >= dom->numa_cells) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Domain '%s' has %u NUMA cell(s), so there is no node %d; fix: --node 0",
            name, dom->numa_cells, nv->node);
        return FALSE;
    }
    if (!dom->acpi && nv->model == DAXFILE_DEVICE_NVDIMM) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Domain '%s' has no <features><acpi/>, and QEMU refuses memory devices without ACPI; fix: add <acpi/> to <features>",
            name);
        return FALSE;
    }
    index = daxfile_domain_find_nvdimm(dom, nv->path);
    if (index >= 0) {
        const DaxfileNvdimm *had = g_ptr_array_index(dom->nvdimms, index);
        g_autofree char *as = daxfile_escape(had->path);

        if (STREQ(had->path, nv->path))
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_EXISTS,
                        "'%s' is already attached to domain '%s'", path, name);
        else
            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_EXISTS,
                "'%s' is already attached to domain '%s' as '%s', and the guest would see two NVDIMMs over one storage",
                path, name, as);
        return FALSE;
    }
    return check_not_named(dom, nv->path, name, error) &&
           check_memory_room(dom, nv, name, error);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The files a domain XML names (daxfile_domain_file_refs(),
 * daxfile-domxml.h): every element and attribute that names a file, and
 * the files in <qemu:commandline> arguments, in QEMU's option syntax
 * (key=value,... with ',,' for a comma) and in its JSON syntax, relative
 * ones included (QEMU under libvirt runs in '/', and so are they read).
 */
#include <json-glib/json-glib.h>
#include <libxml/tree.h>
#include <string.h>

#include "daxfile-domxml-priv.h"
#include "daxfile-domxml.h"
#include "daxfile-util.h"

#define QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

void
daxfile_file_ref_free(DaxfileFileRef *ref)
{
    if (!ref)
        return;
    g_free(ref->where);
    g_free(ref->path);
    g_free(ref);
}

/* Attributes that name a file wherever they appear; "dev" only on
 * <source> (elsewhere it is a target name: <target dev='vda'>). */
static const char *const file_attrs[] = {
    "file", "path", "dir", "socket", "evdev", "template", "rendernode", NULL,
};

/* Elements whose text is a file: <os> boot files, <emulator>, memory
 * devices' <source><path>, host device <block>/<char>, ACPI <table>,
 * smartcard <database>, rng <backend>, blkiotune <path>. */
static const char *const file_texts[] = {
    "kernel", "initrd", "dtb",   "loader",   "nvram",   "emulator", "path",
    "block",  "char",   "table", "database", "backend", NULL,
};

/* QEMU options whose argument is a file */
static const char *const qemu_file_options[] = {
    "-kernel", "-initrd",   "-dtb",      "-bios",       "-hda", "-hdb",
    "-hdc",    "-hdd",      "-cdrom",    "-fda",        "-fdb", "-sd",
    "-pflash", "-mtdblock", "-mem-path", "-readconfig", NULL,
};

/* Keys that name a file, in QEMU's option syntax and in its JSON (the
 * last component of a dotted key: "file.filename"); "file" of -blockdev
 * is a child node's name, not a file */
static const char *const qemu_file_keys[] = {
    "file", "filename", "mem-path", "path", "logfile", "romfile", NULL,
};

/* @name (NULL: none) is in the NULL-terminated @list */
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

/* What one <qemu:arg> is read with: the option it belongs to */
typedef struct {
    GPtrArray *refs;
    xmlNode *where;     /* the value attribute */
    const char *option; /* "-blockdev", ...; NULL before the first */
} QemuArg;

/* Whether @key (maybe dotted) of an option's value names a file */
static gboolean
qemu_file_key(const QemuArg *q, const char *key)
{
    const char *last = strrchr(key, '.');

    last = last ? last + 1 : key;
    if (STREQ(last, "file") && q->option && STREQ(q->option, "-blockdev"))
        return FALSE;
    return daxfile_str_in_list(last, qemu_file_keys);
}

static void qemu_json(const QemuArg *q, const char *key, JsonNode *node);

/* A JSON object's members, an array's elements: every string that a
 * file key holds, and every absolute path */
static void
qemu_json_object(const QemuArg *q, JsonObject *obj)
{
    g_autoptr(GList) members = json_object_get_members(obj);
    GList *m;

    for (m = members; m; m = m->next)
        qemu_json(q, m->data, json_object_get_member(obj, m->data));
}

static void
qemu_json(const QemuArg *q, const char *key, JsonNode *node)
{
    JsonArray *array;
    const char *s;
    guint i;

    switch (json_node_get_node_type(node)) {
    case JSON_NODE_OBJECT:
        qemu_json_object(q, json_node_get_object(node));
        break;
    case JSON_NODE_ARRAY:
        array = json_node_get_array(node);
        for (i = 0; i < json_array_get_length(array); i++)
            qemu_json(q, NULL, json_array_get_element(array, i));
        break;
    case JSON_NODE_VALUE:
        s = json_node_get_value_type(node) == G_TYPE_STRING
                ? json_node_get_string(node)
                : NULL;
        if (s && (s[0] == '/' || (key && qemu_file_key(q, key))))
            add_ref(q->refs, q->where, s, -1);
        break;
    default:
        break;
    }
}

/* @text as JSON: TRUE when it is (its files added) */
static gboolean
qemu_json_text(const QemuArg *q, const char *text)
{
    g_autoptr(JsonParser) parser = json_parser_new();

    if (!json_parser_load_from_data(parser, text, -1, NULL) ||
        !json_parser_get_root(parser))
        return FALSE;
    qemu_json(q, NULL, json_parser_get_root(parser));
    return TRUE;
}

/* QEMU's option syntax: "key=value,key=value" where ",," is a comma */
static GPtrArray *
qemu_opts_split(const char *value)
{
    GPtrArray *parts = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GString) cur = g_string_new(NULL);
    const char *p;

    for (p = value; *p; p++) {
        if (p[0] == ',' && p[1] == ',') {
            g_string_append_c(cur, ',');
            p++;
        } else if (*p == ',') {
            g_ptr_array_add(parts, g_strdup(cur->str));
            g_string_truncate(cur, 0);
        } else {
            g_string_append_c(cur, *p);
        }
    }
    g_ptr_array_add(parts, g_strdup(cur->str));
    return parts;
}

/* One value in QEMU's option syntax: the values of file keys (a
 * "json:{...}" one read as JSON), and every absolute path */
static void
qemu_opts(const QemuArg *q, const char *value)
{
    g_autoptr(GPtrArray) parts = qemu_opts_split(value);
    guint i;

    for (i = 0; i < parts->len; i++) {
        const char *part = g_ptr_array_index(parts, i);
        const char *eq = strchr(part, '=');
        g_autofree char *key = eq ? g_strndup(part, eq - part) : NULL;
        const char *v = eq ? eq + 1 : part;

        if (g_str_has_prefix(v, "json:") &&
            qemu_json_text(q, v + strlen("json:")))
            continue;
        if (v[0] == '/' || (key && qemu_file_key(q, key)))
            add_ref(q->refs, q->where, v, -1);
    }
}

/* An option of QEMU's command line ("-object", "--object"), as "-NAME",
 * or NULL when @arg is a value */
static const char *
qemu_option(const char *arg)
{
    if (arg[0] != '-' || strchr(arg, '=') || g_ascii_isdigit(arg[1]))
        return NULL;
    return arg[1] == '-' ? arg + 1 : arg;
}

/* The arguments of <qemu:commandline>, in order: an option, then its
 * value, in QEMU's option syntax or JSON, or a file */
static void
qemu_commandline(GPtrArray *refs, xmlNode *cmdline)
{
    g_autofree char *option = NULL;
    gboolean file_next = FALSE;
    xmlNode *c;

    for (c = cmdline->children; c; c = c->next) {
        g_autofree char *value = NULL;
        QemuArg q = {refs, NULL, option};
        const char *opt;

        if (c->type != XML_ELEMENT_NODE || STRNEQ((const char *)c->name, "arg"))
            continue;
        value = daxfile_xml_attr(c, "value");
        q.where = (xmlNode *)xmlHasProp(c, (const xmlChar *)"value");
        if (!value || !q.where)
            continue;
        if (file_next) {
            add_ref(refs, q.where, value, -1);
            file_next = FALSE;
        } else if ((opt = qemu_option(value))) {
            g_free(option);
            option = g_strdup(opt);
            file_next = daxfile_str_in_list(opt, qemu_file_options);
        } else if (value[0] != '{' || !qemu_json_text(&q, value)) {
            qemu_opts(&q, value);
        }
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

    if (qemu && STREQ(name, "commandline")) {
        qemu_commandline(refs, node);
        return;
    }
    if (daxfile_xml_is_pmem(node))
        nvdimm = (gint)(*n_nvdimm)++;
    for (a = node->properties; a; a = a->next) {
        const char *an = (const char *)a->name;
        g_autofree char *v = daxfile_xml_attr(node, an);
        QemuArg q = {refs, (xmlNode *)a, NULL};

        if (!v)
            continue;
        if (qemu && STREQ(an, "value"))
            qemu_opts(&q, v);
        else if (daxfile_str_in_list(an, file_attrs) ||
                 (STREQ(an, "dev") && STREQ(name, "source")))
            add_ref(refs, (xmlNode *)a, v, -1);
    }
    if (!qemu && daxfile_str_in_list(name, file_texts)) {
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

void
daxfile_volume_ref_free(DaxfileVolumeRef *ref)
{
    if (!ref)
        return;
    g_free(ref->where);
    g_free(ref->pool);
    g_free(ref->volume);
    g_free(ref);
}

static void
collect_volumes(xmlNode *node, GPtrArray *refs)
{
    g_autofree char *pool = daxfile_xml_attr(node, "pool");
    g_autofree char *volume = daxfile_xml_attr(node, "volume");
    xmlNode *c;

    if (STREQ((const char *)node->name, "source") && pool && volume) {
        DaxfileVolumeRef *ref = g_new0(DaxfileVolumeRef, 1);
        xmlChar *where = xmlGetNodePath(node);

        ref->where = g_strdup(where ? (const char *)where : "?");
        xmlFree(where);
        ref->pool = g_steal_pointer(&pool);
        ref->volume = g_steal_pointer(&volume);
        g_ptr_array_add(refs, ref);
    }
    for (c = node->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE)
            collect_volumes(c, refs);
    }
}

GPtrArray *
daxfile_domain_volume_refs(const DaxfileDomain *dom)
{
    GPtrArray *refs =
        g_ptr_array_new_with_free_func((GDestroyNotify)daxfile_volume_ref_free);
    xmlNode *root = dom->doc ? xmlDocGetRootElement(dom->doc) : NULL;

    if (root)
        collect_volumes(root, refs);
    return refs;
}

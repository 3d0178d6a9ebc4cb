/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-registry-format.c: the registry's on-disk format, a JSON object
 * {"version": 2, "entries": [...]}
 *
 * Version 2 added each entry's "fs_uuid"; a reservation may carry
 * "unguarded" (a hot-plugged device that could not be made static, and
 * why), which an older reader takes for a plain reservation. A version 1
 * registry is read as it is (its entries have no fs_uuid: repair identifies
 * their filesystem by f_fsid as before, and trusts that less) and is written
 * back as version 2 by the next change; a newer version is refused.
 */
#include <string.h>

#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-json.h"
#include "daxfile-registry-format.h"

#define REGISTRY_VERSION 2

static const char *
member_string(JsonObject *obj, const char *key)
{
    JsonNode *node = json_object_get_member(obj, key);

    if (!node || JSON_NODE_TYPE(node) != JSON_NODE_VALUE ||
        json_node_get_value_type(node) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(node);
}

static DaxfileEntry *
entry_from_json(JsonObject *obj)
{
    g_autoptr(DaxfileEntry) e = g_new0(DaxfileEntry, 1);

    if (!member_string(obj, "path") ||
        !daxfile_entry_state_from_string(member_string(obj, "state"),
                                         &e->state) ||
        !daxfile_mechanism_from_string(member_string(obj, "mechanism"),
                                       &e->mechanism))
        return NULL;
    if (member_string(obj, "path_b64")) {
        gsize len = 0;
        guchar *raw = g_base64_decode(member_string(obj, "path_b64"), &len);

        e->path = g_strndup((const char *)raw, len);
        g_free(raw);
    } else {
        e->path = g_strdup(member_string(obj, "path"));
    }
    e->dev = (guint64)json_object_get_int_member_with_default(obj, "dev", 0);
    e->ino = (guint64)json_object_get_int_member_with_default(obj, "ino", 0);
    e->owner = g_strdup(member_string(obj, "owner"));
    e->owner_uuid = g_strdup(member_string(obj, "owner_uuid"));
    e->device = g_strdup(member_string(obj, "device"));
    e->pid = json_object_get_int_member_with_default(obj, "pid", 0);
    e->align =
        (guint64)json_object_get_int_member_with_default(obj, "align", 0);
    e->fingerprint = g_strdup(member_string(obj, "fingerprint"));
    e->since = g_strdup(member_string(obj, "since"));
    e->boot_id = g_strdup(member_string(obj, "boot_id"));
    e->flag_set =
        json_object_get_boolean_member_with_default(obj, "flag_set", FALSE);
    e->handle = g_strdup(member_string(obj, "handle"));
    e->fsid = g_strdup(member_string(obj, "fsid"));
    e->fs_uuid = g_strdup(member_string(obj, "fs_uuid"));
    e->holder_pid =
        json_object_get_int_member_with_default(obj, "holder_pid", 0);
    e->holder_start = (guint64)json_object_get_int_member_with_default(
        obj, "holder_start", 0);
    e->unguarded = g_strdup(member_string(obj, "unguarded"));
    return g_steal_pointer(&e);
}

/* A version this daxfile reads: 1 (or none: the first registries) or
 * REGISTRY_VERSION */
static gboolean
version_known(JsonObject *obj, const char *path, GError **error)
{
    JsonNode *node = json_object_get_member(obj, "version");
    gint64 version = 1;

    if (node && JSON_NODE_TYPE(node) == JSON_NODE_VALUE &&
        json_node_get_value_type(node) == G_TYPE_INT64)
        version = json_node_get_int(node);
    else if (node)
        version = -1;
    if (version >= 1 && version <= REGISTRY_VERSION)
        return TRUE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
        "Cannot read the registry '%s': its version %" G_GINT64_FORMAT
        " is not one this daxfile reads (1 to %d); fix: use the daxfile that wrote it",
        path, version, REGISTRY_VERSION);
    return FALSE;
}

gboolean
daxfile_registry_parse(const char *path, GPtrArray *entries, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) local = NULL;
    JsonNode *root;
    JsonArray *arr;
    guint i;

    if (!json_parser_load_from_file(parser, path, &local)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
            "Cannot read the registry '%s': %s; fix: move it aside and run 'daxfile repair'",
            path, local->message);
        return FALSE;
    }
    root = json_parser_get_root(parser);
    if (!JSON_NODE_HOLDS_OBJECT(root) ||
        !json_object_has_member(json_node_get_object(root), "entries")) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "Cannot read the registry '%s': not a daxfile registry",
                    path);
        return FALSE;
    }
    if (!version_known(json_node_get_object(root), path, error))
        return FALSE;
    arr = json_object_get_array_member(json_node_get_object(root), "entries");
    for (i = 0; arr && i < json_array_get_length(arr); i++) {
        JsonNode *n = json_array_get_element(arr, i);
        DaxfileEntry *e = JSON_NODE_HOLDS_OBJECT(n)
                              ? entry_from_json(json_node_get_object(n))
                              : NULL;

        if (!e) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                        "Cannot read the registry '%s': entry %u is malformed",
                        path, i);
            return FALSE;
        }
        g_ptr_array_add(entries, e);
    }
    return TRUE;
}

static void
entry_to_json(JsonBuilder *b, const DaxfileEntry *e)
{
    json_builder_begin_object(b);
    if (g_utf8_validate(e->path, -1, NULL)) {
        daxfile_json_add_string(b, "path", e->path);
    } else {
        /* JSON holds UTF-8 only: readable form plus the exact bytes */
        g_autofree char *shown = daxfile_escape(e->path);
        g_autofree char *b64 =
            g_base64_encode((const guchar *)e->path, strlen(e->path));

        daxfile_json_add_string(b, "path", shown);
        daxfile_json_add_string(b, "path_b64", b64);
    }
    daxfile_json_add_int(b, "dev", (gint64)e->dev);
    daxfile_json_add_int(b, "ino", (gint64)e->ino);
    daxfile_json_add_string(b, "state",
                            daxfile_entry_state_to_string(e->state));
    daxfile_json_add_string(b, "mechanism",
                            daxfile_mechanism_to_string(e->mechanism));
    daxfile_json_add_string(b, "owner", e->owner);
    daxfile_json_add_string(b, "owner_uuid", e->owner_uuid);
    if (e->device)
        daxfile_json_add_string(b, "device", e->device);
    daxfile_json_add_int(b, "pid", e->pid);
    daxfile_json_add_int(b, "align", (gint64)e->align);
    daxfile_json_add_string(b, "fingerprint", e->fingerprint);
    daxfile_json_add_string(b, "since", e->since);
    daxfile_json_add_string(b, "boot_id", e->boot_id);
    daxfile_json_add_bool(b, "flag_set", e->flag_set);
    daxfile_json_add_string(b, "handle", e->handle);
    daxfile_json_add_string(b, "fsid", e->fsid);
    daxfile_json_add_string(b, "fs_uuid", e->fs_uuid);
    if (e->holder_pid) {
        daxfile_json_add_int(b, "holder_pid", e->holder_pid);
        daxfile_json_add_int(b, "holder_start", (gint64)e->holder_start);
    }
    if (e->unguarded)
        daxfile_json_add_string(b, "unguarded", e->unguarded);
    json_builder_end_object(b);
}

char *
daxfile_registry_serialise(const GPtrArray *entries)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    guint i;

    json_builder_begin_object(b);
    daxfile_json_add_int(b, "version", REGISTRY_VERSION);
    json_builder_set_member_name(b, "entries");
    json_builder_begin_array(b);
    for (i = 0; i < entries->len; i++)
        entry_to_json(b, g_ptr_array_index(entries, i));
    json_builder_end_array(b);
    json_builder_end_object(b);
    root = json_builder_get_root(b);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    return json_generator_to_data(gen, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-json.c: the "static" object of status --json, and
 * list --json
 */
#include <sys/stat.h>

#include "daxfile-attest-json.h"
#include "daxfile-conf.h"
#include "daxfile-escape.h"
#include "daxfile-guard.h"
#include "daxfile-json.h"
#include "daxfile-registry.h"
#include "daxfile-static-priv.h"
#include "daxfile-static.h"
#include "daxfile-util.h"

static void
entry_members(JsonBuilder *b, const DaxfileEntry *e)
{
    daxfile_json_add_string(b, "state", daxfile_entry_state_to_string(e->state));
    daxfile_json_add_string(b, "mechanism",
                       daxfile_mechanism_to_string(e->mechanism));
    daxfile_json_add_string(b, "owner", e->owner);
    daxfile_json_add_string(b, "owner_uuid", e->owner_uuid);
    daxfile_json_add_string(b, "device", e->device);
    daxfile_json_add_int(b, "pid", e->pid);
    daxfile_json_add_int(b, "align", (gint64)e->align);
    daxfile_json_add_string(b, "since", e->since);
    daxfile_json_add_bool(b, "stale", daxfile_entry_is_stale(e));
}

/* For a file a running domain holds: what its QEMU mapped, attested as
 * the hook did at started (daxfile-attest.h); the <alignsize> judged is
 * the report's, and a virtio-pmem device needs neither it nor MAP_SYNC */
static JsonNode *
qemu_json(int fd, const struct stat *st, const DaxfileReport *report,
          const DaxfileEntry *e)
{
    g_autoptr(DaxfileConf) conf = daxfile_conf_load(NULL, NULL);
    g_auto(DaxfileAttestation) a = {.pid = -1};
    g_autoptr(GError) local = NULL;
    const char *domain = e->owner + strlen("domain:");
    gboolean nvdimm = g_strcmp0(e->device, "virtio-pmem") != 0;

    a.pid = daxfile_attest_qemu_pid(conf ? conf->qemu_pid_dir
                                         : DAXFILE_QEMU_PID_DIR,
                                    domain, daxfile_conf_path(), &local);
    if (a.pid < 0)
        a.problem = g_strdup(local->message);
    else
        daxfile_attest(a.pid, NULL, fd, st, report->path, st->st_size,
                       nvdimm ? report->align : 0, nvdimm, &a, NULL);
    return daxfile_attestation_to_json(&a);
}

JsonNode *
daxfile_static_state_json(int fd, const DaxfileReport *report)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(DaxfileEntry) e = NULL;
    gboolean immutable = FALSE;
    struct stat st;

    if (fstat(fd, &st) == 0)
        daxfile_static_registry_peek(&st, &e, NULL);
    json_builder_begin_object(b);
    daxfile_json_add_bool(b, "enabled", e && e->state == DAXFILE_STATE_ENGAGED);
    if (e && e->state == DAXFILE_STATE_ENGAGED && e->owner &&
        g_str_has_prefix(e->owner, "domain:")) {
        json_builder_set_member_name(b, "qemu");
        json_builder_add_value(b, qemu_json(fd, &st, report, e));
    }
    if (e) {
        entry_members(b, e);
        daxfile_json_add_tristate(b, "layout_unchanged",
                                 e->fingerprint && report->fingerprint &&
                                     STREQ(e->fingerprint,
                                           report->fingerprint));
        daxfile_json_add_tristate(b, "mechanism_intact",
                                  daxfile_static_mechanism_intact(fd, e));
    } else {
        daxfile_json_add_string(b, "mechanism", NULL);
        daxfile_json_add_string(b, "owner", NULL);
        daxfile_json_add_string(b, "since", NULL);
        daxfile_json_add_tristate(b, "layout_unchanged", -1);
    }
    daxfile_json_add_tristate(b, "immutable",
                             daxfile_guard_get(fd, report->path, &immutable,
                                               NULL) ? immutable : -1);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

JsonNode *
daxfile_static_list_json(const GPtrArray *entries)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i;

    json_builder_begin_array(b);
    for (i = 0; i < entries->len; i++) {
        const DaxfileEntry *e = g_ptr_array_index(entries, i);

        json_builder_begin_object(b);
        if (g_utf8_validate(e->path, -1, NULL)) {
            daxfile_json_add_string(b, "path", e->path);
        } else {
            g_autofree char *shown = daxfile_escape(e->path);

            daxfile_json_add_string(b, "path", shown);
        }
        entry_members(b, e);
        daxfile_json_add_string(b, "fingerprint", e->fingerprint);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

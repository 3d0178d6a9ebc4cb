/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Formatting checks: text (virt-host-validate style), TAP, JSON
 */
#include <string.h>

#include "daxfile-escape.h"
#include "daxfile-json.h"
#include "daxguest-checks.h"

#define TITLE_WIDTH 60

const char *
daxguest_check_result_to_string(DaxguestCheckResult result)
{
    switch (result) {
    case DAXGUEST_CHECK_PASS:
        return "pass";
    case DAXGUEST_CHECK_WARN:
        return "warn";
    case DAXGUEST_CHECK_FAIL:
        break;
    }
    return "fail";
}

static const char *
result_word(DaxguestCheckResult result)
{
    switch (result) {
    case DAXGUEST_CHECK_PASS:
        return "PASS";
    case DAXGUEST_CHECK_WARN:
        return "WARN";
    case DAXGUEST_CHECK_FAIL:
        break;
    }
    return "FAIL";
}

/* "PASS", "PASS (detail)", "FAIL (detail; hint)" */
static char *
verdict(const DaxguestCheck *c, gboolean with_hint)
{
    g_autofree char *detail = c->detail ? daxfile_escape(c->detail) : NULL;
    g_autofree char *hint = NULL;

    if (c->hint && with_hint)
        hint = daxfile_escape(c->hint);

    if (detail && hint)
        return g_strdup_printf("%s (%s; %s)", result_word(c->result), detail,
                               hint);
    if (detail || hint)
        return g_strdup_printf("%s (%s)", result_word(c->result),
                               detail ? detail : hint);
    return g_strdup(result_word(c->result));
}

char *
daxguest_checks_format_text(const GPtrArray *checks)
{
    GString *out = g_string_new(NULL);
    guint i;

    for (i = 0; i < checks->len; i++) {
        const DaxguestCheck *c = g_ptr_array_index((GPtrArray *)checks, i);
        g_autofree char *title = daxfile_escape(c->title);
        g_autofree char *v = verdict(c, TRUE);

        g_string_append_printf(out, "Checking %-*s: %s\n", TITLE_WIDTH, title,
                               v);
    }
    return g_string_free(out, FALSE);
}

/* A TAP description must not contain '#' (it starts a directive) */
static char *
tap_safe(const char *text)
{
    char *s = daxfile_escape(text);

    g_strdelimit(s, "#", '_');
    return s;
}

char *
daxguest_checks_format_tap(const GPtrArray *checks)
{
    GString *out = g_string_new("TAP version 13\n");
    guint i;

    g_string_append_printf(out, "1..%u\n", checks->len);
    for (i = 0; i < checks->len; i++) {
        const DaxguestCheck *c = g_ptr_array_index((GPtrArray *)checks, i);
        g_autofree char *title = tap_safe(c->title);
        g_autofree char *v = verdict(c, FALSE);
        g_autofree char *safe = tap_safe(v);
        gboolean ok = c->result != DAXGUEST_CHECK_FAIL;

        g_string_append_printf(out, "%s %u - Checking %s: %s\n",
                               ok ? "ok" : "not ok", i + 1, title, safe);
        if (c->hint) {
            g_autofree char *hint = daxfile_escape(c->hint);

            g_string_append_printf(out, "# %s: %s\n", result_word(c->result),
                                   hint);
        }
    }
    return g_string_free(out, FALSE);
}

JsonNode *
daxguest_checks_to_json(const GPtrArray *checks)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i;

    json_builder_begin_array(b);
    for (i = 0; i < checks->len; i++) {
        const DaxguestCheck *c = g_ptr_array_index((GPtrArray *)checks, i);

        json_builder_begin_object(b);
        daxfile_json_add_string(b, "check", c->check);
        daxfile_json_add_string(b, "subject", c->subject);
        daxfile_json_add_string(b, "result",
                                daxguest_check_result_to_string(c->result));
        daxfile_json_add_string(b, "detail", c->detail);
        daxfile_json_add_string(b, "hint", c->hint);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Formatting checks: text (virt-host-validate style), TAP, JSON
 */
#include <string.h>

#include "daxfile-escape.h"
#include "daxfile-json.h"
#include "daxfile-tap.h"
#include "daxguest-checks.h"

#define TITLE_WIDTH 60

DAXFILE_ENUM_IMPL(daxguest_check_result, DaxguestCheckResult,
                  DAXGUEST_CHECK_LAST, "pass", "warn", "fail");

/* "PASS", "WARN", "FAIL": the word of the text and TAP output */
static const char *
result_word(DaxguestCheckResult result)
{
    g_autofree char *up =
        g_ascii_strup(daxguest_check_result_to_string(result), -1);

    return g_intern_string(up);
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

static void
tap_write(void *ctx, const char *text, size_t len)
{
    g_string_append_len(ctx, text, (gssize)len);
}

/* Through the one TAP emitter (daxfile-tap.h), which makes '#' in a
 * description '_' */
char *
daxguest_checks_format_tap(const GPtrArray *checks)
{
    GString *out = g_string_new(NULL);
    DaxfileTap tap = {.write = tap_write, .ctx = out};
    guint i;

    daxfile_tap_version(&tap);
    daxfile_tap_plan(&tap, checks->len);
    for (i = 0; i < checks->len; i++) {
        const DaxguestCheck *c = g_ptr_array_index((GPtrArray *)checks, i);
        g_autofree char *title = daxfile_escape(c->title);
        g_autofree char *v = verdict(c, FALSE);
        g_autofree char *safe = daxfile_escape(v);
        g_autofree char *desc = g_strdup_printf("Checking %s: %s", title, safe);

        daxfile_tap_result(&tap, c->result != DAXGUEST_CHECK_FAIL, desc, NULL);
        if (c->hint) {
            g_autofree char *hint = daxfile_escape(c->hint);
            g_autofree char *line =
                g_strdup_printf("%s: %s", result_word(c->result), hint);

            daxfile_tap_diag(&tap, line);
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

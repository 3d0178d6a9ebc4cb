/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-tap.h: the one TAP emitter of the C code. Header-only and over
 * libc alone: kernel/tests/daxctl-test.c, a static program for the guest's
 * initramfs without GLib, includes it, and so does `daxfile-guest check
 * --tap` (daxguest-checks-output.c), which writes into a GString. (The
 * GLib unit tests print TAP through g_test_init(), the Python tests through
 * tests/helpers/daxtest.py, the shell tests through
 * tools/harness/guest-lib.sh.)
 *
 * Every line goes through the caller's writer:
 *
 *     DaxfileTap tap = {.write = write_stdout, .ctx = NULL};
 *
 *     daxfile_tap_plan(&tap, 2);                         1..2
 *     daxfile_tap_result(&tap, true, "a", NULL);         ok 1 - a
 *     daxfile_tap_result(&tap, true, "b", "SKIP why");   ok 2 - b # SKIP why
 *     daxfile_tap_diag(&tap, "text");                    # text
 *
 * A description has '#' (it would start a directive) and newlines turned
 * into '_'; a diag gets "# " before each of its lines.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Write @len bytes of @text (no terminating NUL among them) */
typedef void (*DaxfileTapWrite)(void *ctx, const char *text, size_t len);

typedef struct {
    DaxfileTapWrite write;
    void *ctx;
    unsigned int n;      /* results so far; the next is n + 1 */
    unsigned int failed; /* results not ok, without a directive */
} DaxfileTap;

static inline void
daxfile_tap_puts(const DaxfileTap *tap, const char *text)
{
    tap->write(tap->ctx, text, strlen(text));
}

/* "TAP version 13" */
static inline void
daxfile_tap_version(const DaxfileTap *tap)
{
    daxfile_tap_puts(tap, "TAP version 13\n");
}

/* "1..N" */
static inline void
daxfile_tap_plan(const DaxfileTap *tap, unsigned int n)
{
    char line[32];

    snprintf(line, sizeof(line), "1..%u\n", n);
    daxfile_tap_puts(tap, line);
}

/* "ok N - DESC", "not ok N - DESC", then " # DIRECTIVE" when @directive
 * ("SKIP why", "TODO why") is not NULL; returns @pass */
static inline bool
daxfile_tap_result(DaxfileTap *tap, bool pass, const char *desc,
                   const char *directive)
{
    char head[32];
    const char *p = desc;
    size_t len;

    tap->n++;
    if (!pass && !directive)
        tap->failed++;
    snprintf(head, sizeof(head), "%s %u - ", pass ? "ok" : "not ok", tap->n);
    daxfile_tap_puts(tap, head);
    for (len = strcspn(p, "#\n"); p[len]; len = strcspn(p, "#\n")) {
        tap->write(tap->ctx, p, len);
        daxfile_tap_puts(tap, "_");
        p += len + 1;
    }
    tap->write(tap->ctx, p, len);
    if (directive) {
        daxfile_tap_puts(tap, " # ");
        daxfile_tap_puts(tap, directive);
    }
    daxfile_tap_puts(tap, "\n");
    return pass;
}

/* "# LINE" for each line of @text */
static inline void
daxfile_tap_diag(const DaxfileTap *tap, const char *text)
{
    const char *p = text;
    size_t len;

    for (len = strcspn(p, "\n");; len = strcspn(p, "\n")) {
        daxfile_tap_puts(tap, "# ");
        tap->write(tap->ctx, p, len);
        daxfile_tap_puts(tap, "\n");
        if (!p[len] || !p[len + 1])
            break;
        p += len + 1;
    }
}

/* "Bail out! WHY": the caller then stops */
static inline void
daxfile_tap_bail_out(const DaxfileTap *tap, const char *why)
{
    daxfile_tap_puts(tap, "Bail out! ");
    daxfile_tap_puts(tap, why);
    daxfile_tap_puts(tap, "\n");
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-static-machine: static mode's states, one machine
 * (daxfile-static-machine.c). Every pair of states, "none" (no entry)
 * included, is walked through daxfile_static_transition() and, where
 * there is an entry on both sides, daxfile_static_transition_state(): a
 * legal transition (the list in daxfile-static-priv.h, written out again
 * here) changes the registry; any other is an internal error that changes
 * nothing.
 */
#include <string.h>

#include "daxfile-error.h"
#include "daxfile-registry.h"
#include "daxfile-static-priv.h"
#include "daxfile-test-util.h"

#define NONE DAXFILE_STATE_LAST
#define N (DAXFILE_STATE_LAST + 1)
#define RESERVED DAXFILE_STATE_RESERVED
#define ENGAGING DAXFILE_STATE_ENGAGING
#define ENGAGED DAXFILE_STATE_ENGAGED
#define RELEASING DAXFILE_STATE_RELEASING

/* the documented transitions */
static const struct {
    DaxfileEntryState from, to;
} documented[] = {
    {NONE, RESERVED},    {NONE, ENGAGING},     {NONE, ENGAGED},
    {RESERVED, ENGAGED}, {RESERVED, ENGAGING}, {RESERVED, RESERVED},
    {ENGAGING, ENGAGED}, {ENGAGING, RESERVED}, {ENGAGED, RELEASING},
    {ENGAGED, RESERVED}, {NONE, NONE},         {RESERVED, NONE},
    {ENGAGING, NONE},    {ENGAGED, NONE},      {RELEASING, NONE},
};

static gboolean
documented_has(DaxfileEntryState from, DaxfileEntryState to)
{
    gsize i;

    for (i = 0; i < G_N_ELEMENTS(documented); i++)
        if (documented[i].from == from && documented[i].to == to)
            return TRUE;
    return FALSE;
}

static const char *
name(DaxfileEntryState s)
{
    return s == NONE ? "none" : daxfile_entry_state_to_string(s);
}

static DaxfileEntry *
entry_new(DaxfileEntryState state)
{
    DaxfileEntry *e = g_new0(DaxfileEntry, 1);

    e->path = g_strdup("/pmem/a.img");
    e->dev = 2049;
    e->ino = 12;
    e->state = state;
    e->mechanism = DAXFILE_MECH_VERIFIED_ONLY;
    e->owner = g_strdup("domain:vm1");
    e->since = g_strdup("2024-01-02T03:04:05Z");
    e->boot_id = g_strdup("0d5e1f54-0000-4000-8000-000000000001");
    return e;
}

/* The state of the registry's entry of the file (NONE: none) */
static DaxfileEntryState
state_of(DaxfileRegistry *reg)
{
    const DaxfileEntry *e = daxfile_registry_lookup(reg, 2049, 12);

    return e ? e->state : NONE;
}

/* A registry holding the file in @from */
static DaxfileRegistry *
registry_in(DaxfileEntryState from)
{
    g_autoptr(GError) error = NULL;
    DaxfileRegistry *reg = daxfile_registry_open(&error);

    g_assert_no_error(error);
    daxfile_registry_remove(reg, 2049, 12);
    if (from != NONE)
        daxfile_registry_put(reg, entry_new(from));
    return reg;
}

static void
test_table(void)
{
    guint from, to;

    for (from = 0; from < N; from++)
        for (to = 0; to < N; to++) {
            if (daxfile_static_transition_legal(from, to) ==
                documented_has(from, to))
                continue;
            g_test_message("%s -> %s", name(from), name(to));
            g_test_fail();
        }
}

static void
test_walk(void)
{
    guint from, to;

    for (from = 0; from < N; from++)
        for (to = 0; to < N; to++) {
            g_autoptr(DaxfileRegistry) reg = registry_in(from);
            g_autoptr(GError) error = NULL;
            gboolean legal = documented_has(from, to);
            gboolean ok = daxfile_static_transition(
                reg, 2049, 12, to == NONE ? NULL : entry_new(to), &error);

            g_test_message("transition %s -> %s", name(from), name(to));
            g_assert_cmpint(ok, ==, legal);
            g_assert_cmpint(state_of(reg), ==, legal ? to : from);
            if (!legal)
                g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED);
            if (!legal)
                g_assert_nonnull(strstr(error->message, "Internal error"));
        }
}

static void
test_walk_state(void)
{
    guint from, to;

    for (from = 0; from < DAXFILE_STATE_LAST; from++)
        for (to = 0; to < DAXFILE_STATE_LAST; to++) {
            g_autoptr(DaxfileRegistry) reg = registry_in(from);
            g_autoptr(GError) error = NULL;
            DaxfileEntry *e = daxfile_registry_lookup(reg, 2049, 12);
            gboolean legal = documented_has(from, to);

            g_test_message("state %s -> %s", name(from), name(to));
            g_assert_cmpint(daxfile_static_transition_state(reg, e, to, &error),
                            ==, legal);
            g_assert_cmpint(state_of(reg), ==, legal ? to : from);
            if (!legal)
                g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED);
        }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_setenv("DAXFILE_STATE_DIR", daxfile_test_scratch("static-machine"), TRUE);
    g_test_add_func("/static/machine/table", test_table);
    g_test_add_func("/static/machine/transition", test_walk);
    g_test_add_func("/static/machine/transition-state", test_walk_state);
    return daxfile_test_run();
}

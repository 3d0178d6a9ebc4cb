/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-machine.c: static mode's states in the registry, one
 * machine, and the one writer of them (see daxfile-static-priv.h)
 */
#include "daxfile-error.h"
#include "daxfile-static-priv.h"

#define NONE DAXFILE_STATE_LAST

/* [from][to]: the transitions static mode makes; NONE is no entry */
static const gboolean legal[DAXFILE_STATE_LAST + 1][DAXFILE_STATE_LAST + 1] = {
    [NONE] =
        {
            [DAXFILE_STATE_RESERVED] = TRUE, /* prepare reserves */
            [DAXFILE_STATE_ENGAGING] = TRUE, /* enable logs its intent */
            [DAXFILE_STATE_ENGAGED] = TRUE,  /* a set: the registry first */
            [NONE] = TRUE,                   /* (nothing to drop) */
        },
    [DAXFILE_STATE_RESERVED] =
        {
            [DAXFILE_STATE_RESERVED] = TRUE, /* held unguarded */
            [DAXFILE_STATE_ENGAGING] = TRUE, /* enable of a reservation */
            [DAXFILE_STATE_ENGAGED] = TRUE,  /* started engages a set */
            [NONE] = TRUE, /* released, rolled back or repaired */
        },
    [DAXFILE_STATE_ENGAGING] =
        {
            [DAXFILE_STATE_ENGAGED] = TRUE,  /* engaged and verified */
            [DAXFILE_STATE_RESERVED] = TRUE, /* rolled back to it */
            [NONE] = TRUE,                   /* rolled back or repaired */
        },
    [DAXFILE_STATE_ENGAGED] =
        {
            [DAXFILE_STATE_RELEASING] = TRUE, /* disable logs its intent */
            [DAXFILE_STATE_RESERVED] = TRUE,  /* a set rolled back */
            [NONE] = TRUE, /* a set released, or rolled back; repaired */
        },
    [DAXFILE_STATE_RELEASING] =
        {
            [NONE] = TRUE, /* released, or repaired */
        },
};

static const char *
state_name(DaxfileEntryState state)
{
    return state == NONE ? "no entry" : daxfile_entry_state_to_string(state);
}

gboolean
daxfile_static_transition_legal(DaxfileEntryState from, DaxfileEntryState to)
{
    g_return_val_if_fail(from <= NONE && to <= NONE, FALSE);
    return legal[from][to];
}

static gboolean
check(DaxfileEntryState from, DaxfileEntryState to, const char *path,
      GError **error)
{
    if (daxfile_static_transition_legal(from, to))
        return TRUE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
        "Internal error: static mode cannot go from %s to %s for '%s'; nothing was changed (please report this)",
        state_name(from), state_name(to), path ? path : "?");
    return FALSE;
}

gboolean
daxfile_static_transition(DaxfileRegistry *reg, guint64 dev, guint64 ino,
                          DaxfileEntry *next, GError **error)
{
    g_autoptr(DaxfileEntry) owned = next;
    DaxfileEntry *cur = daxfile_registry_lookup(reg, dev, ino);

    g_return_val_if_fail(!next || (next->dev == dev && next->ino == ino),
                         FALSE);
    if (!check(cur ? cur->state : NONE, next ? next->state : NONE,
               next  ? next->path
               : cur ? cur->path
                     : NULL,
               error))
        return FALSE;
    if (next)
        daxfile_registry_put(reg, g_steal_pointer(&owned));
    else if (cur)
        daxfile_registry_remove(reg, dev, ino);
    return TRUE;
}

gboolean
daxfile_static_transition_state(DaxfileRegistry *reg, DaxfileEntry *e,
                                DaxfileEntryState to, GError **error)
{
    if (!check(e->state, to, e->path, error))
        return FALSE;
    e->state = to;
    daxfile_registry_touch(reg);
    return TRUE;
}

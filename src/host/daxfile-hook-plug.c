/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-hook-plug.c: the hook's phases over one device hot-plugged into
 * a running domain (daxfile-hook.h), for 'daxfile attach' and 'daxfile
 * watch': libvirt runs no hook then.
 */
#include "daxfile-hook-priv.h"
#include "daxfile-hook.h"

/* What the hook's phases take: a call, a context and the one device */
typedef struct {
    DaxfileHookCall call;
    DaxfileHookCtx h;
    GArray *devs;    /* DaxfileHookDev: the device */
    GArray *mappers; /* pid_t: its QEMU, when that maps it already */
} Plug;

static void
plug_clear(Plug *p)
{
    g_free(p->h.owner);
    g_clear_pointer(&p->devs, g_array_unref);
    g_clear_pointer(&p->mappers, g_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Plug, plug_clear)

/* Set @p up for @plug; FALSE with @error when the device names a managed
 * file by another spelling. p->devs is empty when it is not managed. */
static gboolean
plug_init(Plug *p, const DaxfilePlug *plug, GError **error)
{
    DaxfileHookDev d = {(DaxfileNvdimm *)plug->nv};
    GError *local = NULL;

    p->call.object = plug->dom->name;
    p->call.op = "hotplug";
    p->call.subop = "begin";
    p->call.parent = plug->holder;
    p->call.parent_start = plug->holder_start;
    p->h.call = &p->call;
    p->h.conf = plug->conf;
    p->h.dom = plug->dom;
    p->h.owner = g_strdup_printf("domain:%s", plug->dom->name);
    p->h.notes = plug->notes;
    p->devs = daxfile_hook_devs_new();
    p->mappers = g_array_new(FALSE, FALSE, sizeof(pid_t));
    if (plug->qemu > 0)
        g_array_append_val(p->mappers, plug->qemu);
    p->h.mappers = p->mappers;
    if (!daxfile_hook_dev_root(&p->h, d.nv, &d.root, &local))
        return daxfile_hook_dev_fail(&p->h, d.nv, local, error);
    if (d.root || daxfile_hook_dev_is_devdax(&p->h, d.nv))
        g_array_append_val(p->devs, d);
    return TRUE;
}

gboolean
daxfile_plug_managed(const DaxfilePlug *plug, gboolean *ret_managed,
                     GError **error)
{
    g_auto(Plug) p = {0};

    *ret_managed = FALSE;
    if (!plug_init(&p, plug, error))
        return FALSE;
    *ret_managed = p.devs->len > 0;
    return TRUE;
}

gboolean
daxfile_plug_prepare(const DaxfilePlug *plug, GError **error)
{
    g_auto(Plug) p = {0};

    return plug_init(&p, plug, error) &&
           daxfile_hook_prepare_devs(&p.h, p.devs, error);
}

gboolean
daxfile_plug_engage(const DaxfilePlug *plug, GError **error)
{
    g_auto(Plug) p = {0};

    return plug_init(&p, plug, error) &&
           daxfile_hook_engage_devs(&p.h, p.devs, error);
}

gboolean
daxfile_plug_release(const DaxfilePlug *plug, GError **error)
{
    g_auto(Plug) p = {0};

    return plug_init(&p, plug, error) &&
           daxfile_hook_release_devs(&p.h, p.devs, error);
}

gboolean
daxfile_plug_hold_unguarded(const DaxfilePlug *plug, const char *reason,
                            GError **error)
{
    g_auto(Plug) p = {0};

    if (!plug_init(&p, plug, error))
        return FALSE;
    if (p.devs->len == 0)
        return TRUE;
    return daxfile_hook_hold_unguarded(
        &p.h, &g_array_index(p.devs, DaxfileHookDev, 0), reason, error);
}

char *
daxfile_plug_cause(const DaxfilePlug *plug, const char *message)
{
    g_auto(Plug) p = {0};

    plug_init(&p, plug, NULL);
    return daxfile_hook_dev_cause(&p.h, plug->nv, message);
}

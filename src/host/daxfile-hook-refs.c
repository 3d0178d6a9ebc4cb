/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hook's checks of what else a domain names (daxfile-hook-priv.h):
 * its nvdimms on one file, and every other file reference of the domain
 * XML, storage volumes included, against its own managed files and the
 * registry.
 */
#include <string.h>

#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-hook-priv.h"
#include "daxfile-identity.h"
#include "daxfile-pool.h"
#include "daxfile-static.h"

/* What @path names (daxfile_identity_of()); FALSE when it names nothing */
static gboolean
path_identity(const char *path, DaxfileIdentity *ret)
{
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(DaxfileIdentity));

    daxfile_path_identities(path, ids, NULL);
    if (ids->len == 0)
        return FALSE;
    *ret = g_array_index(ids, DaxfileIdentity, 0);
    return TRUE;
}

/* Two nvdimms of one domain on the same file (or device-dax device):
 * QEMU accepts two backends on one file and the guest sees two NVDIMMs
 * aliasing one storage. */
gboolean
daxfile_hook_check_no_alias(const DaxfileHookCtx *h, GArray *devs,
                            GError **error)
{
    g_autoptr(GArray) ids = g_array_new(FALSE, TRUE, sizeof(DaxfileIdentity));
    guint i, j;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(h->dom->nvdimms, i);
        DaxfileIdentity id = {0, 0};
        gboolean named = nv->path && path_identity(nv->path, &id);

        g_array_append_val(ids, id);
        for (j = 0; named && j < i; j++) {
            const DaxfileIdentity *o = &g_array_index(ids, DaxfileIdentity, j);
            DaxfileNvdimm *first = g_ptr_array_index(h->dom->nvdimms, j);
            g_autofree char *other = NULL;

            if (o->dev != id.dev || o->ino != id.ino || devs->len == 0)
                continue;
            other = daxfile_hook_dev_label(h, first);
            daxfile_hook_dev_fail(
                h, nv,
                g_error_new(
                    DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "is the same file as %s, and the guest would see two pmem devices over one storage; fix: give each device a file of its own ('daxfile create')",
                    other),
                error);
            return FALSE;
        }
    }
    return TRUE;
}

/* The managed device among @devs (each opened) whose file one of @ids
 * is, or NULL */
static const DaxfileNvdimm *
ref_hits_device(GArray *ids, GArray *devs)
{
    guint i;

    for (i = 0; i < devs->len; i++) {
        const DaxfileHookDev *d = &g_array_index(devs, DaxfileHookDev, i);
        DaxfileIdentity o = daxfile_identity_of(&d->file->st);

        if (daxfile_identities_have(ids, o.dev, o.ino))
            return d->nv;
    }
    return NULL;
}

/* The registry entry of someone else that @ids hits, or NULL */
static const DaxfileEntry *
ref_hits_entry(const DaxfileHookCtx *h, GArray *ids, GPtrArray *entries)
{
    guint i;

    for (i = 0; i < entries->len; i++) {
        const DaxfileEntry *e = g_ptr_array_index(entries, i);

        if (g_strcmp0(e->owner, h->owner) != 0 &&
            daxfile_identities_have(ids, e->dev, e->ino))
            return e;
    }
    return NULL;
}

static gboolean
ref_fail(const DaxfileHookCtx *h, const DaxfileFileRef *ref,
         const DaxfileNvdimm *nv, const DaxfileEntry *e, GError **error)
{
    g_autofree char *dom = daxfile_escape(h->dom->name);
    g_autofree char *path = daxfile_escape(ref->path);
    g_autofree char *where = daxfile_escape(ref->where);
    g_autofree char *held = NULL;
    g_autofree char *owner = NULL;

    if (nv)
        return daxfile_hook_dev_fail(
            h, nv,
            g_error_new(
                DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "is also named by %s ('%s'), and QEMU would open it there outside the nvdimm's backend, past static mode; fix: remove that reference, or give the nvdimm a file of its own ('daxfile create')",
                where, path),
            error);
    held = daxfile_escape(e->path);
    owner = daxfile_escape(e->owner);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
        "domain '%s': %s '%s' names '%s', which '%s' holds as a managed pmem file (%s); fix: remove that reference, or stop '%s' first",
        dom, where, path, held, owner, daxfile_entry_state_to_string(e->state),
        owner);
    return FALSE;
}

/* @ref names something the hook cannot identify: prefix @local (moved
 * into @error) with where */
static gboolean
ref_unplaced(const DaxfileHookCtx *h, const DaxfileFileRef *ref, GError *local,
             GError **error)
{
    g_autofree char *dom = daxfile_escape(h->dom->name);
    g_autofree char *path = daxfile_escape(ref->path);
    g_autofree char *where = daxfile_escape(ref->where);

    g_prefix_error(&local, "domain '%s': %s '%s': ", dom, where, path);
    g_propagate_error(error, local);
    return FALSE;
}

/* The volume @ref cannot be placed (@local, freed, says why): one line
 * naming the domain, where, why and the fix */
static gboolean
volume_unplaced(const DaxfileHookCtx *h, const DaxfileVolumeRef *ref,
                GError *local, GError **error)
{
    g_autoptr(GError) why = local;
    g_autofree char *dom = daxfile_escape(h->dom->name);
    g_autofree char *where = daxfile_escape(ref->where);

    g_set_error(
        error, DAXFILE_ERROR, why->code,
        "domain '%s': %s: %s, and it could be a managed file; fix: name the file or device itself (<disk type='file'> or type='block' with the path 'virsh vol-path' prints), or set pool_state_dir in '%s' to where libvirt keeps its pools' state",
        dom, where, why->message, h->conf->path);
    return FALSE;
}

/* What daxfile_hook_check_refs() compares each reference with */
typedef struct {
    GArray *devs;       /* DaxfileHookDev, each opened */
    GPtrArray *entries; /* the registry's */
} RefCheck;

/* One file reference of the domain: not a managed file of its own
 * devices, nor one the registry holds for someone else */
static gboolean
check_ref(const DaxfileHookCtx *h, const RefCheck *c, const DaxfileFileRef *ref,
          GError **error)
{
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(DaxfileIdentity));
    const DaxfileNvdimm *nv;
    const DaxfileEntry *e;
    GError *local = NULL;

    if (!daxfile_path_identities(ref->path, ids, &local))
        return ref_unplaced(h, ref, local, error);
    nv = ref_hits_device(ids, c->devs);
    e = nv ? NULL : ref_hits_entry(h, ids, c->entries);
    if (nv || e)
        return ref_fail(h, ref, nv, e, error);
    return TRUE;
}

/* The storage volumes the domain names, placed through their pools'
 * state (the hook cannot ask libvirt), checked as files; a volume that
 * cannot be placed is refused, since it could be a managed file */
static gboolean
check_volumes(const DaxfileHookCtx *h, const RefCheck *c, GError **error)
{
    g_autoptr(GPtrArray) vols = daxfile_domain_volume_refs(h->dom);
    guint i;

    for (i = 0; i < vols->len; i++) {
        const DaxfileVolumeRef *v = g_ptr_array_index(vols, i);
        g_autofree char *path = NULL;
        DaxfileFileRef ref = {.where = v->where, .nvdimm = -1};
        GError *local = NULL;

        if (!daxfile_pool_volume_path(h->conf->pool_state_dir, v->pool,
                                      v->volume, &path, &local))
            return volume_unplaced(h, v, local, error);
        ref.path = path;
        if (path && !check_ref(h, c, &ref, error))
            return FALSE;
    }
    return TRUE;
}

/* Nothing else reaches a managed file: no other element of this domain
 * names the file of one of its managed nvdimms (QEMU would open it a
 * second time, outside the backend that static mode reasons about), and
 * no element names a file the registry holds for someone else. Files are
 * compared by what they are, however they are spelt; storage volumes by
 * the file their pool places them at. */
gboolean
daxfile_hook_check_refs(const DaxfileHookCtx *h, GArray *devs, GError **error)
{
    g_autoptr(GPtrArray) refs = daxfile_domain_file_refs(h->dom);
    g_autoptr(GPtrArray) entries = daxfile_static_list(error);
    RefCheck c = {devs, entries};
    guint i;

    if (!entries)
        return FALSE;
    if (devs->len == 0 && entries->len == 0)
        return TRUE;
    for (i = 0; i < refs->len; i++) {
        const DaxfileFileRef *ref = g_ptr_array_index(refs, i);

        /* an nvdimm's own file: dev_root, check_no_alias */
        if (ref->nvdimm < 0 && !check_ref(h, &c, ref, error))
            return FALSE;
    }
    return check_volumes(h, &c, error);
}

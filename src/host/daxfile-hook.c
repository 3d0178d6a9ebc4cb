/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-attest.h"
#include "daxfile-create.h"
#include "daxfile-devdax.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-identity.h"
#include "daxfile-hook.h"
#include "daxfile-registry.h"
#include "daxfile-size.h"
#include "daxfile-static.h"
#include "daxfile-util.h"

typedef struct {
    const DaxfileHookCall *call;
    const DaxfileConf *conf;
    DaxfileDomain *dom;
    char *owner;      /* "domain:NAME" */
    GPtrArray *notes; /* borrowed, may be NULL */
} Hook;

/* "domain 'vm1' nvdimm0 '/mnt/pmem/vm1.img'" */
static char *
dev_label(const Hook *h, const DaxfileNvdimm *nv)
{
    g_autofree char *dom = daxfile_escape(h->dom->name);
    g_autofree char *path = daxfile_escape(nv->path ? nv->path : "");
    g_autofree char *dev =
        nv->alias ? daxfile_escape(nv->alias)
                  : g_strdup_printf("%s#%u",
                                    daxfile_device_model_to_string(nv->model),
                                    nv->index);

    return g_strdup_printf("domain '%s' %s '%s'", dom, dev, path);
}

/* Prefix @local (moved into @error) with the device it is about. */
static gboolean
dev_fail(const Hook *h, const DaxfileNvdimm *nv, GError *local, GError **error)
{
    g_autofree char *label = dev_label(h, nv);

    g_prefix_error(&local, "%s: ", label);
    g_propagate_error(error, local);
    return FALSE;
}

/* Open the device's file inside its managed root and check who owns it
 * and that no hard link can lead outside the root. */
static DaxfileFile *
dev_open(const Hook *h, const DaxfileNvdimm *nv, const DaxfileRoot *root,
         GError **error)
{
    return daxfile_conf_open_managed(h->conf, root, nv->path, DAXFILE_OPEN_READ,
                                     error);
}

/* A device-dax device: the device settings as for a file, then the
 * device itself (daxfile-devdax.h). Its handle, or NULL. */
static DaxfileFile *
devdax_validate(const DaxfileNvdimm *nv, GError **error)
{
    g_autoptr(DaxfileDevdax) d = NULL;
    g_autoptr(DaxfileFile) f = NULL;

    if (!daxfile_nvdimm_check(nv, error))
        return NULL;
    f = daxfile_devdax_open(nv->path, &d, error);
    if (!f ||
        !daxfile_devdax_check(d, f->display, nv->size, nv->alignsize, error))
        return NULL;
    return g_steal_pointer(&f);
}

/* Everything prepare checks about one device and its file (@root NULL:
 * a device-dax device). */
static DaxfileFile *
dev_validate(const Hook *h, const DaxfileNvdimm *nv, const DaxfileRoot *root,
             GError **error)
{
    g_autoptr(DaxfileReport) report = NULL;
    g_autoptr(DaxfileFile) f = NULL;

    if (!root)
        return devdax_validate(nv, error);
    if (!daxfile_nvdimm_check(nv, error))
        return NULL;
    f = dev_open(h, nv, root, error);
    if (!f)
        return NULL;
    if ((guint64)f->st.st_size != nv->size) {
        g_autofree char *have = daxfile_size_format(f->st.st_size);
        g_autofree char *want = daxfile_size_format(nv->size);

        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is %s but <target><size> is %s, and QEMU refuses a "
                    "mismatch; fix: <size unit='KiB'>%" G_GUINT64_FORMAT
                    "</size>",
                    f->display, have, want, (guint64)f->st.st_size >> 10);
        return NULL;
    }
    report = daxfile_report_build(f, daxfile_nvdimm_page(nv),
                                  root->allow_non_dax, error);
    if (!report || !daxfile_report_require_ready(report, error))
        return NULL;
    return g_steal_pointer(&f);
}

/* The managed root of @nv, judged by what its path names, not by how it
 * is spelt: a plain path under a root is managed by it; any other path
 * that names a file in a managed root (relative, ".", "..", "//", through
 * a symbolic link or a bind mount) is refused, because QEMU would open it
 * by a spelling the hook's checks never saw. Anything else is not
 * managed (*ret_root NULL). */
static gboolean
dev_root(const Hook *h, const DaxfileNvdimm *nv, const DaxfileRoot **ret_root,
         GError **error)
{
    const DaxfileRoot *lexical = daxfile_conf_managed_root(h->conf, nv->path);
    g_autofree char *plain = NULL;
    g_autofree char *name = NULL;
    g_autofree char *fix = NULL;
    const DaxfileRoot *real;

    *ret_root = NULL;
    if (!nv->path)
        return TRUE;
    if (lexical && daxfile_path_is_plain(nv->path)) {
        *ret_root = lexical;
        return TRUE;
    }
    real = daxfile_conf_locate(h->conf, nv->path, &plain);
    if (!real && !lexical)
        return TRUE;
    name = daxfile_escape(nv->path);
    if (!real) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
                    "'%s' is not a plain path ('.', '..' or '//' in it) and "
                    "leads outside the managed root '%s'; fix: use a plain "
                    "absolute path inside the root",
                    name, lexical->path);
        return FALSE;
    }
    fix = daxfile_escape(plain);
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
                "'%s' names the managed file '%s' by another spelling "
                "(relative, '.', '..', '//', a symbolic link or a bind "
                "mount), which QEMU would open past the hook's checks; fix: "
                "use '%s' in the domain XML",
                name, fix, fix);
    return FALSE;
}

typedef struct {
    DaxfileNvdimm *nv;
    const DaxfileRoot *root; /* NULL: a device-dax device */
} ManagedDev;

/* A device-dax nvdimm the hook manages (device_dax=true) */
static gboolean
dev_is_devdax(const Hook *h, const DaxfileNvdimm *nv)
{
    return h->conf->device_dax && nv->path && daxfile_devdax_is(nv->path);
}

/* The nvdimms in a managed root, and the managed device-dax ones, that
 * the hook acts on (ManagedDev), or NULL when one of them is named by
 * another spelling. */
static GArray *
managed_devices(const Hook *h, gboolean with_readonly, GError **error)
{
    g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(ManagedDev));
    guint i;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        ManagedDev d = {g_ptr_array_index(h->dom->nvdimms, i), NULL};
        GError *local = NULL;

        if (!dev_root(h, d.nv, &d.root, &local)) {
            dev_fail(h, d.nv, local, error);
            return NULL;
        }
        if (!d.root && !dev_is_devdax(h, d.nv))
            continue;
        if (d.nv->readonly && !with_readonly)
            continue; /* the guest cannot write: nothing to freeze */
        g_array_append_val(out, d);
    }
    return g_steal_pointer(&out);
}

/* The devices with a plain path under a managed root */
static GArray *
plain_devices(const Hook *h)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(ManagedDev));
    guint i;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        ManagedDev d = {g_ptr_array_index(h->dom->nvdimms, i), NULL};

        if (d.nv->readonly || !daxfile_path_is_plain(d.nv->path))
            continue;
        d.root = daxfile_conf_managed_root(h->conf, d.nv->path);
        if (d.root || dev_is_devdax(h, d.nv))
            g_array_append_val(out, d);
    }
    return out;
}

/* Two nvdimms of one domain on the same file: QEMU accepts two backends
 * on one file and the guest sees two NVDIMMs aliasing one storage. */
static gboolean
check_no_alias(const Hook *h, GArray *devs, GError **error)
{
    g_autoptr(GArray) ids = g_array_new(FALSE, TRUE, sizeof(struct stat));
    guint i, j;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(h->dom->nvdimms, i);
        struct stat st = {0};

        if (nv->path && stat(nv->path, &st) < 0)
            memset(&st, 0, sizeof(st));
        g_array_append_val(ids, st);
        for (j = 0; st.st_ino && j < i; j++) {
            const struct stat *o = &g_array_index(ids, struct stat, j);
            DaxfileNvdimm *first = g_ptr_array_index(h->dom->nvdimms, j);
            g_autofree char *other = NULL;

            if (o->st_dev != st.st_dev || o->st_ino != st.st_ino ||
                devs->len == 0)
                continue;
            other = dev_label(h, first);
            dev_fail(
                h, nv,
                g_error_new(
                    DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "is the same file as %s, and the guest would see two pmem "
                    "devices over one storage; fix: give each device a file of "
                    "its own ('daxfile create')",
                    other),
                error);
            return FALSE;
        }
    }
    return TRUE;
}

/* The managed device among @devs whose file (@own, parallel to @devs) one
 * of @ids is, or NULL */
static const DaxfileNvdimm *
ref_hits_device(GArray *ids, GArray *devs, GArray *own)
{
    guint i;

    for (i = 0; i < own->len; i++) {
        const DaxfileIdentity *o = &g_array_index(own, DaxfileIdentity, i);

        if (daxfile_identities_have(ids, o->dev, o->ino))
            return g_array_index(devs, ManagedDev, i).nv;
    }
    return NULL;
}

/* The registry entry of someone else that @ids hits, or NULL */
static const DaxfileEntry *
ref_hits_entry(const Hook *h, GArray *ids, GPtrArray *entries)
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
ref_fail(const Hook *h, const DaxfileFileRef *ref, const DaxfileNvdimm *nv,
         const DaxfileEntry *e, GError **error)
{
    g_autofree char *dom = daxfile_escape(h->dom->name);
    g_autofree char *path = daxfile_escape(ref->path);
    g_autofree char *where = daxfile_escape(ref->where);
    g_autofree char *held = NULL;
    g_autofree char *owner = NULL;

    if (nv)
        return dev_fail(
            h, nv,
            g_error_new(
                DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                "is also named by %s ('%s'), and QEMU would open it there "
                "outside the nvdimm's backend, past static mode; fix: remove "
                "that reference, or give the nvdimm a file of its own "
                "('daxfile create')",
                where, path),
            error);
    held = daxfile_escape(e->path);
    owner = daxfile_escape(e->owner);
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                "domain '%s': %s '%s' names '%s', which '%s' holds as a "
                "managed pmem file (%s); fix: remove that reference, or stop "
                "'%s' first",
                dom, where, path, held, owner,
                daxfile_entry_state_to_string(e->state), owner);
    return FALSE;
}

/* Nothing else reaches a managed file: no other element of this domain
 * names the file of one of its managed nvdimms (QEMU would open it a
 * second time, outside the backend that static mode reasons about), and
 * no element names a file the registry holds for someone else. Files are
 * compared by what they are, however they are spelt. */
static gboolean
check_refs(const Hook *h, GArray *devs, GPtrArray *files, GError **error)
{
    g_autoptr(GPtrArray) refs = daxfile_domain_file_refs(h->dom);
    g_autoptr(GPtrArray) entries = daxfile_static_list(error);
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(DaxfileIdentity));
    g_autoptr(GArray) own = g_array_new(FALSE, TRUE, sizeof(DaxfileIdentity));
    guint i;

    if (!entries)
        return FALSE;
    if (files->len == 0 && entries->len == 0)
        return TRUE;
    g_array_set_size(own, files->len);
    for (i = 0; i < files->len; i++) {
        const DaxfileFile *f = g_ptr_array_index(files, i);

        g_array_index(own, DaxfileIdentity, i) =
            (DaxfileIdentity){f->st.st_dev, f->st.st_ino};
    }
    for (i = 0; i < refs->len; i++) {
        const DaxfileFileRef *ref = g_ptr_array_index(refs, i);
        const DaxfileNvdimm *nv;
        const DaxfileEntry *e;

        if (ref->nvdimm >= 0)
            continue; /* an nvdimm's own file: dev_root, check_no_alias */
        g_array_set_size(ids, 0);
        daxfile_path_identities(ref->path, ids);
        nv = ref_hits_device(ids, devs, own);
        e = nv ? NULL : ref_hits_entry(h, ids, entries);
        if (nv || e)
            return ref_fail(h, ref, nv, e, error);
    }
    return TRUE;
}

static GPtrArray *
files_new(void)
{
    return g_ptr_array_new_with_free_func((GDestroyNotify)daxfile_file_free);
}

/* The static-mode set of @devs over @files (parallel to @devs) */
static GArray *
dev_items(const Hook *h, GArray *devs, GPtrArray *files)
{
    GArray *items =
        g_array_sized_new(FALSE, TRUE, sizeof(DaxfileStaticItem), files->len);
    guint i;

    g_array_set_clear_func(items, (GDestroyNotify)daxfile_static_item_clear);
    for (i = 0; i < files->len; i++) {
        const ManagedDev *d = &g_array_index(devs, ManagedDev, i);
        DaxfileStaticItem it = {
            .file = g_ptr_array_index(files, i),
            .params = {.align = daxfile_nvdimm_page(d->nv),
                       .device = daxfile_device_model_to_string(d->nv->model),
                       .allow_non_dax = d->root && d->root->allow_non_dax,
                       .owner = h->owner,
                       .owner_uuid = h->dom->uuid,
                       .wait = TRUE},
        };

        g_array_append_val(items, it);
    }
    return items;
}

/* A set operation failed: on device @failed of @devs, or on the registry */
static gboolean
set_fail(const Hook *h, GArray *devs, guint failed, GError *local,
         GError **error)
{
    if (failed < devs->len)
        return dev_fail(h, g_array_index(devs, ManagedDev, failed).nv, local,
                        error);
    g_propagate_error(error, local);
    return FALSE;
}

/* prepare begin: validate every device, and reserve them all (or, with
 * the kernel mechanism, make them static) in one registry write */
static gboolean
hook_prepare(const Hook *h, GError **error)
{
    g_autoptr(GArray) devs = managed_devices(h, FALSE, error);
    g_autoptr(GPtrArray) files = files_new();
    g_autoptr(GArray) items = NULL;
    GError *local = NULL;
    guint failed = 0;
    guint i;

    if (!devs || !check_no_alias(h, devs, error))
        return FALSE;
    for (i = 0; i < devs->len; i++) {
        const ManagedDev *d = &g_array_index(devs, ManagedDev, i);
        DaxfileFile *f = dev_validate(h, d->nv, d->root, &local);

        if (!f)
            return dev_fail(h, d->nv, local, error);
        g_ptr_array_add(files, f);
    }
    if (!check_refs(h, devs, files, error))
        return FALSE;
    if (devs->len == 0)
        return TRUE;
    items = dev_items(h, devs, files);
    if (!daxfile_static_reserve_set((DaxfileStaticItem *)items->data,
                                    items->len, h->call->parent,
                                    h->call->parent_start, &failed, &local))
        return set_fail(h, devs, failed, local, error);
    return TRUE;
}

static void
note(const Hook *h, const DaxfileNvdimm *nv, const char *text)
{
    g_autofree char *label = dev_label(h, nv);

    if (h->notes)
        g_ptr_array_add(h->notes, g_strdup_printf("%s: %s", label, text));
}

/* What QEMU really mapped of the device's file @f: shared, all of it;
 * for an nvdimm also aligned to <alignsize> and with MAP_SYNC on DAX
 * (daxfile-attest.h) */
static gboolean
attest(const Hook *h, const DaxfileNvdimm *nv, pid_t pid, const char *smaps,
       const DaxfileFile *f, GError **error)
{
    g_auto(DaxfileAttestation) a = {0};
    gboolean nvdimm = nv->model == DAXFILE_DEVICE_NVDIMM;
    GError *local = NULL;

    if (daxfile_attest(pid, smaps, f, nv->size, nvdimm ? nv->alignsize : 0,
                       nvdimm, &a, &local))
        return TRUE;
    return dev_fail(h, nv, local, error);
}

/* started begin and reconnect begin: QEMU has the files mapped; attest
 * what it mapped, then engage them all, one registry write */
static gboolean
hook_engage(const Hook *h, GError **error)
{
    g_autoptr(GArray) devs = managed_devices(h, FALSE, error);
    g_autoptr(GPtrArray) files = files_new();
    g_autoptr(GArray) items = NULL;
    g_autofree char *smaps = NULL;
    GError *local = NULL;
    guint failed = 0;
    pid_t pid = -1;
    guint i;

    if (!devs)
        return FALSE;
    for (i = 0; i < devs->len; i++) {
        const ManagedDev *d = &g_array_index(devs, ManagedDev, i);
        DaxfileFile *f;

        /* A device-dax device is not attested: the kernel maps it shared
         * and aligned to its pages or not at all, and it has no metadata
         * that MAP_SYNC would protect. It is checked again. */
        if (!d->root) {
            f = devdax_validate(d->nv, &local);
        } else {
            if (!smaps) {
                pid = daxfile_attest_qemu_pid(
                    h->conf->qemu_pid_dir, h->dom->name, h->conf->path, error);
                if (pid < 0 || !(smaps = daxfile_attest_read_smaps(pid, error)))
                    return FALSE;
            }
            f = dev_open(h, d->nv, d->root, &local);
        }
        if (!f)
            return dev_fail(h, d->nv, local, error);
        g_ptr_array_add(files, f);
        if (d->root && !attest(h, d->nv, pid, smaps, f, error))
            return FALSE;
    }
    if (devs->len == 0)
        return TRUE;
    items = dev_items(h, devs, files);
    if (!daxfile_static_enable_set((DaxfileStaticItem *)items->data, items->len,
                                   &failed, &local))
        return set_fail(h, devs, failed, local, error);
    for (i = 0; i < items->len; i++) {
        const DaxfileStaticItem *it =
            &g_array_index(items, DaxfileStaticItem, i);

        if (it->result.warning)
            note(h, g_array_index(devs, ManagedDev, i).nv, it->result.warning);
    }
    return TRUE;
}

/* stopped end and release end: release every device this domain holds,
 * one registry write; entries of other owners and files that are not
 * static are none of this domain's business, and a file that is gone is
 * left to 'daxfile repair'. */
static gboolean
hook_release(const Hook *h, GError **error)
{
    g_autoptr(GArray) devs = managed_devices(h, FALSE, NULL);
    g_autoptr(GArray) opened = g_array_new(FALSE, FALSE, sizeof(ManagedDev));
    g_autoptr(GPtrArray) files = files_new();
    g_autoptr(GArray) items = NULL;
    GError *local = NULL;
    guint failed = 0;
    gboolean ok;
    guint i;

    /* A device named by another spelling was refused at prepare and never
     * engaged: there is nothing to release for it. */
    if (!devs)
        devs = plain_devices(h);
    for (i = 0; i < devs->len; i++) {
        const ManagedDev *d = &g_array_index(devs, ManagedDev, i);
        DaxfileFile *f = NULL;
        int fd = -1;

        if (d->root)
            f = daxfile_file_open_beneath(d->root->path, d->nv->path,
                                          DAXFILE_OPEN_READ, NULL);
        else if ((fd = open(d->nv->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >=
                 0)
            f = daxfile_file_new_from_fd(fd, d->nv->path, NULL);
        if (!f)
            continue;
        g_ptr_array_add(files, f);
        g_array_append_val(opened, *d);
    }
    if (files->len == 0)
        return TRUE;
    items = dev_items(h, opened, files);
    ok = daxfile_static_release_set((DaxfileStaticItem *)items->data,
                                    items->len, &failed, &local);
    if (!ok)
        set_fail(h, opened, failed, local, error);
    for (i = 0; i < items->len; i++) {
        const DaxfileStaticItem *it =
            &g_array_index(items, DaxfileStaticItem, i);

        if (it->not_ours || !it->released.owner ||
            it->released.layout_unchanged || !ok)
            continue;
        ok = dev_fail(h, g_array_index(opened, ManagedDev, i).nv,
                      g_error_new(DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                                  "'%s' was released but %s", it->file->display,
                                  it->released.change),
                      error);
    }
    return ok;
}

/* migrate/restore on the destination: the file exists (made when
 * create_missing allows), is provisioned and fits the device. */
static gboolean
ensure_file(const Hook *h, const DaxfileNvdimm *nv, const char *path,
            const DaxfileRoot *root, GError **error)
{
    DaxfileNvdimm mapped = *nv;
    g_autoptr(GError) local = NULL;
    g_autofree char *dir = g_path_get_dirname(path);
    g_autoptr(DaxfileFile) f = NULL;
    g_auto(DaxfileFd) dirfd = -1;

    mapped.path = (char *)path;
    f = dev_validate(h, &mapped, root, &local);
    if (f)
        return TRUE;
    if (!root->create_missing || !daxfile_nvdimm_check(nv, NULL) ||
        !g_error_matches(local, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND))
        return dev_fail(h, &mapped, g_steal_pointer(&local), error);
    g_clear_error(&local);
    dirfd = daxfile_dir_open_beneath(root->path, dir, &local);
    if (dirfd >= 0) {
        DaxfileCreateParams params = {.size = nv->size,
                                      .align = daxfile_nvdimm_page(nv),
                                      .allow_non_dax = root->allow_non_dax};
        g_autoptr(DaxfileReport) made =
            daxfile_create_at(dirfd, path, &params, NULL, &local);

        if (made)
            f = dev_validate(h, &mapped, root, &local);
    }
    if (!f)
        return dev_fail(h, &mapped, g_steal_pointer(&local), error);
    note(h, &mapped, "created and provisioned on this host");
    return TRUE;
}

static gboolean
hook_incoming(const Hook *h, char **ret_stdout, GError **error)
{
    g_autoptr(GHashTable) rewrites =
        g_hash_table_new_full(NULL, NULL, NULL, g_free);
    guint i;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(h->dom->nvdimms, i);
        char *mapped =
            nv->path ? daxfile_conf_map_path(h->conf, nv->path) : NULL;
        DaxfileNvdimm here = *nv;
        const DaxfileRoot *root = NULL;
        GError *local = NULL;

        here.path = mapped ? mapped : nv->path;
        if (mapped)
            g_hash_table_insert(rewrites, GUINT_TO_POINTER(nv->index), mapped);
        if (!dev_root(h, &here, &root, &local))
            return dev_fail(h, &here, local, error);
        if (nv->readonly || !root)
            continue;
        if (!ensure_file(h, nv, here.path, root, error))
            return FALSE;
    }
    if (g_hash_table_size(rewrites) == 0)
        return TRUE;
    *ret_stdout = daxfile_domain_rewrite_paths(h->dom, rewrites, error);
    return *ret_stdout != NULL;
}

static gboolean
is_op(const DaxfileHookCall *call, const char *op, const char *subop)
{
    return call->op && call->subop && STREQ(call->op, op) &&
           STREQ(call->subop, subop);
}

gboolean
daxfile_hook_run(const DaxfileHookCall *call, const DaxfileConf *conf,
                 char **ret_stdout, GPtrArray *notes, GError **error)
{
    g_autoptr(DaxfileDomain) dom = NULL;
    g_autofree char *owner = NULL;
    Hook h = {call, conf, NULL, NULL, notes};

    *ret_stdout = NULL;
    if (conf->roots->len == 0 && !conf->device_dax)
        return TRUE; /* nothing is managed: leave every domain alone */
    if (!is_op(call, "prepare", "begin") && !is_op(call, "started", "begin") &&
        !is_op(call, "stopped", "end") && !is_op(call, "release", "end") &&
        !is_op(call, "reconnect", "begin") &&
        !is_op(call, "migrate", "begin") && !is_op(call, "restore", "begin"))
        return TRUE;
    dom = daxfile_domain_parse(call->xml, call->xml_len, error);
    if (!dom)
        return FALSE;
    if (dom->nvdimms->len == 0 && !is_op(call, "prepare", "begin"))
        return TRUE; /* (prepare still checks what else it names) */
    owner = g_strdup_printf("domain:%s", dom->name);
    h.dom = dom;
    h.owner = owner;
    if (is_op(call, "prepare", "begin"))
        return hook_prepare(&h, error);
    if (is_op(call, "started", "begin") || is_op(call, "reconnect", "begin"))
        return hook_engage(&h, error);
    if (is_op(call, "stopped", "end") || is_op(call, "release", "end"))
        return hook_release(&h, error);
    return hook_incoming(&h, ret_stdout, error);
}

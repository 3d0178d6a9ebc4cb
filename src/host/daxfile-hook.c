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
#include "daxfile-hook-priv.h"
#include "daxfile-hook.h"
#include "daxfile-proc.h"
#include "daxfile-registry.h"
#include "daxfile-size.h"
#include "daxfile-static.h"
#include "daxfile-util.h"

char *
daxfile_hook_dev_label(const DaxfileHookCtx *h, const DaxfileNvdimm *nv)
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

char *
daxfile_hook_dev_cause(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
                       const char *message)
{
    g_autofree char *label = daxfile_hook_dev_label(h, nv);
    g_autofree char *prefix = g_strconcat(label, ": ", NULL);

    if (g_str_has_prefix(message, prefix))
        return g_strdup(message + strlen(prefix));
    return g_strdup(message);
}

gboolean
daxfile_hook_dev_fail(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
                      GError *local, GError **error)
{
    g_autofree char *label = daxfile_hook_dev_label(h, nv);

    g_prefix_error(&local, "%s: ", label);
    g_propagate_error(error, local);
    return FALSE;
}

/* Open the device's file inside its managed root and check who owns it
 * and that no hard link can lead outside the root. */
static DaxfileFile *
dev_open(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
         const DaxfileRoot *root, GError **error)
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
dev_validate(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
             const DaxfileRoot *root, GError **error)
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

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' is %s but <target><size> is %s, and QEMU refuses a mismatch; fix: <size unit='KiB'>%" G_GUINT64_FORMAT
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
 * by a spelling the hook's checks never saw; so is a path the hook cannot
 * place. Anything else is not managed (*ret_root NULL). */
gboolean
daxfile_hook_dev_root(const DaxfileHookCtx *h, const DaxfileNvdimm *nv,
                      const DaxfileRoot **ret_root, GError **error)
{
    const DaxfileRoot *lexical = daxfile_conf_managed_root(h->conf, nv->path);
    g_autofree char *plain = NULL;
    g_autofree char *name = NULL;
    g_autofree char *fix = NULL;
    const DaxfileRoot *real = NULL;

    *ret_root = NULL;
    if (!nv->path)
        return TRUE;
    if (lexical && daxfile_path_is_plain(nv->path)) {
        *ret_root = lexical;
        return TRUE;
    }
    if (!daxfile_conf_locate(h->conf, nv->path, &real, &plain, error))
        return FALSE;
    if (!real && !lexical)
        return TRUE;
    name = daxfile_escape(nv->path);
    if (!real) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "'%s' is not a plain path ('.', '..' or '//' in it) and leads outside the managed root '%s'; fix: use a plain absolute path inside the root",
            name, lexical->path);
        return FALSE;
    }
    fix = daxfile_escape(plain);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
        "'%s' names the managed file '%s' by another spelling (relative, '.', '..', '//', a symbolic link or a bind mount), which QEMU would open past the hook's checks; fix: use '%s' in the domain XML",
        name, fix, fix);
    return FALSE;
}

gboolean
daxfile_hook_dev_is_devdax(const DaxfileHookCtx *h, const DaxfileNvdimm *nv)
{
    return h->conf->device_dax && nv->path && daxfile_devdax_is(nv->path);
}

/* The nvdimms in a managed root, and the managed device-dax ones, that
 * the hook acts on (DaxfileHookDev), or NULL when one of them is named by
 * another spelling. A read-only one (<readonly/>) is one of them: QEMU
 * maps its file all the same, and the file is held for the domain as any
 * other, so no other domain takes it while this one runs. */
static GArray *
managed_devices(const DaxfileHookCtx *h, GError **error)
{
    g_autoptr(GArray) out = daxfile_hook_devs_new();
    guint i;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        DaxfileHookDev d = {g_ptr_array_index(h->dom->nvdimms, i)};
        GError *local = NULL;

        if (!daxfile_hook_dev_root(h, d.nv, &d.root, &local)) {
            daxfile_hook_dev_fail(h, d.nv, local, error);
            return NULL;
        }
        if (d.root || daxfile_hook_dev_is_devdax(h, d.nv))
            g_array_append_val(out, d);
    }
    return g_steal_pointer(&out);
}

/* The devices with a plain path under a managed root */
static GArray *
plain_devices(const DaxfileHookCtx *h)
{
    GArray *out = daxfile_hook_devs_new();
    guint i;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        DaxfileHookDev d = {g_ptr_array_index(h->dom->nvdimms, i)};

        if (!daxfile_path_is_plain(d.nv->path))
            continue;
        d.root = daxfile_conf_managed_root(h->conf, d.nv->path);
        if (d.root || daxfile_hook_dev_is_devdax(h, d.nv))
            g_array_append_val(out, d);
    }
    return out;
}

static void
dev_clear(DaxfileHookDev *d)
{
    daxfile_static_item_clear(&d->item);
    g_clear_pointer(&d->file, daxfile_file_free);
}

GArray *
daxfile_hook_devs_new(void)
{
    GArray *devs = g_array_new(FALSE, TRUE, sizeof(DaxfileHookDev));

    g_array_set_clear_func(devs, (GDestroyNotify)dev_clear);
    return devs;
}

/* @d's file, opened by a phase (owned by @d from now on) */
static void
dev_set_file(DaxfileHookDev *d, DaxfileFile *f)
{
    g_clear_pointer(&d->file, daxfile_file_free);
    d->file = f;
}

/* The static-mode items of @devs (each opened), as the set operations
 * take them: pointers to each device's own item, in @devs' order. At
 * started, @consumers holds the domain's attested QEMU, the only process
 * that may keep a file open for writing (NULL elsewhere: none may). */
static GPtrArray *
dev_items(const DaxfileHookCtx *h, GArray *devs, const GArray *consumers)
{
    GPtrArray *items = g_ptr_array_sized_new(devs->len);
    guint i;

    for (i = 0; i < devs->len; i++) {
        DaxfileHookDev *d = &g_array_index(devs, DaxfileHookDev, i);

        daxfile_static_item_clear(&d->item);
        d->item = (DaxfileStaticItem){
            .file = d->file,
            .params = {.align = daxfile_nvdimm_page(d->nv),
                       .device = daxfile_device_model_to_string(d->nv->model),
                       .allow_non_dax = d->root && d->root->allow_non_dax,
                       .owner = h->owner,
                       .owner_uuid = h->dom->uuid,
                       .consumers = consumers,
                       .wait = TRUE},
        };
        g_ptr_array_add(items, &d->item);
    }
    return items;
}

/* A set operation failed: on device @failed of @devs, or on the registry */
static gboolean
set_fail(const DaxfileHookCtx *h, GArray *devs, guint failed, GError *local,
         GError **error)
{
    if (failed < devs->len)
        return daxfile_hook_dev_fail(
            h, g_array_index(devs, DaxfileHookDev, failed).nv, local, error);
    g_propagate_error(error, local);
    return FALSE;
}

/* The registry has an entry for @f (of any owner) */
static gboolean
registry_has(const DaxfileFile *f)
{
    g_autoptr(GPtrArray) entries = daxfile_static_list(NULL);
    gboolean device = S_ISCHR(f->st.st_mode);
    guint64 dev = device ? f->st.st_rdev : f->st.st_dev;
    guint64 ino = device ? 0 : f->st.st_ino;
    guint i;

    for (i = 0; entries && i < entries->len; i++) {
        const DaxfileEntry *e = g_ptr_array_index(entries, i);

        if (e->dev == dev && e->ino == ino)
            return TRUE;
    }
    return FALSE;
}

/* No process but @allowed maps the file @f: another domain's QEMU that
 * hot-plugged it (libvirt runs no hook then) or any other program would
 * share the memory of this domain's device. At prepare (@allowed: none,
 * or the QEMU a device is being hot-plugged into) a file the registry
 * has is left to the reservation, which refuses another owner by name
 * and lets this domain take its own (an incoming migration on this
 * host); at started, only the attested QEMU may map it. */
static gboolean
dev_check_mappers(const GArray *allowed, const DaxfileFile *f, gboolean prepare,
                  GError **error)
{
    g_autoptr(GArray) pids =
        S_ISCHR(f->st.st_mode)
            ? daxfile_proc_mappers_rdev(f->st.st_rdev)
            : daxfile_proc_mappers(f->st.st_dev, f->st.st_ino);
    g_autofree char *comm = NULL;
    pid_t other = 0;
    guint i;

    for (i = 0; i < pids->len && !other; i++)
        if (!daxfile_pid_in(allowed, g_array_index(pids, pid_t, i)))
            other = g_array_index(pids, pid_t, i);
    if (!other || (prepare && registry_has(f)))
        return TRUE;
    comm = daxfile_proc_comm(other);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
        "'%s' is mapped by process %d (%s), which would share its memory with this domain; fix: stop that process first (another domain that hot-plugged the file, or any other program), or give this device a file of its own ('daxfile create')",
        f->display, (int)other, comm);
    return FALSE;
}

/* prepare begin over @devs: validate every device, and reserve them all
 * (or, with the kernel mechanism, make them static) in one registry
 * write */
gboolean
daxfile_hook_prepare_devs(const DaxfileHookCtx *h, GArray *devs, GError **error)
{
    g_autoptr(GPtrArray) items = NULL;
    GError *local = NULL;
    guint failed = 0;
    guint i;

    if (!daxfile_hook_check_no_alias(h, devs, error))
        return FALSE;
    for (i = 0; i < devs->len; i++) {
        DaxfileHookDev *d = &g_array_index(devs, DaxfileHookDev, i);

        dev_set_file(d, dev_validate(h, d->nv, d->root, &local));
        if (!d->file || !dev_check_mappers(h->mappers, d->file, TRUE, &local))
            return daxfile_hook_dev_fail(h, d->nv, local, error);
    }
    if (!daxfile_hook_check_refs(h, devs, error))
        return FALSE;
    if (devs->len == 0)
        return TRUE;
    items = dev_items(h, devs, NULL);
    if (!daxfile_static_reserve_set((DaxfileStaticItem *const *)items->pdata,
                                    items->len, h->call->parent,
                                    h->call->parent_start, &failed, &local))
        return set_fail(h, devs, failed, local, error);
    return TRUE;
}

static gboolean
hook_prepare(const DaxfileHookCtx *h, char **ret_stdout G_GNUC_UNUSED,
             GError **error)
{
    g_autoptr(GArray) devs = managed_devices(h, error);

    return devs && daxfile_hook_prepare_devs(h, devs, error);
}

static void
note(const DaxfileHookCtx *h, const DaxfileNvdimm *nv, const char *text)
{
    g_autofree char *label = daxfile_hook_dev_label(h, nv);

    if (h->notes)
        g_ptr_array_add(h->notes, g_strdup_printf("%s: %s", label, text));
}

/* What QEMU really mapped of the device's file @f: shared, all of it;
 * for an nvdimm (<readonly/> or not: QEMU maps it the same, and
 * 'daxfile status' judges it by the registry, which knows no read-only)
 * also aligned to <alignsize> and with MAP_SYNC on DAX (daxfile-attest.h);
 * and no other process maps it */
static gboolean
attest(const DaxfileHookCtx *h, const DaxfileNvdimm *nv, pid_t pid,
       const char *smaps, const DaxfileFile *f, GError **error)
{
    g_auto(DaxfileAttestation) a = {0};
    gboolean nvdimm = nv->model == DAXFILE_DEVICE_NVDIMM;
    GError *local = NULL;

    g_autoptr(GArray) qemu = g_array_new(FALSE, FALSE, sizeof(pid_t));

    g_array_append_val(qemu, pid);
    if (daxfile_attest(pid, smaps, f, nv->size, nvdimm ? nv->alignsize : 0,
                       nvdimm, &a, &local) &&
        dev_check_mappers(qemu, f, FALSE, &local))
        return TRUE;
    return daxfile_hook_dev_fail(h, nv, local, error);
}

/* The QEMU of the domain (libvirt's pid file) and its smaps, read once
 * for all of its devices */
static gboolean
qemu_smaps(const DaxfileHookCtx *h, pid_t *ret_pid, char **ret_smaps,
           GError **error)
{
    *ret_pid = daxfile_attest_qemu_pid(h->conf->qemu_pid_dir, h->dom->name,
                                       h->conf->path, error);
    return *ret_pid > 0 &&
           (*ret_smaps = daxfile_attest_read_smaps(*ret_pid, error)) != NULL;
}

/* started begin over @devs: QEMU has the files mapped; attest what it
 * mapped, then engage them all, one registry write */
gboolean
daxfile_hook_engage_devs(const DaxfileHookCtx *h, GArray *devs, GError **error)
{
    g_autoptr(GPtrArray) items = NULL;
    g_autoptr(GArray) qemu = g_array_new(FALSE, FALSE, sizeof(pid_t));
    g_autofree char *smaps = NULL;
    GError *local = NULL;
    guint failed = 0;
    pid_t pid = -1;
    guint i;

    for (i = 0; i < devs->len; i++) {
        DaxfileHookDev *d = &g_array_index(devs, DaxfileHookDev, i);
        DaxfileFile *f;

        /* A device-dax device is not attested: the kernel maps it shared
         * and aligned to its pages or not at all, and it has no metadata
         * that MAP_SYNC would protect. It is checked again. */
        if (!d->root)
            f = devdax_validate(d->nv, &local);
        else if (!smaps && !qemu_smaps(h, &pid, &smaps, error))
            return FALSE;
        else
            f = dev_open(h, d->nv, d->root, &local);
        if (!f)
            return daxfile_hook_dev_fail(h, d->nv, local, error);
        dev_set_file(d, f);
        if (d->root && !attest(h, d->nv, pid, smaps, f, error))
            return FALSE;
    }
    if (devs->len == 0)
        return TRUE;
    if (pid > 0)
        g_array_append_val(qemu, pid);
    items = dev_items(h, devs, qemu);
    if (!daxfile_static_enable_set((DaxfileStaticItem *const *)items->pdata,
                                   items->len, &failed, &local))
        return set_fail(h, devs, failed, local, error);
    for (i = 0; i < devs->len; i++) {
        const DaxfileHookDev *d = &g_array_index(devs, DaxfileHookDev, i);

        if (d->item.result.warning)
            note(h, d->nv, d->item.result.warning);
    }
    return TRUE;
}

gboolean
daxfile_hook_hold_unguarded(const DaxfileHookCtx *h, const DaxfileHookDev *d,
                            const char *reason, GError **error)
{
    g_autoptr(DaxfileDevdax) dd = NULL;
    g_autoptr(GArray) one = daxfile_hook_devs_new();
    g_autoptr(GPtrArray) items = NULL;
    DaxfileHookDev copy = {d->nv, d->root};
    GError *local = NULL;
    pid_t qemu;

    copy.file = d->root ? dev_open(h, d->nv, d->root, &local)
                        : daxfile_devdax_open(d->nv->path, &dd, &local);
    if (!copy.file)
        return daxfile_hook_dev_fail(h, d->nv, local, error);
    qemu = daxfile_attest_qemu_pid(h->conf->qemu_pid_dir, h->dom->name,
                                   h->conf->path, NULL);
    g_array_append_val(one, copy);
    items = dev_items(h, one, NULL);
    if (daxfile_static_hold_unguarded(
            g_ptr_array_index(items, 0), qemu > 0 ? qemu : 0,
            qemu > 0 ? daxfile_proc_start_time(qemu) : 0, reason, &local))
        return TRUE;
    return daxfile_hook_dev_fail(h, d->nv, local, error);
}

/* reconnect begin (libvirtd restarted): as started, but libvirt kills a
 * running domain whose reconnect hook fails, and that protects nothing
 * the guest has not had already. So a device that cannot be made static
 * is held for the domain unguarded, and said; the hook succeeds. */
static gboolean
hook_reconnect_devs(const DaxfileHookCtx *h, GArray *devs)
{
    guint i;

    if (daxfile_hook_engage_devs(h, devs, NULL))
        return TRUE;
    for (i = 0; i < devs->len; i++) {
        const DaxfileHookDev *d = &g_array_index(devs, DaxfileHookDev, i);
        g_autoptr(GArray) one = daxfile_hook_devs_new();
        DaxfileHookDev copy = {d->nv, d->root};
        g_autoptr(GError) why = NULL;
        g_autofree char *cause = NULL;
        g_autofree char *text = NULL;

        g_array_append_val(one, copy);
        if (daxfile_hook_engage_devs(h, one, &why))
            continue;
        cause = daxfile_hook_dev_cause(h, d->nv, why->message);
        if (!daxfile_hook_hold_unguarded(h, d, cause, NULL))
            text = g_strdup_printf("not made static at reconnect: %s", cause);
        else
            text = g_strdup_printf(
                "not made static at reconnect, held unguarded until the domain stops: %s",
                cause);
        note(h, d->nv, text);
    }
    return TRUE;
}

/* started begin: QEMU has the files mapped */
static gboolean
hook_started(const DaxfileHookCtx *h, char **ret_stdout G_GNUC_UNUSED,
             GError **error)
{
    g_autoptr(GArray) devs = managed_devices(h, error);

    return devs && daxfile_hook_engage_devs(h, devs, error);
}

/* reconnect begin: as started, a device that cannot be made static held
 * unguarded (hook_reconnect_devs()) */
static gboolean
hook_reconnect(const DaxfileHookCtx *h, char **ret_stdout G_GNUC_UNUSED,
               GError **error)
{
    g_autoptr(GArray) devs = managed_devices(h, error);

    return devs && hook_reconnect_devs(h, devs);
}

/* stopped end and release end: release every device this domain holds,
 * one registry write; entries of other owners and files that are not
 * static are none of this domain's business, and a file that is gone is
 * left to 'daxfile repair'. */
gboolean
daxfile_hook_release_devs(const DaxfileHookCtx *h, GArray *devs, GError **error)
{
    g_autoptr(GPtrArray) items = NULL;
    GError *local = NULL;
    guint failed = 0;
    gboolean ok;
    guint i;

    for (i = devs->len; i-- > 0;) {
        DaxfileHookDev *d = &g_array_index(devs, DaxfileHookDev, i);
        DaxfileFile *f = NULL;
        int fd = -1;

        if (d->root)
            f = daxfile_file_open_beneath(d->root->path, d->nv->path,
                                          DAXFILE_OPEN_READ, NULL);
        else if ((fd = open(d->nv->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >=
                 0)
            f = daxfile_file_new_from_fd(fd, d->nv->path, NULL);
        if (f)
            dev_set_file(d, f);
        else /* gone: left to 'daxfile repair' */
            g_array_remove_index(devs, i);
    }
    if (devs->len == 0)
        return TRUE;
    items = dev_items(h, devs, NULL);
    ok = daxfile_static_release_set((DaxfileStaticItem *const *)items->pdata,
                                    items->len, &failed, &local);
    if (!ok)
        set_fail(h, devs, failed, local, error);
    for (i = 0; i < devs->len; i++) {
        const DaxfileHookDev *d = &g_array_index(devs, DaxfileHookDev, i);

        if (d->item.not_ours || !d->item.released.owner ||
            d->item.released.layout_unchanged || !ok)
            continue;
        ok = daxfile_hook_dev_fail(
            h, d->nv,
            g_error_new(DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                        "'%s' was released but %s", d->file->display,
                        d->item.released.change),
            error);
    }
    return ok;
}

static gboolean
hook_release(const DaxfileHookCtx *h, char **ret_stdout G_GNUC_UNUSED,
             GError **error)
{
    g_autoptr(GArray) devs = managed_devices(h, NULL);

    /* A device named by another spelling was refused at prepare and never
     * engaged: there is nothing to release for it. */
    if (!devs)
        devs = plain_devices(h);
    return daxfile_hook_release_devs(h, devs, error);
}

/* migrate/restore on the destination: the file exists (made when
 * create_missing allows), is provisioned and fits the device. */
static gboolean
ensure_file(const DaxfileHookCtx *h, const DaxfileNvdimm *nv, const char *path,
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
        return daxfile_hook_dev_fail(h, &mapped, g_steal_pointer(&local),
                                     error);
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
        return daxfile_hook_dev_fail(h, &mapped, g_steal_pointer(&local),
                                     error);
    note(h, &mapped, "created and provisioned on this host");
    return TRUE;
}

static gboolean
hook_incoming(const DaxfileHookCtx *h, char **ret_stdout, GError **error)
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
        if (!daxfile_hook_dev_root(h, &here, &root, &local))
            return daxfile_hook_dev_fail(h, &here, local, error);
        /* a read-only device's file is never made here: the guest
         * expects the content it had, not zeros */
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

/* The operations the hook acts on (libvirt's hooks page: qemu); libvirt
 * calls it for others too, which it leaves alone */
static const struct {
    const char *op;
    const char *subop;
    gboolean (*run)(const DaxfileHookCtx *h, char **ret_stdout, GError **error);
    gboolean without_nvdimm; /* runs for a domain without one: prepare
                              * checks what else the domain names */
} phases[] = {
    {"prepare", "begin", hook_prepare, TRUE},
    {"started", "begin", hook_started, FALSE},
    {"reconnect", "begin", hook_reconnect, FALSE},
    {"stopped", "end", hook_release, FALSE},
    {"release", "end", hook_release, FALSE},
    {"migrate", "begin", hook_incoming, FALSE},
    {"restore", "begin", hook_incoming, FALSE},
};

gboolean
daxfile_hook_run(const DaxfileHookCall *call, const DaxfileConf *conf,
                 char **ret_stdout, GPtrArray *notes, GError **error)
{
    g_autoptr(DaxfileDomain) dom = NULL;
    g_autofree char *owner = NULL;
    DaxfileHookCtx h = {call, conf, NULL, NULL, notes, NULL};
    gsize i;

    *ret_stdout = NULL;
    if (conf->roots->len == 0 && !conf->device_dax)
        return TRUE; /* nothing is managed: leave every domain alone */
    if (!call->op || !call->subop)
        return TRUE;
    for (i = 0; i < G_N_ELEMENTS(phases); i++)
        if (STREQ(call->op, phases[i].op) &&
            STREQ(call->subop, phases[i].subop))
            break;
    if (i == G_N_ELEMENTS(phases))
        return TRUE;
    dom = daxfile_domain_parse(call->xml, call->xml_len, error);
    if (!dom)
        return FALSE;
    if (dom->nvdimms->len == 0 && !phases[i].without_nvdimm)
        return TRUE;
    owner = g_strdup_printf("domain:%s", dom->name);
    h.dom = dom;
    h.owner = owner;
    return phases[i].run(&h, ret_stdout, error);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-create.h"
#include "daxfile-error.h"
#include "daxfile-file.h"
#include "daxfile-hook.h"
#include "daxfile-size.h"
#include "daxfile-static.h"
#include "daxfile-util.h"

typedef struct {
    const DaxfileHookCall *call;
    const DaxfileConf *conf;
    DaxfileDomain *dom;
    char *owner;       /* "domain:NAME" */
    GPtrArray *notes;  /* borrowed, may be NULL */
} Hook;

/* "domain 'vm1' nvdimm0 '/mnt/pmem/vm1.img'" */
static char *
dev_label(const Hook *h, const DaxfileNvdimm *nv)
{
    g_autofree char *dom = daxfile_escape(h->dom->name);
    g_autofree char *path = daxfile_escape(nv->path ? nv->path : "");
    g_autofree char *dev = nv->alias ? daxfile_escape(nv->alias)
                                     : g_strdup_printf("nvdimm#%u", nv->index);

    return g_strdup_printf("domain '%s' %s '%s'", dom, dev, path);
}

/* Prefix @local (moved into @error) with the device it is about. */
static gboolean
dev_fail(const Hook *h, const DaxfileNvdimm *nv, GError *local,
         GError **error)
{
    g_autofree char *label = dev_label(h, nv);

    g_prefix_error(&local, "%s: ", label);
    g_propagate_error(error, local);
    return FALSE;
}

gboolean
daxfile_hook_check_device(const DaxfileNvdimm *nv, GError **error)
{
    g_autoptr(GError) align_error = NULL;
    g_autofree char *size = daxfile_size_format(nv->size);
    g_autofree char *label = daxfile_size_format(nv->label_size);
    guint64 visible;

    if (!nv->access || STRNEQ(nv->access, "shared")) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "access is '%s', so guest writes never reach the file; "
                    "fix: <memory model='nvdimm' access='shared'>",
                    nv->access ? nv->access : "unset (private)");
        return FALSE;
    }
    if (!nv->pmem) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "<source> has no <pmem/>, so QEMU maps the file without "
                    "MAP_SYNC and libvirt preallocates it; fix: add <pmem/> "
                    "to <source>");
        return FALSE;
    }
    if (!nv->alignsize) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "<source> has no <alignsize>, so the mapping is not "
                    "aligned for huge pages; fix: add <alignsize "
                    "unit='KiB'>2048</alignsize> to <source>");
        return FALSE;
    }
    if (!daxfile_align_check(nv->alignsize, &align_error)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "<alignsize>: %s", align_error->message);
        return FALSE;
    }
    if (!nv->size) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "<target> has no <size>; fix: set it to the file's size");
        return FALSE;
    }
    if (nv->label_size && nv->label_size < DAXFILE_MIN_LABEL_SIZE) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "label size %s is below QEMU's minimum of 128 KiB; fix: "
                    "<label><size unit='KiB'>128</size></label>", label);
        return FALSE;
    }
    visible = nv->label_size < nv->size
                  ? DAXFILE_ALIGN_DOWN(nv->size - nv->label_size,
                                       nv->alignsize)
                  : 0;
    if (visible == 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "the guest would see 0 bytes (size %s minus label %s, "
                    "aligned down to <alignsize>); fix: a larger file and "
                    "<size>, or a smaller label", size, label);
        return FALSE;
    }
    return TRUE;
}

/* Open the device's file inside its managed root and check who owns it
 * and that no hard link can lead outside the root. */
static int
dev_open(const Hook *h, const DaxfileNvdimm *nv, const DaxfileRoot *root,
         struct stat *st, GError **error)
{
    g_autofree char *name = daxfile_escape(nv->path);
    g_auto(DaxfileFd) fd = daxfile_file_open_beneath(root->path, nv->path,
                                                     DAXFILE_OPEN_READ, st,
                                                     error);

    if (fd < 0)
        return -1;
    if (st->st_nlink > 1) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
                    "'%s' has %lu hard links, and a hard link can lead "
                    "outside the managed root; fix: give the domain a file "
                    "of its own ('daxfile create')",
                    name, (unsigned long)st->st_nlink);
        return -1;
    }
    if (!daxfile_conf_trusts_uid(h->conf, st->st_uid)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
                    "'%s' is owned by uid %u, which is not in trusted_owners "
                    "of '%s'; fix: chown it to root, or trust that user",
                    name, (unsigned)st->st_uid, h->conf->path);
        return -1;
    }
    return g_steal_fd(&fd);
}

/* Everything prepare checks about one device and its file. */
static int
dev_validate(const Hook *h, const DaxfileNvdimm *nv, const DaxfileRoot *root,
             GError **error)
{
    g_autoptr(DaxfileReport) report = NULL;
    g_auto(DaxfileFd) fd = -1;
    struct stat st;

    if (!daxfile_hook_check_device(nv, error))
        return -1;
    fd = dev_open(h, nv, root, &st, error);
    if (fd < 0)
        return -1;
    if ((guint64)st.st_size != nv->size) {
        g_autofree char *name = daxfile_escape(nv->path);
        g_autofree char *have = daxfile_size_format(st.st_size);
        g_autofree char *want = daxfile_size_format(nv->size);

        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is %s but <target><size> is %s, and QEMU refuses a "
                    "mismatch; fix: <size unit='KiB'>%" G_GUINT64_FORMAT
                    "</size>", name, have, want, (guint64)st.st_size >> 10);
        return -1;
    }
    report = daxfile_report_build(fd, nv->path, nv->alignsize,
                                  root->allow_non_dax, error);
    if (!report || !daxfile_report_require_ready(report, error))
        return -1;
    return g_steal_fd(&fd);
}

/* The nvdimms under a managed root that the hook acts on */
static GPtrArray *
managed_devices(const Hook *h, gboolean with_readonly)
{
    GPtrArray *out = g_ptr_array_new();
    guint i;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(h->dom->nvdimms, i);

        if (!daxfile_conf_managed_root(h->conf, nv->path))
            continue;
        if (nv->readonly && !with_readonly)
            continue; /* the guest cannot write: nothing to freeze */
        g_ptr_array_add(out, nv);
    }
    return out;
}

static void
unreserve(const Hook *h, GPtrArray *devs, guint n, GArray *fds)
{
    guint i;

    for (i = 0; i < n; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(devs, i);
        g_auto(DaxfileDisableResult) res = {0};

        daxfile_static_disable(g_array_index(fds, int, i), nv->path, h->owner,
                               TRUE, &res, NULL);
    }
}

static void
close_fds(GArray *fds)
{
    guint i;

    for (i = 0; i < fds->len; i++)
        close(g_array_index(fds, int, i));
}

static gboolean
hook_prepare(const Hook *h, GError **error)
{
    g_autoptr(GPtrArray) devs = managed_devices(h, FALSE);
    g_autoptr(GArray) fds = g_array_new(FALSE, FALSE, sizeof(int));
    GError *local = NULL;
    gboolean ok = TRUE;
    guint i;

    for (i = 0; ok && i < devs->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(devs, i);
        int fd = dev_validate(h, nv, daxfile_conf_managed_root(h->conf,
                                                               nv->path),
                              &local);

        if (fd < 0)
            ok = dev_fail(h, nv, local, error);
        else
            g_array_append_val(fds, fd);
    }
    for (i = 0; ok && i < devs->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(devs, i);

        if (!daxfile_static_reserve(g_array_index(fds, int, i), nv->path,
                                    h->owner, h->dom->uuid, nv->alignsize,
                                    &local)) {
            unreserve(h, devs, i, fds);
            ok = dev_fail(h, nv, local, error);
        }
    }
    close_fds(fds);
    return ok;
}

static void
note(const Hook *h, const DaxfileNvdimm *nv, const char *text)
{
    g_autofree char *label = dev_label(h, nv);

    if (h->notes)
        g_ptr_array_add(h->notes, g_strdup_printf("%s: %s", label, text));
}

static gboolean
engage_device(const Hook *h, const DaxfileNvdimm *nv, GError **error)
{
    const DaxfileRoot *root = daxfile_conf_managed_root(h->conf, nv->path);
    DaxfileEnableParams params = {
        .align = nv->alignsize,
        .allow_non_dax = root->allow_non_dax,
        .owner = h->owner,
        .owner_uuid = h->dom->uuid,
        .wait = TRUE,
    };
    g_auto(DaxfileEnableResult) result = {0};
    g_auto(DaxfileFd) fd = -1;
    GError *local = NULL;
    struct stat st;

    fd = dev_open(h, nv, root, &st, &local);
    if (fd < 0 ||
        !daxfile_static_enable(fd, nv->path, &params, &result, &local))
        return dev_fail(h, nv, local, error);
    if (result.warning)
        note(h, nv, result.warning);
    return TRUE;
}

/* started begin and reconnect begin: QEMU has the files mapped */
static gboolean
hook_engage(const Hook *h, GError **error)
{
    g_autoptr(GPtrArray) devs = managed_devices(h, FALSE);
    guint i;

    for (i = 0; i < devs->len; i++) {
        if (!engage_device(h, g_ptr_array_index(devs, i), error))
            return FALSE;
    }
    return TRUE;
}

/* Release one device; entries of other owners and files that are not
 * static are none of this domain's business. */
static gboolean
release_device(const Hook *h, const DaxfileNvdimm *nv, GError **error)
{
    const DaxfileRoot *root = daxfile_conf_managed_root(h->conf, nv->path);
    g_auto(DaxfileDisableResult) result = {0};
    g_autoptr(GError) local = NULL;
    g_auto(DaxfileFd) fd = -1;
    g_autofree char *name = daxfile_escape(nv->path);

    fd = daxfile_file_open_beneath(root->path, nv->path, DAXFILE_OPEN_READ,
                                   NULL, NULL);
    if (fd < 0)
        return TRUE; /* gone: 'daxfile repair' drops its entry */
    if (!daxfile_static_disable(fd, nv->path, h->owner, TRUE, &result,
                                &local)) {
        if (g_error_matches(local, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND) ||
            g_error_matches(local, DAXFILE_ERROR, DAXFILE_ERROR_BUSY))
            return TRUE;
        return dev_fail(h, nv, g_steal_pointer(&local), error);
    }
    if (result.layout_unchanged)
        return TRUE;
    local = g_error_new(DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                        "'%s' was released but %s", name, result.change);
    return dev_fail(h, nv, g_steal_pointer(&local), error);
}

static gboolean
hook_release(const Hook *h, GError **error)
{
    g_autoptr(GPtrArray) devs = managed_devices(h, FALSE);
    gboolean ok = TRUE;
    guint i;

    /* release everything even when one device fails */
    for (i = 0; i < devs->len; i++) {
        GError **err = ok ? error : NULL;

        if (!release_device(h, g_ptr_array_index(devs, i), err))
            ok = FALSE;
    }
    return ok;
}

/* migrate/restore on the destination: the file exists (made when
 * create_missing allows), is provisioned and fits the device. */
static gboolean
ensure_file(const Hook *h, const DaxfileNvdimm *nv, const char *path,
            GError **error)
{
    const DaxfileRoot *root = daxfile_conf_managed_root(h->conf, path);
    DaxfileNvdimm mapped = *nv;
    g_autoptr(GError) local = NULL;
    g_autofree char *dir = g_path_get_dirname(path);
    g_auto(DaxfileFd) fd = -1;
    g_auto(DaxfileFd) dirfd = -1;

    mapped.path = (char *)path;
    fd = dev_validate(h, &mapped, root, &local);
    if (fd >= 0)
        return TRUE;
    if (!root->create_missing || !daxfile_hook_check_device(nv, NULL) ||
        !g_error_matches(local, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND))
        return dev_fail(h, &mapped, g_steal_pointer(&local), error);
    g_clear_error(&local);
    dirfd = daxfile_dir_open_beneath(root->path, dir, &local);
    if (dirfd >= 0) {
        DaxfileCreateParams params = {.size = nv->size,
                                      .align = nv->alignsize,
                                      .allow_non_dax = root->allow_non_dax};
        g_autoptr(DaxfileReport) made = daxfile_create_at(dirfd, path,
                                                          &params, NULL,
                                                          &local);

        if (made)
            fd = dev_validate(h, &mapped, root, &local);
    }
    if (fd < 0)
        return dev_fail(h, &mapped, g_steal_pointer(&local), error);
    note(h, &mapped, "created and provisioned on this host");
    return TRUE;
}

static gboolean
hook_incoming(const Hook *h, char **ret_stdout, GError **error)
{
    g_autoptr(GHashTable) rewrites = g_hash_table_new_full(NULL, NULL, NULL,
                                                           g_free);
    guint i;

    for (i = 0; i < h->dom->nvdimms->len; i++) {
        DaxfileNvdimm *nv = g_ptr_array_index(h->dom->nvdimms, i);
        char *mapped = nv->path ? daxfile_conf_map_path(h->conf, nv->path)
                                : NULL;
        const char *path = mapped ? mapped : nv->path;

        if (mapped)
            g_hash_table_insert(rewrites, GUINT_TO_POINTER(nv->index), mapped);
        if (nv->readonly || !daxfile_conf_managed_root(h->conf, path))
            continue;
        if (!ensure_file(h, nv, path, error))
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
daxfile_hook_run_notes(const DaxfileHookCall *call, const DaxfileConf *conf,
                       char **ret_stdout, GPtrArray *notes, GError **error)
{
    g_autoptr(DaxfileDomain) dom = NULL;
    g_autofree char *owner = NULL;
    Hook h = {call, conf, NULL, NULL, notes};

    *ret_stdout = NULL;
    if (conf->roots->len == 0)
        return TRUE; /* nothing is managed: leave every domain alone */
    if (!is_op(call, "prepare", "begin") && !is_op(call, "started", "begin") &&
        !is_op(call, "stopped", "end") && !is_op(call, "release", "end") &&
        !is_op(call, "reconnect", "begin") &&
        !is_op(call, "migrate", "begin") && !is_op(call, "restore", "begin"))
        return TRUE;
    dom = daxfile_domain_parse(call->xml, call->xml_len, error);
    if (!dom)
        return FALSE;
    if (dom->nvdimms->len == 0)
        return TRUE;
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

gboolean
daxfile_hook_run(const DaxfileHookCall *call, const DaxfileConf *conf,
                 char **ret_stdout, GError **error)
{
    return daxfile_hook_run_notes(call, conf, ret_stdout, NULL, error);
}

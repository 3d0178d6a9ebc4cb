/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "daxfile-align.h"
#include "daxfile-devdax.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-guard.h"
#include "daxfile-kernel.h"
#include "daxfile-mmap.h"
#include "daxfile-mount.h"
#include "daxfile-proc.h"
#include "daxfile-registry.h"
#include "daxfile-size.h"
#include "daxfile-wipe.h"
#include "daxfile-wipes.h"

/* zeroed and made durable between two progress marks */
#define WIPE_CHUNK (8u << 20)

void
daxfile_wipe_result_clear(DaxfileWipeResult *r)
{
    g_clear_pointer(&r->sha256, g_free);
}

static gboolean
mark(int fd, const char *name, guint64 done, gboolean durable, GError **error)
{
    g_autofree char *value = g_strdup_printf("%" G_GUINT64_FORMAT, done);

    if (fsetxattr(fd, DAXFILE_WIPE_XATTR, value, strlen(value), 0) < 0 ||
        (durable && fsync(fd) < 0)) {
        daxfile_set_error_errno(
            error, errno,
            "Cannot record the wipe's progress on '%s' (extended attribute %s)",
            name, DAXFILE_WIPE_XATTR);
        return FALSE;
    }
    return TRUE;
}

/* At most this many processes are named in a message */
#define USERS_NAMED 4

/* No process but this one maps @f or holds it open (@st: its stat): a
 * QEMU the registry does not know (a hot-plugged device, another
 * domain's <disk>, a domain started before daxfile was installed) or any
 * other program would see its memory or data zeroed under it. */
static gboolean
unused(const DaxfileFile *f, const struct stat *st, GError **error)
{
    g_autoptr(GArray) users = S_ISCHR(st->st_mode)
                                  ? daxfile_proc_users_rdev(st->st_rdev)
                                  : daxfile_proc_users(st->st_dev, st->st_ino);
    g_autoptr(GString) who = g_string_new(NULL);
    guint i;

    if (users->len == 0)
        return TRUE;
    for (i = 0; i < users->len && i < USERS_NAMED; i++) {
        const DaxfileProcUser *u = &g_array_index(users, DaxfileProcUser, i);
        g_autofree char *comm = daxfile_proc_comm(u->pid);
        g_autofree char *shown = daxfile_escape(comm);
        const char *how = "holds it open";

        if (u->use == (DAXFILE_PROC_MAPS | DAXFILE_PROC_OPEN))
            how = "maps it and holds it open";
        else if (u->use == DAXFILE_PROC_MAPS)
            how = "maps it";
        g_string_append_printf(who, "%spid %d (%s) %s", i ? ", " : "",
                               (int)u->pid, shown, how);
    }
    if (users->len > USERS_NAMED)
        g_string_append_printf(who, ", and %u more processes",
                               users->len - USERS_NAMED);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
        "'%s' is in use: %s, and a wipe would zero what it reads; fix: stop that process first, then wipe it again",
        f->display, who->str);
    return FALSE;
}

/* No owner may hold it: a registry entry, the immutable flag, the
 * kernel's static mode, a process that maps it or holds it open (@reg:
 * the registry, locked) */
static gboolean
unheld(DaxfileRegistry *reg, const DaxfileFile *f, const struct stat *st,
       GError **error)
{
    const char *name = f->display;
    const DaxfileEntry *e;
    gboolean on = FALSE;
    long nr;

    e = daxfile_registry_lookup(reg, st->st_dev, st->st_ino);
    if (e) {
        g_autofree char *owner = daxfile_escape(e->owner);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
            "'%s' is %s for '%s'; fix: stop or release it first (a domain: shut it down; 'daxfile disable' for a manual owner; 'daxfile repair' if its owner is gone)",
            name, daxfile_entry_state_to_string(e->state), owner);
        return FALSE;
    }
    if (!daxfile_guard_get(f, &on, error))
        return FALSE;
    if (!on && daxfile_kernel_syscall_nr(&nr) &&
        !daxfile_kernel_get(nr, f, &on, error))
        return FALSE;
    if (on) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
            "'%s' is static but the registry does not know it; fix: 'daxfile repair', then wipe it",
            name);
        return FALSE;
    }
    return unused(f, st, error);
}

/* A device-dax device no domain holds (registry key: its device number,
 * inode 0), in devdax mode; its description in *@ret_dev */
static gboolean
device_unheld(DaxfileRegistry *reg, const struct stat *st, const DaxfileFile *f,
              DaxfileDevdax **ret_dev, GError **error)
{
    const char *name = f->display;
    const DaxfileEntry *e = daxfile_registry_lookup(reg, st->st_rdev, 0);
    g_autoptr(DaxfileDevdax) d = daxfile_devdax_read(st->st_rdev, name, error);

    if (!d)
        return FALSE;
    if (e) {
        g_autofree char *owner = daxfile_escape(e->owner);

        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
            "'%s' (%s) is %s for '%s'; fix: shut that domain down first ('daxfile repair' if it is gone)",
            name, d->name, daxfile_entry_state_to_string(e->state), owner);
        return FALSE;
    }
    if (!daxfile_devdax_check_mode(d, name, error) || !unused(f, st, error))
        return FALSE;
    if (ret_dev)
        *ret_dev = g_steal_pointer(&d);
    return TRUE;
}

DaxfileFile *
daxfile_wipe_open(const char *path, gboolean follow, GError **error)
{
    if (!daxfile_devdax_is(path))
        return daxfile_file_open(
            path, DAXFILE_OPEN_WRITE | (follow ? DAXFILE_OPEN_FOLLOW : 0),
            error);
    /* a device-dax device, by its own node (daxfile-devdax.h) */
    return daxfile_file_open_node(path, O_RDWR | (follow ? 0 : O_NOFOLLOW),
                                  NULL, error);
}

gboolean
daxfile_wipe_check(const DaxfileFile *f, GError **error)
{
    int fd = f->fd;
    const char *name = f->display;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(error);
    struct stat st;

    if (!reg)
        return FALSE;
    if (fstat(fd, &st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", name);
        return FALSE;
    }
    if (S_ISCHR(st.st_mode))
        return device_unheld(reg, &st, f, NULL, error);
    return daxfile_file_check_regular(&st, name, error) &&
           unheld(reg, f, &st, error);
}

/* The record of the wipe of @f (daxfile-wipes.h), durable before its
 * first byte is zeroed; a record daxfile watch made stays, now decided */
static gboolean
record_begin(const DaxfileFile *f, GError **error)
{
    g_autoptr(DaxfileWipeRecord) r = NULL;
    guint64 dev, ino;

    daxfile_wipe_key(f, &dev, &ino);
    if (!daxfile_wipe_record_find(dev, ino, &r, error))
        return FALSE;
    if (r && r->state == DAXFILE_WIPE_WIPING)
        return TRUE;
    if (r)
        r->state = DAXFILE_WIPE_WIPING;
    else
        r = daxfile_wipe_record_new(f, DAXFILE_WIPE_WIPING, NULL, NULL);
    return daxfile_wipe_record_save(r, error);
}

/* Every byte read back as zero: the record goes */
static gboolean
record_end(const DaxfileFile *f, GError **error)
{
    guint64 dev, ino;

    daxfile_wipe_key(f, &dev, &ino);
    return daxfile_wipe_record_remove(dev, ino, error);
}

/* unheld(), under the inode lock and the registry lock, which the hook
 * takes too; then the record and the progress mark, set (durably) before
 * the locks are dropped, so a domain's prepare after that sees an
 * unfinished wipe */
static gboolean
claim(const DaxfileFile *f, const struct stat *st, guint64 *ret_done,
      GError **error)
{
    g_auto(DaxfileFd) lock = daxfile_registry_lock_inode(
        st->st_dev, st->st_ino, f->display, TRUE, error);
    g_autoptr(DaxfileRegistry) reg = NULL;

    if (lock < 0 || !(reg = daxfile_registry_open(error)) ||
        !unheld(reg, f, st, error) || !record_begin(f, error))
        return FALSE;
    if (!daxfile_wipe_pending(f->fd, ret_done))
        *ret_done = 0;
    *ret_done = MIN(*ret_done, (guint64)st->st_size);
    return mark(f->fd, f->display, *ret_done, TRUE, error);
}

/* @len zero bytes at @dst, durable when @nt: non-temporal stores past
 * the CPU caches, then a store fence */
static void
zero(unsigned char *dst, size_t len, gboolean nt)
{
#ifdef __x86_64__
    if (nt) {
        __m128i z = _mm_setzero_si128();
        size_t i;

        for (i = 0; i + 64 <= len; i += 64) {
            _mm_stream_si128((__m128i *)(dst + i), z);
            _mm_stream_si128((__m128i *)(dst + i + 16), z);
            _mm_stream_si128((__m128i *)(dst + i + 32), z);
            _mm_stream_si128((__m128i *)(dst + i + 48), z);
        }
        _mm_sfence();
        return;
    }
#endif
    memset(dst, 0, len);
}

static double
now(void)
{
    return g_get_monotonic_time() / 1e6;
}

/* Read it all back: every byte zero, and its SHA-256 */
static void
read_back(const unsigned char *map, guint64 size, DaxfileWipeResult *ret)
{
    static const unsigned char zeros[4096];
    g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
    double t0 = now();
    guint64 off;

    ret->verified = TRUE;
    for (off = 0; off < size; off += sizeof(zeros)) {
        gsize n = MIN(sizeof(zeros), size - off);

        if (ret->verified && memcmp(map + off, zeros, n) != 0) {
            gsize i = 0;

            while (i < n && map[off + i] == 0)
                i++;
            ret->verified = FALSE;
            ret->first_nonzero = off + i;
        }
        g_checksum_update(sum, map + off, n);
    }
    ret->sha256 = g_strdup(g_checksum_get_string(sum));
    ret->verify_seconds = now() - t0;
}

/* What one wipe zeroes: its mapping, its @label in messages ("'name'" or
 * "'name' (dax0.0)"), whether stores through the mapping reach the medium
 * without msync (MAP_SYNC or device-dax), and for a file its fd, whose
 * progress mark follows each chunk (-1: a device-dax device, which has no
 * extended attributes and no msync; its wipe record alone marks it) */
typedef struct {
    DaxfileMapping map;
    const char *name;
    const char *label;
    gboolean sync;
    int file_fd;
} WipeTarget;

static void
wipe_target_clear(WipeTarget *t)
{
    daxfile_mapping_clear(&t->map);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(WipeTarget, wipe_target_clear)

/* The one zero-and-verify loop: from @done to the end, a chunk at a time,
 * each durable (non-temporal stores and a fence on a synchronous mapping,
 * else msync) before the file's progress mark moves past it, until the end
 * or @p's cancel; then every byte read back. @unfinished_fix: what to do
 * after an interruption; @unverified_note: appended when the read-back
 * finds a byte that is not zero. */
static gboolean
zero_and_verify(WipeTarget *t, guint64 done, const DaxfileWipeParams *p,
                const char *unfinished_fix, const char *unverified_note,
                DaxfileWipeResult *ret, GError **error)
{
    unsigned char *map = t->map.addr;
    guint64 size = t->map.length;
    double t0 = now();

    while (done < size) {
        guint64 n = MIN((guint64)WIPE_CHUNK, size - done);
        gboolean nt = FALSE;

        if (p && p->cancel && g_atomic_int_get(p->cancel)) {
            ret->interrupted = TRUE;
            break;
        }
#ifdef __x86_64__
        nt = t->sync && done % 64 == 0 && n % 64 == 0;
#endif
        zero(map + done, n, nt);
        if (!nt && t->file_fd >= 0 && msync(map + done, n, MS_SYNC) < 0) {
            daxfile_set_error_errno(
                error, errno,
                "Cannot write %s back at offset %" G_GUINT64_FORMAT, t->label,
                done);
            return FALSE;
        }
        done += n;
        ret->zeroed += n;
        /* behind the data, which is durable already: an older mark only
         * makes the next wipe zero a chunk again */
        if (t->file_fd >= 0 && !mark(t->file_fd, t->name, done, FALSE, error))
            return FALSE;
        if (p && p->progress)
            p->progress(done, size, p->progress_data);
    }
    ret->seconds = now() - t0;
    if (ret->interrupted) {
        g_autofree char *have = daxfile_size_format(done);
        g_autofree char *all = daxfile_size_format(size);

        if (t->file_fd >= 0)
            fsync(t->file_fd);
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "the wipe of %s was interrupted after %s of %s; fix: %s",
                    t->label, have, all, unfinished_fix);
        return FALSE;
    }
    read_back(map, size, ret);
    if (!ret->verified) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
            "%s does not read back as zeros at offset %" G_GUINT64_FORMAT
            " after it was wiped: the medium may be failing%s",
            t->label, ret->first_nonzero, unverified_note);
        return FALSE;
    }
    return TRUE;
}

/* A device-dax device: zeroed through its own mapping (synchronous: no
 * page cache, no metadata), while the registry lock of the device keeps a
 * domain's start waiting; its wipe record (daxfile-wipes.h) alone marks a
 * partial wipe. */
static gboolean
wipe_device(const DaxfileFile *f, const struct stat *st,
            const DaxfileWipeParams *p, DaxfileWipeResult *ret, GError **error)
{
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(error);
    g_autoptr(DaxfileDevdax) d = NULL;
    g_auto(DaxfileFd) lock = -1;
    g_autofree char *label = NULL;
    g_auto(WipeTarget) t = {{NULL, 0}, f->display, NULL, TRUE, -1};

    if (!reg)
        return FALSE;
    lock =
        daxfile_registry_lock_inode(st->st_rdev, 0, f->display, FALSE, error);
    if (lock < 0 || !device_unheld(reg, st, f, &d, error) ||
        !record_begin(f, error))
        return FALSE;
    g_clear_pointer(&reg, daxfile_registry_free);
    ret->size = d->size;
    if (!daxfile_map_aligned(f->fd, d->size, 0, PROT_READ | PROT_WRITE,
                             MAP_SHARED, MAX(d->align, (guint64)DAXFILE_SZ_2M),
                             &t.map.addr, NULL)) {
        daxfile_set_error_errno(error, errno, "Cannot map '%s' (%s)",
                                f->display, d->name);
        return FALSE;
    }
    t.map.length = d->size;
    t.label = label = g_strdup_printf("'%s' (%s)", f->display, d->name);
    ret->map_sync = TRUE; /* a device-dax mapping is synchronous */
#ifdef __x86_64__
    ret->method = "device-dax mapping, non-temporal stores and a store fence";
#else
    ret->method = "device-dax mapping, stores";
#endif
    if (!zero_and_verify(
            &t, 0, p,
            "run 'daxfile wipe' on it again, or 'daxfile repair' (until then no domain may use it)",
            "", ret, error))
        return FALSE;
    return record_end(f, error);
}

gboolean
daxfile_wipe(const DaxfileFile *f, const DaxfileWipeParams *p,
             DaxfileWipeResult *ret, GError **error)
{
    g_autofree char *label = NULL;
    g_auto(WipeTarget) t = {{NULL, 0}, f->display, NULL, FALSE, f->fd};
    struct stat st;
    guint64 done = 0;

    memset(ret, 0, sizeof(*ret));
    if (fstat(f->fd, &st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", f->display);
        return FALSE;
    }
    if (S_ISCHR(st.st_mode))
        return wipe_device(f, &st, p, ret, error);
    if (!daxfile_file_check_regular(&st, f->display, error))
        return FALSE;
    if (st.st_size == 0) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is empty: there is nothing to wipe", f->display);
        return FALSE;
    }
    ret->size = t.map.length = (guint64)st.st_size;
    if (!claim(f, &st, &done, error))
        return FALSE;
    ret->resumed_from = done;
    t.map.addr = mmap(NULL, t.map.length, PROT_READ | PROT_WRITE,
                      MAP_SHARED_VALIDATE | MAP_SYNC, f->fd, 0);
    t.sync = ret->map_sync = t.map.addr != MAP_FAILED;
    if (t.map.addr == MAP_FAILED)
        t.map.addr = mmap(NULL, t.map.length, PROT_READ | PROT_WRITE,
                          MAP_SHARED, f->fd, 0);
    if (t.map.addr == MAP_FAILED) {
        daxfile_set_error_errno(error, errno, "Cannot map '%s'", f->display);
        return FALSE;
    }
#ifdef __x86_64__
    ret->method = ret->map_sync
                      ? "MAP_SYNC, non-temporal stores and a store fence"
                      : "page cache, msync";
#else
    ret->method = ret->map_sync ? "MAP_SYNC, msync" : "page cache, msync";
#endif
    t.label = label = g_strdup_printf("'%s'", f->display);
    if (!zero_and_verify(
            &t, done, p,
            "run 'daxfile wipe' on it again to finish (until then it cannot be attached or made static)",
            "; the file stays marked unfinished", ret, error))
        return FALSE;
    if (fremovexattr(f->fd, DAXFILE_WIPE_XATTR) < 0 || fsync(f->fd) < 0) {
        daxfile_set_error_errno(
            error, errno, "Cannot clear the wipe mark of '%s'", f->display);
        return FALSE;
    }
    return record_end(f, error);
}

gboolean
daxfile_wipe_refuse_pending(guint64 dev, guint64 ino, const char *name,
                            GError **error)
{
    g_autoptr(DaxfileWipeRecord) r = NULL;
    g_autofree char *domain = NULL;

    if (!daxfile_wipe_record_find(dev, ino, &r, error))
        return FALSE;
    if (!r)
        return TRUE;
    if (!r->domain) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
            "'%s' has a wipe that did not finish (begun %s), and no domain may use it before it does; fix: run 'daxfile wipe' on it again, or 'daxfile repair'",
            name, r->since);
        return FALSE;
    }
    domain = daxfile_escape(r->domain);
    if (r->state == DAXFILE_WIPE_UNDEFINED)
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
            "'%s' is to be wiped: domain '%s', which used it, was undefined (wipe_on_undefine=true) at %s; fix: let 'daxfile watch' (daxfile-watch.service) decide and wipe it, or give this domain another file",
            name, domain, r->since);
    else
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
            "'%s' is being wiped for domain '%s', which was undefined (wipe_on_undefine=true) at %s, and no domain may use it before the wipe finishes; fix: let 'daxfile watch' finish it, or run 'daxfile repair'",
            name, domain, r->since);
    return FALSE;
}

DaxfileFile *
daxfile_wipe_open_placed(const DaxfileConf *conf, const char *path,
                         gboolean write, GError **error)
{
    const DaxfileRoot *root = conf && daxfile_path_is_plain(path)
                                  ? daxfile_conf_managed_root(conf, path)
                                  : NULL;

    if (root)
        return daxfile_conf_open_managed(
            conf, root, path, write ? DAXFILE_OPEN_WRITE : DAXFILE_OPEN_READ,
            error);
    return daxfile_wipe_open(path, FALSE, error);
}

DaxfileFile *
daxfile_wipe_record_open(const DaxfileWipeRecord *r, const DaxfileConf *conf,
                         gboolean write, GError **error)
{
    g_autoptr(DaxfileFile) f =
        daxfile_wipe_open_placed(conf, r->path, write, error);
    g_autofree char *handle = NULL;
    guint64 dev, ino;

    if (!f)
        return NULL;
    daxfile_wipe_key(f, &dev, &ino);
    if (!S_ISCHR(f->st.st_mode))
        handle = daxfile_fd_handle(f->fd);
    if (dev != r->dev || ino != r->ino ||
        (r->handle && g_strcmp0(handle, r->handle) != 0)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "'%s' is no longer the file whose wipe was recorded at %s (it was replaced since); fix: find that file and wipe it with 'daxfile wipe', or remove its record from the wipes directory of daxfile's state",
            f->display, r->since);
        return NULL;
    }
    return g_steal_pointer(&f);
}

void
daxfile_wipe_resumed_free(DaxfileWipeResumed *w)
{
    if (!w)
        return;
    daxfile_wipe_record_free(w->record);
    daxfile_wipe_result_clear(&w->result);
    g_free(w->error);
    g_free(w);
}

/* Finish the wipe of @w->record, or say why not */
static void
resume_one(DaxfileWipeResumed *w, const DaxfileConf *conf,
           volatile gint *cancel)
{
    const DaxfileWipeRecord *r = w->record;
    const DaxfileWipeParams params = {.cancel = cancel};
    g_autoptr(GError) local = NULL;
    g_autoptr(DaxfileFile) f = NULL;

    if (r->state == DAXFILE_WIPE_UNDEFINED) {
        w->done = DAXFILE_WIPE_RESUME_UNDECIDED;
        return;
    }
    f = daxfile_wipe_record_open(r, conf, TRUE, &local);
    if (!f && g_error_matches(local, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND) &&
        daxfile_wipe_record_remove(r->dev, r->ino, NULL)) {
        w->done = DAXFILE_WIPE_RESUME_DROPPED;
        return;
    }
    if (f && daxfile_wipe(f, &params, &w->result, &local)) {
        w->done = DAXFILE_WIPE_RESUME_WIPED;
        return;
    }
    w->done = DAXFILE_WIPE_RESUME_KEPT;
    w->error = g_strdup(local->message);
}

GPtrArray *
daxfile_wipe_resume(const DaxfileConf *conf, volatile gint *cancel,
                    GError **error)
{
    g_autoptr(GPtrArray) records = daxfile_wipe_records(error);
    g_autoptr(GPtrArray) out = NULL;
    guint i;

    if (!records)
        return NULL;
    out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)daxfile_wipe_resumed_free);
    for (i = 0; i < records->len; i++) {
        DaxfileWipeResumed *w = g_new0(DaxfileWipeResumed, 1);

        w->record = g_steal_pointer(&g_ptr_array_index(records, i));
        g_ptr_array_add(out, w);
        if (cancel && g_atomic_int_get(cancel)) {
            w->done = DAXFILE_WIPE_RESUME_KEPT;
            w->error = g_strdup("interrupted before it began");
            continue;
        }
        resume_one(w, conf, cancel);
    }
    return g_steal_pointer(&out);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "daxfile-attest.h"
#include "daxfile-conf.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-fiemap.h"
#include "daxfile-file.h"
#include "daxfile-guard.h"
#include "daxfile-json.h"
#include "daxfile-kernel.h"
#include "daxfile-mount.h"
#include "daxfile-proc.h"
#include "daxfile-registry.h"
#include "daxfile-seam.h"
#include "daxfile-static.h"
#include "daxfile-util.h"

void
daxfile_enable_result_clear(DaxfileEnableResult *result)
{
    g_clear_pointer(&result->warning, g_free);
}

void
daxfile_disable_result_clear(DaxfileDisableResult *result)
{
    g_clear_pointer(&result->owner, g_free);
    g_clear_pointer(&result->change, g_free);
}

static char *
iso_now(void)
{
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();

    return g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
}

/* The registry key of what @fd is, in @st: a file's device and inode; a
 * device-dax device's device number and inode 0 (its node in /dev is not
 * what QEMU maps under libvirt: that is a node of QEMU's own /dev) */
static gboolean
fd_identity(int fd, const char *name, struct stat *st, GError **error)
{
    if (fstat(fd, st) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", name);
        return FALSE;
    }
    if (S_ISCHR(st->st_mode)) {
        st->st_dev = st->st_rdev;
        st->st_ino = 0;
    }
    return TRUE;
}

static gboolean
entry_is_device(const DaxfileEntry *e)
{
    return e->ino == 0;
}

/* A copy of the inode's entry (NULL when none), read under the registry
 * lock. The caller holds the inode lock, so it cannot change after. */
static gboolean
registry_peek(const struct stat *st, DaxfileEntry **ret_entry,
              GError **error)
{
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(error);
    DaxfileEntry *e;

    if (!reg)
        return FALSE;
    e = daxfile_registry_lookup(reg, st->st_dev, st->st_ino);
    *ret_entry = e ? daxfile_entry_copy(e) : NULL;
    return TRUE;
}

static gboolean
owner_conflict(const DaxfileEntry *e, const char *owner, const char *name,
               GError **error)
{
    if (!e || !owner || STREQ(e->owner, owner))
        return FALSE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                "'%s' is %s for '%s'%s%s%s since %s; it cannot be used by "
                "'%s' until that owner releases it (if it is no longer "
                "%s, 'daxfile repair' releases it)",
                name,
                e->state == DAXFILE_STATE_RESERVED ? "reserved" : "static",
                e->owner, e->owner_uuid ? " (uuid " : "",
                e->owner_uuid ? e->owner_uuid : "", e->owner_uuid ? ")" : "",
                e->since, owner,
                e->state == DAXFILE_STATE_RESERVED ? "starting" : "running");
    return TRUE;
}

static gboolean
interrupted(const DaxfileEntry *e, const char *name, GError **error)
{
    if (!e || (e->state != DAXFILE_STATE_ENGAGING &&
               e->state != DAXFILE_STATE_RELEASING))
        return FALSE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                "'%s' was left %s by an interrupted daxfile; run 'daxfile "
                "repair' first", name, daxfile_entry_state_to_string(e->state));
    return TRUE;
}

static gboolean
check_cap(const char *name, GError **error)
{
    if (daxfile_have_cap_linux_immutable())
        return TRUE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
                "Cannot change static mode of '%s': CAP_LINUX_IMMUTABLE is "
                "missing (run as root)", name);
    return FALSE;
}

/* The guard stops new writers only: refuse while someone other than the
 * consumer already holds the file open for writing (on xfs such an fd
 * keeps write() and ftruncate() under the flag). */
static gboolean
check_writers(const struct stat *st, const DaxfileEnableParams *params,
              gboolean engaged, const char *name, GError **error)
{
    g_autoptr(GArray) writers = daxfile_proc_writers(st->st_dev, st->st_ino);
    g_autoptr(GArray) mappers = NULL;
    const GArray *consumers = params->consumers;
    guint i;

    if (!consumers)
        consumers = mappers = daxfile_proc_mappers(st->st_dev, st->st_ino);
    for (i = 0; i < writers->len; i++) {
        pid_t pid = g_array_index(writers, pid_t, i);
        g_autofree char *comm = NULL;

        if (daxfile_pid_in(consumers, pid))
            continue;
        comm = daxfile_proc_comm(pid);
        if (engaged)
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                        "'%s' was opened for writing by process %d (%s) "
                        "while static mode was being engaged, and the guard "
                        "cannot stop writes through that descriptor; static "
                        "mode was rolled back, close it and try again", name,
                        (int)pid, comm);
        else
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                        "'%s' is open for writing by process %d (%s), which "
                        "is not its consumer; the guard cannot stop writes "
                        "through that descriptor, so close it first", name,
                        (int)pid, comm);
        return FALSE;
    }
    return TRUE;
}

static gboolean
check_not_immutable(int fd, const char *name, GError **error)
{
    gboolean on = FALSE;

    if (!daxfile_guard_get(fd, name, &on, error))
        return FALSE;
    if (!on)
        return TRUE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                "'%s' is already immutable and daxfile did not set the flag; "
                "clear it with 'chattr -i' if nothing else relies on it", name);
    return FALSE;
}

/* The self-test's answer depends on the kernel and on the filesystem and
 * its mount (DAX), not on the file, so it is remembered for this boot in
 * the run directory, under a name made of: device, mount id, filesystem
 * type and id, kernel release, boot id. NULL when one is unknown. */
static char *
selftest_cache_path(int dirfd)
{
    g_autofree char *run = daxfile_state_run_dir();
    g_autofree char *key = NULL;
    g_autofree char *sum = NULL;
    g_autofree char *name = NULL;
    struct statx stx;
    struct statfs sfs;
    struct utsname u;

    if (statx(dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 ||
        !(stx.stx_mask & STATX_MNT_ID) || fstatfs(dirfd, &sfs) < 0 ||
        uname(&u) < 0 || !daxfile_boot_id())
        return NULL;
    key = g_strdup_printf("%u:%u %llu %lx %08x%08x %s %s", stx.stx_dev_major,
                          stx.stx_dev_minor,
                          (unsigned long long)stx.stx_mnt_id,
                          (unsigned long)sfs.f_type,
                          (unsigned int)sfs.f_fsid.__val[0],
                          (unsigned int)sfs.f_fsid.__val[1], u.release,
                          daxfile_boot_id());
    sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
    name = g_strdup_printf("selftest-%.32s", sum);
    return g_build_filename(run, name, NULL);
}

/* A remembered answer, only from a regular file of ours that no one else
 * can have written. */
static gboolean
selftest_cache_read(const char *file, DaxfileSelftest *result)
{
    g_auto(DaxfileFd) fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char buf[512];
    struct stat st;
    ssize_t n;

    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & 022) ||
        (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
        return FALSE;
    buf[n] = '\0';
    if (STREQ(buf, "safe\n")) {
        result->safe = TRUE;
        return TRUE;
    }
    if (g_str_has_prefix(buf, "unsafe ")) {
        result->safe = FALSE;
        result->detail = g_strchomp(g_strdup(buf + strlen("unsafe ")));
        return TRUE;
    }
    return FALSE;
}

static void
selftest_cache_write(const char *file, const DaxfileSelftest *result)
{
    g_autofree char *data = result->safe
        ? g_strdup("safe\n")
        : g_strdup_printf("unsafe %s\n", result->detail ? result->detail : "");
    g_autoptr(GError) error = NULL;

    /* volatile and only a shortcut: a failure costs a self-test later */
    if (!g_file_set_contents_full(file, data, -1,
                                  G_FILE_SET_CONTENTS_CONSISTENT, 0600,
                                  &error))
        g_debug("cannot remember the self-test: %s", error->message);
}

/* Run the self-test in the file's directory, or recall its answer for
 * this filesystem from earlier in this boot; FALSE only on error. */
static gboolean
guard_selftest(const char *path, const struct stat *st,
               DaxfileSelftest *result, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_auto(DaxfileFd) dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_autofree char *cache = NULL;

    if (dirfd < 0) {
        g_autofree char *d = daxfile_escape(dir);

        daxfile_set_error_errno(error, errno, "Cannot open directory '%s'", d);
        return FALSE;
    }
    cache = selftest_cache_path(dirfd);
    if (cache && selftest_cache_read(cache, result))
        return TRUE;
    if (!daxfile_guard_selftest(dirfd, st->st_dev, TRUE, result, error))
        return FALSE;
    if (cache)
        selftest_cache_write(cache, result);
    return TRUE;
}

static gboolean
choose_guard(int fd, const char *path, const struct stat *st,
             const DaxfileEnableParams *params, const char *name,
             DaxfileEnableResult *result, GError **error)
{
    g_auto(DaxfileSelftest) test = {0};

    if (!check_cap(name, error) ||
        !check_writers(st, params, FALSE, name, error) ||
        !guard_selftest(path, st, &test, error))
        return FALSE;
    if (test.safe) {
        result->mechanism = DAXFILE_MECH_IMMUTABLE;
        return TRUE;
    }
    if (params->mechanism == DAXFILE_MECH_IMMUTABLE) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
                    "The immutable guard is unsafe for '%s' on this kernel and "
                    "filesystem: %s", name, test.detail);
        return FALSE;
    }
    result->mechanism = DAXFILE_MECH_VERIFIED_ONLY;
    result->warning = g_strdup_printf(
        "the immutable guard is unsafe here (%s); '%s' is verified but "
        "layout changes are NOT blocked", test.detail, name);
    return TRUE;
}

static gboolean
choose_mechanism(int fd, const char *path, const struct stat *st,
                 const DaxfileEnableParams *params,
                 const DaxfileReport *report, const char *name,
                 DaxfileEnableResult *result, GError **error)
{
    DaxfileMechanism want = params->mechanism;
    long nr = 0;

    if ((want == DAXFILE_MECH_NONE || want == DAXFILE_MECH_KERNEL) &&
        report->dax_effective && daxfile_kernel_syscall_nr(&nr)) {
        result->mechanism = DAXFILE_MECH_KERNEL;
        return check_cap(name, error);
    }
    if (want == DAXFILE_MECH_KERNEL) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
                    "Cannot use the kernel mechanism for '%s': the running "
                    "kernel does not advertise daxctl() (%s)", name,
                    report->dax_effective ? "no /sys/" DAXFILE_KERNEL_SYSFS_NR
                                          : "DAX is not in effect");
        return FALSE;
    }
    if (want != DAXFILE_MECH_VERIFIED_ONLY && report->dax_effective)
        return choose_guard(fd, path, st, params, name, result, error);
    if (want == DAXFILE_MECH_IMMUTABLE) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
                    "Cannot use the immutable guard for '%s': DAX is not in "
                    "effect, and without DAX a store after the flag can "
                    "SIGBUS the consumer", name);
        return FALSE;
    }
    result->mechanism = DAXFILE_MECH_VERIFIED_ONLY;
    if (!report->dax_effective)
        result->warning = g_strdup_printf(
            "DEVELOPMENT MODE: '%s' is not on DAX; it is verified and "
            "registered but nothing is enforced, and guest writes are only "
            "durable after the host flushes the page cache (msync/fsync)",
            name);
    return TRUE;
}

static gboolean
engage(DaxfileMechanism mech, int fd, const char *name, gboolean on,
       guint64 align, GError **error)
{
    long nr = 0;

    switch (mech) {
    case DAXFILE_MECH_KERNEL:
        if (!daxfile_kernel_syscall_nr(&nr)) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
                        "Cannot release '%s': the running kernel no longer "
                        "advertises daxctl()", name);
            return FALSE;
        }
        return daxfile_kernel_set(nr, fd, name, on, align, error);
    case DAXFILE_MECH_IMMUTABLE:
        return daxfile_guard_set_durable(fd, name, on, error);
    case DAXFILE_MECH_NONE:
    case DAXFILE_MECH_VERIFIED_ONLY:
    case DAXFILE_MECH_DEVICE_DAX:
        break;
    }
    return TRUE;
}

/* The absolute path of the inode behind @fd (for later repair), or @path */
static char *
fd_abspath(int fd, const char *path)
{
    g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", fd);
    char *target = g_file_read_link(link, NULL);

    if (target && g_path_is_absolute(target))
        return target;
    g_free(target);
    return g_canonicalize_filename(path, NULL);
}

static DaxfileEntry *
entry_new(const char *path, int fd, const struct stat *st,
          const DaxfileEnableParams *params, const DaxfileReport *report,
          DaxfileMechanism mech, DaxfileEntryState state)
{
    DaxfileEntry *e = g_new0(DaxfileEntry, 1);

    e->path = g_strdup(path);
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->state = state;
    e->mechanism = mech;
    e->owner = g_strdup(params->owner);
    e->owner_uuid = g_strdup(params->owner_uuid);
    e->device = g_strdup(params->device);
    e->pid = params->pid;
    e->align = params->align;
    e->fingerprint = g_strdup(report->fingerprint);
    e->since = iso_now();
    e->boot_id = g_strdup(daxfile_boot_id());
    e->flag_set = mech == DAXFILE_MECH_IMMUTABLE;
    e->handle = daxfile_fd_handle(fd);
    e->fsid = daxfile_fd_fsid(fd);
    return e;
}

/* Once engaged, nobody can open the file for writing or change its layout
 * any more, except through a descriptor opened before (on xfs, write()
 * and ftruncate() keep working on one under the immutable flag). So look
 * again now: a writer that opened it since check_writers() is found, and
 * a layout that changed meanwhile no longer matches what was verified.
 * Either one rolls back. */
static gboolean
verify_engaged(int fd, const struct stat *st,
               const DaxfileEnableParams *params, const DaxfileReport *report,
               DaxfileMechanism mech, const char *name, GError **error)
{
    g_autoptr(DaxfileExtentMap) map = NULL;
    g_autofree char *now = NULL;
    struct stat cur;

    if (mech != DAXFILE_MECH_IMMUTABLE && mech != DAXFILE_MECH_KERNEL)
        return TRUE;
    if (mech == DAXFILE_MECH_IMMUTABLE &&
        !check_writers(st, params, TRUE, name, error))
        return FALSE;
    if (fstat(fd, &cur) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot stat '%s'", name);
        return FALSE;
    }
    map = daxfile_fiemap_read(fd, name, error);
    if (!map)
        return FALSE;
    now = daxfile_extent_map_fingerprint(map);
    if ((guint64)cur.st_size == report->size &&
        STREQ(now, report->fingerprint))
        return TRUE;
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                "'%s' changed while static mode was being engaged (its size "
                "or block map is no longer the one verified); static mode "
                "was rolled back, find what writes to it and try again", name);
    return FALSE;
}

/* Log the intent, engage, log the result. On failure the entry goes back
 * to what it was (a reservation stays a reservation). */
static gboolean
commit_enable(int fd, const char *path, const struct stat *st,
              const DaxfileEnableParams *params, const DaxfileReport *report,
              DaxfileMechanism mech, const char *name, GError **error)
{
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(error);
    g_autofree char *abspath = NULL;
    DaxfileEntry *old;
    DaxfileEntry *e;

    if (!reg)
        return FALSE;
    old = daxfile_registry_lookup(reg, st->st_dev, st->st_ino);
    old = old ? daxfile_entry_copy(old) : NULL;
    abspath = fd_abspath(fd, path);
    e = entry_new(abspath, fd, st, params, report, mech,
                  DAXFILE_STATE_ENGAGING);
    daxfile_registry_put(reg, e);
    if (!daxfile_registry_save(reg, error))
        goto fail;
    daxfile_test_crash_point("enable-logged");
    if (!engage(mech, fd, name, TRUE, params->align, error))
        goto fail;
    daxfile_test_crash_point("enable-engaged");
    if (!verify_engaged(fd, st, params, report, mech, name, error)) {
        engage(mech, fd, name, FALSE, 0, NULL);
        goto fail;
    }
    e->state = DAXFILE_STATE_ENGAGED;
    daxfile_registry_touch(reg);
    if (daxfile_registry_save(reg, error)) {
        daxfile_entry_free(old);
        return TRUE;
    }
    engage(mech, fd, name, FALSE, 0, NULL);
 fail:
    if (old)
        daxfile_registry_put(reg, old);
    else
        daxfile_registry_remove(reg, st->st_dev, st->st_ino);
    daxfile_registry_save(reg, NULL);
    return FALSE;
}

static int mechanism_intact(int fd, const DaxfileEntry *e);

/* Enabling again for the same owner is a no-op, unless the mechanism was
 * lost meanwhile (someone ran chattr -i): then it is engaged again. */
static gboolean
still_engaged(int fd, const struct stat *st, const DaxfileEnableParams *params,
              const DaxfileEntry *cur, const char *name,
              DaxfileEnableResult *result, GError **error)
{
    result->mechanism = cur->mechanism;
    result->already = TRUE;
    if (mechanism_intact(fd, cur) != 0)
        return TRUE;
    if (!check_cap(name, error) ||
        !engage(cur->mechanism, fd, name, TRUE, cur->align, error))
        return FALSE;
    if (cur->mechanism == DAXFILE_MECH_IMMUTABLE &&
        !check_writers(st, params, TRUE, name, error)) {
        engage(cur->mechanism, fd, name, FALSE, 0, NULL);
        return FALSE;
    }
    result->warning = g_strdup_printf("the %s of '%s' had been removed; it "
                                      "is engaged again",
                                      daxfile_mechanism_to_string(
                                          cur->mechanism),
                                      name);
    return TRUE;
}

/* What enable verifies before anything changes (the layout; not a
 * swapfile; not immutable already), and the mechanism it will use. */
static DaxfileReport *
enable_checks(int fd, const char *path, const struct stat *st,
              const DaxfileEnableParams *params, const char *name,
              DaxfileEnableResult *result, GError **error)
{
    g_autoptr(DaxfileReport) report = NULL;

    report = daxfile_report_build(fd, path, params->align,
                                  params->allow_non_dax, error);
    if (!report || !daxfile_report_require_ready(report, error))
        return NULL;
    if (daxfile_is_swapfile(st->st_dev, st->st_ino)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                    "'%s' is an active swapfile; swapoff it first", name);
        return NULL;
    }
    if (!check_not_immutable(fd, name, error) ||
        !choose_mechanism(fd, path, st, params, report, name, result, error))
        return NULL;
    daxfile_test_pause_point("enable-checked");
    return g_steal_pointer(&report);
}

gboolean
daxfile_static_enable(int fd, const char *path,
                      const DaxfileEnableParams *params,
                      DaxfileEnableResult *ret_result, GError **error)
{
    g_autofree char *name = daxfile_escape(path);
    g_auto(DaxfileFd) lock = -1;
    g_autoptr(DaxfileEntry) cur = NULL;
    g_autoptr(DaxfileReport) report = NULL;
    struct stat st;

    g_return_val_if_fail(params->owner != NULL, FALSE);
    if (!fd_identity(fd, name, &st, error))
        return FALSE;
    daxfile_test_pause_point("enable-opened");
    lock = daxfile_registry_lock_inode(st.st_dev, st.st_ino, name,
                                       params->wait, error);
    if (lock < 0 || !registry_peek(&st, &cur, error) ||
        owner_conflict(cur, params->owner, name, error) ||
        interrupted(cur, name, error))
        return FALSE;
    if (cur && cur->state == DAXFILE_STATE_ENGAGED)
        return still_engaged(fd, &st, params, cur, name, ret_result, error);
    report = enable_checks(fd, path, &st, params, name, ret_result, error);
    if (!report)
        return FALSE;
    return commit_enable(fd, path, &st, params, report,
                         ret_result->mechanism, name, error);
}

static void
compare_layout(int fd, const DaxfileEntry *e, const char *name,
               DaxfileDisableResult *result)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileExtentMap) map = daxfile_fiemap_read(fd, name, &error);
    g_autofree char *now = map ? daxfile_extent_map_fingerprint(map) : NULL;

    if (!map) {
        result->change = g_strdup_printf("cannot re-read the block map: %s",
                                         error->message);
        return;
    }
    result->layout_unchanged = e->fingerprint && STREQ(now, e->fingerprint);
    if (!result->layout_unchanged)
        result->change = g_strdup_printf(
            "the block map changed while static: %u extents now, "
            "fingerprint %.12s, was %.12s", daxfile_extent_map_count(map),
            now, e->fingerprint ? e->fingerprint : "none");
}

static gboolean
not_static_error(int fd, const char *name, GError **error)
{
    gboolean immutable = FALSE;

    daxfile_guard_get(fd, name, &immutable, NULL);
    g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                immutable ? "'%s' is not static (no registry entry); its "
                            "immutable flag was not set by daxfile, clear it "
                            "with 'chattr -i' if you know who set it"
                          : "'%s' is not static (no registry entry)",
                name);
    return FALSE;
}

static gboolean
release_allowed(const DaxfileEntry *e, const char *name, GError **error)
{
    return e->mechanism == DAXFILE_MECH_VERIFIED_ONLY ||
           e->mechanism == DAXFILE_MECH_NONE ||
           e->mechanism == DAXFILE_MECH_DEVICE_DAX || check_cap(name, error);
}

/* Undo the entry's mechanism on its inode (durably) and say what changed
 * while it was static. */
static gboolean
release_inode(int fd, const DaxfileEntry *e, const char *name,
              DaxfileDisableResult *result, GError **error)
{
    if ((e->mechanism != DAXFILE_MECH_IMMUTABLE || e->flag_set) &&
        !engage(e->mechanism, fd, name, FALSE, 0, error))
        return FALSE;
    result->mechanism = e->mechanism;
    result->owner = g_strdup(e->owner);
    if (entry_is_device(e))
        result->layout_unchanged = TRUE; /* it has no block map */
    else
        compare_layout(fd, e, name, result);
    return TRUE;
}

gboolean
daxfile_static_disable(int fd, const char *path, const char *owner,
                       gboolean wait, DaxfileDisableResult *ret_result,
                       GError **error)
{
    g_autofree char *name = daxfile_escape(path);
    g_autoptr(DaxfileRegistry) reg = NULL;
    g_auto(DaxfileFd) lock = -1;
    DaxfileEntry *e;
    struct stat st;

    if (!fd_identity(fd, name, &st, error))
        return FALSE;
    lock = daxfile_registry_lock_inode(st.st_dev, st.st_ino, name, wait,
                                       error);
    if (lock < 0 || !(reg = daxfile_registry_open(error)))
        return FALSE;
    e = daxfile_registry_lookup(reg, st.st_dev, st.st_ino);
    if (!e)
        return not_static_error(fd, name, error);
    if (owner_conflict(e, owner, name, error) ||
        !release_allowed(e, name, error))
        return FALSE;
    e->state = DAXFILE_STATE_RELEASING;
    daxfile_registry_touch(reg);
    if (!daxfile_registry_save(reg, error))
        return FALSE;
    daxfile_test_crash_point("disable-logged");
    if (!release_inode(fd, e, name, ret_result, error))
        return FALSE;
    daxfile_test_crash_point("disable-released");
    daxfile_registry_remove(reg, st.st_dev, st.st_ino);
    return daxfile_registry_save(reg, error);
}

void
daxfile_static_item_clear(DaxfileStaticItem *item)
{
    daxfile_enable_result_clear(&item->result);
    daxfile_disable_result_clear(&item->released);
}

/* One file of a set, while the set is being changed */
typedef struct {
    guint idx;               /* in the caller's items */
    DaxfileStaticItem *item;
    struct stat st;
    char *name;
    int lock;                /* its inode lock */
    DaxfileEntry *old;       /* a copy of its entry before */
    DaxfileReport *report;   /* what was verified, when it was */
    gboolean skip;           /* its entry was there already */
    gboolean engage;         /* to be made static here */
    gboolean engaged;        /* its mechanism was engaged here */
} Member;

static void
member_clear(Member *m)
{
    if (m->lock >= 0)
        close(m->lock);
    g_free(m->name);
    daxfile_entry_free(m->old);
    g_clear_pointer(&m->report, daxfile_report_free);
}

static gint
member_cmp(gconstpointer a, gconstpointer b)
{
    const Member *x = a;
    const Member *y = b;

    if (x->st.st_dev != y->st.st_dev)
        return x->st.st_dev < y->st.st_dev ? -1 : 1;
    if (x->st.st_ino != y->st.st_ino)
        return x->st.st_ino < y->st.st_ino ? -1 : 1;
    return 0;
}

static gboolean
member_fail(const Member *m, guint *ret_failed)
{
    *ret_failed = m->idx;
    return FALSE;
}

/* The set in (device, inode) order, every inode locked: two sets that
 * share files lock them in the same order and cannot deadlock. */
static GArray *
set_lock(DaxfileStaticItem *items, guint n, guint *ret_failed,
         GError **error)
{
    g_autoptr(GArray) set = g_array_sized_new(FALSE, TRUE, sizeof(Member),
                                              n);
    guint i;

    g_array_set_clear_func(set, (GDestroyNotify)member_clear);
    for (i = 0; i < n; i++) {
        Member m = {.idx = i, .item = &items[i], .lock = -1,
                    .name = daxfile_escape(items[i].path)};

        g_array_append_val(set, m);
        if (!fd_identity(items[i].fd, m.name,
                         &g_array_index(set, Member, i).st, error)) {
            *ret_failed = i;
            return NULL;
        }
    }
    g_array_sort(set, member_cmp);
    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);

        if (i > 0 && member_cmp(m - 1, m) == 0) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        "'%s' and '%s' are the same file", (m - 1)->name,
                        m->name);
            member_fail(m, ret_failed);
            return NULL;
        }
        m->lock = daxfile_registry_lock_inode(m->st.st_dev, m->st.st_ino,
                                              m->name, m->item->params.wait,
                                              error);
        if (m->lock < 0) {
            member_fail(m, ret_failed);
            return NULL;
        }
    }
    return g_steal_pointer(&set);
}

static DaxfileEntry *
reservation_new(const Member *m, pid_t holder, guint64 holder_start,
                GError **error)
{
    const DaxfileStaticItem *it = m->item;
    g_autoptr(DaxfileExtentMap) map = daxfile_fiemap_read(it->fd, m->name,
                                                          error);
    g_autofree char *abspath = NULL;
    DaxfileReport fake = {0};
    DaxfileEntry *e;

    if (!map)
        return NULL;
    fake.fingerprint = daxfile_extent_map_fingerprint(map);
    abspath = fd_abspath(it->fd, it->path);
    e = entry_new(abspath, it->fd, &m->st, &it->params, &fake,
                  DAXFILE_MECH_NONE, DAXFILE_STATE_RESERVED);
    e->holder_pid = holder_start ? holder : 0;
    e->holder_start = holder_start;
    g_free(fake.fingerprint);
    return e;
}

/* A device-dax device (checked by the caller, daxfile-devdax.h): held for
 * its owner, reserved at prepare and engaged at started, with nothing to
 * engage on it. */
static gboolean
set_member_device(DaxfileRegistry *reg, Member *m, DaxfileEntry *cur,
                  gboolean reserve, pid_t holder, guint64 holder_start)
{
    DaxfileStaticItem *it = m->item;
    DaxfileReport none = {0};
    DaxfileEntry *e;

    it->result.mechanism = reserve ? DAXFILE_MECH_NONE
                                   : DAXFILE_MECH_DEVICE_DAX;
    if (cur && (reserve || cur->state == DAXFILE_STATE_ENGAGED)) {
        m->skip = TRUE;
        return TRUE;
    }
    m->old = cur ? daxfile_entry_copy(cur) : NULL;
    e = entry_new(it->path, it->fd, &m->st, &it->params, &none,
                  it->result.mechanism,
                  reserve ? DAXFILE_STATE_RESERVED : DAXFILE_STATE_ENGAGED);
    g_clear_pointer(&e->handle, g_free); /* its /dev node: nothing to find */
    g_clear_pointer(&e->fsid, g_free);
    if (reserve) {
        e->holder_pid = holder_start ? holder : 0;
        e->holder_start = holder_start;
    }
    daxfile_registry_put(reg, e);
    return TRUE;
}

/* Check one file and put its entry, in its target state, in @reg. At
 * prepare (@reserve) that is a reservation, or, where the kernel
 * mechanism is at hand, static mode at once: daxctl() lets the consumer
 * open the file for writing, so the file is static before QEMU maps it
 * (the immutable guard would refuse QEMU's own open: it waits for
 * started). Such an entry names its holder until started says the start
 * is done. */
static gboolean
set_member(DaxfileRegistry *reg, Member *m, gboolean reserve, pid_t holder,
           guint64 holder_start, GError **error)
{
    DaxfileStaticItem *it = m->item;
    DaxfileEntry *cur = daxfile_registry_lookup(reg, m->st.st_dev,
                                                m->st.st_ino);
    g_autofree char *abspath = NULL;
    DaxfileEntry *e;
    long nr = 0;

    if (owner_conflict(cur, it->params.owner, m->name, error) ||
        interrupted(cur, m->name, error))
        return FALSE;
    if (S_ISCHR(m->st.st_mode))
        return set_member_device(reg, m, cur, reserve, holder, holder_start);
    if (cur && (reserve || cur->state == DAXFILE_STATE_ENGAGED)) {
        m->skip = TRUE;
        if (reserve)
            return TRUE; /* already reserved or static for this owner */
        if (cur->holder_start) {
            cur->holder_pid = 0; /* its start is done */
            cur->holder_start = 0;
            daxfile_registry_touch(reg);
        }
        return still_engaged(it->fd, &m->st, &it->params, cur, m->name,
                             &it->result, error);
    }
    m->old = cur ? daxfile_entry_copy(cur) : NULL;
    if (!reserve || daxfile_kernel_syscall_nr(&nr)) {
        m->report = enable_checks(it->fd, it->path, &m->st, &it->params,
                                  m->name, &it->result, error);
        if (!m->report)
            return FALSE;
    }
    if (reserve && it->result.mechanism != DAXFILE_MECH_KERNEL) {
        daxfile_enable_result_clear(&it->result);
        it->result.mechanism = DAXFILE_MECH_NONE;
        e = reservation_new(m, holder, holder_start, error);
        if (!e)
            return FALSE;
        daxfile_registry_put(reg, e);
        return TRUE;
    }
    abspath = fd_abspath(it->fd, it->path);
    e = entry_new(abspath, it->fd, &m->st, &it->params, m->report,
                  it->result.mechanism, DAXFILE_STATE_ENGAGED);
    if (reserve) {
        e->holder_pid = holder_start ? holder : 0;
        e->holder_start = holder_start;
    }
    daxfile_registry_put(reg, e);
    m->engage = TRUE;
    return TRUE;
}

/* Disengage what this set engaged and put the entries back */
static void
set_rollback(DaxfileRegistry *reg, GArray *set)
{
    guint i;

    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);

        if (m->engaged)
            engage(m->item->result.mechanism, m->item->fd, m->name, FALSE, 0,
                   NULL);
        if (m->skip)
            continue;
        if (m->old)
            daxfile_registry_put(reg, g_steal_pointer(&m->old));
        else
            daxfile_registry_remove(reg, m->st.st_dev, m->st.st_ino);
    }
    daxfile_registry_save(reg, NULL);
}

/* Engage (when @verify is FALSE) or verify every member to be made static
 * here; on failure roll the whole set back. */
static gboolean
set_step(DaxfileRegistry *reg, GArray *set, gboolean verify,
         guint *ret_failed, GError **error)
{
    guint i;

    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);
        DaxfileStaticItem *it = m->item;
        DaxfileMechanism mech = it->result.mechanism;
        gboolean ok;

        if (!m->engage)
            continue;
        if (verify)
            ok = verify_engaged(it->fd, &m->st, &it->params, m->report, mech,
                                m->name, error);
        else
            ok = m->engaged = engage(mech, it->fd, m->name, TRUE,
                                     it->params.align, error);
        if (!ok) {
            set_rollback(reg, set);
            return member_fail(m, ret_failed);
        }
    }
    return TRUE;
}

static gboolean
set_commit(DaxfileStaticItem *items, guint n, gboolean reserve,
           pid_t holder, guint64 holder_start, guint *ret_failed,
           GError **error)
{
    g_autoptr(GArray) set = NULL;
    g_autoptr(DaxfileRegistry) reg = NULL;
    guint i;

    *ret_failed = G_MAXUINT;
    set = set_lock(items, n, ret_failed, error);
    if (reserve)
        daxfile_test_pause_point("prepare-reserving");
    if (!set || !(reg = daxfile_registry_open(error)))
        return FALSE;
    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);

        if (!set_member(reg, m, reserve, holder, holder_start, error))
            return member_fail(m, ret_failed);
    }
    /* the registry first: after a crash it names every file that may be
     * static, and repair finds them */
    if (!daxfile_registry_save(reg, error))
        return FALSE;
    daxfile_test_crash_point("enable-logged");
    if (!set_step(reg, set, FALSE, ret_failed, error))
        return FALSE;
    daxfile_test_crash_point("enable-engaged");
    return set_step(reg, set, TRUE, ret_failed, error);
}

gboolean
daxfile_static_reserve_set(DaxfileStaticItem *items, guint n, pid_t holder,
                           guint64 holder_start, guint *ret_failed,
                           GError **error)
{
    return set_commit(items, n, TRUE, holder, holder_start, ret_failed,
                      error);
}

gboolean
daxfile_static_enable_set(DaxfileStaticItem *items, guint n,
                          guint *ret_failed, GError **error)
{
    return set_commit(items, n, FALSE, 0, 0, ret_failed, error);
}

gboolean
daxfile_static_release_set(DaxfileStaticItem *items, guint n,
                           guint *ret_failed, GError **error)
{
    g_autoptr(GArray) set = NULL;
    g_autoptr(DaxfileRegistry) reg = NULL;
    gboolean ok = TRUE;
    guint i;

    *ret_failed = G_MAXUINT;
    set = set_lock(items, n, ret_failed, error);
    if (!set || !(reg = daxfile_registry_open(error)))
        return FALSE;
    for (i = 0; i < set->len; i++) {
        Member *m = &g_array_index(set, Member, i);
        DaxfileStaticItem *it = m->item;
        DaxfileEntry *e = daxfile_registry_lookup(reg, m->st.st_dev,
                                                  m->st.st_ino);
        GError **err = ok ? error : NULL;

        it->not_ours = !e || owner_conflict(e, it->params.owner, m->name,
                                            NULL);
        if (it->not_ours)
            continue;
        if (!release_allowed(e, m->name, err) ||
            !release_inode(it->fd, e, m->name, &it->released, err)) {
            ok = ok ? member_fail(m, ret_failed) : FALSE;
            continue;
        }
        daxfile_registry_remove(reg, m->st.st_dev, m->st.st_ino);
    }
    /* the inodes first, durably: until the registry is written it still
     * names them */
    daxfile_test_crash_point("disable-released");
    return daxfile_registry_save(reg, ok ? error : NULL) && ok;
}

/* Is the mechanism still in force? -1 when it has nothing to check. */
static int
mechanism_intact(int fd, const DaxfileEntry *e)
{
    gboolean on = FALSE;
    long nr = 0;

    if (e->state != DAXFILE_STATE_ENGAGED)
        return -1;
    if (e->mechanism == DAXFILE_MECH_IMMUTABLE)
        return daxfile_guard_get(fd, e->path, &on, NULL) ? on : -1;
    if (e->mechanism == DAXFILE_MECH_KERNEL && daxfile_kernel_syscall_nr(&nr))
        return daxfile_kernel_get(nr, fd, e->path, &on, NULL) ? on : -1;
    return -1;
}

static void
entry_members(JsonBuilder *b, const DaxfileEntry *e)
{
    daxfile_json_add_string(b, "state", daxfile_entry_state_to_string(e->state));
    daxfile_json_add_string(b, "mechanism",
                       daxfile_mechanism_to_string(e->mechanism));
    daxfile_json_add_string(b, "owner", e->owner);
    daxfile_json_add_string(b, "owner_uuid", e->owner_uuid);
    daxfile_json_add_string(b, "device", e->device);
    daxfile_json_add_int(b, "pid", e->pid);
    daxfile_json_add_int(b, "align", (gint64)e->align);
    daxfile_json_add_string(b, "since", e->since);
    daxfile_json_add_bool(b, "stale", daxfile_entry_is_stale(e));
}

/* For a file a running domain holds: what its QEMU mapped, attested as
 * the hook did at started (daxfile-attest.h); the <alignsize> judged is
 * the report's, and a virtio-pmem device needs neither it nor MAP_SYNC */
static JsonNode *
qemu_json(int fd, const struct stat *st, const DaxfileReport *report,
          const DaxfileEntry *e)
{
    g_autoptr(DaxfileConf) conf = daxfile_conf_load(NULL, NULL);
    g_auto(DaxfileAttestation) a = {.pid = -1};
    g_autoptr(GError) local = NULL;
    const char *domain = e->owner + strlen("domain:");
    gboolean nvdimm = g_strcmp0(e->device, "virtio-pmem") != 0;

    a.pid = daxfile_attest_qemu_pid(conf ? conf->qemu_pid_dir
                                         : DAXFILE_QEMU_PID_DIR,
                                    domain, daxfile_conf_path(), &local);
    if (a.pid < 0)
        a.problem = g_strdup(local->message);
    else
        daxfile_attest(a.pid, NULL, fd, st, report->path, st->st_size,
                       nvdimm ? report->align : 0, nvdimm, &a, NULL);
    return daxfile_attestation_to_json(&a);
}

JsonNode *
daxfile_static_state_json(int fd, const DaxfileReport *report)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(DaxfileEntry) e = NULL;
    gboolean immutable = FALSE;
    struct stat st;

    if (fstat(fd, &st) == 0)
        registry_peek(&st, &e, NULL);
    json_builder_begin_object(b);
    daxfile_json_add_bool(b, "enabled", e && e->state == DAXFILE_STATE_ENGAGED);
    if (e && e->state == DAXFILE_STATE_ENGAGED && e->owner &&
        g_str_has_prefix(e->owner, "domain:")) {
        json_builder_set_member_name(b, "qemu");
        json_builder_add_value(b, qemu_json(fd, &st, report, e));
    }
    if (e) {
        entry_members(b, e);
        daxfile_json_add_tristate(b, "layout_unchanged",
                                 e->fingerprint && report->fingerprint &&
                                     STREQ(e->fingerprint,
                                           report->fingerprint));
        daxfile_json_add_tristate(b, "mechanism_intact",
                                 mechanism_intact(fd, e));
    } else {
        daxfile_json_add_string(b, "mechanism", NULL);
        daxfile_json_add_string(b, "owner", NULL);
        daxfile_json_add_string(b, "since", NULL);
        daxfile_json_add_tristate(b, "layout_unchanged", -1);
    }
    daxfile_json_add_tristate(b, "immutable",
                             daxfile_guard_get(fd, report->path, &immutable,
                                               NULL) ? immutable : -1);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

GPtrArray *
daxfile_static_list(GError **error)
{
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(error);
    GPtrArray *entries;
    GPtrArray *out;
    guint i;

    if (!reg)
        return NULL;
    entries = daxfile_registry_entries(reg);
    out = g_ptr_array_new_with_free_func((GDestroyNotify)daxfile_entry_free);
    for (i = 0; i < entries->len; i++)
        g_ptr_array_add(out, daxfile_entry_copy(g_ptr_array_index(entries,
                                                                  i)));
    return out;
}

JsonNode *
daxfile_static_list_json(const GPtrArray *entries)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i;

    json_builder_begin_array(b);
    for (i = 0; i < entries->len; i++) {
        const DaxfileEntry *e = g_ptr_array_index(entries, i);

        json_builder_begin_object(b);
        if (g_utf8_validate(e->path, -1, NULL)) {
            daxfile_json_add_string(b, "path", e->path);
        } else {
            g_autofree char *shown = daxfile_escape(e->path);

            daxfile_json_add_string(b, "path", shown);
        }
        entry_members(b, e);
        daxfile_json_add_string(b, "fingerprint", e->fingerprint);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

/* The processes mapping the entry's file, or its device-dax device */
static GArray *
entry_mappers(const DaxfileEntry *e)
{
    return entry_is_device(e) ? daxfile_proc_mappers_rdev(e->dev)
                              : daxfile_proc_mappers(e->dev, e->ino);
}

static gboolean
owned_by_consumer(const DaxfileEntry *e)
{
    return e->owner && (g_str_has_prefix(e->owner, "domain:") ||
                        g_str_has_prefix(e->owner, "pid:"));
}

/* Why a reservation is left over, or NULL while its start may still be
 * going on: the process that ran the prepare hook (libvirtd) is alive, or
 * QEMU has the file mapped (a libvirtd restarted meanwhile reconnects). */
static const char *
reservation_reason(const DaxfileEntry *e)
{
    g_autoptr(GArray) mappers = NULL;

    if (e->holder_pid > 0 &&
        daxfile_proc_same((pid_t)e->holder_pid, e->holder_start))
        return NULL;
    mappers = entry_mappers(e);
    if (mappers->len > 0)
        return NULL;
    return "the start that reserved it never finished (the process that "
           "reserved it is gone and no process maps the file)";
}

/* Why an entry needs repair, or NULL when it is healthy */
static const char *
repair_reason(const DaxfileEntry *e)
{
    g_autoptr(GArray) mappers = NULL;

    if (daxfile_entry_is_stale(e))
        return "left over from an earlier boot";
    if (e->state == DAXFILE_STATE_ENGAGING ||
        e->state == DAXFILE_STATE_RELEASING)
        return "an enable or disable was interrupted";
    if (e->state == DAXFILE_STATE_RESERVED || e->holder_start)
        return reservation_reason(e); /* (made static at prepare) */
    if (e->pid > 0 && !daxfile_proc_alive((pid_t)e->pid))
        return "its consumer process is gone";
    if (!owned_by_consumer(e))
        return NULL;
    mappers = entry_mappers(e);
    return mappers->len == 0 ? "no process maps it any more" : NULL;
}

/* Whether undoing the entry needs its inode: an immutable flag outlives
 * everything, a kernel static mode only lasts the boot, the rest enforces
 * nothing. */
static gboolean
needs_inode(const DaxfileEntry *e)
{
    if (e->mechanism == DAXFILE_MECH_IMMUTABLE)
        return TRUE;
    return e->mechanism == DAXFILE_MECH_KERNEL && !daxfile_entry_is_stale(e);
}

/* @fd (whose stat is @st) is the entry's inode: the same device and
 * inode, or, where the device number changed (a reboot, another loop
 * device), the same inode number and file handle, its generation
 * included (an xfs f_fsid follows the device number, so it cannot help) */
static gboolean
is_entry_inode(int fd, const struct stat *st, const DaxfileEntry *e)
{
    g_autofree char *handle = NULL;

    if (st->st_dev == e->dev && st->st_ino == e->ino)
        return TRUE;
    if (st->st_ino != e->ino || !e->handle)
        return FALSE;
    handle = daxfile_fd_handle(fd);
    return handle && STREQ(handle, e->handle);
}

/* The inode of the entry, by its recorded path, by the --path hint, or by
 * its file handle. -1 with *ret_gone when it no longer exists. */
static int
repair_resolve(const DaxfileEntry *e, int hint_fd, gboolean *ret_gone,
               GError **error)
{
    g_auto(DaxfileFd) fd = -1;
    struct stat st;

    *ret_gone = FALSE;
    /* its recorded path, then the path the user named */
    fd = daxfile_file_open(e->path, DAXFILE_OPEN_READ, &st, NULL);
    if (fd >= 0 && is_entry_inode(fd, &st, e))
        return g_steal_fd(&fd);
    if (hint_fd >= 0 && fstat(hint_fd, &st) == 0 &&
        is_entry_inode(hint_fd, &st, e))
        return daxfile_fd_reopen(hint_fd, O_RDONLY, e->path, error);
    if (!e->handle) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                    "its path no longer leads to it and it has no file "
                    "handle");
        return -1;
    }
    return daxfile_handle_reopen(e->handle, e->dev, e->fsid, e->ino,
                                 O_RDONLY, ret_gone, error);
}

/* Another entry, in force, holds the inode @fd now (a stale entry from an
 * earlier boot whose file was made static again since). */
static gboolean
held_by_other(DaxfileRegistry *reg, const DaxfileEntry *e, int fd)
{
    DaxfileEntry *other;
    struct stat st;

    if (fstat(fd, &st) < 0)
        return FALSE;
    other = daxfile_registry_lookup(reg, st.st_dev, st.st_ino);
    return other && other != e && !daxfile_entry_is_stale(other);
}

static gboolean
repair_release(int fd, const DaxfileEntry *e, const char *name,
               GError **error)
{
    gboolean on = FALSE;
    long nr = 0;

    if (e->mechanism == DAXFILE_MECH_IMMUTABLE && e->flag_set) {
        if (!daxfile_guard_get(fd, name, &on, error))
            return FALSE;
        return !on || (check_cap(name, error) &&
                       daxfile_guard_set_durable(fd, name, FALSE, error));
    }
    if (e->mechanism == DAXFILE_MECH_KERNEL && daxfile_kernel_syscall_nr(&nr)) {
        if (!daxfile_kernel_get(nr, fd, name, &on, error))
            return FALSE;
        return !on || daxfile_kernel_set(nr, fd, name, FALSE, 0, error);
    }
    return TRUE;
}

void
daxfile_repair_result_clear(DaxfileRepairResult *result)
{
    g_clear_pointer(&result->actions, g_ptr_array_unref);
    g_clear_pointer(&result->unresolved, g_ptr_array_unref);
}

static void
add_action(GPtrArray *list, const DaxfileEntry *e, const char *name,
           const char *verb, const char *why)
{
    g_ptr_array_add(list, g_strdup_printf(
        "%s '%s' (%s, owner '%s'): %s", verb, name,
        daxfile_mechanism_to_string(e->mechanism), e->owner, why));
}

/* A file static in the kernel when an earlier boot ended: a kernel that
 * serves its faults from the frozen map (kernel/README.md, "Fault path")
 * stamps mtime only at fsync and release, so stores since the last stamp
 * may not show. Stamp it now, so that backups see it changed. */
static char *
stamp_left_static(const DaxfileEntry *e, int hint_fd, const char *why)
{
    g_autoptr(GError) local = NULL;
    g_auto(DaxfileFd) fd = -1;
    gboolean gone = FALSE;
    const struct timespec now[2] = {
        { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_NOW },
    };

    fd = repair_resolve(e, hint_fd, &gone, &local);
    if (fd < 0)
        return g_strdup(why);
    if (futimens(fd, now) < 0)
        return g_strdup_printf("%s; its mtime could not be set to now: %s",
                               why, g_strerror(errno));
    return g_strdup_printf("%s; its mtime is now (it may have been written "
                           "while static, after its last stamp)", why);
}

/* Repair one entry; TRUE when it is done with (and removed). */
static gboolean
repair_entry(DaxfileRegistry *reg, DaxfileEntry *e, const char *why,
             int hint_fd, DaxfileRepairResult *result, GError **error)
{
    g_autofree char *name = daxfile_escape(e->path);
    g_autoptr(GError) local = NULL;
    g_auto(DaxfileFd) fd = -1;
    gboolean gone = FALSE;

    if (e->mechanism == DAXFILE_MECH_KERNEL && daxfile_entry_is_stale(e)) {
        g_autofree char *done = stamp_left_static(e, hint_fd, why);

        add_action(result->actions, e, name, "released", done);
        return TRUE;
    }
    if (!needs_inode(e)) {
        add_action(result->actions, e, name, "released", why);
        return TRUE;
    }
    fd = repair_resolve(e, hint_fd, &gone, &local);
    if (fd < 0 && gone) {
        add_action(result->actions, e, name, "dropped", "the file no "
                   "longer exists");
        return TRUE;
    }
    if (fd < 0) {
        g_ptr_array_add(result->unresolved, g_strdup_printf(
            "'%s' (%s, owner '%s', %s) cannot be found: %s", name,
            daxfile_mechanism_to_string(e->mechanism), e->owner, why,
            local->message));
        return FALSE;
    }
    if (held_by_other(reg, e, fd)) {
        add_action(result->actions, e, name, "dropped", "the file is static "
                   "again under a newer entry, which stays");
        return TRUE;
    }
    if (!repair_release(fd, e, name, error))
        return FALSE;
    add_action(result->actions, e, name, "released", why);
    return TRUE;
}

/* An entry in force by the registry whose mechanism is not on its inode:
 * a hook killed between its registry write and the flag, or chattr -i by
 * hand. NULL otherwise. */
static const char *
lost_reason(const DaxfileEntry *e, int hint_fd)
{
    g_auto(DaxfileFd) fd = -1;
    gboolean gone = FALSE;

    if (e->state != DAXFILE_STATE_ENGAGED || !needs_inode(e))
        return NULL;
    fd = repair_resolve(e, hint_fd, &gone, NULL);
    if (fd < 0 || mechanism_intact(fd, e) != 0)
        return NULL;
    return "its mechanism is not in force (a start was interrupted before "
           "it engaged, or the flag was cleared by hand)";
}

gboolean
daxfile_static_repair(const char *hint_path, DaxfileRepairResult *ret_result,
                      GError **error)
{
    g_autoptr(DaxfileRegistry) reg = NULL;
    g_auto(DaxfileFd) hint_fd = -1;
    GPtrArray *entries;
    guint i = 0;

    ret_result->actions = g_ptr_array_new_with_free_func(g_free);
    ret_result->unresolved = g_ptr_array_new_with_free_func(g_free);
    if (hint_path) {
        hint_fd = daxfile_file_open(hint_path, DAXFILE_OPEN_READ, NULL, error);
        if (hint_fd < 0)
            return FALSE;
    }
    reg = daxfile_registry_open(error);
    if (!reg)
        return FALSE;
    entries = daxfile_registry_entries(reg);
    while (i < entries->len) {
        DaxfileEntry *e = g_ptr_array_index(entries, i);
        const char *why = repair_reason(e);
        g_autoptr(GError) local = NULL;

        if (!why)
            why = lost_reason(e, hint_fd);

        if (!why) {
            i++;
        } else if (repair_entry(reg, e, why, hint_fd, ret_result, &local)) {
            daxfile_registry_remove(reg, e->dev, e->ino);
        } else if (local) {
            /* save what was done so far, then report the failure */
            daxfile_registry_save(reg, NULL);
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        } else {
            i++;
        }
    }
    return daxfile_registry_save(reg, error);
}

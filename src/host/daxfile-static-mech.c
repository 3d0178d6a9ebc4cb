/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-static-mech.c: the mechanism that holds a file static: its
 * choice (the immutable guard after its self-test, remembered for the
 * boot), engaging and releasing it, whether it is still in force
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-guard.h"
#include "daxfile-kernel.h"
#include "daxfile-proc.h"
#include "daxfile-registry.h"
#include "daxfile-static-priv.h"
#include "daxfile-static.h"
#include "daxfile-util.h"

gboolean
daxfile_static_check_cap(const char *name, GError **error)
{
    if (daxfile_have_cap_linux_immutable())
        return TRUE;
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
        "Cannot change static mode of '%s': CAP_LINUX_IMMUTABLE is missing; fix: run as root",
        name);
    return FALSE;
}

/* The guard stops new writers only: refuse while someone other than the
 * consumer already holds the file open for writing (on xfs such an fd
 * keeps write() and ftruncate() under the flag). Mapping the file makes
 * no process a consumer: only the ones the caller names are (the
 * domain's attested QEMU, run's command, enable --consumer). */
gboolean
daxfile_static_check_writers(const struct stat *st,
                             const DaxfileEnableParams *params,
                             gboolean engaged, const char *name, GError **error)
{
    g_autoptr(GArray) writers = daxfile_proc_writers(st->st_dev, st->st_ino);
    guint i;

    for (i = 0; i < writers->len; i++) {
        pid_t pid = g_array_index(writers, pid_t, i);
        g_autofree char *comm = NULL;

        if (daxfile_pid_in(params->consumers, pid))
            continue;
        comm = daxfile_proc_comm(pid);
        if (engaged)
            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                "'%s' was opened for writing by process %d (%s) while static mode was being engaged, and the guard cannot stop writes through that descriptor; static mode was rolled back, close it and try again",
                name, (int)pid, comm);
        else
            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY,
                "'%s' is open for writing by process %d (%s), which is not its consumer; the guard cannot stop writes through that descriptor, so close it first",
                name, (int)pid, comm);
        return FALSE;
    }
    return TRUE;
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
    key = g_strdup_printf(
        "%u:%u %llu %lx %08x%08x %s %s", stx.stx_dev_major, stx.stx_dev_minor,
        (unsigned long long)stx.stx_mnt_id, (unsigned long)sfs.f_type,
        (unsigned int)sfs.f_fsid.__val[0], (unsigned int)sfs.f_fsid.__val[1],
        u.release, daxfile_boot_id());
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
    g_autofree char *data =
        result->safe ? g_strdup("safe\n")
                     : g_strdup_printf("unsafe %s\n",
                                       result->detail ? result->detail : "");
    g_autoptr(GError) error = NULL;

    /* volatile and only a shortcut: a failure costs a self-test later */
    if (!g_file_set_contents_full(file, data, -1,
                                  G_FILE_SET_CONTENTS_CONSISTENT, 0600, &error))
        g_debug("cannot remember the self-test: %s", error->message);
}

/* Run the self-test in the file's directory, or recall its answer for
 * this filesystem from earlier in this boot; FALSE only on error. */
static gboolean
guard_selftest(const DaxfileFile *f, const struct stat *st,
               DaxfileSelftest *result, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(f->path);
    g_auto(DaxfileFd) dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_autofree char *cache = NULL;

    if (dirfd < 0) {
        /* escaping keeps every '/': the directory of the display name */
        g_autofree char *d = g_path_get_dirname(f->display);

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
choose_guard(const DaxfileFile *f, const struct stat *st,
             const DaxfileEnableParams *params, DaxfileEnableResult *result,
             GError **error)
{
    const char *name = f->display;
    g_auto(DaxfileSelftest) test = {0};

    if (!daxfile_static_check_cap(name, error) ||
        !daxfile_static_check_writers(st, params, FALSE, name, error) ||
        !guard_selftest(f, st, &test, error))
        return FALSE;
    if (test.safe) {
        result->mechanism = DAXFILE_MECH_IMMUTABLE;
        return TRUE;
    }
    if (params->mechanism == DAXFILE_MECH_IMMUTABLE) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
            "The immutable guard is unsafe for '%s' on this kernel and filesystem: %s",
            name, test.detail);
        return FALSE;
    }
    result->mechanism = DAXFILE_MECH_VERIFIED_ONLY;
    result->warning = g_strdup_printf(
        "the immutable guard is unsafe here (%s); '%s' is verified but layout changes are NOT blocked",
        test.detail, name);
    return TRUE;
}

gboolean
daxfile_static_choose_mechanism(const DaxfileFile *f, const struct stat *st,
                                const DaxfileEnableParams *params,
                                const DaxfileReport *report,
                                DaxfileEnableResult *result, GError **error)
{
    const char *name = f->display;
    DaxfileMechanism want = params->mechanism;
    long nr = 0;

    if ((want == DAXFILE_MECH_NONE || want == DAXFILE_MECH_KERNEL) &&
        report->dax_effective && daxfile_kernel_syscall_nr(&nr)) {
        result->mechanism = DAXFILE_MECH_KERNEL;
        return daxfile_static_check_cap(name, error);
    }
    if (want == DAXFILE_MECH_KERNEL) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
            "Cannot use the kernel mechanism for '%s': the running kernel does not advertise daxctl() (%s)",
            name,
            report->dax_effective ? "no /sys/" DAXFILE_KERNEL_SYSFS_NR
                                  : "DAX is not in effect");
        return FALSE;
    }
    if (want != DAXFILE_MECH_VERIFIED_ONLY && report->dax_effective)
        return choose_guard(f, st, params, result, error);
    if (want == DAXFILE_MECH_IMMUTABLE) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
            "Cannot use the immutable guard for '%s': DAX is not in effect, and without DAX a store after the flag can SIGBUS the consumer",
            name);
        return FALSE;
    }
    result->mechanism = DAXFILE_MECH_VERIFIED_ONLY;
    if (!report->dax_effective)
        result->warning = g_strdup_printf(
            "DEVELOPMENT MODE: '%s' is not on DAX; it is verified and registered but nothing is enforced, and guest writes are only durable after the host flushes the page cache (msync/fsync)",
            name);
    return TRUE;
}

gboolean
daxfile_static_engage(DaxfileMechanism mech, const DaxfileFile *f, gboolean on,
                      guint64 align, GError **error)
{
    long nr = 0;

    switch (mech) {
    case DAXFILE_MECH_KERNEL:
        if (!daxfile_kernel_syscall_nr(&nr)) {
            g_set_error(
                error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED,
                "Cannot release '%s': the running kernel no longer advertises daxctl()",
                f->display);
            return FALSE;
        }
        return daxfile_kernel_set(nr, f, on, align, error);
    case DAXFILE_MECH_IMMUTABLE:
        return daxfile_guard_set_durable(f, on, error);
    case DAXFILE_MECH_NONE:
    case DAXFILE_MECH_VERIFIED_ONLY:
    case DAXFILE_MECH_DEVICE_DAX:
    case DAXFILE_MECH_LAST:
        break;
    }
    return TRUE;
}

/* Is the mechanism still in force? -1 when it has nothing to check. */
int
daxfile_static_mechanism_intact(const DaxfileFile *f, const DaxfileEntry *e)
{
    gboolean on = FALSE;
    long nr = 0;

    if (e->state != DAXFILE_STATE_ENGAGED)
        return -1;
    if (e->mechanism == DAXFILE_MECH_IMMUTABLE)
        return daxfile_guard_get(f, &on, NULL) ? on : -1;
    if (e->mechanism == DAXFILE_MECH_KERNEL && daxfile_kernel_syscall_nr(&nr))
        return daxfile_kernel_get(nr, f, &on, NULL) ? on : -1;
    return -1;
}

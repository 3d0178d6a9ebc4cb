/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-guard.h"
#include "daxfile-seam.h"

#define CAP_LINUX_IMMUTABLE_BIT 9
#define PROBE_PAGES 4
#define SELFTEST_TIMEOUT_MS 10000
#define CHILD_SIGBUS 3
#define CHILD_BADDATA 4
#define CHILD_SETUP 5

gboolean
daxfile_guard_get(const DaxfileFile *f, gboolean *ret_on, GError **error)
{
    int flags = 0;

    if (ioctl(f->fd, FS_IOC_GETFLAGS, &flags) < 0) {
        daxfile_set_error_errno(
            error, errno, "Cannot read the inode flags of '%s'", f->display);
        return FALSE;
    }
    *ret_on = (flags & FS_IMMUTABLE_FL) != 0;
    return TRUE;
}

/* daxfile_guard_set() on @fd, named @name in messages (the self-test
 * probe has no name of its own) */
static gboolean
guard_set_fd(int fd, const char *name, gboolean on, GError **error)
{
    int flags = 0;

    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) {
        daxfile_set_error_errno(error, errno,
                                "Cannot read the inode flags of '%s'", name);
        return FALSE;
    }
    if (on)
        flags |= FS_IMMUTABLE_FL;
    else
        flags &= ~FS_IMMUTABLE_FL;
    if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0) {
        daxfile_set_error_errno(error, errno,
                                on ? "Cannot set the immutable flag on '%s'"
                                   : "Cannot clear the immutable flag on '%s'",
                                name);
        return FALSE;
    }
    return TRUE;
}

gboolean
daxfile_guard_set(const DaxfileFile *f, gboolean on, GError **error)
{
    return guard_set_fd(f->fd, f->display, on, error);
}

gboolean
daxfile_guard_set_durable(const DaxfileFile *f, gboolean on, GError **error)
{
    int fd = f->fd;
    const char *name = f->display;

    if (!daxfile_guard_set(f, on, error))
        return FALSE;
    /* The flag change sits in the journal until the next commit; the
     * registry records it durably, so the inode must be as durable
     * before the registry moves on (fsync works on an immutable file). */
    if (fsync(fd) < 0) {
        daxfile_set_error_errno(
            error, errno,
            "Cannot make the immutable flag of '%s' durable (fsync)", name);
        return FALSE;
    }
    return TRUE;
}

gboolean
daxfile_have_cap_linux_immutable(void)
{
    g_autofree char *status = NULL;
    const char *line;
    guint64 caps;

    if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL))
        return FALSE;
    line = strstr(status, "\nCapEff:");
    if (!line)
        return FALSE;
    caps = g_ascii_strtoull(line + strlen("\nCapEff:"), NULL, 16);
    return (caps >> CAP_LINUX_IMMUTABLE_BIT) & 1;
}

void
daxfile_selftest_clear(DaxfileSelftest *result)
{
    g_clear_pointer(&result->detail, g_free);
}

static void
child_sigbus(int sig)
{
    _exit(CHILD_SIGBUS);
}

static int
compare_ints(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Close every descriptor but the three in @keep (async-signal-safe). The
 * child must not hold what its parent holds: the per-file lock (an flock
 * lives as long as any copy of its descriptor) and the parent's ends of
 * the pipes (with them, the child's read() never sees the parent die). */
static void
close_all_but(int keep[3])
{
    unsigned int from = 0;
    int i;

    qsort(keep, 3, sizeof(int), compare_ints);
    for (i = 0; i < 3; i++) {
        if ((unsigned int)keep[i] > from &&
            close_range(from, (unsigned int)keep[i] - 1, 0) < 0)
            _exit(CHILD_SETUP);
        from = (unsigned int)keep[i] + 1;
    }
    if (close_range(from, ~0U, 0) < 0)
        _exit(CHILD_SETUP);
}

/* The consumer stand-in: map, fault pages 0 (write) and 1 (read), report
 * ready, wait for the flag, then store to pages 0, 1 and 2. Only
 * async-signal-safe calls: this runs after fork(). It dies with its
 * parent (PR_SET_PDEATHSIG), so a killed daxfile leaves no child behind. */
static void G_GNUC_NORETURN
selftest_child(int fd, gboolean dax, int ready_fd, int go_fd, pid_t parent)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int mflags = MAP_SHARED_VALIDATE | (dax ? MAP_SYNC : 0);
    int keep[3] = {fd, ready_fd, go_fd};
    volatile unsigned char *map;
    struct sigaction sa;
    char c = 'r';

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(CHILD_SETUP);
    close_all_but(keep);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = child_sigbus;
    sigaction(SIGBUS, &sa, NULL);
    map = mmap(NULL, page * PROBE_PAGES, PROT_READ | PROT_WRITE, mflags, fd, 0);
    if (map == MAP_FAILED)
        _exit(CHILD_SETUP);
    map[0] = 1;
    c = (char)(map[page] + 'r');
    if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
        _exit(CHILD_SETUP);
    map[0] = 0xa1;
    map[page] = 0xa2;
    map[2 * page] = 0xa3;
    if (msync((void *)map, page * PROBE_PAGES, MS_SYNC) < 0)
        _exit(CHILD_BADDATA);
    _exit(0);
}

static gboolean
probe_create(int dirfd, guint64 dev, int *ret_fd, GError **error)
{
    size_t len = (size_t)sysconf(_SC_PAGESIZE) * PROBE_PAGES;
    g_autofree guint8 *zero = g_malloc0(len);
    g_auto(DaxfileFd) fd =
        openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    struct stat st;

    if (fd < 0) {
        daxfile_set_error_errno(error, errno,
                                "Cannot create the self-test probe file");
        return FALSE;
    }
    if (fstat(fd, &st) < 0 || st.st_dev != dev) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED,
                    "The self-test probe is not on the file's filesystem");
        return FALSE;
    }
    /* provisioned, like the files the guard protects */
    if (pwrite(fd, zero, len, 0) != (ssize_t)len || fsync(fd) < 0) {
        daxfile_set_error_errno(error, errno,
                                "Cannot write the self-test probe file");
        return FALSE;
    }
    *ret_fd = g_steal_fd(&fd);
    return TRUE;
}

/* Wait up to the timeout for one byte from the child, then for its exit. */
static int
selftest_wait(pid_t pid, int ready_fd, int go_fd, int probe_fd,
              gboolean *ret_flag_set, GError **error)
{
    struct pollfd pfd = {ready_fd, POLLIN, 0};
    int status = 0;
    char c;

    if (poll(&pfd, 1, SELFTEST_TIMEOUT_MS) == 1 && read(ready_fd, &c, 1) == 1) {
        if (!guard_set_fd(probe_fd, "self-test probe", TRUE, error)) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        *ret_flag_set = TRUE;
        c = 'g';
        if (write(go_fd, &c, 1) != 1)
            kill(pid, SIGKILL);
    } else {
        kill(pid, SIGKILL);
    }
    pfd.fd = ready_fd;
    if (poll(&pfd, 1, SELFTEST_TIMEOUT_MS) == 0)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

static void
selftest_judge(int status, int probe_fd, DaxfileSelftest *result)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char got[3] = {0};
    size_t i;

    if (WIFSIGNALED(status) || !WIFEXITED(status)) {
        result->detail = g_strdup("the test process was killed or timed out");
        return;
    }
    if (WEXITSTATUS(status) == CHILD_SIGBUS) {
        result->detail = g_strdup(
            "a store through a live mapping got SIGBUS after the immutable flag was set");
        return;
    }
    if (WEXITSTATUS(status) != 0) {
        result->detail = g_strdup_printf("the test process failed (status %d)",
                                         WEXITSTATUS(status));
        return;
    }
    for (i = 0; i < 3; i++) {
        if (pread(probe_fd, &got[i], 1, (off_t)(i * page)) != 1 ||
            got[i] != 0xa1 + i) {
            result->detail = g_strdup_printf(
                "a store to page %zu did not reach the file", i);
            return;
        }
    }
    result->safe = TRUE;
    result->detail = g_strdup(
        "stores through a live mapping (write-, read- and never-faulted pages) survive the flag");
}

gboolean
daxfile_guard_selftest(int dirfd, guint64 dev, gboolean dax,
                       DaxfileSelftest *ret_result, GError **error)
{
    g_auto(DaxfileFd) probe = -1;
    int ready[2] = {-1, -1};
    int go[2] = {-1, -1};
    gboolean flag_set = FALSE;
    pid_t parent;
    int status;
    pid_t pid;

    if (!probe_create(dirfd, dev, &probe, error))
        return FALSE;
    if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot run the self-test");
        return FALSE;
    }
    parent = getpid();
    pid = fork();
    if (pid == 0)
        selftest_child(probe, dax, ready[1], go[0], parent);
    close(ready[1]);
    close(go[0]);
    if (pid > 0)
        daxfile_test_crash_point("selftest-running");
    status = pid < 0
                 ? -1
                 : selftest_wait(pid, ready[0], go[1], probe, &flag_set, error);
    close(ready[0]);
    close(go[1]);
    if (flag_set)
        guard_set_fd(probe, "self-test probe", FALSE, NULL);
    if (pid < 0)
        daxfile_set_error_errno(error, errno, "Cannot run the self-test");
    if (status < 0)
        return FALSE;
    selftest_judge(status, probe, ret_result);
    return TRUE;
}

gboolean
daxfile_is_swapfile(guint64 dev, guint64 ino)
{
    g_autofree char *swaps = NULL;
    g_auto(GStrv) lines = NULL;
    guint i;

    if (!g_file_get_contents("/proc/swaps", &swaps, NULL, NULL))
        return FALSE;
    lines = g_strsplit(swaps, "\n", -1);
    for (i = 1; lines[i]; i++) {
        g_auto(GStrv) fields = g_strsplit_set(lines[i], " \t", 2);
        g_autofree char *path = NULL;
        struct stat st;

        if (!fields[0] || !*fields[0])
            continue;
        /* /proc/swaps escapes blanks and backslashes as octal */
        path = g_strcompress(fields[0]);
        if (stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
            return TRUE;
    }
    return FALSE;
}

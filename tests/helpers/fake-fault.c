/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fake-fault.so: a test-only LD_PRELOAD shim that makes chosen system
 * calls fail as a failing disk or a full filesystem makes them fail, so
 * that the error paths of static mode run on a real loop mount (with
 * fake-dax.so: the immutable flag is really set). Never built into the
 * product.
 *
 * DAXFILE_FAKE_FAULTS="EVENT@N[,EVENT@N...]": the Nth occurrence of EVENT
 * in the process (counted from 1) fails; "EVENT@N+" makes the Nth and
 * every later one fail. The events:
 *   set       ioctl(FS_IOC_SETFLAGS) setting FS_IMMUTABLE_FL: EIO, the
 *             flags unchanged
 *   clear     ioctl(FS_IOC_SETFLAGS) clearing it: EIO, the flags unchanged
 *   sync      fsync() of a file right after a FS_IOC_SETFLAGS on it (the
 *             flag change itself is made): EIO
 *   registry  write() to a file named registry.json.tmp: ENOSPC
 *   fsuuid    ioctl(FS_IOC_GETFSUUID): ENOTTY, as on a kernel without it
 * A file without a name (the self-test's O_TMPFILE probe) is never
 * faulted, so a self-test runs as it would.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EV_SET, EV_CLEAR, EV_SYNC, EV_REGISTRY, EV_FSUUID, EV_LAST };

static const char *const event_names[EV_LAST] = {"set", "clear", "sync",
                                                 "registry", "fsuuid"};

/* _IOR(0x15, 0, struct fsuuid2): not in every kernel's headers */
#define GETFSUUID_REQUEST _IOR(0x15, 0, unsigned char[17])
static unsigned long counts[EV_LAST];

/* the inode whose flags the last FS_IOC_SETFLAGS changed, until fsynced */
static dev_t pending_dev;
static ino_t pending_ino;
static int pending;

/* Does DAXFILE_FAKE_FAULTS make occurrence @n of @event fail? */
static int
fault_wanted(int event, unsigned long n)
{
    const char *p = getenv("DAXFILE_FAKE_FAULTS");
    size_t len = strlen(event_names[event]);

    while (p && *p) {
        char *end = NULL;
        unsigned long at;

        if (strncmp(p, event_names[event], len) == 0 && p[len] == '@') {
            at = strtoul(p + len + 1, &end, 10);
            if (end && (n == at || (*end == '+' && n >= at)))
                return 1;
        }
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return 0;
}

/* Count an occurrence of @event; TRUE when it is to fail */
static int
fault(int event)
{
    return fault_wanted(event, ++counts[event]);
}

/* A regular file with a name (not the self-test's unnamed probe) */
static int
named_file(int fd, struct stat *st)
{
    return fstat(fd, st) == 0 && S_ISREG(st->st_mode) && st->st_nlink > 0;
}

typedef int (*ioctl_fn)(int, unsigned long, ...);
typedef int (*fsync_fn)(int);
typedef ssize_t (*write_fn)(int, const void *, size_t);

int
ioctl(int fd, unsigned long request, ...)
{
    static ioctl_fn real;
    struct stat st;
    void *arg;
    va_list ap;
    int rc;

    if (!real)
        real = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
    va_start(ap, request);
    arg = va_arg(ap, void *);
    va_end(ap);
    if (request == GETFSUUID_REQUEST && fault(EV_FSUUID)) {
        errno = ENOTTY;
        return -1;
    }
    if (request != FS_IOC_SETFLAGS || !arg || !named_file(fd, &st))
        return real(fd, request, arg);
    if (fault((*(int *)arg & FS_IMMUTABLE_FL) ? EV_SET : EV_CLEAR)) {
        errno = EIO;
        return -1;
    }
    rc = real(fd, request, arg);
    if (rc == 0) {
        pending = 1;
        pending_dev = st.st_dev;
        pending_ino = st.st_ino;
    }
    return rc;
}

int
fsync(int fd)
{
    static fsync_fn real;
    struct stat st;

    if (!real)
        real = (fsync_fn)dlsym(RTLD_NEXT, "fsync");
    if (pending && named_file(fd, &st) && st.st_dev == pending_dev &&
        st.st_ino == pending_ino) {
        pending = 0;
        if (fault(EV_SYNC)) {
            errno = EIO;
            return -1;
        }
    }
    return real(fd);
}

/* @fd is open on a file named registry.json.tmp */
static int
registry_tmp(int fd)
{
    static const char suffix[] = "/registry.json.tmp";
    char link[64], target[4096];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof(target) - 1);
    if (n < (ssize_t)strlen(suffix))
        return 0;
    target[n] = '\0';
    return strcmp(target + n - strlen(suffix), suffix) == 0;
}

ssize_t
write(int fd, const void *buf, size_t count)
{
    static write_fn real;

    if (!real)
        real = (write_fn)dlsym(RTLD_NEXT, "write");
    if (fd > 2 && registry_tmp(fd) && fault(EV_REGISTRY)) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd, buf, count);
}

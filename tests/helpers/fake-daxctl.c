/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fake-daxctl.so: a test-only LD_PRELOAD shim standing in for a kernel with
 * daxctl(). It overrides syscall(): the number in DAXFILE_FAKE_DAXCTL_NR
 * gets the RFC's semantics (F_GET, F_STATIC, 0; EPERM without
 * CAP_LINUX_IMMUTABLE, EBUSY when already static, EINVAL for bad flags or
 * align), with the static state kept as marker files in
 * DAXFILE_FAKE_DAXCTL_STATE. Every other call goes to the real syscall();
 * calls that are neither futex nor the fake number are appended to
 * DAXFILE_FAKE_DAXCTL_LOG, so a test can prove daxfile never called a
 * number it was not told about.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define F_GET (1 << 0)
#define F_DAX (1 << 1)
#define F_STATIC (1 << 2)

typedef long (*syscall_fn)(long, ...);

static void
log_call(long nr, const char *what)
{
    const char *log = getenv("DAXFILE_FAKE_DAXCTL_LOG");
    FILE *f;

    if (!log || !(f = fopen(log, "ae")))
        return;
    fprintf(f, "%ld %s\n", nr, what);
    fclose(f);
}

static int
have_cap(void)
{
    char line[256];
    unsigned long long caps = 0;
    FILE *f = fopen("/proc/self/status", "re");

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "CapEff: %llx", &caps) == 1)
            break;
    }
    fclose(f);
    return (caps >> 9) & 1;
}

static long
fail(int err)
{
    errno = err;
    return -1;
}

static long
fake_daxctl(const char *path, long flags, long align)
{
    const char *dir = getenv("DAXFILE_FAKE_DAXCTL_STATE");
    char marker[4096];
    struct stat st;

    if (!dir || (flags & ~(F_GET | F_STATIC)) || (flags & F_DAX))
        return fail(EINVAL);
    if (stat(path, &st) < 0)
        return -1;
    snprintf(marker, sizeof(marker), "%s/%llu-%llu", dir,
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    if (flags & F_GET) {
        log_call(0, "get");
        return access(marker, F_OK) == 0 ? F_STATIC : 0;
    }
    if (!have_cap())
        return fail(EPERM);
    if (!(flags & F_STATIC)) {
        log_call(0, "clear");
        unlink(marker);
        return 0;
    }
    if (!S_ISREG(st.st_mode) || align < 0 || (align && align < 4096) ||
        (align & (align - 1)))
        return fail(EINVAL);
    if (access(marker, F_OK) == 0)
        return fail(EBUSY);
    log_call(0, "static");
    return close(open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
}

long
syscall(long nr, ...)
{
    static syscall_fn real;
    const char *fake = getenv("DAXFILE_FAKE_DAXCTL_NR");
    long a[6];
    va_list ap;
    int i;

    va_start(ap, nr);
    for (i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (fake && nr == atol(fake))
        return fake_daxctl((const char *)a[0], a[1], a[2]);
    if (nr != SYS_futex)
        log_call(nr, "real");
    if (!real)
        real = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
    return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

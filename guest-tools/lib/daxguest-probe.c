/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-fiemap.h"
#include "daxfile-mmap.h"
#include "daxfile-size.h"
#include "daxguest-probe.h"

#define SZ_2M DAXFILE_SZ_2M
#define SZ_4K DAXFILE_SZ_4K
#define TRACE_EVENT "events/fs_dax/dax_pmd_fault_done"

void
daxguest_pmd_probe_clear(DaxguestPmdProbe *probe)
{
    g_clear_pointer(&probe->error, g_free);
    memset(probe, 0, sizeof(*probe));
}

void
daxguest_file_probe_clear(DaxguestFileProbe *probe)
{
    g_free(probe->error);
    g_free(probe->dax_mode);
    g_free(probe->fs_type);
    g_free(probe->map_sync_error);
    g_free(probe->geometry_fix);
    daxguest_pmd_probe_clear(&probe->pmd);
    memset(probe, 0, sizeof(*probe));
}

guint64
daxguest_fault_count(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) < 0)
        return 0;
    return (guint64)ru.ru_minflt + (guint64)ru.ru_majflt;
}

/* ------------------------------------------------------------ tracefs */

static gboolean
write_attr(const char *path, const char *value)
{
    g_auto(DaxfileFd) fd = open(path, O_WRONLY | O_CLOEXEC);
    size_t len = strlen(value);

    return fd >= 0 && write(fd, value, len) == (ssize_t)len;
}

static const char *
trace_root(void)
{
    static const char *roots[] = {"/sys/kernel/tracing",
                                  "/sys/kernel/debug/tracing"};
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(roots); i++) {
        g_autofree char *ev = g_build_filename(roots[i], TRACE_EVENT, NULL);

        if (g_file_test(ev, G_FILE_TEST_IS_DIR))
            return roots[i];
    }
    return NULL;
}

/* A private trace instance recording dax_pmd_fault_done, or NULL. */
static char *
trace_start(void)
{
    const char *root = trace_root();
    g_autofree char *dir = NULL;
    g_autofree char *enable = NULL;

    if (!root)
        return NULL;
    dir = g_strdup_printf("%s/instances/daxfile-guest-%d", root, (int)getpid());
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        g_debug("Cannot create trace instance '%s': %s", dir,
                g_strerror(errno));
        return NULL;
    }
    enable = g_build_filename(dir, TRACE_EVENT, "enable", NULL);
    if (!write_attr(enable, "1")) {
        g_debug("Cannot enable '%s': %s", enable, g_strerror(errno));
        rmdir(dir);
        return NULL;
    }
    return g_steal_pointer(&dir);
}

static void
trace_stop(const char *dir, DaxguestPmdProbe *probe)
{
    g_autofree char *on = g_build_filename(dir, "tracing_on", NULL);
    g_autofree char *trace = g_build_filename(dir, "trace", NULL);
    g_autofree char *text = NULL;

    write_attr(on, "0");
    if (g_file_get_contents(trace, &text, NULL, NULL)) {
        daxguest_trace_count_pmd(text, (int)getpid(), &probe->trace_pmd,
                                 &probe->trace_fallback);
        if (probe->trace_fallback)
            probe->traced = DAXFILE_TRI_NO;
        else if (probe->trace_pmd)
            probe->traced = DAXFILE_TRI_YES;
    }
    if (rmdir(dir) < 0)
        g_debug("Cannot remove trace instance '%s': %s", dir,
                g_strerror(errno));
}

static gboolean
trace_line_pid(const char *line, int *ret_pid)
{
    /* "  <comm>-<pid>  [cpu] flags  stamp: event: ..." */
    const char *bracket = strstr(line, " [");
    const char *dash;
    g_autofree char *task = NULL;
    guint64 pid;

    if (!bracket)
        return FALSE;
    task = g_strstrip(g_strndup(line, bracket - line));
    dash = strrchr(task, '-');
    if (!dash ||
        !g_ascii_string_to_unsigned(dash + 1, 10, 0, G_MAXINT, &pid, NULL))
        return FALSE;
    *ret_pid = (int)pid;
    return TRUE;
}

void
daxguest_trace_count_pmd(const char *trace, int pid, guint *ret_pmd,
                         guint *ret_fallback)
{
    g_auto(GStrv) lines = g_strsplit(trace, "\n", -1);
    char **l;

    *ret_pmd = 0;
    *ret_fallback = 0;
    for (l = lines; *l; l++) {
        const char *result;
        int line_pid;

        if (!strstr(*l, " dax_pmd_fault_done: ") ||
            !trace_line_pid(*l, &line_pid) || line_pid != pid)
            continue;
        /* the fault result is the last word: NOPAGE, FALLBACK, ... */
        result = strrchr(g_strchomp(*l), ' ');
        if (result && strstr(result, "FALLBACK"))
            (*ret_fallback)++;
        else if (result)
            (*ret_pmd)++;
    }
}

/* ------------------------------------------------------------ faults */

static void
touch(volatile guint8 *p, gboolean write)
{
    if (write)
        *p = 0x5a;
    else
        (void)*p;
}

/* Map the first @len (>= 2 MiB) bytes of @fd at a 2 MiB-aligned address,
 * access byte 0, then one byte of each other 4 KiB page of the first
 * 2 MiB, counting the faults of each step. */
static void
pmd_probe_fd(int fd, guint64 len, gboolean write, gboolean sync, gboolean trace,
             DaxguestPmdProbe *probe)
{
    int prot = write ? PROT_READ | PROT_WRITE : PROT_READ;
    int flags = sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
    g_auto(DaxfileMapping) map = {NULL, 0};
    g_autoptr(GError) error = NULL;
    g_autofree char *tdir = NULL;
    guint64 f0, f1, f2, off;
    guint8 *base;

    if (!daxfile_map_aligned(fd, len, 0, prot, flags, MAX(len, SZ_2M),
                             &map.addr, &error)) {
        probe->error = g_strdup(error->message);
        return;
    }
    map.length = len;
    base = map.addr;
    probe->map_sync = sync;
    probe->traced = DAXFILE_TRI_UNKNOWN;
    tdir = trace ? trace_start() : NULL;
    f0 = daxguest_fault_count();
    touch(base, write);
    f1 = daxguest_fault_count();
    for (off = SZ_4K; off < SZ_2M; off += SZ_4K)
        touch(base + off, write);
    f2 = daxguest_fault_count();
    if (tdir)
        trace_stop(tdir, probe);
    probe->ran = TRUE;
    probe->first_faults = f1 - f0;
    probe->extra_faults = f2 - f1;
}

/* fallocate + write zeros + fsync: written extents, as daxfile create
 * makes them, so that faults neither allocate nor convert */
gboolean
daxguest_file_provision(int fd, guint64 size, const char *name, GError **error)
{
    g_autofree guint8 *zero = g_malloc0(SZ_2M);
    g_autofree char *pretty = daxfile_size_format(size);
    guint64 off;

    if (fallocate(fd, 0, 0, (off_t)size) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot allocate %s for '%s'",
                                pretty, name);
        return FALSE;
    }
    for (off = 0; off < size; off += MIN(SZ_2M, size - off)) {
        size_t len = MIN(SZ_2M, size - off);

        if (pwrite(fd, zero, len, (off_t)off) != (ssize_t)len) {
            daxfile_set_error_errno(error, errno, "Cannot write '%s'", name);
            return FALSE;
        }
    }
    if (fsync(fd) < 0) {
        daxfile_set_error_errno(error, errno, "Cannot sync '%s'", name);
        return FALSE;
    }
    return TRUE;
}

static void
probe_extent(int fd, const char *name, DaxguestFileProbe *probe)
{
    g_autoptr(DaxfileExtentMap) map = NULL;
    g_autoptr(GError) error = NULL;
    const DaxfileExtent *e;

    probe->extent_physical = G_MAXUINT64;
    map = daxfile_fiemap_read(fd, name, &error);
    if (!map || map->extents->len == 0) {
        g_debug("No extent map of the test file: %s",
                error ? error->message : "no extents");
        return;
    }
    e = &g_array_index(map->extents, DaxfileExtent, 0);
    if (e->logical != 0)
        return;
    probe->extent_physical = e->physical;
    probe->extent_aligned =
        DAXFILE_IS_ALIGNED(e->physical, SZ_2M) && e->length >= SZ_2M;
}

static void
probe_fs(int fd, DaxguestFileProbe *probe)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileFsInfo) fs = daxfile_fs_probe(fd, SZ_2M, &error);

    if (!fs) {
        probe->error = g_strdup(error->message);
        return;
    }
    probe->dax = fs->dax;
    probe->fs_type = g_strdup(fs->fs_type);
    probe->dax_mode = g_strdup(fs->dax_mode);
    probe->map_sync = fs->map_sync;
    probe->map_sync_error = g_strdup(fs->map_sync_error);
    probe->geometry_fix = g_strdup(fs->geometry_fix);
}

void
daxguest_probe_dir(int dirfd, const char *name, DaxguestFileProbe *ret_probe)
{
    g_auto(DaxfileFd) fd = -1;
    g_autoptr(GError) error = NULL;

    memset(ret_probe, 0, sizeof(*ret_probe));
    ret_probe->extent_physical = G_MAXUINT64;
    fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        ret_probe->error = g_strdup_printf(
            "Cannot create a test file in '%s': %s", name, g_strerror(errno));
        return;
    }
    if (!daxguest_file_provision(fd, DAXGUEST_PROBE_FILE_SIZE, name, &error)) {
        ret_probe->error = g_strdup(error->message);
        return;
    }
    probe_fs(fd, ret_probe);
    if (ret_probe->error)
        return;
    probe_extent(fd, name, ret_probe);
    pmd_probe_fd(fd, SZ_2M, TRUE, ret_probe->map_sync, TRUE, &ret_probe->pmd);
}

void
daxguest_probe_devdax(const char *path, guint64 align, guint64 size,
                      DaxguestPmdProbe *ret_probe)
{
    g_auto(DaxfileFd) fd = open(path, O_RDONLY | O_CLOEXEC);
    guint64 len = MAX(align, SZ_2M);
    void *addr;

    memset(ret_probe, 0, sizeof(*ret_probe));
    if (fd < 0) {
        ret_probe->error =
            g_strdup_printf("Cannot open '%s': %s", path, g_strerror(errno));
        return;
    }
    if (len > size) {
        ret_probe->error =
            g_strdup_printf("'%s' is smaller than its alignment", path);
        return;
    }
    /* MAP_SYNC is accepted by device-dax; find out, then probe with it */
    addr = mmap(NULL, len, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (addr != MAP_FAILED)
        munmap(addr, len);
    pmd_probe_fd(fd, len, FALSE, addr != MAP_FAILED, FALSE, ret_probe);
}

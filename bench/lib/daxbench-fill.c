/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daxbench-fill.h"
#include "daxbench-util.h"
#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-mmap.h"
#include "daxfile-size.h"
#include "daxfile-util.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

typedef enum {
    FILL_DD,
    FILL_PWRITE,
    FILL_POPULATE,
    FILL_CREATE,
    FILL_WIPE,
} FillKind;

struct DaxbenchFillMethod {
    const char *name;
    FillKind kind;
    gboolean raw_or_sync; /* dd, pwrite: over an existing file, O_DIRECT;
                           * populate: through a MAP_SYNC mapping */
    gsize chunk;          /* pwrite, populate: bytes per call */
};

static const DaxbenchFillMethod fill_methods[] = {
    {"raw-dd", FILL_DD, TRUE, 0},
    {"raw-pwrite", FILL_PWRITE, TRUE, DAXBENCH_MIB},
    {"falloc-dd", FILL_DD, FALSE, 0},
    {"falloc-pwrite", FILL_PWRITE, FALSE, DAXBENCH_MIB},
    {"falloc-pwrite-64m", FILL_PWRITE, FALSE, 64 * DAXBENCH_MIB},
    {"falloc-populate", FILL_POPULATE, FALSE, 64 * DAXBENCH_MIB},
    {"falloc-populate-sync", FILL_POPULATE, TRUE, 2 * DAXBENCH_MIB},
    {"create", FILL_CREATE, FALSE, 0},
    {"wipe", FILL_WIPE, FALSE, 0},
};

gboolean
daxbench_fill_parse(int argc, char **argv, DaxbenchFillArgs *ret_args)
{
    DaxbenchFillArgs a = {NULL, 0, NULL, "daxfile", FALSE};
    gsize m;
    int i;

    if (argc < 5 || !daxfile_size_parse(argv[3], &a.size, NULL) ||
        a.size % DAXBENCH_MIB)
        return FALSE;
    a.path = argv[2];
    for (m = 0; m < G_N_ELEMENTS(fill_methods); m++) {
        if (STREQ(argv[4], fill_methods[m].name))
            a.method = &fill_methods[m];
    }
    for (i = 5; i < argc; i++) {
        if (STREQ(argv[i], "--allow-non-dax"))
            a.allow_non_dax = TRUE;
        else if (STREQ(argv[i], "--daxfile") && i + 1 < argc)
            a.daxfile = argv[++i];
        else
            return FALSE;
    }
    *ret_args = a;
    return a.method != NULL;
}

/* A new file of @size fallocated bytes, open read-write */
static int
create_fallocated(const char *path, guint64 size, GError **error)
{
    g_auto(DaxfileFd) fd =
        open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

    if (fd < 0) {
        daxfile_set_error_errno(error, errno, "cannot create '%s'", path);
        return -1;
    }
    if (fallocate(fd, 0, 0, (off_t)size) < 0) {
        daxfile_set_error_errno(error, errno, "cannot fallocate '%s'", path);
        return -1;
    }
    return g_steal_fd(&fd);
}

static gboolean
fill_pwrite(const DaxbenchFillArgs *a, GError **error)
{
    g_auto(DaxfileFd) fd = -1;

    if (a->method->raw_or_sync) {
        fd = open(a->path, O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0) {
            daxfile_set_error_errno(error, errno, "cannot open '%s'", a->path);
            return FALSE;
        }
    } else {
        fd = create_fallocated(a->path, a->size, error);
        if (fd < 0)
            return FALSE;
    }
    return daxbench_write_zeroes(fd, a->path, a->size, a->method->chunk, error);
}

static gboolean
fill_populate(const DaxbenchFillArgs *a, GError **error)
{
    g_auto(DaxfileFd) fd = create_fallocated(a->path, a->size, error);
    g_auto(DaxfileMapping) map = {NULL, 0};
    int flags =
        a->method->raw_or_sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
    guint64 off;

    if (fd < 0)
        return FALSE;
    map.addr = mmap(NULL, a->size, PROT_READ | PROT_WRITE, flags, fd, 0);
    if (map.addr == MAP_FAILED) {
        map.addr = NULL;
        daxfile_set_error_errno(error, errno, "cannot map '%s'", a->path);
        return FALSE;
    }
    map.length = a->size;
    for (off = 0; off < a->size; off += a->method->chunk) {
        gsize n = MIN(a->size - off, a->method->chunk);

        if (madvise((char *)map.addr + off, n, MADV_POPULATE_WRITE) < 0) {
            daxfile_set_error_errno(
                error, errno, "MADV_POPULATE_WRITE failed on '%s'", a->path);
            return FALSE;
        }
    }
    daxfile_mapping_clear(&map);
    if (fsync(fd) < 0) {
        daxfile_set_error_errno(error, errno, "cannot sync '%s'", a->path);
        return FALSE;
    }
    return TRUE;
}

static gboolean
fill_dd(const DaxbenchFillArgs *a, GError **error)
{
    g_autofree char *of = g_strdup_printf("of=%s", a->path);
    g_autofree char *count =
        g_strdup_printf("count=%" PRIu64, a->size / DAXBENCH_MIB);
    char *dd_raw[] = {"dd",         "if=/dev/zero", of,
                      "bs=1M",      count,          "oflag=direct",
                      "conv=fsync", "status=none",  NULL};
    char *dd_file[] = {"dd",
                       "if=/dev/zero",
                       of,
                       "bs=1M",
                       count,
                       "conv=notrunc,fsync",
                       "status=none",
                       NULL};
    g_auto(DaxfileFd) fd = -1;

    if (a->method->raw_or_sync)
        return daxbench_run(dd_raw, NULL, error);
    fd = create_fallocated(a->path, a->size, error);
    if (fd < 0)
        return FALSE;
    daxfile_fd_close(g_steal_fd(&fd));
    return daxbench_run(dd_file, NULL, error);
}

static gboolean
fill_create(const DaxbenchFillArgs *a, GError **error)
{
    g_autofree char *size = g_strdup_printf("%" PRIu64, a->size);
    char *argv[] = {(char *)a->daxfile,
                    "create",
                    (char *)a->path,
                    "--size",
                    size,
                    a->allow_non_dax ? "--allow-non-dax" : NULL,
                    NULL};

    return daxbench_run(argv, NULL, error);
}

/* A number field of daxfile's JSON output, or -1 */
static double
json_number(const char *json, const char *key)
{
    g_autofree char *pat = g_strdup_printf("\"%s\"", key);
    const char *p = strstr(json, pat);

    if (!p)
        return -1;
    p += strlen(pat);
    while (*p == ' ' || *p == ':')
        p++;
    return g_ascii_strtod(p, NULL);
}

/* daxfile wipe --json of the file create made (untimed, before); its own
 * zeroing and read-back times into @ret_zero_s and @ret_verify_s */
static gboolean
fill_wipe(const DaxbenchFillArgs *a, double *ret_zero_s, double *ret_verify_s,
          GError **error)
{
    char *argv[] = {(char *)a->daxfile, "wipe", "--json", (char *)a->path,
                    NULL};
    g_autofree char *out = NULL;
    g_autofree char *json = NULL;
    g_auto(DaxfileFd) fd =
        g_file_open_tmp("bench-dax-wipe.XXXXXX", &out, error);
    gboolean ok;

    if (fd < 0)
        return FALSE;
    ok = daxbench_run(argv, out, error);
    if (!g_file_get_contents(out, &json, NULL, NULL))
        json = g_strdup("");
    unlink(out);
    *ret_zero_s = json_number(json, "seconds");
    *ret_verify_s = json_number(json, "verify_seconds");
    return ok;
}

static gboolean
fill_run(const DaxbenchFillArgs *a, double *ret_zero_s, double *ret_verify_s,
         GError **error)
{
    switch (a->method->kind) {
    case FILL_DD:
        return fill_dd(a, error);
    case FILL_PWRITE:
        return fill_pwrite(a, error);
    case FILL_POPULATE:
        return fill_populate(a, error);
    case FILL_CREATE:
        return fill_create(a, error);
    case FILL_WIPE:
        return fill_wipe(a, ret_zero_s, ret_verify_s, error);
    }
    g_assert_not_reached();
}

char *
daxbench_fill(const DaxbenchFillArgs *args, GError **error)
{
    double zero_s = -1, verify_s = -1, s;
    guint64 t0;
    GString *out = NULL;

    if (args->method->kind == FILL_WIPE && !fill_create(args, error))
        return NULL;
    t0 = daxguest_bench_now_ns();
    if (!fill_run(args, &zero_s, &verify_s, error))
        return NULL;
    s = (double)(daxguest_bench_now_ns() - t0) / 1e9;
    out = g_string_new(NULL);
    g_string_append_printf(
        out,
        "{\"path\": \"%s\", \"method\": \"%s\", \"bytes\": %" PRIu64
        ", \"seconds\": %.6f, \"mib_per_s\": %.1f",
        args->path, args->method->name, args->size, s,
        (double)args->size / DAXBENCH_MIB / s);
    if (zero_s >= 0 && verify_s >= 0)
        g_string_append_printf(
            out, ", \"zero_seconds\": %.6f, \"verify_seconds\": %.6f", zero_s,
            verify_s);
    g_string_append_c(out, '}');
    return g_string_free(out, FALSE);
}

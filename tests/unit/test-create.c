/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile_create(): what it decides before it touches the disk (sizes,
 * alignments, names, an existing path), the leftovers of interrupted
 * runs it removes, and one small file made in a temp directory.
 */
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-create.h"
#include "daxfile-error.h"
#include "daxfile-test-util.h"

#define K (G_GUINT64_CONSTANT(1) << 10)
#define M (G_GUINT64_CONSTANT(1) << 20)

/* a directory that does not exist: a request that passes the checks
 * fails only when create opens it */
#define NOWHERE "/nonexistent-daxfile-test"

static const char *tmp;

typedef struct {
    const char *path;
    guint64 size;
    guint64 align;
    const char *message; /* NULL: the checks pass */
} Plan;

static const Plan plans[] = {
    /* the size must be a multiple of the alignment; the fix rounds up */
    {NOWHERE "/new.img", 3 * M, 2 * M,
     "Size 3 MiB of '" NOWHERE
     "/new.img' is not a multiple of the alignment 2 MiB; fix: use --size 4M"},
    {NOWHERE "/new.img", 4 * M + 4 * K, 2 * M,
     "Size 4100 KiB of '" NOWHERE
     "/new.img' is not a multiple of the alignment 2 MiB; fix: use --size 6M"},
    {NOWHERE "/new.img", 5000, 4 * K,
     "Size 5000 bytes of '" NOWHERE
     "/new.img' is not a multiple of the alignment 4 KiB; fix: use --size 8K"},
    {NOWHERE "/new.img", 0, 2 * M,
     "Size 0 bytes of '" NOWHERE
     "/new.img' is not a multiple of the alignment 2 MiB; fix: use --size 2M"},
    /* ... except past the largest size, where it rounds down */
    {NOWHERE "/new.img", G_MAXINT64, 2 * M,
     "Size 9223372036854775807 bytes of '" NOWHERE
     "/new.img' is not a multiple of the alignment 2 MiB; fix: use --size 8796093022206M"},
    /* the alignment is a power of two, at least a page */
    {NOWHERE "/new.img", 6 * M, 3 * M,
     "Alignment 3 MiB is not a power of two; fix: use e.g. 2M or 4K"},
    {NOWHERE "/new.img", 6 * M, 0,
     "Alignment 0 bytes is not a power of two; fix: use e.g. 2M or 4K"},
    {NOWHERE "/new.img", 6 * M, 1 * K,
     "Alignment 1 KiB is smaller than the page size (4096 bytes); fix: use 4K or larger"},
    /* the path names a file */
    {NOWHERE "/", 2 * M, 2 * M, "'" NOWHERE "/' does not name a file"},
    {"/", 2 * M, 2 * M, "'/' does not name a file"},
    {".", 2 * M, 2 * M, "'.' does not name a file"},
    {NOWHERE "/..", 2 * M, 2 * M, "'" NOWHERE "/..' does not name a file"},
    /* fit: on to the directory */
    {NOWHERE "/new.img", 2 * M, 2 * M, NULL},
    {NOWHERE "/new.img", 4 * K, 4 * K, NULL},
    {NOWHERE "/new.img", 1024 * M, 1024 * M, NULL},
    {NOWHERE "/new.img", 6 * M, 2 * M, NULL},
};

static void
test_plan(gconstpointer data)
{
    const Plan *p = data;
    DaxfileCreateParams params = {.size = p->size, .align = p->align};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileReport) report =
        daxfile_create(p->path, &params, NULL, &error);

    g_assert_null(report);
    if (p->message) {
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_assert_cmpstr(error->message, ==, p->message);
        return;
    }
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND);
    g_assert_cmpstr(error->message, ==,
                    "Cannot create '" NOWHERE
                    "/new.img': cannot open directory '" NOWHERE
                    "': No such file or directory");
}

/* An existing path is never overwritten, nor a symbolic link followed */
static void
test_exists(void)
{
    static const char *const names[] = {"regular.img", "link.img"};
    g_autofree char *regular = g_build_filename(tmp, "regular.img", NULL);
    g_autofree char *link = g_build_filename(tmp, "link.img", NULL);
    g_autofree char *target = g_build_filename(tmp, "target.img", NULL);
    DaxfileCreateParams params = {
        .size = 4 * K, .align = 4 * K, .allow_non_dax = TRUE};
    guint i;

    g_assert_true(g_file_set_contents(regular, "keep", -1, NULL));
    g_assert_cmpint(symlink(target, link), ==, 0);
    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *path = g_build_filename(tmp, names[i], NULL);
        g_autofree char *want = g_strdup_printf(
            "'%s' already exists; daxfile create never overwrites a file; fix: remove it or choose another path",
            path);
        g_autoptr(GError) error = NULL;
        g_autoptr(DaxfileReport) report =
            daxfile_create(path, &params, NULL, &error);

        g_assert_null(report);
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_EXISTS);
        g_assert_cmpstr(error->message, ==, want);
    }
    g_assert_false(g_file_test(target, G_FILE_TEST_EXISTS));
    g_unlink(link);
    g_unlink(regular);
}

static void
touch(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    g_assert_true(g_file_set_contents(path, "", 0, NULL));
}

/* The hidden files of runs that died (PID.ATTEMPT.tmp, or PID.tmp, of a
 * process that is gone) are removed; those of a live process, of another
 * file and whatever else is not such a name are left */
static void
test_cleanup_stale(void)
{
    static const struct {
        const char *name;
        gboolean removed;
    } files[] = {
        /* beyond any pid_max: no such process */
        {".vm.img.daxfile-2147483647.1.tmp", TRUE},
        {".vm.img.daxfile-2147483646.3.tmp", TRUE},
        {".vm.img.daxfile-2147483645.tmp", TRUE},
        {".vm.img.daxfile-@SELF@.1.tmp", FALSE},
        {".vm.img.daxfile-abc.1.tmp", FALSE},
        {".vm.img.daxfile-0.1.tmp", FALSE},
        {".vm.img.daxfile-2147483648.1.tmp", FALSE},
        {".vm.img.daxfile-2147483647.1.tmp.keep", FALSE},
        {".other.img.daxfile-2147483647.1.tmp", FALSE},
        {"vm.img", FALSE},
    };
    g_autofree char *dir = g_build_filename(tmp, "stale", NULL);
    g_autofree char *self = g_strdup_printf("%d", (int)getpid());
    int dirfd;
    guint i;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    for (i = 0; i < G_N_ELEMENTS(files); i++) {
        GString *name = g_string_new(files[i].name);

        g_string_replace(name, "@SELF@", self, 0);
        touch(dir, name->str);
        g_string_free(name, TRUE);
    }
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_assert_cmpint(dirfd, >=, 0);
    g_assert_cmpuint(daxfile_create_cleanup_stale(dirfd, "vm.img"), ==, 3);
    g_assert_cmpuint(daxfile_create_cleanup_stale(dirfd, "vm.img"), ==, 0);
    close(dirfd);
    for (i = 0; i < G_N_ELEMENTS(files); i++) {
        GString *name = g_string_new(files[i].name);
        g_autofree char *path = NULL;

        g_string_replace(name, "@SELF@", self, 0);
        path = g_build_filename(dir, name->str, NULL);
        g_assert_cmpint(g_file_test(path, G_FILE_TEST_EXISTS), ==,
                        !files[i].removed);
        g_string_free(name, TRUE);
    }
    daxfile_test_rmtree(dir);
}

typedef struct {
    guint calls;
    guint64 done;
    guint64 total;
    gboolean monotonic;
} Progress;

static void
progress(guint64 done, guint64 total, gpointer data)
{
    Progress *p = data;

    p->monotonic = p->monotonic && done > p->done && done <= total;
    p->calls++;
    p->done = done;
    p->total = total;
}

/* A small file in a temp directory: its size, provisioned and fit for
 * 4 KiB pages, written by pwrite (not DAX), reported as it went, and
 * nothing else left in the directory */
static void
test_made(void)
{
    g_autofree char *dir = g_build_filename(tmp, "made", NULL);
    g_autofree char *path = g_build_filename(dir, "vm.img", NULL);
    Progress seen = {0, 0, 0, TRUE};
    DaxfileCreateParams params = {.size = 8 * M,
                                  .align = 4 * K,
                                  .allow_non_dax = TRUE,
                                  .progress = progress,
                                  .progress_data = &seen};
    DaxfileCreateInfo info = {DAXFILE_FILL_POPULATE, 0, 0, 0};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileReport) report = NULL;
    g_autoptr(GDir) listing = NULL;
    struct stat st;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    report = daxfile_create(path, &params, &info, &error);
    if (g_error_matches(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_SUPPORTED)) {
        g_test_skip(error->message);
        return;
    }
    g_assert_no_error(error);
    g_assert_nonnull(report);
    g_assert_true(report->layout_ok);
    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, 8 * M);
    g_assert_cmphex(st.st_mode & 07777, ==, 0600);
    g_assert_cmpint(info.method, ==, DAXFILE_FILL_PWRITE);
    g_assert_cmpuint(info.attempts, >=, 1);
    g_assert_cmpuint(info.attempts, <=, DAXFILE_CREATE_ATTEMPTS);
    g_assert_cmpuint(seen.calls, >=, 1);
    g_assert_true(seen.monotonic);
    g_assert_cmpuint(seen.done, ==, 8 * M);
    g_assert_cmpuint(seen.total, ==, 8 * M);
    listing = g_dir_open(dir, 0, NULL);
    g_assert_cmpstr(g_dir_read_name(listing), ==, "vm.img");
    g_assert_null(g_dir_read_name(listing));
    daxfile_test_rmtree(dir);
}

static void
test_fill_names(void)
{
    g_assert_cmpstr(daxfile_fill_method_to_string(DAXFILE_FILL_PWRITE), ==,
                    "pwrite");
    g_assert_cmpstr(daxfile_fill_method_to_string(DAXFILE_FILL_POPULATE), ==,
                    "populate");
}

int
main(int argc, char **argv)
{
    guint i;

    g_test_init(&argc, &argv, NULL);
    tmp = daxfile_test_scratch("create");
    for (i = 0; i < G_N_ELEMENTS(plans); i++) {
        g_autofree char *path = g_strdup_printf("/create/plan/%u", i);

        g_test_add_data_func(path, &plans[i], test_plan);
    }
    g_test_add_func("/create/exists", test_exists);
    g_test_add_func("/create/cleanup-stale", test_cleanup_stale);
    g_test_add_func("/create/made", test_made);
    g_test_add_func("/create/fill-names", test_fill_names);
    return daxfile_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "daxfile-test-util.h"

static void
print_diff(const char *expected_path, const char *actual)
{
    g_autofree char *tmp = NULL;
    g_autofree char *out = NULL;
    g_autoptr(GError) error = NULL;
    int fd = g_file_open_tmp("golden-XXXXXX", &tmp, &error);
    const char *argv[] = {"diff", "-u", expected_path, NULL, NULL};

    if (fd < 0)
        return;
    close(fd);
    if (!g_file_set_contents(tmp, actual, -1, &error))
        return;
    argv[3] = tmp;
    g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                 &out, NULL, NULL, NULL);
    g_test_message("%s", out ? out : "(no diff output)");
    g_unlink(tmp);
}

void
daxfile_test_golden(const char *relpath, const char *actual)
{
    g_autofree char *path =
        g_test_build_filename(G_TEST_DIST, "data", relpath, NULL);
    g_autofree char *expected = NULL;
    g_autoptr(GError) error = NULL;
    const char *regen = g_getenv("DAXFILE_TEST_REGENERATE");

    if (regen && g_str_equal(regen, "1")) {
        g_autofree char *dir = g_path_get_dirname(path);

        g_mkdir_with_parents(dir, 0755);
        g_assert_true(g_file_set_contents(path, actual, -1, &error));
        return;
    }
    if (!g_file_get_contents(path, &expected, NULL, &error)) {
        g_test_message(
            "missing golden file %s (DAXFILE_TEST_REGENERATE=1 writes it): %s",
            path, error->message);
        g_test_fail();
        return;
    }
    if (!g_str_equal(expected, actual)) {
        print_diff(path, actual);
        g_test_fail();
    }
}

void
daxfile_test_rmtree(const char *path)
{
    g_autoptr(GDir) dir = NULL;
    const char *name;

    if (!g_file_test(path, G_FILE_TEST_IS_DIR) ||
        g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
        g_unlink(path);
        return;
    }
    dir = g_dir_open(path, 0, NULL);
    while (dir && (name = g_dir_read_name(dir))) {
        g_autofree char *child = g_build_filename(path, name, NULL);

        daxfile_test_rmtree(child);
    }
    g_rmdir(path);
}

static char *scratch;

/* Whether a file made in @dir answers FS_IOC_FIEMAP (tmpfs does not) */
static gboolean
reports_extents(const char *dir)
{
    g_autofree char *path =
        g_build_filename(dir, "daxfile-test-fiemap-XXXXXX", NULL);
    struct fiemap fm = {0};
    gboolean ok = FALSE;
    int fd = g_mkstemp_full(path, O_RDWR | O_CLOEXEC, 0600);

    if (fd < 0)
        return FALSE;
    fm.fm_length = FIEMAP_MAX_OFFSET;
    ok = ioctl(fd, FS_IOC_FIEMAP, &fm) == 0;
    close(fd);
    g_unlink(path);
    return ok;
}

const char *
daxfile_test_scratch(const char *name)
{
    g_autofree char *tmpl = NULL;
    const char *base = g_get_tmp_dir();

    if (!scratch) {
        if (!reports_extents(base))
            base = "/var/tmp";
        tmpl = g_strdup_printf("daxfile-test-%s-XXXXXX", name);
        scratch = g_build_filename(base, tmpl, NULL);
        if (!g_mkdtemp(scratch))
            g_error("Failed to create '%s': %s", scratch, g_strerror(errno));
    }
    return scratch;
}

int
daxfile_test_run(void)
{
    int rc = g_test_run();

    if (scratch)
        daxfile_test_rmtree(scratch);
    g_clear_pointer(&scratch, g_free);
    return rc;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daxctl() backend against the fake-daxctl.so shim (run with it in
 * LD_PRELOAD, see meson.build): discovery only through sysfs, the RFC's
 * flags, and the errno -> message mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-guard.h"
#include "daxfile-kernel.h"
#include "daxfile-test-util.h"

static char *tmpdir;

static void
set_sysfs(const char *tree)
{
    g_autofree char *root =
        g_test_build_filename(G_TEST_DIST, "data", "sysfs", tree, NULL);

    g_setenv("DAXFILE_SYSFS_ROOT", root, TRUE);
}

static DaxfileFile *
scratch_file(void)
{
    g_autofree char *path = g_build_filename(tmpdir, "f.img", NULL);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >=, 0);
    return daxfile_file_new_from_fd(fd, "f.img", NULL);
}

static void
test_advertised(void)
{
    long nr = 0;

    set_sysfs("daxctl-451");
    g_assert_true(daxfile_kernel_syscall_nr(&nr));
    g_assert_cmpint(nr, ==, 451);
    set_sysfs("empty");
    g_assert_false(daxfile_kernel_syscall_nr(&nr));
}

static void
test_implausible(void)
{
    g_autofree char *dir =
        g_build_filename(tmpdir, "sysfs", "kernel", "mm", "daxfile", NULL);
    g_autofree char *attr = g_build_filename(dir, "syscall_nr", NULL);
    g_autofree char *root = g_build_filename(tmpdir, "sysfs", NULL);
    const char *bad[] = {"0", "4096", "-1", "abc", ""};
    long nr = 0;
    guint i;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_setenv("DAXFILE_SYSFS_ROOT", root, TRUE);
    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_true(g_file_set_contents(attr, bad[i], -1, NULL));
        g_assert_false(daxfile_kernel_syscall_nr(&nr));
    }
}

static void
test_get_set(void)
{
    g_autoptr(DaxfileFile) f = scratch_file();
    g_autoptr(GError) busy = NULL;
    g_autoptr(GError) inval = NULL;
    gboolean on = TRUE;

    if (!daxfile_have_cap_linux_immutable()) {
        g_test_skip("needs CAP_LINUX_IMMUTABLE (root)");
        return;
    }
    g_assert_true(daxfile_kernel_get(451, f, &on, NULL));
    g_assert_false(on);
    g_assert_true(daxfile_kernel_set(451, f, TRUE, 2 << 20, NULL));
    g_assert_true(daxfile_kernel_get(451, f, &on, NULL));
    g_assert_true(on);
    g_assert_false(daxfile_kernel_set(451, f, TRUE, 2 << 20, &busy));
    g_assert_error(busy, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
    g_assert_nonnull(strstr(busy->message, "already static"));
    g_assert_true(daxfile_kernel_set(451, f, FALSE, 0, NULL));
    g_assert_true(daxfile_kernel_get(451, f, &on, NULL));
    g_assert_false(on);
    g_assert_false(daxfile_kernel_set(451, f, TRUE, 3 << 20, &inval));
    g_assert_error(inval, DAXFILE_ERROR, DAXFILE_ERROR_NOT_READY);
}

static void
test_eperm(void)
{
    g_autoptr(DaxfileFile) f = scratch_file();
    int status = 0;
    pid_t pid = fork();

    if (pid == 0) {
        g_autoptr(GError) error = NULL;

        /* an unprivileged uid has no CAP_LINUX_IMMUTABLE */
        if (getuid() == 0 && setuid(65534) < 0)
            _exit(2);
        if (daxfile_kernel_set(451, f, TRUE, 4096, &error) ||
            !g_error_matches(error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION) ||
            !strstr(error->message, "CAP_LINUX_IMMUTABLE"))
            _exit(1);
        _exit(0);
    }
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

int
main(int argc, char **argv)
{
    int ret;
    g_autofree char *state = NULL;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("daxfile-kernel-XXXXXX", NULL);
    state = g_build_filename(tmpdir, "state", NULL);
    g_mkdir(state, 0700);
    g_setenv("DAXFILE_FAKE_DAXCTL_NR", "451", TRUE);
    g_setenv("DAXFILE_FAKE_DAXCTL_STATE", state, TRUE);
    if (!g_getenv("LD_PRELOAD") ||
        !strstr(g_getenv("LD_PRELOAD"), "fake-daxctl")) {
        g_printerr("run with LD_PRELOAD=.../fake-daxctl.so\n");
        return 1;
    }
    g_test_add_func("/kernel/advertised", test_advertised);
    g_test_add_func("/kernel/implausible", test_implausible);
    g_test_add_func("/kernel/get-set", test_get_set);
    g_test_add_func("/kernel/eperm", test_eperm);
    ret = g_test_run();
    daxfile_test_rmtree(tmpdir);
    return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file handle (daxfile-file.h): what every open returns and every
 * operation takes. Unprivileged, in a temporary directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"

typedef struct {
    char *dir;
} Fixture;

static char *
fx_path(const Fixture *fx, const char *name)
{
    return g_build_filename(fx->dir, name, NULL);
}

static char *
fx_file(const Fixture *fx, const char *name, const char *contents)
{
    char *path = fx_path(fx, name);

    g_assert_true(g_file_set_contents(path, contents, -1, NULL));
    return path;
}

static void
fx_setup(Fixture *fx, gconstpointer data)
{
    fx->dir = g_dir_make_tmp("test-file-XXXXXX", NULL);
    g_assert_nonnull(fx->dir);
}

static void
fx_teardown(Fixture *fx, gconstpointer data)
{
    g_autoptr(GDir) d = g_dir_open(fx->dir, 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = fx_path(fx, name);

        if (rmdir(p) < 0)
            g_assert_cmpint(unlink(p), ==, 0);
    }
    g_assert_cmpint(rmdir(fx->dir), ==, 0);
    g_free(fx->dir);
}

/* An open regular file: fd, stat, path and display all filled, the fd
 * close-on-exec and opened with the access asked for */
static void
test_open_regular(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = fx_file(fx, "a.img", "12345");
    g_autoptr(DaxfileFile) ro = NULL;
    g_autoptr(DaxfileFile) rw = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *target = NULL;
    struct stat st;

    ro = daxfile_file_open(path, DAXFILE_OPEN_READ, &error);
    g_assert_no_error(error);
    g_assert_nonnull(ro);
    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_cmpuint(ro->st.st_ino, ==, st.st_ino);
    g_assert_cmpint(ro->st.st_size, ==, 5);
    g_assert_cmpstr(ro->path, ==, path);
    g_assert_cmpstr(ro->display, ==, path);
    g_assert_cmpint(fcntl(ro->fd, F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
    g_assert_cmpint(fcntl(ro->fd, F_GETFL) & O_ACCMODE, ==, O_RDONLY);
    /* not the O_PATH fd of the first step: it reads */
    g_assert_cmpint(pread(ro->fd, &st, 1, 0), ==, 1);
    target = daxfile_fd_target(ro->fd);
    g_assert_cmpstr(target, ==, path);

    rw = daxfile_file_open(path, DAXFILE_OPEN_WRITE, &error);
    g_assert_no_error(error);
    g_assert_cmpint(fcntl(rw->fd, F_GETFL) & O_ACCMODE, ==, O_RDWR);
}

/* The display name is the escaped path, computed at open; the path stays
 * the raw bytes (what is opened again and recorded) */
static void
test_display(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = fx_file(fx, "vm\n\\\xff.img", "x");
    g_autofree char *want =
        g_strdup_printf("%s/vm\\x0a\\x5c\\xff.img", fx->dir);
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(GError) error = NULL;

    f = daxfile_file_open(path, DAXFILE_OPEN_READ, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(f->path, ==, path);
    g_assert_cmpstr(f->display, ==, want);
}

static void
assert_refused(const char *path, DaxfileOpenFlags flags, const char *what)
{
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(GError) error = NULL;

    f = daxfile_file_open(path, flags, &error);
    g_assert_null(f);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, what));
    g_assert_nonnull(strstr(error->message, path));
}

/* A symbolic link is refused unless asked for; every other type is
 * refused by name, a FIFO without blocking (no reader: a real open for
 * reading would wait) */
static void
test_refused_types(Fixture *fx, gconstpointer data)
{
    g_autofree char *file = fx_file(fx, "t.img", "x");
    g_autofree char *link = fx_path(fx, "link.img");
    g_autofree char *fifo = fx_path(fx, "fifo");
    g_autofree char *sock = fx_path(fx, "sock");
    g_autofree char *sub = fx_path(fx, "sub");
    g_autoptr(DaxfileFile) followed = NULL;
    g_autoptr(GError) error = NULL;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    g_auto(DaxfileFd) s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(symlink(file, link), ==, 0);
    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    g_assert_cmpint(mkdir(sub, 0700), ==, 0);
    g_assert_cmpuint(strlen(sock), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, sock);
    g_assert_cmpint(bind(s, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);

    assert_refused(link, DAXFILE_OPEN_READ, "is a symbolic link");
    assert_refused(fifo, DAXFILE_OPEN_READ, "is a FIFO, not a regular file");
    assert_refused(sock, DAXFILE_OPEN_READ, "is a socket, not a regular file");
    assert_refused(sub, DAXFILE_OPEN_WRITE,
                   "is a directory, not a regular file");
    assert_refused("/dev/null", DAXFILE_OPEN_READ, "is a character device");

    followed = daxfile_file_open(link, DAXFILE_OPEN_FOLLOW, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(followed->path, ==, link);
    g_assert_true(S_ISREG(followed->st.st_mode));
}

static void
test_missing(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = fx_path(fx, "none.img");
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *want = g_strdup_printf("Cannot open '%s'", path);

    f = daxfile_file_open(path, DAXFILE_OPEN_READ, &error);
    g_assert_null(f);
    g_assert_nonnull(error);
    g_assert_true(g_str_has_prefix(error->message, want));
    g_assert_nonnull(strstr(error->message, "No such file"));
}

/* Under a managed root: a plain path opens; ".." or a symbolic link on
 * the way refuse with the permission error naming both; a symbolic link
 * at the end is opened as itself (O_PATH) and refused as a link */
static void
test_beneath(Fixture *fx, gconstpointer data)
{
    g_autofree char *root = fx_path(fx, "root");
    g_autofree char *inside = g_build_filename(root, "a.img", NULL);
    g_autofree char *outside = fx_file(fx, "out.img", "o");
    g_autofree char *dotdot = g_build_filename(root, "..", "out.img", NULL);
    g_autofree char *link = g_build_filename(root, "l.img", NULL);
    g_autofree char *dirlink = g_build_filename(root, "d", NULL);
    g_autofree char *via = g_build_filename(root, "d", "out.img", NULL);
    const char *refused[] = {dotdot, via};
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(GError) error = NULL;
    size_t i;

    g_assert_cmpint(mkdir(root, 0700), ==, 0);
    g_assert_true(g_file_set_contents(inside, "i", -1, NULL));
    g_assert_cmpint(symlink(outside, link), ==, 0);
    g_assert_cmpint(symlink(fx->dir, dirlink), ==, 0);

    f = daxfile_file_open_beneath(root, inside, DAXFILE_OPEN_READ, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(f->path, ==, inside);
    for (i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autoptr(DaxfileFile) r = NULL;
        g_autoptr(GError) err = NULL;

        r = daxfile_file_open_beneath(root, refused[i], DAXFILE_OPEN_READ,
                                      &err);
        g_assert_null(r);
        g_assert_error(err, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION);
        g_assert_nonnull(
            strstr(err->message, "leads outside the managed root"));
        g_assert_nonnull(strstr(err->message, refused[i]));
    }
    g_clear_pointer(&f, daxfile_file_free);
    f = daxfile_file_open_beneath(root, link, DAXFILE_OPEN_READ, &error);
    g_assert_null(f);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "is a symbolic link"));
    g_assert_cmpint(unlink(link), ==, 0);
    g_assert_cmpint(unlink(dirlink), ==, 0);
    g_assert_cmpint(unlink(inside), ==, 0);
}

/* A handle over an fd opened elsewhere takes it, and on failure closes it */
static void
test_from_fd(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = fx_file(fx, "fd.img", "abc");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_cmpint(fd, >=, 0);
    f = daxfile_file_new_from_fd(fd, path, &error);
    g_assert_no_error(error);
    g_assert_cmpint(f->fd, ==, fd);
    g_assert_cmpint(f->st.st_size, ==, 3);
    g_clear_pointer(&f, daxfile_file_free);
    g_assert_cmpint(fcntl(fd, F_GETFD), ==, -1);
    g_assert_cmpint(errno, ==, EBADF);

    fd = open(path, O_RDONLY | O_CLOEXEC);
    g_assert_cmpint(close(fd), ==, 0);
    f = daxfile_file_new_from_fd(fd, path, &error);
    g_assert_null(f);
    g_assert_nonnull(error);
    g_assert_true(g_str_has_prefix(error->message, "Cannot stat '"));
}

/* Reopen in place: a new fd on the same inode with the new access; stat,
 * path and display unchanged, the old fd closed */
static void
test_reopen(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = fx_file(fx, "re.img", "abc");
    g_autoptr(DaxfileFile) f = NULL;
    g_autoptr(GError) error = NULL;
    const char *display;
    struct stat st;
    int old;

    f = daxfile_file_open(path, DAXFILE_OPEN_READ, &error);
    g_assert_no_error(error);
    old = f->fd;
    display = f->display;
    g_assert_true(daxfile_file_reopen(f, O_RDWR, &error));
    g_assert_no_error(error);
    g_assert_cmpint(fcntl(f->fd, F_GETFL) & O_ACCMODE, ==, O_RDWR);
    g_assert_cmpint(fcntl(f->fd, F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
    g_assert_cmpint(fstat(f->fd, &st), ==, 0);
    g_assert_cmpuint(st.st_ino, ==, f->st.st_ino);
    g_assert_true(f->display == display);
    if (f->fd != old)
        g_assert_cmpint(fcntl(old, F_GETFD), ==, -1);
}

/* What an fd is: the one readlink, and its display form */
static void
test_fd_target(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = fx_file(fx, "t\x01.img", "x");
    g_autofree char *want = g_strdup_printf("%s/t\\x01.img", fx->dir);
    g_auto(DaxfileFd) fd = open(path, O_RDONLY | O_CLOEXEC);
    g_autofree char *target = daxfile_fd_target(fd);
    g_autofree char *shown = daxfile_fd_path(fd);
    g_autofree char *bad = daxfile_fd_path(999999);

    g_assert_cmpstr(target, ==, path);
    g_assert_cmpstr(shown, ==, want);
    g_assert_null(daxfile_fd_target(999999));
    g_assert_cmpstr(bad, ==, "fd 999999");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define ADD(name, fn)                                                          \
    g_test_add("/file/" name, Fixture, NULL, fx_setup, fn, fx_teardown)
    ADD("open-regular", test_open_regular);
    ADD("display", test_display);
    ADD("refused-types", test_refused_types);
    ADD("missing", test_missing);
    ADD("beneath", test_beneath);
    ADD("from-fd", test_from_fd);
    ADD("reopen", test_reopen);
    ADD("fd-target", test_fd_target);
#undef ADD
    return g_test_run();
}

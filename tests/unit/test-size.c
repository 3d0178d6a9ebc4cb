/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-mmap.h"
#include "daxfile-size.h"

static void
test_parse_good(void)
{
    static const struct {
        const char *in;
        guint64 out;
    } cases[] = {
        {"4096", 4096},
        {"1", 1},
        {"2M", G_GUINT64_CONSTANT(2) << 20},
        {"2m", G_GUINT64_CONSTANT(2) << 20},
        {"2MiB", G_GUINT64_CONSTANT(2) << 20},
        {"2mib", G_GUINT64_CONSTANT(2) << 20},
        {"4K", 4096},
        {"4KiB", 4096},
        {"4G", G_GUINT64_CONSTANT(4) << 30},
        {"1T", G_GUINT64_CONSTANT(1) << 40},
        {"1TiB", G_GUINT64_CONSTANT(1) << 40},
        {"2P", G_GUINT64_CONSTANT(2) << 50},
        {"9223372036854775807", G_MAXINT64},
        {"8191P", G_GUINT64_CONSTANT(8191) << 50},
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        guint64 v = 0;

        g_assert_true(daxfile_size_parse(cases[i].in, &v, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(v, ==, cases[i].out);
    }
}

static void
test_parse_bad(void)
{
    static const struct {
        const char *in;
        const char *msg;
    } cases[] = {
        {"", "Invalid size '': expected a positive number"},
        {"0", "Invalid size '0': must be greater than zero"},
        {"0M", "Invalid size '0M': must be greater than zero"},
        {"-1", "Invalid size '-1': expected a positive number"},
        {"-2M", "Invalid size '-2M': expected a positive number"},
        {"abc", "Invalid size 'abc': expected a positive number"},
        {"2X", "Invalid size '2X': unknown unit 'X'"},
        {"2MB", "Invalid size '2MB': unknown unit 'MB'"},
        {"2 M", "Invalid size '2 M': unknown unit ' M'"},
        {"1.5G", "Invalid size '1.5G': unknown unit '.5G'"},
        {" 4096", "Invalid size ' 4096': expected a positive number"},
        {"0x1000", "Invalid size '0x1000': unknown unit 'x1000'"},
        {"9223372036854775808",
         "Invalid size '9223372036854775808': too large"},
        {"99999999999999999999999",
         "Invalid size '99999999999999999999999': too large"},
        {"8192P", "Invalid size '8192P': too large"},
        {"16777216T", "Invalid size '16777216T': too large"},
        {"4\n", "Invalid size '4\\x0a': unknown unit '\\x0a'"},
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        guint64 v = 77;

        g_assert_false(daxfile_size_parse(cases[i].in, &v, &error));
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_assert_true(g_str_has_prefix(error->message, cases[i].msg));
        g_assert_cmpuint(v, ==, 77);
    }
    g_assert_false(daxfile_size_parse(NULL, NULL, NULL));
}

/* DAXFILE_SIZE_ZERO: offsets and counts (bench-dax, dax-probe), which
 * took "0" and lowercase units from their own parser before */
static void
test_parse_zero(void)
{
    static const struct {
        const char *in;
        guint64 out;
    } good[] = {
        {"0", 0},
        {"0K", 0},
        {"0m", 0},
        {"4096", 4096},
        {"8m", G_GUINT64_CONSTANT(8) << 20},
        {"64k", G_GUINT64_CONSTANT(64) << 10},
        {"1t", G_GUINT64_CONSTANT(1) << 40},
        {"2MiB", G_GUINT64_CONSTANT(2) << 20},
        {"9223372036854775807", G_MAXINT64},
    };
    /* the old parser's strtoull() also took these: signs, spaces, octal,
     * hex, 2^63 and above; they are refused now, as daxfile refuses them */
    static const char *const bad[] = {
        "",
        "-1",
        "+1",
        " 1",
        "0x10",
        "1.5k",
        "2 M",
        "9223372036854775808",
        "18446744073709551615",
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autoptr(GError) error = NULL;
        guint64 v = 77;

        g_assert_true(daxfile_size_parse_flags(good[i].in, DAXFILE_SIZE_ZERO,
                                               &v, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(v, ==, good[i].out);
    }
    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        guint64 v = 77;

        g_assert_false(
            daxfile_size_parse_flags(bad[i], DAXFILE_SIZE_ZERO, &v, &error));
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_assert_true(g_str_has_prefix(error->message, "Invalid size '"));
        g_assert_cmpuint(v, ==, 77);
    }
}

/* DAXFILE_SIZE_NUMBER: daxfile-guest's --seed and --offset */
static void
test_parse_number(void)
{
    static const struct {
        const char *in;
        guint64 out;
    } good[] = {
        {"0", 0},
        {"42", 42},
        {"0x1F", 31},
        {"0XfF", 255},
        {"0x0", 0},
        {"007", 7},
        {"18446744073709551615", G_MAXUINT64},
        {"0xffffffffffffffff", G_MAXUINT64},
    };
    static const struct {
        const char *in;
        const char *msg;
    } bad[] = {
        {"", "Invalid number '': expected decimal digits, or 0x and hex"},
        {"0x", "Invalid number '0x': expected decimal digits"},
        {"1K", "Invalid number '1K': expected decimal digits"},
        {"2M", "Invalid number '2M': expected decimal digits"},
        {"-1", "Invalid number '-1': expected decimal digits"},
        {"+1", "Invalid number '+1': expected decimal digits"},
        {" 1", "Invalid number ' 1': expected decimal digits"},
        {"1 ", "Invalid number '1 ': expected decimal digits"},
        {"ff", "Invalid number 'ff': expected decimal digits"},
        {"0x1g", "Invalid number '0x1g': expected decimal digits"},
        {"x1", "Invalid number 'x1': expected decimal digits"},
        {"18446744073709551616",
         "Invalid number '18446744073709551616': too large"},
        {"0x10000000000000000",
         "Invalid number '0x10000000000000000': too large"},
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autoptr(GError) error = NULL;
        guint64 v = 77;

        g_assert_true(daxfile_size_parse_flags(good[i].in, DAXFILE_SIZE_NUMBER,
                                               &v, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(v, ==, good[i].out);
    }
    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        guint64 v = 77;

        g_assert_false(daxfile_size_parse_flags(bad[i].in, DAXFILE_SIZE_NUMBER,
                                                &v, &error));
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_assert_true(g_str_has_prefix(error->message, bad[i].msg));
        g_assert_cmpuint(v, ==, 77);
    }
    g_assert_false(
        daxfile_size_parse_flags(NULL, DAXFILE_SIZE_NUMBER, NULL, NULL));
}

static void
test_format(void)
{
    g_autofree char *a = daxfile_size_format(G_GUINT64_CONSTANT(2) << 20);
    g_autofree char *b = daxfile_size_format(4097);
    g_autofree char *c = daxfile_size_format(G_GUINT64_CONSTANT(1) << 40);
    g_autofree char *d = daxfile_size_format_arg(G_GUINT64_CONSTANT(6) << 20);
    g_autofree char *e = daxfile_size_format_arg(4097);
    g_autofree char *f = daxfile_size_format(0);

    g_assert_cmpstr(a, ==, "2 MiB");
    g_assert_cmpstr(b, ==, "4097 bytes");
    g_assert_cmpstr(c, ==, "1 TiB");
    g_assert_cmpstr(d, ==, "6M");
    g_assert_cmpstr(e, ==, "4097");
    g_assert_cmpstr(f, ==, "0 bytes");
}

static void
test_align(void)
{
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;
    g_autoptr(GError) e3 = NULL;

    g_assert_true(daxfile_align_check(4096, NULL));
    g_assert_true(daxfile_align_check(G_GUINT64_CONSTANT(1) << 30, NULL));
    g_assert_false(daxfile_align_check(3 << 20, &e1));
    g_assert_nonnull(strstr(e1->message, "not a power of two"));
    g_assert_false(daxfile_align_check(1024, &e2));
    g_assert_nonnull(strstr(e2->message, "smaller than the page size"));
    g_assert_false(daxfile_align_check(0, &e3));
}

/* daxfile_map_aligned(): the address is aligned, the file is there from
 * the offset, and a failure leaves errno as mmap() set it */
static void
test_map_aligned(void)
{
    g_autofree char *dir = g_dir_make_tmp("test-size-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "f", NULL);
    g_autofree char *data = g_malloc0(2 * 4096);
    g_autoptr(GError) error = NULL;
    g_auto(DaxfileMapping) map = {NULL, 0};
    int fd;

    data[4096] = 'x';
    g_assert_true(g_file_set_contents(path, data, 2 * 4096, NULL));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    g_assert_true(daxfile_map_aligned(fd, 4096, 4096, PROT_READ, MAP_SHARED,
                                      DAXFILE_SZ_2M, &map.addr, &error));
    g_assert_no_error(error);
    map.length = 4096;
    g_assert_cmpuint((guintptr)map.addr % DAXFILE_SZ_2M, ==, 0);
    g_assert_cmpint(((char *)map.addr)[0], ==, 'x');
    close(fd);
    errno = 0;
    g_assert_false(daxfile_map_aligned(-1, 4096, 0, PROT_READ, MAP_SHARED,
                                       DAXFILE_SZ_2M, &map.addr, &error));
    g_assert_cmpint(errno, ==, EBADF);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED);
    g_assert_true(g_str_has_prefix(error->message, "mmap failed: "));
    unlink(path);
    rmdir(dir);
}

static void
test_escape(void)
{
    g_autofree char *a = daxfile_escape("a b\nc\\d\xff\xc3\xa9");

    g_assert_cmpstr(a, ==, "a b\\x0ac\\x5cd\\xff\xc3\xa9");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/size/parse/good", test_parse_good);
    g_test_add_func("/size/parse/bad", test_parse_bad);
    g_test_add_func("/size/parse/zero", test_parse_zero);
    g_test_add_func("/size/parse/number", test_parse_number);
    g_test_add_func("/size/format", test_format);
    g_test_add_func("/util/align", test_align);
    g_test_add_func("/util/escape", test_escape);
    g_test_add_func("/util/map-aligned", test_map_aligned);
    return g_test_run();
}

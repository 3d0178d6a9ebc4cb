/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-util.h: small helpers shared by the library and its binaries
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

#define DAXFILE_SZ_4K (G_GUINT64_CONSTANT(4096))
#define DAXFILE_SZ_2M (G_GUINT64_CONSTANT(2) << 20)
#define DAXFILE_DEFAULT_ALIGN DAXFILE_SZ_2M

#define DAXFILE_ALIGN_DOWN(x, a) ((x) & ~((guint64)(a) - 1))
#define DAXFILE_ALIGN_UP(x, a) DAXFILE_ALIGN_DOWN((x) + (a) - 1, (a))
#define DAXFILE_IS_ALIGNED(x, a) (((x) & ((guint64)(a) - 1)) == 0)

#define STREQ(a, b) (strcmp((a), (b)) == 0)
#define STRNEQ(a, b) (strcmp((a), (b)) != 0)
#define STRPREFIX(a, b) (strncmp((a), (b), strlen(b)) == 0)

/* An owned file descriptor: g_auto(DaxfileFd) fd = -1; */
typedef int DaxfileFd;
void daxfile_fd_close(DaxfileFd fd);
G_DEFINE_AUTO_CLEANUP_FREE_FUNC(DaxfileFd, daxfile_fd_close, -1)

/* A mapping released by munmap() */
typedef struct {
    void *addr;
    size_t length;
} DaxfileMapping;
void daxfile_mapping_clear(DaxfileMapping *map);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileMapping, daxfile_mapping_clear)

guint64 daxfile_page_size(void);

/* TRUE when @align is a power of two no smaller than the page size */
gboolean daxfile_align_check(guint64 align, GError **error);

/* The path an fd refers to, for messages ("/proc/self/fd/N" target) */
char *daxfile_fd_path(int fd);

/* Make a string safe to print on one line: control characters and invalid
 * UTF-8 become \xNN escapes. */
char *daxfile_escape(const char *str);

/* Test-only fault injection: when DAXFILE_TEST_CRASH names @point, the
 * process kills itself with SIGKILL right there (crash-safety tests). */
void daxfile_test_crash_point(const char *point);

/* Test-only: when DAXFILE_TEST_PAUSE names @point, the process stops itself
 * (SIGSTOP) there until a test sends SIGCONT (race tests). */
void daxfile_test_pause_point(const char *point);

/* Test-only: DAXFILE_TEST_NO_TMPFILE=1 makes create use its named
 * temporary file, as on filesystems without O_TMPFILE. */
gboolean daxfile_test_no_tmpfile(void);

/* Test-only: DAXFILE_TEST_MISPLACED=N makes create treat its first N
 * allocations as placed misaligned (as a fragmented ext4 places some), so
 * that holding and allocating again can be tested on any filesystem. */
gboolean daxfile_test_misplaced(guint attempt);

G_END_DECLS

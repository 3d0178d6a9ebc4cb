/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile selftest DIR: would the immutable guard be safe on DIR's
 * filesystem with the running kernel?
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "daxfile-align.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-fs.h"
#include "daxfile-guard.h"
#include "daxfilectl.h"

static gboolean arg_dax;

static const GOptionEntry selftest_options[] = {
    {"map-sync", 0, 0, G_OPTION_ARG_NONE, &arg_dax,
     "Map with MAP_SYNC, as on a DAX mount (default: when the directory's filesystem supports it)",
     NULL},
    {NULL},
};

static int
cmd_selftest(int argc, char **argv)
{
    g_auto(DaxfileSelftest) result = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileFsInfo) fs = NULL;
    g_autofree char *name = NULL;
    g_auto(DaxfileFd) dirfd = -1;
    struct stat st;

    name = daxfile_escape(argv[1]);
    dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0 || fstat(dirfd, &st) < 0) {
        daxfile_set_error_errno(&error, errno, "Cannot open directory '%s'",
                                name);
        return cli_report_error(error);
    }
    fs = daxfile_fs_probe(dirfd, DAXFILE_SZ_4K, &error);
    if (!fs || !daxfile_guard_selftest(
                   dirfd, st.st_dev,
                   arg_dax || daxfile_fs_dax_effective(fs->dax, fs->map_sync),
                   &result, &error))
        return cli_report_error(error);
    printf("%s: %s (%s): %s\n", name, result.safe ? "safe" : "UNSAFE",
           fs->fs_type, result.detail);
    return result.safe ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

const CliVerb cmd_selftest_verb = {
    .name = "selftest",
    .min_args = 1,
    .max_args = 1,
    .dispatch = cmd_selftest,
    .summary = "Test whether the immutable guard is safe here",
    .params = "DIR",
    .description =
        "Run the immutable-guard self-test in DIR: a child maps a probe file, the flag is set, the child keeps storing. Exit 0 when the guard is safe there.",
    .options = selftest_options,
    .too_few = "expected exactly one DIR",
    .too_many = "expected exactly one DIR",
};

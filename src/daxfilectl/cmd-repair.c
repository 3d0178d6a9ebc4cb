/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile repair [--json] [--path PATH]: finish interrupted operations, drop
 * stale entries, finish the wipes owed
 */
#include <stdio.h>

#include "daxfile-escape.h"
#include "daxfile-host-json.h"
#include "daxfilectl.h"

static gboolean arg_json;
static char *arg_path;

static const GOptionEntry repair_options[] = {
    {"json", 'j', 0, G_OPTION_ARG_NONE, &arg_json, "Print JSON", NULL},
    {"path", 'p', 0, G_OPTION_ARG_FILENAME, &arg_path,
     "The current path of a file whose entry repair cannot find (renamed, or on a filesystem mounted elsewhere)",
     "PATH"},
    {NULL},
};

/* What repair did about one entry, for people */
static char *
repair_done_text(const DaxfileRepairAction *a)
{
    const char *why = daxfile_repair_finding_describe(a->found);

    if (a->done == DAXFILE_REPAIR_DROPPED_FILE_GONE)
        return g_strdup("the file no longer exists");
    if (a->done == DAXFILE_REPAIR_DROPPED_SUPERSEDED)
        return g_strdup(
            "the file is static again under a newer entry, which stays");
    if (a->mtime == DAXFILE_REPAIR_MTIME_STAMPED)
        return g_strdup_printf(
            "%s; its mtime is now (it may have been written while static, after its last stamp)",
            why);
    if (a->mtime == DAXFILE_REPAIR_MTIME_FAILED)
        return g_strdup_printf("%s; its mtime could not be set to now: %s", why,
                               a->error);
    return g_strdup(why);
}

/* The line of an entry repair kept for a running domain, unguarded */
static void
print_unguarded(const DaxfileRepairAction *a, const char *name)
{
    fprintf(
        stderr,
        "daxfile: '%s' (%s, owner '%s', %s) is in use by its running domain but was not engaged again: %s; its registry entry is kept\n",
        name, daxfile_mechanism_to_string(a->mechanism), a->owner,
        daxfile_repair_finding_describe(a->found), a->error);
}

/* The lines of what repair did (@kept FALSE), or of the entries it kept,
 * which are errors (@kept TRUE) */
static void
print_repair(const DaxfileRepairResult *result, gboolean kept)
{
    guint i;

    for (i = 0; i < result->actions->len; i++) {
        const DaxfileRepairAction *a = g_ptr_array_index(result->actions, i);
        const char *mech = daxfile_mechanism_to_string(a->mechanism);
        g_autofree char *name = NULL;
        g_autofree char *text = NULL;

        if ((a->done == DAXFILE_REPAIR_KEPT ||
             a->done == DAXFILE_REPAIR_KEPT_UNGUARDED) != kept)
            continue;
        name = daxfile_escape(a->path);
        if (a->done == DAXFILE_REPAIR_KEPT_UNGUARDED) {
            print_unguarded(a, name);
            continue;
        }
        if (a->done == DAXFILE_REPAIR_REENGAGED) {
            fprintf(
                stderr,
                "engaged again '%s' (%s, owner '%s'): %s; its domain's QEMU still maps it\n",
                name, mech, a->owner,
                daxfile_repair_finding_describe(a->found));
            continue;
        }
        if (kept) {
            fprintf(
                stderr,
                "daxfile: '%s' (%s, owner '%s', %s) cannot be found: %s; its registry entry is kept: mount its filesystem and run 'daxfile repair' again, or give its current path with 'daxfile repair --path PATH'\n",
                name, mech, a->owner, daxfile_repair_finding_describe(a->found),
                a->error);
            continue;
        }
        text = repair_done_text(a);
        fprintf(stderr, "%s '%s' (%s, owner '%s'): %s\n",
                a->done == DAXFILE_REPAIR_RELEASED ? "released" : "dropped",
                name, mech, a->owner, text);
    }
}

static int
cmd_repair(int argc, char **argv)
{
    g_auto(DaxfileRepairResult) result = {0};
    g_autoptr(GError) error = NULL;
    gboolean wipes = FALSE;
    int rc;

    if (!daxfile_static_repair(arg_path, &result, &error))
        return cli_report_error(error);
    if (arg_json)
        cli_print_json(daxfile_repair_result_to_json(&result));
    else
        print_repair(&result, FALSE);
    print_repair(&result, TRUE);
    /* then the wipes owed (daxfile-wipes.h), which a registry entry of
     * the same file, released above, would have refused */
    rc = cli_wipe_resume(&wipes);
    if (daxfile_repair_result_kept(&result) > 0)
        return CLI_EXIT_FAILURE;
    if (result.actions->len == 0 && !wipes && !arg_json)
        fprintf(stderr, "nothing to repair\n");
    return rc;
}

const CliVerb cmd_repair_verb = {
    .name = "repair",
    .dispatch = cmd_repair,
    .summary = "Finish interrupted operations, drop stale entries",
    .params = "",
    .description =
        "Finish or roll back interrupted enable/disable, release entries whose consumer, start or boot is gone, and finish interrupted or pending wipes.",
    .options = repair_options,
};

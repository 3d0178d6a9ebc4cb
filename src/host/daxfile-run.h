/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-run.h: `daxfile run`, the supervisor. Start a command, make
 * each file static once the command (or a descendant) has it mapped,
 * release them when it exits, and hand back its exit status.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "daxfile-registry.h"
#include "daxfile-static.h"

G_BEGIN_DECLS

/* Who maps a file: asked every 20 ms until every file is engaged */
typedef struct {
    /* @pid and every descendant of it (GArray of pid_t) */
    GArray *(*tree)(pid_t pid, gpointer data);
    /* TRUE when process @pid maps inode @dev/@ino */
    gboolean (*maps)(pid_t pid, guint64 dev, guint64 ino, gpointer data);
} DaxfileRunMappers;

/* The default source: /proc (daxfile_proc_tree(),
 * daxfile_proc_maps_inode()) */
extern const DaxfileRunMappers daxfile_run_proc_mappers;

typedef enum {
    DAXFILE_RUN_ENGAGED,        /* @path is static: @enabled */
    DAXFILE_RUN_FAILED,         /* @error: a file could not be made static,
                                 * or was not mapped in time; the command
                                 * is being stopped (SIGTERM) */
    DAXFILE_RUN_RELEASED,       /* @path was released: @disabled (its
                                 * layout_unchanged may be FALSE) */
    DAXFILE_RUN_RELEASE_FAILED, /* @path could not be released: @error */
} DaxfileRunEventKind;

/* What happened, as it happens; valid during the callback only */
typedef struct {
    DaxfileRunEventKind kind;
    const char *path;  /* the file; NULL when FAILED is the deadline */
    const char *owner; /* the registry owner of the files */
    const DaxfileEnableResult *enabled;
    const DaxfileDisableResult *disabled;
    const GError *error;
} DaxfileRunEvent;

typedef struct {
    const char *const *files; /* NULL-terminated paths, at least one */
    char **command;           /* NULL-terminated argv, found in PATH */
    const char *owner;        /* NULL: "pid:<the command's pid>" */
    guint64 align;
    DaxfileMechanism mechanism; /* NONE = choose */
    gboolean allow_non_dax;
    guint timeout; /* seconds for the command to map them all */
    const DaxfileRunMappers *mappers; /* NULL: daxfile_run_proc_mappers */
    gpointer mappers_data;
    void (*report)(const DaxfileRunEvent *ev, gpointer data); /* or NULL */
    gpointer report_data;
} DaxfileRunParams;

typedef struct {
    int wait_status;         /* the command's, as waitpid() gives it */
    gboolean failed;         /* a FAILED event happened */
    gboolean release_failed; /* a release failed, or found the layout
                              * changed while static */
    /* what `daxfile run` exits with: 1 after a failure of static mode,
     * else the command's status (128 + the signal that killed it) */
    int exit_status;
} DaxfileRunResult;

/* Open and verify every file (each must be static-ready, and given once),
 * start the command, then engage each file when it is mapped, and release
 * every engaged one when the command exits. While the command runs,
 * SIGINT, SIGTERM and SIGHUP of this process stop it (SIGTERM). FALSE
 * only when nothing was started: a file was refused or the command could
 * not be spawned. Everything after that is reported through @report and
 * summed up in @ret_result. */
gboolean daxfile_run(const DaxfileRunParams *params,
                     DaxfileRunResult *ret_result, GError **error);

G_END_DECLS

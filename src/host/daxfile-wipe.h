/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-wipe.h: verifiable erase of a pmem backing file
 *
 * daxfile wipe zeroes a file that no domain holds, through a MAP_SYNC
 * mapping where the filesystem is DAX (non-temporal stores, then a store
 * fence: nothing is left in the CPU caches), else through a shared mapping
 * and msync; then reads all of it back, checks every byte is zero and
 * gives the SHA-256 of what it read. While it runs, and after an
 * interruption until it is run again, the file carries the extended
 * attribute user.daxfile.wipe (how far it got): every check, attach and
 * the hook refuse such a file (reason wipe_unfinished), and the next wipe
 * goes on from there. No registry entry is made, so nothing is left
 * claimed by an interrupted wipe; a wipe record (daxfile-wipes.h), which
 * a device-dax device gets too, has the hook refuse it and daxfile
 * repair finish it. A wipe is refused while any process maps the file or
 * holds it open.
 */
#pragma once

#include <glib.h>

#include "daxfile-conf.h"
#include "daxfile-file.h"
#include "daxfile-wipe-mark.h"
#include "daxfile-wipes.h"

G_BEGIN_DECLS

typedef void (*DaxfileWipeProgress)(guint64 done, guint64 total, gpointer data);

typedef struct {
    DaxfileWipeProgress progress; /* after every chunk, or NULL */
    gpointer progress_data;
    volatile gint *cancel; /* non-zero: stop after this chunk */
} DaxfileWipeParams;

typedef struct {
    guint64 size;
    guint64 resumed_from;  /* bytes an interrupted wipe had zeroed */
    guint64 zeroed;        /* bytes zeroed by this run */
    gboolean map_sync;     /* through MAP_SYNC (DAX) */
    const char *method;    /* how the zeros were made durable */
    gboolean interrupted;  /* stopped by @cancel: run it again */
    gboolean verified;     /* every byte read back as zero */
    guint64 first_nonzero; /* when not verified */
    char *sha256;          /* of the bytes read back */
    double seconds;        /* zeroing */
    double verify_seconds; /* reading back */
} DaxfileWipeResult;

void daxfile_wipe_result_clear(DaxfileWipeResult *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DaxfileWipeResult, daxfile_wipe_result_clear)

/* Open @path for daxfile_wipe(): a regular file (O_NOFOLLOW unless
 * @follow) or a device-dax device by its own node; NULL with @error */
DaxfileFile *daxfile_wipe_open(const char *path, gboolean follow,
                               GError **error);

/* What daxfile_wipe() refuses (a regular file no one holds), checked
 * now, for a caller that must not change anything else first */
gboolean daxfile_wipe_check(const DaxfileFile *f, GError **error);

/* Wipe the regular file @f (opened for writing).
 * Refused while the registry holds the file (reserved or static, for any
 * owner), it is immutable or kernel-static, or any process but this one
 * maps it or holds it open (named in the error). FALSE with @error set on a
 * refusal, a failure, an interruption (@ret->interrupted) or a read-back
 * that is not all zeros. */
gboolean daxfile_wipe(const DaxfileFile *f, const DaxfileWipeParams *p,
                      DaxfileWipeResult *ret, GError **error);

/* The hook's check at prepare: FALSE with @error naming @name (a display
 * name), why and the fix when the file or device of key @dev/@ino
 * (daxfile_wipe_key()) has a wipe record */
gboolean daxfile_wipe_refuse_pending(guint64 dev, guint64 ino, const char *name,
                                     GError **error);

/* Open @path for a wipe as the hook places a domain's file: under a
 * managed root of @conf (NULL: none), daxfile_conf_open_managed() (no
 * symbolic link in any component, trusted owner, one link), for writing,
 * or, without @write, only to know which file it is (to record a wipe
 * owed: the file may still be static, immutable, for its running
 * domain); elsewhere by its own name, daxfile_wipe_open() without
 * following a link (a device-dax device) */
DaxfileFile *daxfile_wipe_open_placed(const DaxfileConf *conf, const char *path,
                                      gboolean write, GError **error);

/* Open the file or device of @r (daxfile_wipe_open_placed()): for its
 * wipe (@write), or to decide whether it is wiped (read-only: a file
 * another running domain holds static refuses a writer); NOT_FOUND when it
 * is gone, INVALID when it is not the same file any more (key and file
 * handle) */
DaxfileFile *daxfile_wipe_record_open(const DaxfileWipeRecord *r,
                                      const DaxfileConf *conf, gboolean write,
                                      GError **error);

/* What daxfile_wipe_resume() did about one record */
typedef enum {
    DAXFILE_WIPE_RESUME_WIPED,     /* finished: zeros read back, record
                                    * removed (@result) */
    DAXFILE_WIPE_RESUME_DROPPED,   /* its file no longer exists: record
                                    * removed */
    DAXFILE_WIPE_RESUME_UNDECIDED, /* DAXFILE_WIPE_UNDEFINED: only daxfile
                                    * watch can tell whether another domain
                                    * uses it; kept */
    DAXFILE_WIPE_RESUME_KEPT,      /* not finished (@error); kept */
} DaxfileWipeResumeDone;

typedef struct {
    DaxfileWipeRecord *record;
    DaxfileWipeResumeDone done;
    DaxfileWipeResult result;
    char *error;
} DaxfileWipeResumed;

void daxfile_wipe_resumed_free(DaxfileWipeResumed *w);

/* Finish every wipe owed that needs no libvirt (daxfile repair): each
 * record in state wiping, its file opened by daxfile_wipe_record_open()
 * with @conf, then daxfile_wipe() (@cancel: as DaxfileWipeParams). One
 * DaxfileWipeResumed per record, oldest first; NULL with @error only when
 * the records cannot be read. */
GPtrArray *daxfile_wipe_resume(const DaxfileConf *conf, volatile gint *cancel,
                               GError **error);

G_END_DECLS

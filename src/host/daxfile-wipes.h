/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-wipes.h: the wipes owed, on disk
 *
 * A wipe that was decided (daxfile watch, for an undefined domain) or
 * begun (daxfile wipe) and has not finished is recorded durably, one
 * file per record in <state>/lib/wipes (default /var/lib/daxfile/wipes,
 * kept across reboots like the data it is about), written before the
 * first byte is zeroed and removed only once every byte read back as
 * zero. A device-dax device has no extended attribute to carry the mark
 * a file carries (DAXFILE_WIPE_XATTR): this record is its mark. The hook
 * refuses a file or device that has one at prepare; daxfile watch resumes
 * them when it starts, and daxfile repair those it can finish alone.
 * Each record is replaced atomically (temporary file, fsync, rename,
 * fsync of the directory); a record is keyed by its file's identity as
 * the registry keys an entry (a file: device and inode; a device-dax
 * device: its device number and inode 0), and changed under the inode
 * lock of that key (daxfile_registry_lock_inode()).
 */
#pragma once

#include <glib.h>

#include "daxfile-enum.h"
#include "daxfile-file.h"

G_BEGIN_DECLS

typedef enum {
    DAXFILE_WIPE_UNDEFINED, /* its domain was undefined: daxfile watch
                             * decides, once the domain is gone, whether
                             * another domain uses it (kept) or not */
    DAXFILE_WIPE_WIPING,    /* decided or begun: daxfile watch, daxfile
                             * repair and daxfile wipe finish it */
    DAXFILE_WIPE_STATE_LAST
} DaxfileWipeState;

/* "undefined", "wiping" */
DAXFILE_ENUM_DECL(daxfile_wipe_state, DaxfileWipeState);

typedef struct {
    char *path;   /* absolute, as opened (raw bytes) */
    guint64 dev;  /* the key: a file's st_dev, a device's st_rdev */
    guint64 ino;  /* a file's st_ino, 0 for a device */
    char *handle; /* a file's handle (daxfile_fd_handle()), or NULL */
    DaxfileWipeState state;
    char *domain; /* the undefined domain, or NULL: 'daxfile wipe' */
    char *uuid;   /* its UUID, or NULL */
    char *since;  /* ISO 8601 UTC */
} DaxfileWipeRecord;

void daxfile_wipe_record_free(DaxfileWipeRecord *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileWipeRecord, daxfile_wipe_record_free)

/* The key of the open file @f: *@ret_dev, *@ret_ino as above */
void daxfile_wipe_key(const DaxfileFile *f, guint64 *ret_dev, guint64 *ret_ino);

/* A new record for the open file @f (its path as its fd names it) */
DaxfileWipeRecord *daxfile_wipe_record_new(const DaxfileFile *f,
                                           DaxfileWipeState state,
                                           const char *domain,
                                           const char *uuid);

/* Write @r durably, replacing the record of its key */
gboolean daxfile_wipe_record_save(const DaxfileWipeRecord *r, GError **error);

/* Remove the record of @dev/@ino durably (none: TRUE) */
gboolean daxfile_wipe_record_remove(guint64 dev, guint64 ino, GError **error);

/* The record of @dev/@ino into *@ret (NULL when there is none); FALSE
 * with @error when records cannot be read */
gboolean daxfile_wipe_record_find(guint64 dev, guint64 ino,
                                  DaxfileWipeRecord **ret, GError **error);

/* Every record (DaxfileWipeRecord *), oldest first; NULL with @error when
 * one cannot be read */
GPtrArray *daxfile_wipe_records(GError **error);

G_END_DECLS

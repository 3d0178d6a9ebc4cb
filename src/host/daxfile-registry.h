/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-registry.h: the record of static files
 *
 * One JSON file in <state>/lib (default /var/lib/daxfile): it survives a
 * reboot because FS_IMMUTABLE_FL does. Locks live in the
 * volatile <state>/run (default /run/daxfile). Every entry carries the boot
 * it was made in, so entries whose state died with a reboot (kernel static
 * mode, reservations, processes) are recognisable. Updates are atomic:
 * temp file, fsync, rename, fsync of the directory, under an flock.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "daxfile-enum.h"

G_BEGIN_DECLS

typedef enum {
    DAXFILE_STATE_RESERVED,  /* claimed by a domain that is starting */
    DAXFILE_STATE_ENGAGING,  /* intent logged, mechanism being engaged */
    DAXFILE_STATE_ENGAGED,   /* static */
    DAXFILE_STATE_RELEASING, /* intent logged, mechanism being released */
    DAXFILE_STATE_LAST
} DaxfileEntryState;

typedef enum {
    DAXFILE_MECH_NONE,          /* reserved only */
    DAXFILE_MECH_KERNEL,        /* daxctl(DAXCTL_F_STATIC) */
    DAXFILE_MECH_IMMUTABLE,     /* FS_IMMUTABLE_FL after the consumer mapped */
    DAXFILE_MECH_VERIFIED_ONLY, /* checked, nothing enforced */
    DAXFILE_MECH_DEVICE_DAX,    /* a device-dax device: it has no block
                                 * map, nothing to enforce; held for its
                                 * owner (entry key: its device number,
                                 * inode 0) */
    DAXFILE_MECH_LAST
} DaxfileMechanism;

typedef struct {
    char *path;
    guint64 dev;
    guint64 ino;
    DaxfileEntryState state;
    DaxfileMechanism mechanism;
    char *owner;      /* "domain:NAME", "pid:N" or a user-given name */
    char *owner_uuid; /* domain uuid, or NULL */
    char *device;     /* the domain's device model ("nvdimm",
                       * "virtio-pmem"), or NULL */
    gint64 pid;       /* consumer process for `run`, 0 otherwise */
    guint64 align;
    char *fingerprint; /* extent-map digest at enable */
    char *since;       /* ISO 8601 UTC */
    char *boot_id;
    gboolean flag_set;    /* daxfile set FS_IMMUTABLE_FL itself */
    char *handle;         /* file handle ("TYPE:HEX"): finds the inode again
                           * after a rename or a reboot; NULL when none */
    char *fsid;           /* statfs f_fsid of its filesystem, hex */
    char *fs_uuid;        /* its filesystem's UUID, hex (what tells it
                           * from another xfs on the same device number);
                           * NULL in entries of registry version 1 */
    gint64 holder_pid;    /* reserved: the process that ran the hook (the
                           * libvirtd starting the domain), 0 when unknown */
    guint64 holder_start; /* its start time (/proc/PID/stat), against pid
                           * reuse */
    char *unguarded;      /* reserved: a device hot-plugged into a running
                           * domain (its QEMU maps the file, and is the
                           * holder) that could not be made static, and
                           * why; held for the domain until it stops. NULL
                           * for every other entry */
} DaxfileEntry;

void daxfile_entry_free(DaxfileEntry *entry);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileEntry, daxfile_entry_free)
DaxfileEntry *daxfile_entry_copy(const DaxfileEntry *entry);

/* "none", "kernel", ...: the names in the registry and in JSON */
DAXFILE_ENUM_DECL(daxfile_mechanism, DaxfileMechanism);
/* "reserved", "engaging", ... */
DAXFILE_ENUM_DECL(daxfile_entry_state, DaxfileEntryState);

/* "<state>/run" and "<state>/lib", honouring DAXFILE_STATE_DIR */
char *daxfile_state_run_dir(void);
char *daxfile_state_lib_dir(void);

/* The running boot, from /proc/sys/kernel/random/boot_id */
const char *daxfile_boot_id(void);

/* An entry made in an earlier boot (its kernel state or process is gone) */
gboolean daxfile_entry_is_stale(const DaxfileEntry *entry);

typedef struct _DaxfileRegistry DaxfileRegistry;

/* Lock the registry (blocking flock on <run>/registry.lock) and load it.
 * The lock is held until the registry is freed. */
DaxfileRegistry *daxfile_registry_open(GError **error);
void daxfile_registry_free(DaxfileRegistry *reg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileRegistry, daxfile_registry_free)

/* Borrowed; NULL when the inode has no entry */
DaxfileEntry *daxfile_registry_lookup(DaxfileRegistry *reg, guint64 dev,
                                      guint64 ino);
/* Takes ownership; replaces an entry for the same inode */
void daxfile_registry_put(DaxfileRegistry *reg, DaxfileEntry *entry);
/* Mark the registry changed after editing a looked-up entry in place */
void daxfile_registry_touch(DaxfileRegistry *reg);
gboolean daxfile_registry_remove(DaxfileRegistry *reg, guint64 dev,
                                 guint64 ino);
/* Borrowed array of DaxfileEntry *, in insertion order */
GPtrArray *daxfile_registry_entries(DaxfileRegistry *reg);

/* Write it back atomically (no-op when nothing changed). */
gboolean daxfile_registry_save(DaxfileRegistry *reg, GError **error);

/* Per-inode operation lock: an flock on <run>/locks/<dev>-<ino>.lock.
 * Returns the fd, or -1 with a BUSY error naming @name when another
 * operation holds it; with @wait, waits for it instead (operations are
 * short: the hook waits, so that of two domains starting at once the
 * second sees the first one's claim). */
int daxfile_registry_lock_inode(guint64 dev, guint64 ino, const char *name,
                                gboolean wait, GError **error);

G_END_DECLS

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-conf.h: /etc/daxfile/daxfile.conf (GKeyFile)
 *
 *   [hook]
 *   managed_roots=/var/lib/libvirt/pmem;/mnt/pmem
 *   allow_non_dax=false
 *   trusted_owners=root;libvirt-qemu
 *   create_missing=false
 *   path_map=/mnt/pmem-a=/mnt/pmem-b
 *   qemu_pid_dir=/run/libvirt/qemu
 *   pool_state_dir=/run/libvirt/storage
 *   device_dax=false
 *   wipe_on_undefine=false
 *
 * DAXFILE_CONF overrides the path. Files "<path>.d/NAME.conf" are read
 * after it, in name order: each adds its managed roots, with its own
 * allow_non_dax and create_missing for them, its trusted owners and its
 * path mappings (so a tool can manage a directory for a while by dropping
 * in a file, and leave the main configuration alone). No file at all
 * means no managed roots: the hook leaves every domain alone.
 * device_dax=true (in any of the files) has the hook manage nvdimms
 * backed by a device-dax device as well (daxfile-devdax.h).
 * wipe_on_undefine=true has `daxfile watch` wipe the files under that
 * file's roots (and, with device_dax=true in the same file, device-dax
 * devices) of a domain that is undefined, once no other domain uses them.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "daxfile-file.h"

G_BEGIN_DECLS

typedef struct {
    char *path;                /* absolute, normalised, no trailing slash */
    gboolean allow_non_dax;    /* files here may lack DAX (development) */
    gboolean create_missing;   /* migrate/restore: create a missing file */
    gboolean wipe_on_undefine; /* daxfile watch wipes a domain's files here
                                * when it is undefined */
    char *conf;                /* the file that declared it */
} DaxfileRoot;

typedef struct {
    char *path;           /* the main file, for messages */
    GPtrArray *roots;     /* DaxfileRoot */
    GArray *trusted_uids; /* uid_t; files under a root must be owned by one */
    GPtrArray *path_map;  /* pairs: from, to, from, to, ... */
    char *qemu_pid_dir;   /* libvirt's NAME.pid of each running domain:
                           * the system daemon's (root) or the session
                           * daemon's by default */
    char *pool_state_dir; /* libvirt's NAME.xml of each active storage
                           * pool (system or session daemon's) */
    gboolean device_dax;  /* manage device-dax nvdimms too */
    gboolean wipe_devdax; /* daxfile watch wipes them at undefine */
} DaxfileConf;

/* Where the system libvirtd keeps its QEMU pid files (a session daemon:
 * $XDG_RUNTIME_DIR/libvirt/qemu/run) */
#define DAXFILE_QEMU_PID_DIR "/run/libvirt/qemu"

/* Where the system libvirt's storage driver keeps the state of each
 * active pool (a session daemon: $XDG_RUNTIME_DIR/libvirt/storage/run) */
#define DAXFILE_POOL_STATE_DIR "/run/libvirt/storage"

void daxfile_conf_free(DaxfileConf *conf);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileConf, daxfile_conf_free)

const char *daxfile_conf_path(void);

/* Load @path (NULL: daxfile_conf_path()); a missing file gives defaults. */
DaxfileConf *daxfile_conf_load(const char *path, GError **error);

/* Parse configuration text (for tests and the fuzzer) */
DaxfileConf *daxfile_conf_load_data(const char *data, gsize len,
                                    const char *path, GError **error);

/* The managed root that lexically contains @path, or NULL */
const DaxfileRoot *daxfile_conf_managed_root(const DaxfileConf *conf,
                                             const char *path);

/* The managed root that the file @path names really is in, by what it is
 * rather than how it is spelt (through "..", a symbolic link, a bind
 * mount, a relative path: relative to "/", as QEMU under libvirt opens
 * it), in *ret_root (NULL: in none), and *ret_plain, the plain path of
 * that file under the root. A path that does not exist is placed by its
 * directory; one that names nothing is in no root. FALSE when the kernel
 * cannot place it: the hook then knows nothing, and refuses. */
gboolean daxfile_conf_locate(const DaxfileConf *conf, const char *path,
                             const DaxfileRoot **ret_root, char **ret_plain,
                             GError **error);

/* TRUE when @path is absolute and has no ".", ".." or empty component */
gboolean daxfile_path_is_plain(const char *path);

/* @path rewritten by the first matching path_map prefix, or NULL */
char *daxfile_conf_map_path(const DaxfileConf *conf, const char *path);

gboolean daxfile_conf_trusts_uid(const DaxfileConf *conf, uid_t uid);

/* Open @path, which lies lexically under the managed root @root, as the
 * hook places a domain's file: beneath the root with no symbolic link
 * and no ".." (daxfile_file_open_beneath()), owned by a user in
 * trusted_owners, and with one link (a hard link can lead outside the
 * root). The hook and daxfile watch both open files this way. */
DaxfileFile *daxfile_conf_open_managed(const DaxfileConf *conf,
                                       const DaxfileRoot *root,
                                       const char *path, DaxfileOpenFlags flags,
                                       GError **error);

G_END_DECLS

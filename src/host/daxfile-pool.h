/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-pool.h: where a libvirt storage volume is, without asking
 * libvirt
 *
 * The domain XML names a <disk type='volume'> by pool and volume only,
 * and the hook must not call libvirt (libvirt waits for it: a deadlock).
 * libvirt's storage driver keeps the XML of each active pool in its
 * state directory, NAME.xml (<poolstate><pool type='dir'>...<target>
 * <path>DIR</path>), a file only root writes. For a pool whose volumes
 * are named after their file or device in the target directory (dir, fs,
 * netfs, vstorage; logical, disk, zfs) that places the volume: DIR/NAME.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The path of volume @volume of pool @pool, from @state_dir/@pool.xml,
 * in *ret_path; NULL for a pool over the network (rbd, gluster,
 * sheepdog, iscsi-direct), whose volumes are no file or device here.
 * FALSE with @error set when the volume cannot be placed: no state (the
 * pool is not active, or libvirt keeps it elsewhere), a state not only
 * root could have written, or that is not a pool's, a pool type whose
 * volumes are elsewhere (iscsi, scsi, mpath), a name with a '/'. */
gboolean daxfile_pool_volume_path(const char *state_dir, const char *pool,
                                  const char *volume, char **ret_path,
                                  GError **error);

G_END_DECLS

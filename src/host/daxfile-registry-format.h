/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-registry-format.h: the registry's on-disk format
 * (daxfile-registry.h), JSON
 */
#pragma once

#include <glib.h>

#include "daxfile-registry.h"

G_BEGIN_DECLS

/* The registry's file name, in daxfile_state_lib_dir() */
#define DAXFILE_REGISTRY_FILE "registry.json"

/* Append the entries of the registry file @path (DaxfileEntry *) to
 * @entries; FALSE with @error set when it cannot be read or parsed. */
gboolean daxfile_registry_parse(const char *path, GPtrArray *entries,
                                GError **error);

/* The registry file's text for @entries (DaxfileEntry *) */
char *daxfile_registry_serialise(const GPtrArray *entries);

G_END_DECLS

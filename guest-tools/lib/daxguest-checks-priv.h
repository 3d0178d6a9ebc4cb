/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxguest-checks-priv.h: what the check modules share (daxguest-checks.c:
 * namespaces, filesystems, device-dax, flushes; daxguest-checks-pmem.c:
 * the pmem inventory's buses and regions)
 */
#pragma once

#include "daxguest-checks.h"

G_BEGIN_DECLS

/* A new check @id about @subject (NULL: the machine) titled @title (taken),
 * appended to @out */
DaxguestCheck *daxguest_check_add(GPtrArray *out, const char *id,
                                  const char *subject, char *title);
/* Its result; takes @detail and @hint (NULL only for a PASS) */
void daxguest_check_set(DaxguestCheck *c, DaxguestCheckResult result,
                        char *detail, char *hint);
/* "a, b, c" */
char *daxguest_check_join(GPtrArray *names);

gboolean daxguest_checks_region_is_pmem(const DaxfilePmemRegion *r);

/* The presence chain: NFIT (not needed for virtio-pmem and CXL), bus,
 * DIMMs, a pmem region; FALSE stops the checks of regions */
gboolean daxguest_checks_pmem_presence(GPtrArray *out,
                                       const DaxfilePmemInventory *inv);

/* A pmem region's persistence domain and, on the CXL bus, its CXL region */
void daxguest_checks_pmem_region(GPtrArray *out,
                                 const DaxfilePmemInventory *inv,
                                 const DaxfilePmemRegion *r);

G_END_DECLS

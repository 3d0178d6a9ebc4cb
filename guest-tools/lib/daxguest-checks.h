/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxguest-checks.h: `daxfile-guest check`: gather the facts of this guest
 * (inventory and probes), judge them into PASS/WARN/FAIL checks, and
 * format those as text (virt-host-validate style), TAP or JSON
 *
 * Gathering touches the machine; judging and formatting are pure, so the
 * unit tests build facts by hand and compare the output with golden files.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-enum.h"
#include "daxguest-cpu.h"
#include "daxfile-pmem.h"
#include "daxguest-probe.h"

G_BEGIN_DECLS

/* An fsdax block device and what was found on it */
typedef struct {
    char *device;              /* "/dev/pmem0" */
    char *namespace;           /* "namespace0.0" */
    gboolean present;          /* the device node exists */
    DaxfileTristate queue_dax; /* /sys/block/pmemN/queue/dax */
    char *mount_point;         /* NULL when not mounted */
    char *fs_type;             /* from mountinfo */
    DaxguestFileProbe probe;   /* valid when mounted */
} DaxguestPmemFacts;

/* A device-dax device and its mapping probe */
typedef struct {
    char *name;       /* "dax0.0", as in the inventory */
    gboolean present; /* /dev/dax0.0 is a character device */
    DaxguestPmdProbe probe;
} DaxguestDaxFacts;

typedef struct {
    DaxfilePmemInventory *inv;
    GPtrArray *pmems; /* DaxguestPmemFacts */
    GPtrArray *daxes; /* DaxguestDaxFacts */
    DaxguestCpuFeatures cpu;
    char *pmem_no_clwb; /* the libpmem environment variables */
    char *pmem_no_clflushopt;
    char *pmem_no_flush;
} DaxguestFacts;

DaxguestFacts *daxguest_facts_new(DaxfilePmemInventory *inv);
void daxguest_facts_free(DaxguestFacts *facts);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxguestFacts, daxguest_facts_free)
DaxguestPmemFacts *daxguest_pmem_facts_new(const char *device,
                                           const char *namespace);
DaxguestDaxFacts *daxguest_dax_facts_new(const char *name);

/* Read the inventory, probe every fsdax mount and device-dax device. */
DaxguestFacts *daxguest_facts_gather(GError **error);

/* libpmem's flush choice for these facts. */
void daxguest_facts_flush_choice(const DaxguestFacts *facts,
                                 DaxguestFlushChoice *ret_choice);

typedef enum {
    DAXGUEST_CHECK_PASS = 0,
    DAXGUEST_CHECK_WARN,
    DAXGUEST_CHECK_FAIL,
    DAXGUEST_CHECK_LAST
} DaxguestCheckResult;

typedef struct {
    char *check;   /* stable snake_case id: "namespace_mode" */
    char *subject; /* "namespace0.0", "/mnt/pmem", or NULL */
    char *title;   /* what follows "Checking " */
    DaxguestCheckResult result;
    char *detail; /* what was found, or NULL */
    char *hint;   /* the fix; set for every WARN and FAIL */
} DaxguestCheck;

/* Judge @facts: an array of DaxguestCheck, in output order. */
GPtrArray *daxguest_checks_run(const DaxguestFacts *facts);

/* TRUE when any check failed (exit status 1). */
gboolean daxguest_checks_failed(const GPtrArray *checks);

DAXFILE_ENUM_DECL(daxguest_check_result, DaxguestCheckResult);

/* "Checking <title>   : PASS (detail)" lines; WARN/FAIL add "; hint". */
char *daxguest_checks_format_text(const GPtrArray *checks);

/* TAP version 13: one test point per check; WARN is "ok" with WARN in its
 * description and the hint on a "# " line after it; FAIL is "not ok". */
char *daxguest_checks_format_tap(const GPtrArray *checks);

/* An array of {check, subject, result, detail, hint}. */
JsonNode *daxguest_checks_to_json(const GPtrArray *checks);

G_END_DECLS

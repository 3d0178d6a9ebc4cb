/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-checks.h: `daxfile-guest check`: gather the facts of this guest
 * (inventory and probes), judge them into PASS/WARN/FAIL checks, and
 * format those as text (virt-host-validate style), TAP or JSON
 *
 * Gathering touches the machine; judging and formatting are pure, so the
 * unit tests build facts by hand and compare the output with golden files.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-cpu.h"
#include "daxfile-nvdimm.h"
#include "daxfile-probe.h"

G_BEGIN_DECLS

/* An fsdax block device and what was found on it */
typedef struct {
    char *device;        /* "/dev/pmem0" */
    char *namespace;     /* "namespace0.0" */
    gboolean present;    /* the device node exists */
    DaxfileTristate queue_dax; /* /sys/block/pmemN/queue/dax */
    char *mount_point;   /* NULL when not mounted */
    char *fs_type;       /* from mountinfo */
    DaxfileFileProbe probe; /* valid when mounted */
} DaxfilePmemFacts;

/* A device-dax device and its mapping probe */
typedef struct {
    char *name;          /* "dax0.0", as in the inventory */
    gboolean present;    /* /dev/dax0.0 is a character device */
    DaxfilePmdProbe probe;
} DaxfileDaxFacts;

typedef struct {
    DaxfileNvInventory *inv;
    GPtrArray *pmems;    /* DaxfilePmemFacts */
    GPtrArray *daxes;    /* DaxfileDaxFacts */
    DaxfileCpuFeatures cpu;
    char *pmem_no_clwb;  /* the libpmem environment variables */
    char *pmem_no_clflushopt;
    char *pmem_no_flush;
} DaxfileGuestFacts;

DaxfileGuestFacts *daxfile_guest_facts_new(DaxfileNvInventory *inv);
void daxfile_guest_facts_free(DaxfileGuestFacts *facts);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DaxfileGuestFacts, daxfile_guest_facts_free)
DaxfilePmemFacts *daxfile_pmem_facts_new(const char *device,
                                         const char *namespace);
DaxfileDaxFacts *daxfile_dax_facts_new(const char *name);

/* Read the inventory, probe every fsdax mount and device-dax device. */
DaxfileGuestFacts *daxfile_guest_facts_gather(GError **error);

/* libpmem's flush choice for these facts. */
void daxfile_guest_facts_flush_choice(const DaxfileGuestFacts *facts,
                                      DaxfileFlushChoice *ret_choice);

typedef enum {
    DAXFILE_CHECK_PASS = 0,
    DAXFILE_CHECK_WARN,
    DAXFILE_CHECK_FAIL,
} DaxfileCheckResult;

typedef struct {
    char *check;    /* stable snake_case id: "namespace_mode" */
    char *subject;  /* "namespace0.0", "/mnt/pmem", or NULL */
    char *title;    /* what follows "Checking " */
    DaxfileCheckResult result;
    char *detail;   /* what was found, or NULL */
    char *hint;     /* the fix; set for every WARN and FAIL */
} DaxfileCheck;

/* Judge @facts: an array of DaxfileCheck, in output order. */
GPtrArray *daxfile_checks_run(const DaxfileGuestFacts *facts);

/* TRUE when any check failed (exit status 1). */
gboolean daxfile_checks_failed(const GPtrArray *checks);

const char *daxfile_check_result_to_string(DaxfileCheckResult result);

/* "Checking <title>   : PASS (detail)" lines; WARN/FAIL add "; hint". */
char *daxfile_checks_format_text(const GPtrArray *checks);

/* TAP version 13: one test point per check; WARN is "ok" with WARN in its
 * description and the hint on a "# " line after it; FAIL is "not ok". */
char *daxfile_checks_format_tap(const GPtrArray *checks);

/* An array of {check, subject, result, detail, hint}. */
JsonNode *daxfile_checks_to_json(const GPtrArray *checks);

G_END_DECLS

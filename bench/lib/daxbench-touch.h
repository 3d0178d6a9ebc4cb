/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxbench-touch.h: bench-dax touch, what a guest sees when it writes its
 * pmem for the first time, and then again
 *
 *   bench-dax touch PATH --size BYTES [--fallocate] [--sync] [--marker]
 *       Map SIZE bytes (a multiple of 2 MiB) of PATH shared and read-write
 *       at a 2 MiB-aligned address (MAP_SHARED_VALIDATE|MAP_SYNC with
 *       --sync) and write every 4 KiB page of it whole, in address order,
 *       twice: the first pass takes every first-touch fault (of this
 *       system and, in a guest, of its host), the second none (the steady
 *       state). Each 2 MiB step of each pass is timed (CLOCK_MONOTONIC);
 *       each pass's page faults are counted (getrusage).
 *       --fallocate: create PATH if it is missing and fallocate SIZE bytes
 *       first (unwritten extents: the first pass converts them).
 *       --marker: execute CPUID with leaf 0x44415801 right before the first
 *       pass, 0x44415802 between the passes and 0x44415803 after the
 *       second. In a guest each is a VM exit that its host can trace
 *       (kvm:kvm_cpuid), which marks the passes in the host's trace.
 *   One line of JSON: {"path", "bytes", "step_bytes", "marker", "first":
 *   PASS, "steady": PASS}, PASS = {"seconds", "mib_per_s", "faults",
 *   "steps": {"p50_us", "p90_us", "p99_us", "max_us", "mean_us"},
 *   "steps_us": [each step's time, in address order]}.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the CPUID leaves of --marker: before, between and after the passes */
#define DAXBENCH_TOUCH_MARK_FIRST 0x44415801u
#define DAXBENCH_TOUCH_MARK_STEADY 0x44415802u
#define DAXBENCH_TOUCH_MARK_END 0x44415803u

typedef struct {
    const char *path;
    guint64 size;
    gboolean fallocate;
    gboolean sync;
    gboolean marker;
} DaxbenchTouchArgs;

/* Parse "bench-dax touch ..." (argv[2] on); FALSE: a usage error */
gboolean daxbench_touch_parse(int argc, char **argv,
                              DaxbenchTouchArgs *ret_args);

/* The measurement as one line of JSON (no newline) */
char *daxbench_touch(const DaxbenchTouchArgs *args, GError **error);

G_END_DECLS

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# guest-nonvdimm: daxfile-guest in a guest without any NVDIMM (--pmem none)
# fails clearly and never crashes: check FAILs the NFIT check with a hint
# (text, TAP, JSON, exit 1); write, locate and bench refuse in one line.
# Needs: --bin daxfile-guest, --pmem none.
. /daxfile/lib/guest-lib.sh

dx_plan 8

OUT=/tmp/out

# status WANT CMD...: CMD exits with WANT and says so on one stderr line
status() {
    local want="$1" rc
    shift
    "$@" >$OUT 2>/tmp/err
    rc=$?
    cat $OUT /tmp/err
    echo "exit status $rc (want $want)"
    [ "$rc" -eq "$want" ] || return 1
    [ "$want" -eq 0 ] || [ "$(wc -l </tmp/err)" -le 1 ]
}

dx_run "no NVDIMM bus in sysfs" sh -c '! ls /sys/bus/nd/devices/region* 2>/dev/null'
dx_run "check exits 1" status 1 daxfile-guest check
dx_run "check: NFIT FAIL with the hint to add an NVDIMM" sh -c \
    "head -n 1 $OUT | grep -q \"^Checking for the ACPI NFIT table *: FAIL (absent: this machine has no NVDIMM; give the guest an NVDIMM: QEMU '-machine nvdimm=on'\""
dx_run "check --tap: not ok 1, exit 1" sh -c \
    "daxfile-guest check --tap >$OUT; rc=\$?; cat $OUT; [ \$rc -eq 1 ] && grep -q '^not ok 1 - Checking for the ACPI NFIT table: FAIL' $OUT && grep -qx '1\\.\\.3' $OUT"
dx_run "check --json: nfit_table fail, exit 1" sh -c \
    "daxfile-guest check --json >$OUT; rc=\$?; cat $OUT; [ \$rc -eq 1 ] && tr -d ' \n' <$OUT | grep -q '^\[{\"check\":\"nfit_table\",\"subject\":null,\"result\":\"fail\"'"
dx_run "write on tmpfs: refused in one line (no MAP_SYNC)" \
    status 1 daxfile-guest write --dir /tmp --seed 1 --size 4M
dx_run "locate without a pattern file: one line" \
    status 1 daxfile-guest locate --dir /run --offset 0
dx_run "bench without a DAX mount: one line" status 1 daxfile-guest bench

dx_done

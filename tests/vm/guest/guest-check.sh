#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# guest-check: `daxfile-guest check` on real DAX. A raw namespace FAILs
# with the create-namespace hint; fsdax without a mount FAILs with the mkfs
# hint; fsdax with ext4 or xfs mounted -o dax (2 MiB-aligned mkfs) passes,
# with a PMD fault seen by getrusage and by the fs_dax tracepoint; default
# mkfs.xfs (misaligned extents) WARNs with the mkfs fix but passes; dax=never
# FAILs statx and MAP_SYNC; a devdax namespace passes. Text, TAP and JSON.
# Needs: --bin daxfile-guest, one NVDIMM (the default temporary 1 GiB).
. /daxfile/lib/guest-lib.sh

dx_plan 29

OUT=/tmp/check.out

# run_check WANT_RC [ARGS...]: daxfile-guest check, its output in $OUT
run_check() {
    local want="$1" rc
    shift
    daxfile-guest check "$@" >$OUT 2>/tmp/check.err
    rc=$?
    cat $OUT /tmp/check.err
    echo "exit status $rc (want $want)"
    [ "$rc" -eq "$want" ]
}

# line_has PATTERN TEXT: the check line matching PATTERN contains TEXT
line_has() {
    grep -- "$1" $OUT | grep -qF -- "$2"
}

# json_result CHECK RESULT: the JSON entry of CHECK has that result
json_result() {
    tr -d ' \n' <$OUT | grep -q "\"check\":\"$1\",[^}]*\"result\":\"$2\""
}

# mkfs_check TYPE WANT_RC [--no-dax]: mkfs + mount, check, umount
mkfs_check() {
    local type="$1" want="$2" rc
    shift 2
    dx_mkfs "$type" /mnt/pmem "$@" >&2 || return 2
    run_check "$want"
    rc=$?
    dx_umount >&2
    return $rc
}

tap_valid() {
    local n
    n=$(grep -cE '^(not )?ok [0-9]+ - ' $OUT)
    sed -n 2p $OUT | grep -qx "1\.\.$n" &&
        ! grep -vE '^(TAP version 13|1\.\.[0-9]+|(not )?ok [0-9]+ - [^#]*|# .*)$' $OUT
}

# --- raw: the namespace of a label-less NVDIMM at boot
dx_run "raw namespace" dx_raw
dx_run "raw: check exits 1" run_check 1
dx_run "raw: namespace0.0 mode FAIL with the create-namespace fix" line_has \
    "namespace0.0 mode" "FAIL (raw: no DAX; run 'ndctl create-namespace -f -e namespace0.0 -m fsdax'"
dx_run "raw: check --tap is valid TAP with 'not ok' for the mode" sh -c \
    "daxfile-guest check --tap >$OUT; cat $OUT; grep -q '^not ok .*namespace0.0 mode: FAIL' $OUT"
dx_run "raw: TAP well-formed" tap_valid
dx_run "raw: check --json has namespace_mode fail" sh -c \
    "daxfile-guest check --json >$OUT; cat $OUT; tr -d ' \n' <$OUT | grep -q '\"check\":\"namespace_mode\",\"subject\":\"namespace0.0\",\"result\":\"fail\"'"

# --- fsdax, nothing mounted
dx_run "fsdax namespace" dx_fsdax --force
dx_run "fsdax unmounted: check exits 1" run_check 1
dx_run "fsdax unmounted: FAIL with the mkfs hint" line_has \
    "for a filesystem on /dev/pmem0" "FAIL (not mounted; make and mount a DAX filesystem: 'mkfs.ext4"

# --- ext4, aligned
dx_run "ext4 -o dax (stride=512)" dx_mkfs ext4 /mnt/pmem
dx_run "ext4: check exits 0" run_check 0
dx_run "ext4: no FAIL line" sh -c "! grep -q ': FAIL' $OUT"
dx_run "ext4: statx DAX PASS" line_has "if DAX is in effect in /mnt/pmem" "PASS"
dx_run "ext4: MAP_SYNC PASS" line_has "if MAP_SYNC works in /mnt/pmem" "PASS"
dx_run "ext4: PMD fault PASS, 0 extra faults, traced" line_has \
    "2 MiB faults are PMD" "PASS (1 fault(s) for the first access, 0 for the other 511 pages; traced as a PMD fault)"
dx_run "ext4: check --tap exits 0, all ok" sh -c \
    "daxfile-guest check --tap >$OUT; rc=\$?; cat $OUT; [ \$rc -eq 0 ] && ! grep -q '^not ok' $OUT"
dx_run "ext4: TAP well-formed" tap_valid
dx_run "ext4: check --json: pmd_fault pass" sh -c \
    "daxfile-guest check --json >$OUT; cat $OUT; tr -d ' \n' <$OUT | grep -q '\"check\":\"pmd_fault\",\"subject\":\"/mnt/pmem\",\"result\":\"pass\"'"
dx_run "ext4: umount" dx_umount

# --- xfs, aligned and default
dx_run "xfs -o dax (su=2m): check exits 0" mkfs_check xfs 0
dx_run "xfs: PMD fault PASS" line_has "2 MiB faults are PMD" "PASS (1 fault(s)"
dx_run "xfs default mkfs" dx_mkfs xfs-default /mnt/pmem
dx_run "xfs default: check exits 0 (WARN only)" run_check 0
dx_run "xfs default: PMD WARN with the mkfs.xfs fix" line_has \
    "2 MiB faults are PMD" "recreate it with 'mkfs.xfs -d su=2m,sw=1'"
dx_run "xfs default: umount" dx_umount

# --- dax=never
dx_run "ext4 -o dax=never: check exits 1" mkfs_check ext4 1 --no-dax
dx_run "dax=never: statx and MAP_SYNC FAIL" sh -c \
    "grep 'DAX is in effect' $OUT | grep -q FAIL && grep 'MAP_SYNC works' $OUT | grep -q 'FAIL (MAP_SHARED_VALIDATE|MAP_SYNC refused'"

# --- devdax
dx_run "devdax namespace" dx_devdax
dx_run "devdax: check exits 0, /dev/dax0.0 maps 2 MiB with one fault" sh -c \
    "daxfile-guest check >$OUT; rc=\$?; cat $OUT; [ \$rc -eq 0 ] && grep 'dax0.0 maps 2 MiB' $OUT | grep -q 'PASS (MAP_SYNC accepted, 1 fault(s) for the first access, 0 for the other 511 pages)'"

dx_done

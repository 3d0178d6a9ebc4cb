#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# guest-bench: `daxfile-guest bench` on ext4 -o dax (2 MiB-aligned mkfs)
# and on device-dax. Asserts only what is not a speed: it runs, the JSON
# has the five metrics, a 4 KiB run takes one fault per page and a 2 MiB
# run takes no extra fault (PMD). The tables go into the TAP as comments
# (under TCG only ratios mean anything).
# Needs: --bin daxfile-guest, one NVDIMM of at least 256 MiB.
. /daxfile/lib/guest-lib.sh

dx_plan 10

OUT=/tmp/bench.out

# json_field METRIC KEY: the value of KEY in the object of METRIC
json_field() {
    tr -d ' \n' <$OUT | sed 's/},{/}\n{/g' | grep "\"metric\":\"$1\"" |
        sed -n "s/.*\"$2\":\\([^,}]*\\).*/\\1/p"
}

bench_table() {
    daxfile-guest bench "$@" >$OUT || return 1
    cat $OUT
}

faults_ok() {
    local f4 n4 e2
    f4=$(json_field fault_4k_first_write faults)
    n4=$(json_field fault_4k_first_write samples)
    e2=$(json_field fault_2m_first_write extra_faults)
    echo "fault_4k: $f4 faults for $n4 pages; fault_2m: $e2 extra faults"
    [ "$e2" = 0 ] && { [ "$1" = devdax ] || [ "$f4" = "$n4" ]; }
}

dx_run "fsdax namespace" dx_fsdax
dx_run "ext4 -o dax" dx_mkfs ext4 /mnt/pmem
dx_run "ext4: bench (table)" bench_table --dir /mnt/pmem
dx_diag "$(cat $OUT)"
dx_run "ext4: bench --json has the five metrics" sh -c \
    "daxfile-guest bench --dir /mnt/pmem --json >$OUT && cat $OUT && [ \$(grep -c '\"metric\"' $OUT) -eq 5 ]"
dx_run "ext4: one fault per 4 KiB page, no extra fault in 2 MiB pages" faults_ok
dx_run "ext4: umount" dx_umount
dx_run "devdax namespace" dx_devdax
dx_run "devdax: bench (table)" bench_table --dev "$DX_DAX"
dx_diag "$(cat $OUT)"
dx_run "devdax: bench --json" sh -c \
    "daxfile-guest bench --dev $DX_DAX --json >$OUT && cat $OUT"
dx_run "devdax: no extra fault in 2 MiB pages" faults_ok devdax

dx_done

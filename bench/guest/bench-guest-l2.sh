#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=dash # busybox sh in L2, dash in L1: both have local
# bench-guest-l2 (bench/run guest, not a test): the guest (L2) that libvirt
# starts in the guest benchmark's emulated pmem host (bench_guest_l1.py),
# once per backing of its one NVDIMM. Makes the NVDIMM an fsdax namespace
# with ext4 mounted -o dax (noinit_itable: the lazy inode-table zeroing
# would write the pmem behind the measurement), then bench-dax touch: a
# file of DXG_REGION bytes, fallocated, whose every 4 KiB page is written
# whole twice, each 2 MiB step timed, the passes marked for the host's
# trace (--marker). One `# BENCH {json}` TAP comment carries its result.
# Needs: --bin bench-dax, one NVDIMM larger than DXG_REGION.
# Env: DXG_REGION (256M)
# shellcheck source=/dev/null # the guest's copy of tools/harness/guest-lib.sh
. /daxfile/lib/guest-lib.sh

: "${DXG_REGION:=256M}"

filesystem() {
    dx_fsdax && dx_mkfs ext4 /mnt/pmem &&
        dx_x mount -o remount,noinit_itable /mnt/pmem >&2
}

touch_region() {
    local out
    out=$(bench-dax touch /mnt/pmem/region --size "$DXG_REGION" \
        --fallocate --marker) || return 1
    echo "# BENCH {\"bench\": \"guest-l2\", \"result\": $out}" >&3
}

exec 3>&1
dx_plan 2
dx_run "fsdax namespace, ext4 mounted -o dax" filesystem || dx_done
dx_run "bench-dax touch: $DXG_REGION written twice" touch_region
dx_done

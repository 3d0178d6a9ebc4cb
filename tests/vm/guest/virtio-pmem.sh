#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# virtio-pmem: the pmem of a virtio-pmem-pci device, as a guest of
# `daxfile attach --model virtio-pmem` sees it. The NVDIMM bus is
# virtio-pmem's (no NFIT, no DIMMs), its region is asynchronous, so MAP_SYNC
# is refused on a DAX filesystem there; `daxfile-guest check` passes and
# says so, `write` msyncs (the device's flush request, fsync of the host's
# file) without --allow-non-dax, and the data reads back after a remount.
# daxfile status names the medium: a namespace on the virtio-pmem bus.
# Needs: --bin daxfile-guest daxfile, --pmem ,size=256M,model=virtio-pmem.
. /daxfile/lib/guest-lib.sh

dx_plan 9

OUT=/tmp/check.out

# line_has PATTERN TEXT: the check line matching PATTERN contains TEXT
line_has() {
    grep -- "$1" $OUT | grep -qF -- "$2"
}

bus_is_virtio() {
    cat /sys/bus/nd/devices/ndbus*/provider
    grep -qx virtio-pmem /sys/bus/nd/devices/ndbus0/provider &&
        [ ! -e /sys/firmware/acpi/tables/NFIT ]
}

check_passes() {
    daxfile-guest check >$OUT 2>&1
    local rc=$?
    cat $OUT
    [ "$rc" -eq 0 ]
}

write_msync() {
    daxfile-guest write --dir /mnt/pmem --seed 77 --size 8M >/tmp/w.out 2>&1
    local rc=$?
    cat /tmp/w.out
    [ "$rc" -eq 0 ] &&
        grep -qF "MAP_SHARED + msync (virtio-pmem: the device's flush)" /tmp/w.out
}

medium_is_virtio() {
    # status --json of a file there: its medium's bus is virtio-pmem's
    local want got
    : >/mnt/pmem/medium
    want='"medium":\{"kind":"namespace","device":"pmem0",'
    want="$want\"namespace\":\"namespace0\\.0\",\"mode\":\"[a-z]+\","
    want="$want\"region\":\"region0\",\"bus\":\"ndbus0\","
    want="$want\"provider\":\"virtio-pmem\",\"persistence_domain\":\"[a-z_]+\","
    want="$want\"cxl\":null,\"reason\":null\\}"
    got=$(daxfile status --json --allow-non-dax /mnt/pmem/medium |
        tr -d ' \n' | grep -o '"medium":{[^{}]*}')
    rm -f /mnt/pmem/medium
    echo "got:  $got"
    echo "want: $want"
    echo "$got" | grep -qxE -- "$want"
}

remount_verify() {
    dx_umount && mount -t ext4 -o dax "$DX_PMEM" /mnt/pmem &&
        daxfile-guest verify --dir /mnt/pmem --seed 77
}

dx_run "the NVDIMM bus is virtio-pmem's, and there is no NFIT" bus_is_virtio
# Its namespace needs no pfn device: the region maps it (pagemap) and
# /dev/pmem0 supports DAX as it comes
DX_PMEM=/dev/pmem0
dx_run "ext4 -o dax on /dev/pmem0 as it comes" dx_mkfs ext4 /mnt/pmem
dx_run "daxfile-guest check passes" check_passes
dx_run "check: the NFIT is not needed" line_has "NFIT" \
    "absent: the pmem is virtio-pmem, which needs none"
dx_run "check: durable once flushed, no MAP_SYNC" line_has \
    "persistence domain" "virtio-pmem: data is durable once flushed"
dx_run "check: MAP_SYNC refused, as on any virtio-pmem region" line_has \
    "MAP_SYNC" "as on any virtio-pmem region"
dx_run "daxfile status: the medium is a namespace on the virtio-pmem bus" \
    medium_is_virtio
dx_run "daxfile-guest write msyncs through the device's flush" write_msync
dx_run "remounted, the data reads back" remount_verify
dx_done

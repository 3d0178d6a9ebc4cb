#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# namespaces: the guest-lib namespace helpers on two NVDIMMs, one without
# labels (region0) and one with a label area (region1), as registered in
# meson.build: --pmem ,size=512M --pmem ,size=1G,label=128K.
# Needs: --bin dax-probe.
. /daxfile/lib/guest-lib.sh

dx_plan 15

raw_refuses_dax() {
    # A raw namespace has no struct pages: mount -o dax must fail.
    mkfs.ext4 -q -F -b 4096 "$DX_PMEM" || return 2
    mkdir -p /mnt/raw
    if mount -o dax "$DX_PMEM" /mnt/raw; then
        umount /mnt/raw
        return 1
    fi
    return 0
}

dx_run "two regions" sh -c 'ls -d /sys/bus/nd/devices/region0 /sys/bus/nd/devices/region1'
dx_run "region0: fsdax without labels" dx_fsdax 0
dx_is "region0: namespace0.0 has no label (no uuid in sysfs)" \
    "$(ls /sys/bus/nd/devices/namespace0.0/uuid 2>/dev/null)" ""
dx_run "region0: ext4 -o dax" dx_mkfs ext4 /mnt/r0
dx_run "region0: statx DAX" sh -c 'echo x >/mnt/r0/f && dax-probe statx /mnt/r0/f'

dx_run "region1: fsdax with labels (init-labels on first use)" dx_fsdax --label 1
dx_run "region1: $DX_NAMESPACE is label-backed (uuid in sysfs)" \
    test -e "/sys/bus/nd/devices/$DX_NAMESPACE/uuid"
dx_run "region1: xfs -o dax on $DX_PMEM" dx_mkfs xfs /mnt/r1
dx_run "region1: statx DAX" sh -c 'echo x >/mnt/r1/f && dax-probe statx /mnt/r1/f'
dx_run "both mounted at once" sh -c 'grep -c "^/dev/pmem" /proc/mounts | grep -qx 2'
dx_run "umount both" dx_umount

dx_run "region1: devdax with labels" dx_devdax --label 1
dx_run "region1: $DX_DAX maps 2 MiB with one fault" \
    dax-probe faults "$DX_DAX" --expect-pmd
dx_run "region1: raw with labels" dx_raw --label 1
dx_run "region1: raw namespace refuses mount -o dax" raw_refuses_dax

dx_done

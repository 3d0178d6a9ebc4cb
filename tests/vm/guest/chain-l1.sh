#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# chain-l1: an emulated pmem host for the chain suite (tests/chain): the
# host's own root over 9p (--hostroot), two NVDIMMs in fsdax mode with xfs
# (pmem0) and ext4 (pmem1) mounted -o dax, a third one in devdax mode
# (CHAIN_DEVDAX: /dev/dax2.0, first stage only), and a small virtio disk (vda)
# for what a real host keeps across a crash: daxfile's registry and
# libvirt's domain definitions. Then tests/chain/l1-chain.py runs libvirtd,
# the hook and QEMU for real on top of them.
#   CHAIN_STAGE=first  make namespaces, filesystems and the state disk
#   CHAIN_STAGE=after  (a boot after a crash) mount what is there
#   CHAIN_STAGE=migrate-src, migrate-dst  one of two hosts of a live
#       migration: one NVDIMM (xfs at /mnt/xfs on the source, ext4 at
#       /mnt/ext4 on the destination), no state disk, and the network to
#       the other host (CHAIN_ADDR on the first NIC)
#   CHAIN_STAGE=migrate-repro  both fsdax filesystems, no state disk: one
#       host migrates a guest between two QEMUs of its own
#   CHAIN_STAGE=cxl  the host's pmem is CXL persistent memory (its one
#       pmem device is a CXL type-3 device): CXL region0 over its memdev,
#       an fsdax namespace on it, ext4 -o dax at /mnt/ext4; no state disk
. /daxfile/lib/guest-lib.sh

migrate_host() {
    local nic
    nic=
    for n in /sys/class/net/*; do
        [ "${n##*/}" = lo ] || { nic=${n##*/}; break; }
    done
    [ -n "$nic" ] || { echo "no network interface" >&2; return 1; }
    dx_x ip link set lo up >&2 && dx_x ip link set "$nic" up >&2 &&
        dx_x ip addr add "$CHAIN_ADDR/24" dev "$nic" >&2 || return 1
    if [ "${CHAIN_STAGE%-src}" != "$CHAIN_STAGE" ]; then
        dx_fsdax 0 && dx_mkfs xfs /mnt/xfs
    else
        dx_fsdax 0 && dx_mkfs ext4 /mnt/ext4
    fi
}

# The regions of the two 1 GiB NVDIMMs (xfs, ext4: FS_REGIONS) and of the
# small one (devdax: DAX_REGION): QEMU does not number them in the order
# they are given
regions() {
    local r
    FS_REGIONS='' DAX_REGION=''
    for r in /sys/bus/nd/devices/region*; do
        if [ "$(cat "$r/size")" -lt 536870912 ]; then
            DAX_REGION=${r##*region}
        else
            FS_REGIONS="$FS_REGIONS ${r##*region}"
        fi
    done
}

storage() {
    modprobe virtio_blk 2>/dev/null
    dx_wait_dev /dev/vda || return 1
    mkdir -p /persist
    regions
    # shellcheck disable=SC2086 # two region numbers
    set -- $FS_REGIONS
    if [ "$CHAIN_STAGE" = first ]; then
        dx_fsdax "$1" && dx_mkfs xfs /mnt/xfs && dx_fsdax "$2" &&
            dx_mkfs ext4 /mnt/ext4 || return 1
        if [ -n "$DAX_REGION" ]; then
            dx_devdax "$DAX_REGION" || return 1
            export CHAIN_DEVDAX="$DX_DAX"
        fi
        dx_x mkfs.ext4 -q -F /dev/vda >&2 || return 1
    else
        dx_fsdax "$1" && dx_mount /mnt/xfs --type xfs && dx_fsdax "$2" &&
            dx_mount /mnt/ext4 --type ext4 || return 1
    fi
    dx_x mount -t ext4 /dev/vda /persist >&2 || return 1
    mkdir -p /persist/daxfile /persist/libvirt-qemu /var/lib/daxfile \
        /etc/libvirt/qemu &&
        mount --bind /persist/daxfile /var/lib/daxfile &&
        mount --bind /persist/libvirt-qemu /etc/libvirt/qemu
}

repro_host() {
    regions
    # shellcheck disable=SC2086 # two region numbers
    set -- $FS_REGIONS
    dx_fsdax "$1" && dx_mkfs xfs /mnt/xfs && dx_fsdax "$2" &&
        dx_mkfs ext4 /mnt/ext4
}

case "$CHAIN_STAGE" in
cxl)
    if ! { dx_cxl_region && dx_cxl_fsdax && dx_mkfs ext4 /mnt/ext4; } >&2
    then
        dx_plan 1
        dx_not_ok "set-up: CXL region, fsdax namespace, ext4 -o dax"
        dx_done
    fi
    ;;
migrate-repro)
    if ! repro_host >&2; then
        dx_plan 1
        dx_not_ok "set-up: two fsdax namespaces, xfs and ext4 -o dax"
        dx_done
    fi
    ;;
migrate-*)
    if ! migrate_host >&2; then
        dx_plan 1
        dx_not_ok "set-up: the network, an fsdax namespace, a filesystem -o dax"
        dx_done
    fi
    ;;
*)
    if ! storage >&2; then
        dx_plan 1
        dx_not_ok "set-up: fsdax namespaces, xfs and ext4 -o dax, the state disk"
        dx_done
    fi
    ;;
esac
dx_python tests/chain/l1-chain.py

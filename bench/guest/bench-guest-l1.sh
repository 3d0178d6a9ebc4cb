#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=dash # busybox sh in L2, dash in L1: both have local
# bench-guest-l1 (bench/run guest, not a test): the emulated pmem host of the
# guest benchmark, booted --hostroot (the host's own root over 9p, this
# checkout and its build shared by name). Of its three NVDIMMs the two
# larger become fsdax namespaces with xfs (-d su=2m,sw=1) on /mnt/xfs and
# ext4 (-E stride=512,stripe_width=512) on /mnt/ext4, both mounted -o dax,
# and the smallest a device-dax namespace (DXG_DEVDAX). ext4's lazy
# inode-table zeroing is switched off (noinit_itable): it would write the
# pmem behind the measurements. DXG_LAZYTIME=1 (bench/run's default; 0
# with --no-lazytime) mounts both lazytime too: timestamps kept in memory,
# not logged by the write faults. Then bench/bench_guest_l1.py runs libvirtd,
# the hook and the guests (bench-guest-l2.sh) and prints the TAP.
# Env: DAXFILE_SRCDIR, DAXFILE_BUILDDIR, DXG_* (bench_guest_l1.py's)
# shellcheck source=/dev/null # the guest's copy of tools/harness/guest-lib.sh
. /daxfile/lib/guest-lib.sh

storage() {
    local r size big='' small='' small_size=''
    for r in /sys/bus/nd/devices/region*; do
        read -r size <"$r/size" || return 1
        if [ -z "$small" ] || [ "$size" -lt "$small_size" ]; then
            big="$big $small"
            small=${r##*region} small_size=$size
        else
            big="$big ${r##*region}"
        fi
    done
    # shellcheck disable=SC2086 # region numbers
    set -- $big
    if [ $# -ne 2 ]; then
        echo "want three NVDIMMs, found $(($# + 1))" >&2
        return 1
    fi
    dx_fsdax "$1" && dx_mkfs xfs /mnt/xfs && dx_fsdax "$2" &&
        dx_mkfs ext4 /mnt/ext4 &&
        dx_x mount -o remount,noinit_itable /mnt/ext4 >&2 || return 1
    if [ "${DXG_LAZYTIME:-0}" = 1 ]; then
        for r in /mnt/xfs /mnt/ext4; do
            dx_x mount -o remount,lazytime "$r" >&2 || return 1
            # (a kernel that ignored the option would show no lazytime)
            grep -q " $r [^ ]* [^ ]*lazytime" /proc/mounts || {
                echo "$r: not lazytime after the remount" >&2
                return 1
            }
        done
    fi
    dx_devdax "$small" || return 1
    export DXG_DEVDAX="$DX_DAX"
}

if ! storage >&2; then
    dx_plan 1
    dx_not_ok "set-up: fsdax namespaces with xfs and ext4 -o dax, a device-dax namespace"
    dx_done
fi
export PYTHONPATH="$DAXFILE_SRCDIR/tools/harness:$DAXFILE_SRCDIR/bench"
exec /usr/bin/python3 "$DAXFILE_SRCDIR/bench/bench_guest_l1.py"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# guest-daxctl: the daxctl() system call on ext4 and xfs (run inside a guest
# booted with the kernel from kernel/build-kernel).
#
#   tests/vm/daxfile-vm run --kernel daxctl --kernel-image "$(kernel/build-kernel)" \
#       --bin daxctl-test --script kernel/tests/guest-daxctl.sh
#   kernel/tests/boot-test          (the same, without tests/vm)
#
# Needs: daxctl-test in PATH (--bin), one NVDIMM of at least 1 GiB.
#
# The fsdax namespace (1006 MiB on a 1 GiB NVDIMM) is split into four MBR
# partitions, one per kind of filesystem a run needs:
#   p1  2 MiB + 300 MiB  the filesystem under test, aligned mkfs, -o dax
#   p2  303 MiB + 300    aligned mkfs too, but the partition starts 1 MiB off
#                        a 2 MiB boundary: only the DAX partition offset
#                        (s_dax_part_off / bt_dax_part_off) tells
#   p3  604 MiB + 300    default mkfs (misaligned extents), -o dax
#   p4  906 MiB + 96     ext4, dax=never (too small for xfs; the non-DAX
#                        case does not depend on the filesystem type)
# and at the end, without partitions, the whole device for xfs -m reflink=1
# (xfs refuses DAX + reflink on a partition).
# For ext4 and xfs (reflink=0) daxctl-test runs on p1 (+ p4 and tmpfs),
# then on p2, then on p3, one DAX filesystem mounted at a time: xfs makes
# itself the holder of the DAX device, and a second xfs on another
# partition of the same pmem mounts without DAX.  Then once more on the
# whole device with xfs -m reflink=1, for the clone, dedupe and
# shared-extent cases.  daxctl-test's TAP is spliced into this script's
# stream.
#
# mkfs options: ext4 -b 4096 -E stride=512,stripe_width=512; xfs -d su=2m,sw=1
# (+ agcount=2: mkfs.xfs 6.1 cannot fit its 64 MiB log into the AGs of a
# 300 MiB su=2m filesystem otherwise); the default-mkfs variants for p3.
. /daxfile/lib/guest-lib.sh

MIB_SECTORS=2048

le32() {
    # le32 N: N as 4 little-endian bytes (printf octal escapes).
    local n="$1" i=0
    while [ $i -lt 4 ]; do
        # shellcheck disable=SC2059 # the format is the byte, as an octal escape
        printf "\\$(printf %03o $((n & 255)))"
        n=$((n >> 8))
        i=$((i + 1))
    done
}

mbr_entry() {
    # mbr_entry START_MIB SIZE_MIB: one primary Linux partition entry.
    printf '\000\000\000\000\203\000\000\000'
    le32 $(($1 * MIB_SECTORS))
    le32 $(($2 * MIB_SECTORS))
}

partition() {
    # partition DEV: write the MBR above and wait for DEVp1..p4.
    local dev="$1" p
    {
        dd if=/dev/zero bs=446 count=1 2>/dev/null
        mbr_entry 2 300
        mbr_entry 303 300
        mbr_entry 604 300
        mbr_entry 906 96
        printf '\125\252'
    } >/tmp/mbr || return 1
    dx_x dd if=/tmp/mbr of="$dev" bs=512 count=1 conv=fsync 2>&1 || return 1
    dx_x blockdev --rereadpt "$dev" || return 1
    for p in 1 2 3 4; do
        dx_wait_dev "${dev}p$p" || return 1
    done
    for p in 1 2 3 4; do
        echo "${dev}p$p starts at sector $(cat "/sys/class/block/${dev#/dev/}p$p/start")"
    done
}

mkfs_mount() {
    # mkfs_mount TYPE DEV MOUNTPOINT [--no-dax]
    local type="$1" dev="$2" mnt="$3" fs
    shift 3
    case "$type" in
    ext4) fs=ext4
        dx_x mkfs.ext4 -q -F -b 4096 -E stride=512,stripe_width=512 "$dev" ;;
    ext4-default) fs=ext4; dx_x mkfs.ext4 -q -F -b 4096 "$dev" ;;
    xfs) fs=xfs; dx_x mkfs.xfs -q -f -m reflink=0 -d su=2m,sw=1,agcount=2 "$dev" ;;
    xfs-reflink) fs=xfs
        dx_x mkfs.xfs -q -f -m reflink=1 -d su=2m,sw=1,agcount=2 "$dev" ;;
    xfs-default) fs=xfs; dx_x mkfs.xfs -q -f -m reflink=0 "$dev" ;;
    *) echo "mkfs_mount: unknown type '$type'" >&2; return 2 ;;
    esac || return 1
    dx_mount "$mnt" --dev "$dev" --type "$fs" "$@"
}

run_daxctl_test() {
    # run_daxctl_test ARGS...: daxctl-test numbered after the tests so far,
    # its lines copied to our TAP; counts its passes and failures.
    local out=/tmp/daxctl-test.$$ n f
    daxctl-test --number-from $((DX_N + 1)) --no-plan "$@" >"$out" 2>&1
    echo "daxctl-test exit status $?" >&2
    cat "$out"
    n=$(grep -cE '^(not )?ok [0-9]+' "$out")
    f=$(grep -E '^not ok [0-9]+' "$out" | grep -vc '# TODO')
    DX_N=$((DX_N + n))
    DX_FAILED=$((DX_FAILED + f))
    if grep -q '^Bail out!' "$out"; then
        dx_done
    fi
    rm -f "$out"
}

kernel_log() {
    # The kernel's reasons for refusing files (rate-limited in the kernel).
    dmesg -c | grep 'daxctl:' | sed 's/^/# kernel: /'
}

phase() {
    # phase LABEL ALIGNED_TYPE [DEFAULT_TYPE]: one DAX filesystem at a time
    # (xfs takes the DAX device as its holder: a second xfs on another
    # partition of the same pmem silently mounts without DAX).
    local label="$1" fs="$2" def="${3:-}" m="/mnt/$1"
    if dx_run "$label: aligned mkfs on p1, mount -o dax" \
        mkfs_mount "$fs" "${DX_PMEM}p1" "$m-p1"; then
        if [ -n "$def" ]; then
            dx_run "$label: ext4 on p4, mount -o dax=never" \
                mkfs_mount ext4 "${DX_PMEM}p4" "$m-p4" --no-dax
            run_daxctl_test --label "$label" --dir "$m-p1" \
                --nondax-dir "$m-p4" --tmpfs-dir /tmp/daxctl-tmpfs
        else
            run_daxctl_test --label "$label" --dir "$m-p1"
        fi
        kernel_log
        dx_run "$label: umount" dx_umount
    fi
    [ -n "$def" ] || return 0
    if dx_run "$label: aligned mkfs on the 1 MiB-offset p2, mount -o dax" \
        mkfs_mount "$fs" "${DX_PMEM}p2" "$m-p2"; then
        run_daxctl_test --label "$label" --offset-dir "$m-p2"
        kernel_log
        dx_run "$label: umount p2" dx_umount
    fi
    if dx_run "$label: default mkfs on p3, mount -o dax" \
        mkfs_mount "$def" "${DX_PMEM}p3" "$m-p3"; then
        run_daxctl_test --label "$label" --misaligned-dir "$m-p3"
        kernel_log
        dx_run "$label: umount p3" dx_umount
    fi
}

dx_run "fsdax namespace" dx_fsdax || dx_done
dx_run "partition ${DX_PMEM} (p2 starts 1 MiB off a 2 MiB boundary)" \
    partition "$DX_PMEM" || dx_done
mkdir -p /tmp/daxctl-tmpfs

phase ext4 ext4 ext4-default
phase xfs xfs xfs-default
# xfs refuses "DAX and reflink ... with multi-partitions": the reflink run
# uses the whole device, after the partition table is wiped.
unpartition() {
    dx_x dd if=/dev/zero of="$1" bs=512 count=1 conv=fsync 2>&1 &&
        dx_x blockdev --rereadpt "$1"
}
if dx_run "remove the partition table of $DX_PMEM" unpartition "$DX_PMEM" &&
    dx_run "xfs-reflink: mkfs.xfs -m reflink=1 -d su=2m,sw=1 on $DX_PMEM, mount -o dax" \
        dx_mkfs xfs-reflink /mnt/xfs-reflink; then
    run_daxctl_test --label xfs-reflink --dir /mnt/xfs-reflink
    kernel_log
    dx_run "xfs-reflink: umount" dx_umount
fi

dx_done

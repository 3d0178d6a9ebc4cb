#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# smoke: the guest environment the other VM tests build on really does DAX.
# fsdax namespace; ext4 and xfs (aligned mkfs) mounted -o dax; statx DAX;
# MAP_SYNC; a 2 MiB write fault on a pre-zeroed file is one PMD fault
# (rusage, and the fs_dax tracepoint when the kernel has it); xfs with
# reflink=1 shares extents under DAX; tmpfs refuses MAP_SYNC (the probe can
# say no); devdax maps 2 MiB with one fault.
# Needs: --bin dax-probe, one NVDIMM of at least 256 MiB.
. /daxfile/lib/guest-lib.sh

dx_plan 30

expect_status() {
    # expect_status WANT CMD...: true iff CMD exits with status WANT.
    local want="$1" rc
    shift
    "$@"
    rc=$?
    echo "exit status $rc (want $want)"
    [ "$rc" -eq "$want" ]
}

mount_has_dax() {
    grep " $1 " /proc/mounts
    grep " $1 " /proc/mounts | grep -q 'dax'
}

pmd_traced() {
    # pmd_traced FILE: one write fault through a fresh mapping is traced as
    # a PMD fault that mapped (NOPAGE), not FALLBACK to 4 KiB pages.
    local t=/tmp/trace.$$
    dx_trace_start fs_dax/dax_pmd_fault_done || return 2
    dax-probe faults "$1" --offset 2m
    dx_trace_stop "$t"
    cat "$t"
    grep -q 'dax_pmd_fault_done.*NOPAGE' "$t" && ! grep -q FALLBACK "$t"
}

check_fs() {
    local fs="$1" mnt="/mnt/$1" f="/mnt/$1/probe"
    dx_run "$fs: mkfs (2 MiB-aligned options) and mount -o dax" dx_mkfs "$fs" "$mnt"
    dx_run "$fs: /proc/mounts shows dax" mount_has_dax "$mnt"
    dx_run "$fs: write a pre-zeroed 8 MiB file (falloc + pwrite + fsync)" \
        xfs_io -f -c "falloc 0 8m" -c "pwrite -q -S 0 -b 2m 0 8m" -c fsync "$f"
    dx_run "$fs: statx reports STATX_ATTR_DAX" dax-probe statx "$f"
    dx_run "$fs: extents written and 2 MiB-aligned" dx_extents_aligned "$f"
    dx_run "$fs: 2 MiB write fault is one PMD fault (getrusage)" \
        dax-probe faults "$f" --expect-pmd
    dx_run "$fs: 2 MiB MAP_SYNC write fault is one PMD fault (getrusage)" \
        dax-probe faults "$f" --sync --offset 4m --expect-pmd
    if dx_have_event fs_dax/dax_pmd_fault_done; then
        dx_run "$fs: fs_dax:dax_pmd_fault_done traced NOPAGE" pmd_traced "$f"
    else
        dx_skip "$fs: fs_dax:dax_pmd_fault_done traced NOPAGE" \
            "this kernel has no fs_dax tracepoints"
    fi
    # Last: its 4 KiB mapping leaves a 4 KiB DAX entry in the first 2 MiB,
    # after which faults there fall back to 4 KiB pages (until eviction).
    dx_run "$fs: mmap MAP_SHARED_VALIDATE|MAP_SYNC accepted" dax-probe mapsync "$f"
    dx_run "$fs: umount" dx_umount "$mnt"
}

dx_run "fsdax namespace, /dev/pmem has queue/dax=1" dx_fsdax
echo "smoke: DX_PMEM=$DX_PMEM DX_NAMESPACE=$DX_NAMESPACE" >&2

check_fs ext4
check_fs xfs

r=/mnt/xfs-reflink
dx_run "xfs-reflink: mkfs -m reflink=1 and mount -o dax" dx_mkfs xfs-reflink "$r"
dx_run "xfs-reflink: reflink a 4 MiB DAX file" sh -c "
    xfs_io -f -c 'pwrite -q -S 0x5a 0 4m' -c fsync $r/a &&
    xfs_io -f -c 'reflink $r/a 0 0 4m' -c fsync $r/b"
dx_run "xfs-reflink: filefrag shows shared extents" sh -c \
    "filefrag -v $r/b; filefrag -v $r/b | grep -q shared"
dx_run "xfs-reflink: umount" dx_umount "$r"

echo data >/tmp/tmpfs-file
dx_run "tmpfs: statx has no DAX (probe can say no)" \
    expect_status 1 dax-probe statx /tmp/tmpfs-file
dx_run "tmpfs: MAP_SYNC refused (probe can say no)" \
    expect_status 1 dax-probe mapsync /tmp/tmpfs-file

dx_run "devdax: reconfigure the namespace as devdax" dx_devdax
dx_run "devdax: daxctl lists $DX_DAX" sh -c \
    "daxctl list; daxctl list | grep -q '\"${DX_DAX#/dev/}\"'"
dx_run "devdax: 2 MiB MAP_SYNC write fault is one PMD fault" \
    dax-probe faults "$DX_DAX" --sync --expect-pmd

dx_done

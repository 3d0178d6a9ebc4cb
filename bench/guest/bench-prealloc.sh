#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench-prealloc (bench/run prealloc, not a test): what QEMU's prealloc=on
# costs on real fsdax, done the way QEMU 7.2 does it (MADV_POPULATE_WRITE
# over a MAP_SHARED_VALIDATE|MAP_SYNC mapping, as with pmem=on), on
#   created  a `daxfile create`d (static-ready) file, populated again each
#            round (as a new QEMU process would)
#   sparse   a new ftruncated file each round
#   falloc   a new fallocated file each round
# and on a device-dax namespace (the baseline). One `# BENCH {json}` TAP
# comment per measurement.
# Needs: --bin bench-dax daxfile; NVDIMM 0 (fsdax, >= 2 x BR_SIZE + 512 MiB),
# NVDIMM 1 (device-dax, >= BR_SIZE + 64 MiB).
# Env: BR_SIZE (1G), BR_FS ("xfs ext4"), BR_ROUNDS (3)
. /daxfile/lib/guest-lib.sh

SIZE=${BR_SIZE:-1G}
FS_LIST=${BR_FS:-xfs ext4}
ROUNDS=${BR_ROUNDS:-3}

measure() {
    # measure FS KIND ROUND PATH
    local out
    out=$(bench-dax populate "$4" --size "$SIZE" --sync) || return 1
    echo "$out"
    echo "# BENCH {\"bench\": \"prealloc\", \"fs\": \"$1\", \"kind\": \"$2\"," \
         "\"round\": $3, \"result\": $out}" >&3
}

one() {
    # one FS KIND ROUND: make the file if needed, measure, clean up
    local f="/mnt/$1/$2.img"
    case "$2" in
    devdax) f=$DAX ;;
    created)
        # ext4's allocator sometimes hands out a misaligned extent, which
        # create refuses: retry once, and say so
        [ -e "$f" ] || daxfile create "$f" --size "$SIZE" 2>/tmp/c.err || {
            cat /tmp/c.err
            echo "# BENCH {\"bench\": \"prealloc\", \"event\":" \
                 "\"create-retry\", \"fs\": \"$1\"}" >&3
            daxfile create "$f" --size "$SIZE"
        } || return 1
        ;;
    sparse) truncate -s "$SIZE" "$f" || return 1 ;;
    falloc) fallocate -l "$SIZE" "$f" || return 1 ;;
    esac
    measure "$1" "$2" "$3" "$f" || return 1
    case "$2" in
    sparse | falloc) rm -f "$f" ;;
    esac
}

exec 3>&1
dx_run "fsdax namespace for the files" dx_fsdax 0
dx_run "device-dax namespace" dx_devdax 1
DAX=$DX_DAX
dx_diag "kernel $(uname -r); $SIZE per file; $ROUNDS rounds"

for fs in $FS_LIST; do
    dx_run "$fs: mkfs and mount -o dax" dx_mkfs "$fs" "/mnt/$fs" || continue
    r=0
    while [ $r -lt "$ROUNDS" ]; do
        case $((r % 4)) in
        0) order="devdax created sparse falloc" ;;
        1) order="created sparse falloc devdax" ;;
        2) order="sparse falloc devdax created" ;;
        *) order="falloc devdax created sparse" ;;
        esac
        for kind in $order; do
            dx_run "$fs r$r: $kind" one "$fs" "$kind" "$r"
        done
        r=$((r + 1))
    done
    rm -f "/mnt/$fs/created.img"
    dx_run "$fs: umount" dx_umount "/mnt/$fs"
done
dx_done

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench-provision (bench/run provision, not a test): time to provision a file
# of BP_SIZE on real fsdax, against the raw write bandwidth of the same kind
# of device in the same boot. Methods (bench-dax fill):
#   raw-dd         dd bs=1M oflag=direct conv=fsync to a second pmem namespace
#   raw-pwrite     O_DIRECT pwrite of zeroes to it, fsync
#   create         daxfile create FILE --size BP_SIZE
#   falloc-dd      fallocate, then dd bs=1M conv=notrunc,fsync
#   falloc-pwrite  fallocate, then pwrite zeroes 1 MiB at a time, fsync
#   falloc-populate  fallocate, mmap, MADV_POPULATE_WRITE, fsync (what
#                  daxfile create does on DAX, without the rest of it)
#   falloc-pwrite-64m, falloc-populate-sync  other fills create could use
#                  (64 MiB pwrites; populate through MAP_SYNC, 2 MiB steps)
#   wipe           daxfile wipe of a file create made (not timed)
# and `daxfile --version` (the process start inside create's time).
# Rounds rotate the order. One `# BENCH {json}` TAP comment per measurement.
# Needs: --bin bench-dax daxfile; NVDIMM 0 (>= BP_SIZE + 512 MiB) for the
# filesystem, NVDIMM 1 (>= BP_SIZE + 64 MiB) for the raw writes.
# Env: BP_SIZE (1G), BP_FS ("xfs ext4"), BP_ROUNDS (3)
. /daxfile/lib/guest-lib.sh

SIZE=${BP_SIZE:-1G}
FS_LIST=${BP_FS:-xfs ext4}
ROUNDS=${BP_ROUNDS:-3}
METHODS="raw-dd create falloc-dd falloc-pwrite falloc-populate raw-pwrite
         falloc-pwrite-64m falloc-populate-sync wipe"

measure() {
    # measure FS METHOD ROUND TARGET. A failed daxfile create (ext4's
    # allocator sometimes hands out a misaligned extent, which create
    # refuses) is reported as a BENCH error, not measured.
    local out rc
    sync
    out=$(bench-dax fill "$4" "$SIZE" "$2" 2>/tmp/fill.err)
    rc=$?
    cat /tmp/fill.err
    case "$2" in
    raw-*) ;;
    *) rm -f "$4" ;;
    esac
    if [ $rc -ne 0 ] && { [ "$2" = create ] || [ "$2" = wipe ]; }; then
        # shellcheck disable=SC1003 # tr deletes '"' and '\\'
        echo "# BENCH {\"bench\": \"provision\", \"fs\": \"$1\"," \
             "\"method\": \"$2\", \"round\": $3, \"error\":" \
             "\"$(tr -d '\"\\' </tmp/fill.err | tr '\n' ' ')\"}" >&3
        return 0
    fi
    [ $rc -eq 0 ] || return 1
    echo "$out"
    echo "# BENCH {\"bench\": \"provision\", \"fs\": \"$1\"," \
         "\"method\": \"$2\", \"round\": $3, \"result\": $out}" >&3
}

process_start() {
    local out
    out=$(bench-dax time daxfile --version) || return 1
    echo "$out"
    echo "# BENCH {\"bench\": \"provision\", \"fs\": \"$1\"," \
         "\"method\": \"daxfile-version\", \"round\": $2," \
         "\"result\": $out}" >&3
}

warm() {
    # Write all of DEV once first: QEMU's first touch of an emulated
    # NVDIMM's memory makes the first write to each block 3-4 times
    # slower than later ones (measured: 1.7-1.9 s against 0.4-0.6 s per
    # GiB), which would charge whichever method comes first on fresh
    # blocks. A real device has no such cost.
    local bytes
    bytes=$(( $(cat "/sys/block/${1#/dev/}/size") * 512 ))
    bench-dax fill "$1" "$bytes" raw-pwrite
}

exec 3>&1
dx_run "fsdax namespace for the filesystem" dx_fsdax 0
FSDEV=$DX_PMEM
dx_run "fsdax namespace for raw writes" dx_fsdax 1
RAWDEV=$DX_PMEM
dx_run "warm the filesystem's namespace" warm "$FSDEV"
dx_run "warm the raw namespace" warm "$RAWDEV"
dx_diag "kernel $(uname -r); $SIZE per method; $ROUNDS rounds; raw target $RAWDEV"

for fs in $FS_LIST; do
    dx_run "$fs: mkfs and mount -o dax" dx_mkfs "$fs" "/mnt/$fs" --dev "$FSDEV" ||
        continue
    r=0
    while [ $r -lt "$ROUNDS" ]; do
        # shellcheck disable=SC2086 # the methods, a list
    for m in $(dx_rotate $((r % 8)) $METHODS); do
            case "$m" in
            raw-*) target=$RAWDEV ;;
            *) target=/mnt/$fs/p.img ;;
            esac
            dx_run "$fs r$r: $m" measure "$fs" "$m" "$r" "$target"
        done
        dx_run "$fs r$r: process start" process_start "$fs" "$r"
        r=$((r + 1))
    done
    dx_run "$fs: umount" dx_umount "/mnt/$fs"
done
dx_done

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench-faults (bench/run faults, not a test): first-write fault latency on
# real fsdax against device-dax. For each filesystem and round, fresh files:
#   created  `daxfile create`d (written, 2 MiB-aligned extents)
#   static   the same, then made static in the kernel (daxfile enable -m
#            kernel: daxctl()), only on a daxctl() kernel (kernel/)
#   sparse   ftruncate only
#   falloc   fallocate only (unwritten extents)
# all mapped MAP_SHARED_VALIDATE|MAP_SYNC, and the same mapping of a
# device-dax namespace (align 2M for the 2 MiB faults, 4K for the 4 KiB
# ones). One `# BENCH {json}` TAP comment per measurement. After each timed
# run an untimed one (64 stores, tracepoints on) counts the filesystem's
# journal handles (jbd2_handle_start) and transactions (xfs_trans_alloc)
# per fault: "handles" and "traced_faults" in the JSON.
# Needs: --bin bench-dax daxfile; NVDIMM 0 (fsdax, >= 2 GiB) for the files,
# NVDIMMs 1 and 2 (device-dax, >= 512 MiB each).
# Env: BF_FS ("xfs ext4"), BF_ROUNDS (2), BF_PAGES_4K (4096), BF_PAGES_2M (128)
. /daxfile/lib/guest-lib.sh

FS_LIST=${BF_FS:-xfs ext4}
ROUNDS=${BF_ROUNDS:-2}
P4=${BF_PAGES_4K:-4096}
P2=${BF_PAGES_2M:-128}
S4=$((P4 * 4096))
S2=$((P2 * 2097152))
# daxfile create wants a multiple of 2 MiB
S4C=$(((S4 + 2097151) / 2097152 * 2097152))

HANDLE_EVENTS="jbd2/jbd2_handle_start xfs/xfs_trans_alloc"

handles() {
    # handles MODE PATH: "HANDLES FAULTS" of 64 traced first stores
    local out n
    # shellcheck disable=SC2086 # a list of events
    dx_trace_start $HANDLE_EVENTS || return 1
    out=$(bench-dax fault "$2" --mode "$1" --sync --count 64) || return 1
    dx_trace_stop /tmp/handles.trace
    n=$(grep -cE ' bench-dax-[0-9]+ .* (jbd2_handle_start|xfs_trans_alloc):' \
        /tmp/handles.trace)
    echo "$n $(echo "$out" | tr -d ' \n' | sed -n 's/.*"faults":\([0-9]*\).*/\1/p')"
}

bench() {
    # bench FS KIND MODE ROUND PATH: one measurement, as a BENCH line
    local out h
    out=$(bench-dax fault "$5" --mode "$3" --sync \
        --count "$([ "$3" = 2m ] && echo "$P2" || echo "$P4")") || return 1
    echo "$out"
    h=$(handles "$3" "$5") || return 1
    echo "# BENCH {\"bench\": \"faults\", \"fs\": \"$1\", \"kind\": \"$2\"," \
         "\"mode\": \"$3\", \"round\": $4, \"handles\": ${h% *}," \
         "\"traced_faults\": ${h#* }, \"result\": $out}" >&3
}

make_file() {
    # make_file KIND PATH SIZE. A create that fails is retried once and
    # reported as a BENCH event. (ext4's allocator sometimes hands out a
    # misaligned extent; create itself allocates again since it holds the
    # misplaced blocks, so this should no longer happen.)
    case "$1" in
    created)
        daxfile create "$2" --size "$3" 2>/tmp/create.err && return 0
        cat /tmp/create.err
        # shellcheck disable=SC1003 # tr deletes '"' and '\'
        echo "# BENCH {\"bench\": \"faults\", \"event\": \"create-retry\"," \
             "\"fs\": \"$FS\", \"file\": \"$2\", \"message\":" \
             "\"$(tr -d '\"\\' </tmp/create.err | tr '\n' ' ')\"}" >&3
        daxfile create "$2" --size "$3"
        ;;
    static) make_file created "$2" "$3" &&
        daxfile enable --mechanism kernel --owner bench "$2" ;;
    sparse) truncate -s "$3" "$2" ;;
    falloc) fallocate -l "$3" "$2" ;;
    esac
}

make_files() {
    # make_files DIR ROUND: a 2m and a 4k file of each kind, big ones first
    local kind
    for kind in $FILE_KINDS; do
        make_file "$kind" "$1/$kind-2m.$2" "$S2" || return 1
    done
    for kind in $FILE_KINDS; do
        make_file "$kind" "$1/$kind-4k.$2" "$S4C" || return 1
    done
}

remove_files() {
    # remove_files DIR ROUND: release the static ones, remove them all
    local f
    for f in "$1"/static-*."$2"; do
        [ -e "$f" ] || continue
        daxfile disable --owner bench "$f" || return 1
    done
    rm -f "$1"/*."$2"
}

devdax4k() {
    local json
    json=$(dx_x ndctl create-namespace -f -e namespace2.0 -m devdax -a 4096) ||
        return 1
    echo "$json"
    DAX4K=/dev/$(dx_json_get chardev "$json")
    [ -e "$DAX4K" ]
}

FILE_KINDS="created sparse falloc"
if [ -r /sys/kernel/mm/daxfile/syscall_nr ]; then
    FILE_KINDS="created static sparse falloc"
fi
KINDS="devdax $FILE_KINDS"
NKINDS=$(echo "$KINDS" | wc -w)

exec 3>&1
dx_run "fsdax namespace for the files" dx_fsdax 0
dx_run "device-dax namespace, align 2M" dx_devdax 1
DAX2M=$DX_DAX
dx_run "device-dax namespace, align 4K" devdax4k
dx_diag "kernel $(uname -r); $P4 x 4 KiB and $P2 x 2 MiB faults per file; $ROUNDS rounds; $KINDS"

for fs in $FS_LIST; do
    FS=$fs
    dx_run "$fs: mkfs and mount -o dax" dx_mkfs "$fs" "/mnt/$fs" || continue
    r=1
    while [ $r -le "$ROUNDS" ]; do
        dx_run "$fs r$r: make the files" make_files "/mnt/$fs" $r
        # each round starts with another kind (TCG translates a code path
        # the first time it runs; the load of the host drifts)
        for mode in 2m 4k; do
            # shellcheck disable=SC2086 # the kinds, a list
    for kind in $(dx_rotate $(((r - 1) % NKINDS)) $KINDS); do
                if [ "$kind" = devdax ]; then
                    target=$([ $mode = 2m ] && echo "$DAX2M" || echo "$DAX4K")
                else
                    target=/mnt/$fs/$kind-$mode.$r
                fi
                dx_run "$fs r$r: $mode $kind" bench "$fs" "$kind" "$mode" "$r" "$target"
            done
        done
        dx_run "$fs r$r: remove the files" remove_files "/mnt/$fs" $r
        r=$((r + 1))
    done
    dx_run "$fs: umount" dx_umount "/mnt/$fs"
done
dx_done

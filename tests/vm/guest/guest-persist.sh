#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# guest-persist: one boot of the multi-boot scenario
# tests/vm/scenarios/guest-persist.py, which runs it with
#   STEP    fsdax-write | fsdax-verify | fsdax-kill | fsdax-interrupt |
#           devdax-write | devdax-verify
#   SEED    the pattern seed
#   OFFSET  a byte offset in the data file / device (decimal)
#   WANT    verify steps: ok | corrupt | interrupted
# Write steps report where OFFSET lives, on TAP comment lines the host
# parses: "# locate region=R region_offset=N" and "# bytes HEX" (the 16
# bytes at OFFSET as the guest reads them). Kill steps print
# "# DAXFILE-GUEST-KILL-POINT" once the write is done; the host SIGKILLs
# QEMU when it sees that line.
# Needs: --bin daxfile-guest; fsdax steps one NVDIMM, devdax steps another.
. /daxfile/lib/guest-lib.sh

MNT=/mnt/pmem
DAT=$MNT/daxfile-guest.dat
SIZE=16M
OUT=/tmp/out

# pattern CMD ARGS...: daxfile-guest CMD, output on the console, status kept
pattern() {
    daxfile-guest "$@" >$OUT 2>/tmp/err
    PATTERN_RC=$?
    cat $OUT /tmp/err
    return $PATTERN_RC
}

# report_location TARGET-ARGS...: print where OFFSET lives for the host
report_location() {
    local json region off
    json=$(daxfile-guest locate "$@" --offset "$OFFSET" --json) || return 1
    echo "$json"
    region=$(echo "$json" | tr -d ' \n' | sed -n 's/.*"region":"\([^"]*\)".*/\1/p')
    off=$(echo "$json" | tr -d ' \n' | sed -n 's/.*"region_offset":\([0-9]*\).*/\1/p')
    [ -n "$region" ] && [ -n "$off" ] || return 1
    echo "# locate region=$region region_offset=$off"
}

# report_bytes FILE: the 16 bytes at OFFSET of FILE as hex (device-dax
# cannot be read with read(2), so only the fsdax steps report them)
report_bytes() {
    local hex
    hex=$(dd if="$1" bs=1 skip="$OFFSET" count=16 2>/dev/null | od -An -tx1 | tr -d ' \n')
    [ ${#hex} -eq 32 ] || return 1
    echo "# bytes $hex"
}

# expect_verify WANT TARGET-ARGS...
expect_verify() {
    local want="$1" hex
    shift
    hex=$(printf '0x%x' "$OFFSET")
    pattern verify "$@" --seed "$SEED"
    case "$want" in
    ok) [ $PATTERN_RC -eq 0 ] ;;
    corrupt) [ $PATTERN_RC -eq 1 ] &&
        grep -q "differs from the pattern at offset $hex (" /tmp/err ;;
    interrupted) [ $PATTERN_RC -eq 1 ] && grep -q "was interrupted" /tmp/err ;;
    *) echo "unknown WANT '$want'"; return 2 ;;
    esac
}

case "$STEP" in
fsdax-write)
    dx_plan 5
    dx_run "fsdax namespace" dx_fsdax
    dx_run "ext4 -o dax" dx_mkfs ext4 $MNT
    dx_run "write seed $SEED" pattern write --dir $MNT --seed "$SEED" --size $SIZE
    dx_run "verify seed $SEED" pattern verify --dir $MNT --seed "$SEED"
    # printed as TAP comments: locate and bytes
    report_location --dir $MNT >/tmp/loc 2>&1; cat /tmp/loc >&2
    grep '^# locate' /tmp/loc
    report_bytes $DAT
    dx_run "umount" dx_umount
    ;;
fsdax-verify)
    dx_plan 3
    dx_run "fsdax namespace kept" dx_fsdax
    dx_run "mount the ext4 of the last boot" dx_mount $MNT --type ext4
    # shellcheck disable=SC2153 # WANT comes from the environment
    dx_run "verify seed $SEED: $WANT" expect_verify "$WANT" --dir "$MNT"
    dx_umount >&2
    ;;
fsdax-kill|fsdax-interrupt)
    dx_plan 3
    dx_run "fsdax namespace kept" dx_fsdax
    dx_run "mount the ext4 of the last boot" dx_mount $MNT --type ext4
    if [ "$STEP" = fsdax-kill ]; then
        dx_run "write seed $SEED" pattern write --dir $MNT --seed "$SEED" \
            --size $SIZE
    else
        # the writer dies between the data and the commit record
        dx_run "write seed $SEED killed before its commit" sh -c \
            "DAXFILE_TEST_CRASH=guest-write-commit daxfile-guest write --dir $MNT --seed $SEED --size $SIZE; [ \$? -eq 137 ]"
    fi
    echo "# DAXFILE-GUEST-KILL-POINT"
    sleep 120
    ;;
devdax-write)
    dx_plan 4
    dx_run "devdax namespace" dx_devdax
    dx_run "write seed $SEED" pattern write --dev "$DX_DAX" --seed "$SEED" --size $SIZE
    dx_run "verify seed $SEED" pattern verify --dev "$DX_DAX" --seed "$SEED"
    report_location --dev "$DX_DAX" >/tmp/loc 2>&1; cat /tmp/loc >&2
    grep '^# locate' /tmp/loc
    dx_run "locate offset $OFFSET" grep -q '^# locate' /tmp/loc
    ;;
devdax-verify)
    dx_plan 2
    dx_run "devdax namespace kept" dx_devdax
    dx_run "verify seed $SEED: $WANT" expect_verify "$WANT" --dev "$DX_DAX"
    ;;
*)
    dx_skip_all "STEP '$STEP' unknown: run by scenarios/guest-persist.py"
    ;;
esac

dx_done

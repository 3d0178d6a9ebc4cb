#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# daxctl-persist: one boot of tests/vm/scenarios/daxctl-persist.py, on the
# daxctl() kernel (kernel/), with
#   STEP    write | verify
#   FS      ext4 | xfs
#   SEED    the pattern seed
# write: fsdax namespace, aligned mkfs, mount -o dax, then daxctl-test
#   --persist-write: a provisioned file made static, SEED's pattern stored
#   through a plain shared mapping (no MAP_SYNC, msync or fsync), and
#   "# DAXCTL-KILL-POINT", at which the host SIGKILLs QEMU.
# verify: the same filesystem mounted again, daxctl-test --persist-verify.
# Needs: --bin daxctl-test, one NVDIMM.
. /daxfile/lib/guest-lib.sh

MNT=/mnt/pmem

case "$STEP" in
write) setup() { dx_fsdax && dx_mkfs "$FS" $MNT; } ;;
verify) setup() { dx_fsdax && dx_mount $MNT --type "$FS"; } ;;
*) echo "daxctl-persist: unknown STEP '$STEP'" >&2; exit 2 ;;
esac
if ! setup >&2; then
    dx_plan 1
    dx_not_ok "$FS: set-up for the $STEP step (fsdax namespace, mount -o dax)"
    dx_done
fi
exec daxctl-test --label "$FS" "--persist-$STEP" "$MNT/persist.img" --seed "$SEED"

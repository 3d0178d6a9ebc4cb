#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# quickstart: what ./quickstart runs inside its libvirt guest.
#   DXQ_PHASE=write   fsdax namespace, ext4 -o dax, write a checksummed
#                     pattern (seed DXQ_SEED) through MAP_SYNC
#                     (daxfile-guest write refuses to run without it)
#   DXQ_PHASE=verify  (a second boot) mount it again, verify
# No `daxfile-guest check`: under nested TCG, on the emulated pmem host,
# it costs 15-18 s of a run meant to take 150 (the chain and vm suites
# run it).
# Needs: --bin daxfile-guest, one NVDIMM.
. /daxfile/lib/guest-lib.sh

: "${DXQ_SEED:=42}" "${DXQ_SIZE:=64M}"
dx_plan 3
dx_run "the nvdimm is an fsdax namespace" dx_fsdax
case "$DXQ_PHASE" in
write)
    dx_run "ext4 made on it and mounted -o dax" dx_mkfs ext4 /mnt/pmem
    dx_run "daxfile-guest write --seed $DXQ_SEED ($DXQ_SIZE through MAP_SYNC)" \
        daxfile-guest write --dir /mnt/pmem --seed "$DXQ_SEED" --size "$DXQ_SIZE"
    ;;
verify)
    dx_run "ext4 from the first boot mounted -o dax" dx_mount /mnt/pmem --type ext4
    dx_run "daxfile-guest verify --seed $DXQ_SEED" \
        daxfile-guest verify --dir /mnt/pmem --seed "$DXQ_SEED"
    ;;
*)
    dx_not_ok "DXQ_PHASE is write or verify" "got '$DXQ_PHASE'"
    ;;
esac
dx_done

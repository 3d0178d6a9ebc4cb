#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# idle: see the nvdimm, write a marker into it, then stay up (a guest to
# migrate). DXI_SECONDS (default 600) bounds how long it waits.
# Needs: one NVDIMM.
. /daxfile/lib/guest-lib.sh

dx_plan 2
dx_run "the nvdimm is an fsdax namespace" dx_fsdax
dx_run "ext4 -o dax on it" dx_mkfs ext4 /mnt/p
echo "DAXFILE-IDLE: ready" >/dev/console
sleep "${DXI_SECONDS:-600}"
dx_done

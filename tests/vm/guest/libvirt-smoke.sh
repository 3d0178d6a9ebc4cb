#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# libvirt-smoke: the guest of a libvirt domain sees the nvdimm that
# `daxfile attach` wired: fsdax namespace, ext4 -o dax, statx DAX.
# Needs: --bin dax-probe, one NVDIMM.
. /daxfile/lib/guest-lib.sh

dx_plan 3
dx_run "the nvdimm is there: fsdax namespace" dx_fsdax
dx_run "ext4 on it, mounted -o dax" dx_mkfs ext4 /mnt/p
dx_run "statx reports DAX for a file" sh -c ": > /mnt/p/f && dax-probe statx /mnt/p/f"
dx_done

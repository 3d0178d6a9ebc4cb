#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# aged: issue 17's placement on an aged filesystem, on real fsdax: xfs and
# ext4 mounted -o dax are aged (filled with small and 2 MiB-ish files, a
# random half deleted), then `daxfile create` of 128 MiB files runs until
# one is refused. Every file made must be written and 2 MiB aligned, ext4's
# misplaced ranges collapsed out of the file, and the refusal must say how
# much aligned space is left (tests/loopfs/test-host-helper.py --aged).
# Needs: --hostroot (python3 and the build tree), two NVDIMMs of 1 GiB.
. /daxfile/lib/guest-lib.sh

dx_dax_pair
dx_python tests/loopfs/test-host-helper.py \
    --aged=xfs=/mnt/xfs --aged=ext4=/mnt/ext4

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# guard: tests/loopfs/test-guard.py on real fsdax, nothing faked: the
# defects' regression tests, random SIGKILLs and writer races, on xfs and
# ext4 mounted -o dax, with whatever mechanism this kernel offers
# (immutable-guard, or kernel on the daxctl() kernel).
# Needs: --hostroot (python3 and the build tree), two NVDIMMs.
. /daxfile/lib/guest-lib.sh

dx_dax_pair
dx_python tests/loopfs/test-guard.py \
    --dir xfs=/mnt/xfs --dir ext4=/mnt/ext4 \
    --kills "${GUARD_KILLS:-16}" --rounds "${GUARD_ROUNDS:-6}" \
    --selftest-kills "${GUARD_SELFTEST_KILLS:-8}"

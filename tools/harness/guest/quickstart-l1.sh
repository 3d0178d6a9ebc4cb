#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# quickstart-l1: the emulated pmem host of ./quickstart's default mode (the
# chain suite's L1: the host's own root over 9p, --hostroot). Makes its
# NVDIMM an fsdax namespace with xfs mounted -o dax on /mnt/pmem, then runs
# tools/quickstart.py --inside there (DXQ_ARGS), which prints TAP with its
# steps and facts for the quickstart on the real host to relay.
. /daxfile/lib/guest-lib.sh

title="the checkout and the build shared from the real host"
echo "# quickstart-step $title"
for f in "$DAXFILE_SRCDIR/tools/quickstart.py" \
    "$DAXFILE_BUILDDIR/src/daxfilectl/daxfile"; do
    if [ ! -e "$f" ]; then
        dx_not_ok "$title" "'$f' is not there in the emulated host: the real host's share of that directory did not mount (its console has the 9p error)"
        dx_diag "\$ ls -ld '${f%/*}'"
        dx_diag "$(ls -ld "${f%/*}" 2>&1)"
        dx_done
    fi
done
dx_ok "$title"

title="its NVDIMM made an fsdax namespace, xfs made on it and mounted -o dax"
echo "# quickstart-step $title"
if ! { dx_fsdax 0 && dx_mkfs xfs /mnt/pmem; } >&2; then
    dx_not_ok "$title"
    dx_done
fi
dx_ok "$title"
# shellcheck disable=SC2086 # DXQ_ARGS: options without spaces, made by quickstart.py
exec /usr/bin/python3 "$DAXFILE_SRCDIR/tools/quickstart.py" --inside \
    --build-dir "$DAXFILE_BUILDDIR" $DXQ_ARGS

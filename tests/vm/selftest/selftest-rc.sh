#!/bin/sh
# harness-selftest: all tests pass but the script exits 3.
. /daxfile/lib/guest-lib.sh
dx_plan 1
dx_ok "passes, then the script fails"
exit 3

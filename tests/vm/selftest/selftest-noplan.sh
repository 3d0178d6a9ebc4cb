#!/bin/sh
# harness-selftest: dies before its late plan.
. /daxfile/lib/guest-lib.sh
dx_ok "reported without a plan"
exit 0

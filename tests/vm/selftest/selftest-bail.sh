#!/bin/sh
# harness-selftest: bails out.
. /daxfile/lib/guest-lib.sh
dx_plan 2
dx_ok "before the bail-out"
dx_bail_out "deliberate bail-out"
exit 0

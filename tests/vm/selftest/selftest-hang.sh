#!/bin/sh
# harness-selftest: hangs (run with a short --timeout).
. /daxfile/lib/guest-lib.sh
dx_plan 2
dx_ok "before the hang"
sleep 100000
dx_ok "after the hang"
dx_done

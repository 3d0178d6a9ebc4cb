#!/bin/sh
# harness-selftest: one test fails.
. /daxfile/lib/guest-lib.sh
dx_plan 3
dx_ok "before the failure"
dx_run "deliberately failing" sh -c 'echo some diagnostic output; exit 7'
dx_ok "after the failure"
dx_done

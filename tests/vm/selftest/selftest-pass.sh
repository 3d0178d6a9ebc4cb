#!/bin/sh
# harness-selftest: everything passes; also checks --env and --pmem none.
. /daxfile/lib/guest-lib.sh
dx_plan 5
dx_ok "plain ok"
dx_is "--env value arrives intact" "$SELFTEST_VALUE" "two words 'quoted' \$x"
dx_run "no NVDIMM with --pmem none" sh -c '! ls /sys/bus/nd/devices/region0'
dx_skip "a skipped test" "skips are fine"
dx_todo "a TODO test" "expected failures do not fail the run"
dx_done

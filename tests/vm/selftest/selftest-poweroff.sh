#!/bin/sh
# harness-selftest: the guest powers off in the middle (no END marker).
. /daxfile/lib/guest-lib.sh
dx_plan 1
dx_ok "before the power-off"
poweroff -f

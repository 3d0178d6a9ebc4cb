#!/bin/sh
# harness-selftest: the kernel panics in the middle.
. /daxfile/lib/guest-lib.sh
dx_plan 2
dx_ok "before the panic"
echo c >/proc/sysrq-trigger
dx_ok "after the panic"
dx_done

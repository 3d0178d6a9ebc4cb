. /daxfile/lib/guest-lib.sh
dx_plan 2
dx_ok "hello"
dx_run "fsdax" dx_fsdax
dx_done

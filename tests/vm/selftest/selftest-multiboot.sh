#!/bin/sh
# harness-selftest: module API. SELFTEST_STEP=write makes ext4 and writes a
# file; SELFTEST_STEP=read finds it again, then announces a crash point and
# waits to be killed.
. /daxfile/lib/guest-lib.sh
case "$SELFTEST_STEP" in
write)
    dx_plan 4
    dx_run "fsdax" dx_fsdax
    dx_run "mkfs ext4" dx_mkfs ext4 /mnt/t
    # shellcheck disable=SC2016 # expanded by the inner sh
    dx_run "write a file" sh -c 'echo persistent-$SELFTEST_TOKEN >/mnt/t/f && sync'
    dx_run "umount" dx_umount
    ;;
read)
    dx_plan 4
    dx_run "fsdax reused" dx_fsdax
    dx_run "mount again" dx_mount /mnt/t
    dx_is "file survived the reboot" "$(cat /mnt/t/f)" "persistent-$SELFTEST_TOKEN"
    dx_ok "about to crash"
    echo "SELFTEST-CRASH-POINT" >&2
    sleep 100000
    ;;
esac
dx_done

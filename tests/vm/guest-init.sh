#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# PID 1 of a daxfile-vm guest (busybox sh).
#
# ttyS0 (the console) carries the kernel log and the "DAXFILE-VM: ..." lines
# the host harness parses; ttyS1 carries only the guest script's stdout (TAP).
# Kernel command line: daxfile.script=NAME.sh runs /daxfile/tests/NAME.sh;
# without it an interactive shell is started on the console.

export PATH=/daxfile/bin:/usr/sbin:/usr/bin
export HOME=/root TERM=dumb LANG=C
umask 022

say() {
    echo "DAXFILE-VM: $*" >/dev/console
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /run
if [ -d /sys/kernel/tracing ]; then
    mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
fi
if [ -d /sys/kernel/debug ]; then
    mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
fi
hostname daxfile-vm
read -r up _ </proc/uptime
say "INIT uptime=$up kernel=$(uname -r)"

modules=/etc/daxfile-vm/modules.load
grep -q 'daxfile.modules=0' /proc/cmdline && modules=/dev/null
kver=$(cat /etc/daxfile-vm/kernel)
while read -r mod; do
    [ -n "$mod" ] || continue
    if ! insmod "/lib/modules/$kver/$mod" 2>/dev/console; then
        say "ERROR insmod $mod failed"
    fi
done <"$modules"
read -r up _ </proc/uptime
say "READY uptime=$up"

script=
for arg in $(cat /proc/cmdline); do
    case "$arg" in
    daxfile.script=*) script=${arg#daxfile.script=} ;;
    esac
done

set -a
. /daxfile/env
set +a
cd /tmp

if [ -z "$script" ]; then
    say "SHELL"
    setsid cttyhack sh -l
    rc=$?
else
    stty -F /dev/ttyS1 raw -echo 2>/dev/null
    # Closing the tty waits until the UART has sent everything, so all TAP
    # has left the guest before the END line appears on the console.
    sh "/daxfile/tests/$script" </dev/null >/dev/ttyS1 2>/dev/console
    rc=$?
    # busybox stty sets the modes with TCSADRAIN: this waits until the UART
    # has sent whatever a leftover background process may still hold open.
    stty -F /dev/ttyS1 raw -echo 2>/dev/null
    say "END rc=$rc script=$script"
fi

sync
for m in $(awk '$1 ~ "^/dev/(pmem|dax)" {print $2}' /proc/mounts); do
    umount "$m" 2>/dev/console || say "ERROR umount $m failed"
done
poweroff -f

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# PID 1 of a daxfile-vm guest (busybox sh).
#
# ttyS0 (the console) carries the kernel log and the "DAXFILE-VM: ..." lines
# the host harness parses; ttyS1 carries only the guest script's stdout (TAP).
# Kernel command line: daxfile.script=NAME.sh runs /daxfile/tests/NAME.sh;
# without it an interactive shell is started on the console.
#
# daxfile.hostroot=1: after the modules, the host's root (9p, read-only)
# under a tmpfs overlay becomes the root (switch_root), and this same file
# runs again from there as "init stage2", with the host's /bin/sh, and goes
# straight to running the script.

export HOME=/root TERM=dumb
umask 022

say() {
    echo "DAXFILE-VM: $*" >/dev/console
}

stage1() {
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
    insmod_all "$modules"
    # a CXL pmem device (daxfile.cxl=1): its drivers, then their
    # asynchronous probes (ports, memdev, nvdimm bridge) settle
    if [ "$modules" != /dev/null ] && grep -q 'daxfile.cxl=1' /proc/cmdline; then
        insmod_all /etc/daxfile-vm/modules.cxl
        cxl_settle
    fi
    read -r up _ </proc/uptime
    say "READY uptime=$up"
    if grep -q 'daxfile.hostroot=1' /proc/cmdline; then
        hostroot
    fi
}

insmod_all() {
    while read -r mod; do
        [ -n "$mod" ] || continue
        if ! insmod "/lib/modules/$kver/$mod" 2>/dev/console; then
            say "ERROR insmod $mod failed"
        fi
    done <"$1"
}

cxl_settle() {
    # up to 10 s until the memdev and its nvdimm bridge are probed
    i=0
    while [ $i -lt 100 ]; do
        if [ -e /sys/bus/cxl/devices/mem0 ] &&
            ls -d /sys/bus/cxl/devices/nvdimm-bridge* >/dev/null 2>&1; then
            return
        fi
        sleep 0.1
        i=$((i + 1))
    done
    say "ERROR no CXL memdev and nvdimm bridge after 10 s"
}

hostroot() {
    insmod_all /etc/daxfile-vm/modules.hostroot
    mkdir -p /host /upper /newroot
    if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose \
            hostroot /host; then
        say "ERROR cannot mount the host's root (9p)"
        return
    fi
    mount -t tmpfs -o mode=755,size=3G tmpfs /upper
    mkdir -p /upper/u /upper/w
    if ! mount -t overlay overlay \
            -o lowerdir=/host,upperdir=/upper/u,workdir=/upper/w /newroot; then
        say "ERROR cannot mount the overlay"
        return
    fi
    # the host's libvirt and daxfile state and configuration must not leak
    # in (a hook or a daxfile.conf drop-in some test left on the host
    # would run in here too)
    for d in /etc/libvirt/qemu /etc/libvirt/hooks /etc/daxfile \
             /var/lib/libvirt /var/log/libvirt /var/cache/libvirt \
             /var/lib/daxfile; do
        if [ -d "/newroot$d" ]; then
            mount -t tmpfs -o mode=755 tmpfs "/newroot$d"
        fi
    done
    for d in dev proc sys run tmp; do
        mkdir -p "/newroot/$d"
        mount --move "/$d" "/newroot/$d"
    done
    shares
    # KVM (kvm_amd on the SVM that TCG emulates) for the emulated host's
    # own guests: its QEMU runs as libvirt-qemu, and no udev gives the
    # device to the kvm group
    if [ -c /newroot/dev/kvm ]; then
        chmod 0666 /newroot/dev/kvm
    fi
    rm -rf /newroot/daxfile
    cp -a /daxfile /newroot/daxfile
    cp /init /newroot/daxfile/init
    cp /usr/bin/busybox /newroot/daxfile/busybox
    mkdir -p /newroot/etc/daxfile-vm /newroot/usr/lib/modules
    cp -a /etc/daxfile-vm/. /newroot/etc/daxfile-vm/
    if [ -n "$kver" ] && [ -d "/usr/lib/modules/$kver" ]; then
        cp -a "/usr/lib/modules/$kver" /newroot/usr/lib/modules/
    fi
    exec switch_root /newroot /bin/sh /daxfile/init stage2
}

shares() {
    # The directories the host shares by name (the checkout, the build):
    # each at its own path, read-only over 9p under a tmpfs upper like the
    # root, above whatever the root shows there (a tmpfs /tmp hides a
    # checkout under the host's /tmp)
    for f in /daxfile/shares/*; do
        [ -f "$f" ] || continue
        i=${f##*/}
        path=$(cat "$f")
        mkdir -p "/share$i" "/upper/s$i/u" "/upper/s$i/w" "/newroot$path"
        if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose \
                "daxshare$i" "/share$i" ||
            ! mount -t overlay overlay \
                -o "lowerdir=/share$i,upperdir=/upper/s$i/u,workdir=/upper/s$i/w" \
                "/newroot$path"; then
            say "ERROR cannot mount the host's '$path' (its 9p share daxshare$i)"
        fi
    done
}

# daxfile.apparmor=1 (a root with AppArmor: the Debian 13 one): load its
# profiles as Debian's apparmor.service does at boot, before anything that
# they confine (libvirtd, virt-aa-helper) starts
apparmor() {
    grep -q 'daxfile.apparmor=1' /proc/cmdline || return 0
    if [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" != Y ]; then
        say "ERROR AppArmor is not enabled in this kernel"
        return
    fi
    [ -d /sys/kernel/security/apparmor ] ||
        mount -t securityfs securityfs /sys/kernel/security
    if ! /usr/lib/apparmor/apparmor.systemd reload >/dev/console 2>&1; then
        say "ERROR loading the AppArmor profiles failed (apparmor.systemd reload)"
        return
    fi
    read -r up _ </proc/uptime
    say "APPARMOR profiles=$(wc -l </sys/kernel/security/apparmor/profiles) uptime=$up"
}

if [ "$1" = stage2 ]; then
    export PATH=/daxfile/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    export LANG=C.UTF-8
    poweroff="/daxfile/busybox poweroff -f"
    cttyhack="/daxfile/busybox cttyhack"
    read -r up _ </proc/uptime
    say "HOSTROOT uptime=$up"
    apparmor
else
    export PATH=/daxfile/bin:/usr/sbin:/usr/bin
    export LANG=C
    poweroff="poweroff -f"
    cttyhack=cttyhack
    stage1
fi

script=
# shellcheck disable=SC2013 # the command line's words
for arg in $(cat /proc/cmdline); do
    case "$arg" in
    daxfile.script=*) script=${arg#daxfile.script=} ;;
    esac
done

set -a
. /daxfile/env
set +a
cd /tmp || exit 1

if [ -z "$script" ]; then
    say "SHELL"
    # shellcheck disable=SC2086 # a command and its argument, or none
    setsid $cttyhack sh -l
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
    read -r up _ </proc/uptime
    say "END rc=$rc script=$script uptime=$up"
fi

sync
# shellcheck disable=SC2013 # /proc/mounts writes a space as \040
for m in $(awk '$1 ~ "^/dev/(pmem|dax)" {print $2}' /proc/mounts); do
    umount "$m" 2>/dev/console || say "ERROR umount $m failed"
done
$poweroff

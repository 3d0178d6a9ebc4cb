#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# static: daxfile enable/disable/run on real fsdax, ext4 and xfs.
# A consumer (stand-in for QEMU) holds a MAP_SYNC mapping and its writable
# descriptor (named with enable --consumer); enable engages the
# strongest mechanism the running kernel offers; stores to write-faulted,
# read-faulted and never-faulted pages keep working; every layout-changing
# operation is refused; disable restores them and the data is intact.
# Also: the refusals (capability, foreign immutable flag, another writer,
# another owner) and `daxfile run` around a real process.
# Needs: --bin daxfile daxfile-consumer daxfile-layout-ops daxfile-nocap,
# one NVDIMM of 1 GiB.
. /daxfile/lib/guest-lib.sh

. /daxfile/tests/static-lib.sh

# shellcheck disable=SC2153 # OPS: static-lib.sh's
NOPS=$(echo "$OPS $OPS_GUARD" | wc -w)
dx_plan $((2 + 2 * (23 + NOPS) + 5 + 4))

fault_pages() {
    cmd_ok touch 0 $((4 * MB)) && cmd_ok read $((4 * MB)) $((4 * MB))
}

remap_store() {
    cmd_ok remap && cmd_ok write $((40 * MB)) 4096 20
}

verify_data() {
    local a
    for pair in "$MB 17" "$((4 * MB)) 18" "$((32 * MB)) 19" "$((40 * MB)) 20"; do
        # shellcheck disable=SC2086 # offset and seed
        set -- $pair
        a=$(cmd verify "$1" 4096 "$2")
        echo "verify $1 = $2: $a"
        [ "$a" = ok ] || return 1
    done
}

run_around() {
    # daxfile run over the consumer: it is static (owner runner) while the
    # consumer runs, released when it exits, and run returns its status.
    local f="$1" i=0 rc
    rm -f /tmp/rin
    mkfifo /tmp/rin
    daxfile run --file "$f" --owner runner -- daxfile-consumer "$f" --sync \
        </tmp/rin >/tmp/run.out 2>&1 &
    RPID=$!
    exec 8>/tmp/rin
    until daxfile list --json | grep -q '"owner" : "runner"'; do
        i=$((i + 1))
        [ $i -lt 600 ] || { echo "never engaged"; break; }
        sleep 0.1
    done
    daxfile list
    echo "write 0 4096 33" >&8
    echo "exit 5" >&8
    exec 8>&-
    wait $RPID
    rc=$?
    cat /tmp/run.out
    [ $rc -eq 5 ] && grep -q "is now static" /tmp/run.out &&
        grep -q "layout unchanged" /tmp/run.out &&
        [ "$(daxfile list --json | tr -d ' \n')" = '[]' ]
}

# status --json's medium of a file on the fsdax namespace (dx_fsdax's
# DX_PMEM) of the NVDIMM: its namespace, region, bus (ACPI.NFIT) and
# persistence domain as ndctl lists it; no CXL region
nvdimm_medium() {
    printf '%s' '"medium":\{"kind":"namespace",' \
        "\"device\":\"${DX_PMEM#/dev/}\"," \
        '"namespace":"namespace0\.0","mode":"fsdax","region":"region0",' \
        '"bus":"ndbus[0-9]+","provider":"ACPI\.NFIT",' \
        "\"persistence_domain\":\"$(region_persistence region0)\"," \
        '"cxl":null,"reason":null\}'
}

nvdimm_medium_line() {
    printf '%s' "^medium: +namespace0\.0 fsdax \(${DX_PMEM#/dev/}\) in " \
        "region0 on ndbus[0-9]+ \(ACPI\.NFIT\), persistence domain " \
        "$(region_persistence region0)\$"
}

check_fs() {
    local fs="$1" mnt="/mnt/$1" f="/mnt/$1/vm.img" mech
    dx_run "$fs: mkfs and mount -o dax" dx_mkfs "$2" "$mnt"
    dx_run "$fs: create 64 MiB (and a clone source)" sh -c \
        "daxfile create $f --size 64M && daxfile create $f.src --size 64M"
    mech=$(expected_mechanism "$mnt")
    dx_run "$fs: consumer maps it MAP_SYNC" consumer_start "$f"
    dx_run "$fs: consumer write-faults 4 MiB, read-faults 4 MiB" fault_pages
    if [ "$mech" = kernel ]; then
        # the kernel refuses layout changes through any descriptor
        dx_run "$fs: another writable fd does not matter to the kernel" \
            sh -c "exec 5<>$f; daxfile enable $f --owner w && daxfile disable $f"
    else
        # shellcheck disable=SC2153 # CPID: consumer_start's
        dx_run "$fs: another owner's writable fd blocks enable" expect_fail \
            "open for writing by process" \
            sh -c "exec 5<>$f; daxfile enable $f --consumer $CPID; exit \$?"
    fi
    dx_run "$fs: enable without CAP_LINUX_IMMUTABLE is refused" expect_fail \
        "CAP_LINUX_IMMUTABLE" daxfile-nocap daxfile enable "$f" --owner t
    dx_run "$fs: a foreign immutable flag is not taken over" sh -c \
        "chattr +i $f && { daxfile enable $f 2>&1 | tee /tmp/e.out; };
         chattr -i $f; grep -q 'daxfile did not set the flag' /tmp/e.out"
    dx_run "$fs: enable engages $mech" sh -c \
        "daxfile enable $f --owner test --consumer $CPID 2>&1 | tee /tmp/e.out;
         grep -q 'is now static ($mech' /tmp/e.out"
    dx_run "$fs: status --json reports mechanism and owner" status_has "$f" \
        '"enabled" : true' "\"mechanism\" : \"$mech\"" '"owner" : "test"' \
        '"layout_unchanged" : true'
    dx_run "$fs: status --json names the NVDIMM medium (ACPI.NFIT)" \
        medium_has "$f" "$(nvdimm_medium)"
    dx_run "$fs: status names it in one line" status_line "$f" \
        "$(nvdimm_medium_line)"
    dx_run "$fs: store to a write-faulted page" cmd_ok write "$MB" 4096 17
    dx_run "$fs: store to a read-faulted page" cmd_ok write $((4 * MB)) 4096 18
    dx_run "$fs: store to a never-faulted page" cmd_ok write $((32 * MB)) 4096 19
    dx_run "$fs: msync" cmd_ok msync
    dx_run "$fs: new MAP_SYNC mapping of the old fd, store" remap_store
    for op in $OPS $OPS_GUARD; do
        if [ "$mech" = verified-only ]; then
            dx_skip "$fs: static refuses $op" "guard unsafe on this kernel; verified-only"
        elif [ "$mech" = kernel ] && echo " $OPS_GUARD " | grep -q " $op "; then
            dx_is "$fs: static (kernel) allows $op" "$(daxfile-layout-ops "$f" "$op")" OK
        else
            dx_run "$fs: static refuses $op" refused "$f" "$op"
        fi
    done
    dx_run "$fs: enable for another owner is refused" expect_fail \
        "static for 'test'" daxfile enable "$f" --owner other
    dx_run "$fs: disable: layout unchanged" sh -c \
        "daxfile disable $f 2>&1 | tee /tmp/d.out; grep -q 'layout unchanged' /tmp/d.out"
    dx_run "$fs: data written while static is intact" verify_data
    dx_is "$fs: open O_RDWR works again" "$(daxfile-layout-ops "$f" open-rdwr)" OK
    dx_run "$fs: consumer exits cleanly" consumer_stop
    dx_run "$fs: daxfile run engages around a real process" run_around "$f"
    dx_run "$fs: umount" dx_umount "$mnt"
}

dx_run "fsdax namespace" dx_fsdax
check_fs ext4 ext4
check_fs xfs xfs-reflink
# The kernel backend, against the fake-daxctl.so shim: a kernel that
# advertises daxctl() in sysfs gets it used; the real one is tested on the
# patched kernel (kernel/).
fake() {
    mkdir -p /tmp/fsys/kernel/mm/daxfile /tmp/fstate
    echo 451 >/tmp/fsys/kernel/mm/daxfile/syscall_nr
    LD_PRELOAD=/daxfile/bin/fake-daxctl.so DAXFILE_FAKE_DAXCTL_NR=451 \
        DAXFILE_FAKE_DAXCTL_STATE=/tmp/fstate DAXFILE_SYSFS_ROOT=/tmp/fsys "$@"
}
fake_start() {
    daxfile create /mnt/fk/vm.img --size 16M && consumer_start /mnt/fk/vm.img
}
fake_enable() {
    fake daxfile enable /mnt/fk/vm.img >/tmp/k.out 2>&1
    cat /tmp/k.out
    grep -q 'is now static (kernel' /tmp/k.out && [ -n "$(ls /tmp/fstate)" ]
}
fake_status() {
    fake daxfile status --json /mnt/fk/vm.img >/tmp/k.json 2>&1
    cat /tmp/k.json
    grep -q '"mechanism" : "kernel"' /tmp/k.json &&
        grep -q '"mechanism_intact" : true' /tmp/k.json &&
        grep -q '"immutable" : false' /tmp/k.json
}
fake_disable() {
    fake daxfile disable /mnt/fk/vm.img >/tmp/k.out 2>&1
    cat /tmp/k.out
    grep -q 'released (kernel' /tmp/k.out && [ -z "$(ls /tmp/fstate)" ] &&
        consumer_stop
}
dx_run "fake kernel: mkfs and mount" dx_mkfs ext4 /mnt/fk
dx_run "fake kernel: create, consumer maps it" fake_start
dx_run "fake kernel: enable uses the advertised daxctl()" fake_enable
dx_run "fake kernel: status says kernel, intact, no immutable flag" fake_status
dx_run "fake kernel: disable releases through daxctl()" fake_disable

# A crash while the guard is engaged leaves the flag set, but never without
# a registry entry that list shows and repair clears.
crash_engaged() {
    DAXFILE_TEST_CRASH=enable-engaged daxfile enable /mnt/fk/vm.img \
        --consumer "$CPID"
    [ $? -eq 137 ] && refused /mnt/fk/vm.img rename
}
listed_engaging() {
    daxfile list
    daxfile list | grep -q "engaging.*$(expected_mechanism /mnt/fk)"
}
repaired() {
    daxfile repair &&
        [ "$(daxfile-layout-ops /mnt/fk/vm.img rename)" = OK ] &&
        [ "$(daxfile list --json | tr -d ' \n')" = '[]' ]
}
dx_run "crash: consumer maps the file again" consumer_start /mnt/fk/vm.img
dx_run "crash: SIGKILL right after the mechanism engaged" crash_engaged
dx_run "crash: list shows the file left engaging" listed_engaging
dx_run "crash: repair releases the file and clears the entry" repaired
consumer_stop
dx_umount /mnt/fk

dx_run "nothing left in the registry" sh -c \
    "daxfile list --json; test \"\$(daxfile list --json | tr -d ' \n')\" = '[]'"
dx_done

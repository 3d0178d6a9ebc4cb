#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# cxl: daxfile on an emulated CXL type-3 persistent memory device, one boot
# of tests/vm/scenarios/cxl.py (QEMU 10 from the Debian 13 root, q35 with
# cxl=on; Debian 12's kernel and tools). Every boot: the CXL region over
# the memdev (cxl create-region), proof that the nd region is CXL's, and
# an fsdax namespace on fresh labels (the labels of an earlier boot carry
# an interleave-set cookie of 0, which the kernel refuses: the namespace is
# created again with the same geometry, the filesystem after its info
# block is left as it was). Then, as the environment says:
#   CXL_VERIFY=xfs|ext4  the filesystem of the previous boot, which ended
#       in a SIGKILL of QEMU, mounted without mkfs: crash.img is still
#       static, its registry entry is there, the data stored through its
#       MAP_SYNC mapping is intact, disable finds its layout unchanged
#   CXL_SUITE=xfs|ext4   mkfs (2 MiB extents), mount -o dax: create,
#       check, enable (the immutable guard), the layout refusals (EPERM),
#       disable, wipe (the static checks of static.sh, from static-lib.sh);
#       status --json, status and list --json name the medium (the CXL
#       region, its root decoder and memdev, the nd region, namespace,
#       provider CXL, persistence domain); daxfile-guest check recognises
#       the CXL region; then crash.img made static, stores through its
#       MAP_SYNC mapping, and "# DAXFILE-CXL-KILL-POINT", at which the host
#       SIGKILLs QEMU.
#   CXL_DEVDAX=1         after the filesystem's checks: the region in devdax
#       mode (ndctl create-namespace -m devdax): status of /dev/daxN.M names
#       its medium, and the libvirt hook's device-dax validation accepts it
#       for one domain and refuses a second owner, another <alignsize> and
#       another <size> (daxfile-hook run as libvirtd runs it, with the
#       domain XML on stdin).
# daxfile's registry is on the filesystem itself (DAXFILE_STATE_DIR), as
# /var/lib/daxfile is on a real host: it survives the crash like the flag.
# CXL memory is emulated MMIO (about 10 MiB/s): the files are small.
# Needs: --bin daxfile daxfile-consumer daxfile-layout-ops daxfile-guest
# daxfile-hook, one --pmem model=cxl device.
. /daxfile/lib/guest-lib.sh
. /daxfile/tests/static-lib.sh

SIZE=16M
# shellcheck disable=SC2153 # OPS: static-lib.sh's
NOPS=$(echo "$OPS $OPS_GUARD" | wc -w)
CRASH_STORES="$MB:41 $((5 * MB)):42 $((7 * MB)):43"
plan=3
[ -z "${CXL_VERIFY:-}" ] || plan=$((plan + 7))
[ -z "${CXL_SUITE:-}" ] || plan=$((plan + 12 + NOPS + 2 + 4))
[ -z "${CXL_DEVDAX:-}" ] || plan=$((plan + 10))
dx_plan $plan

# ------------------------------------------------------------- the device
nd_region_is_cxl() {
    # the nd region (enabled: a disabled one is not listed) is on the CXL
    # nvdimm bus, not an NFIT NVDIMM's, and says where its persistence
    # domain is; the fsdax namespace's pmem device is in it
    local bus provider domain blk
    bus=$(readlink -f /sys/bus/nd/devices/region0/..)
    provider=$(cat "$bus/provider")
    echo "region0 on $bus, provider '$provider'"
    ndctl list -R -r region0 -v
    [ "$provider" = CXL ] || return 1
    domain=$(ndctl list -R -r region0 | grep -o '"persistence_domain":"[a-z_]*"')
    echo "$domain"
    [ "$domain" = '"persistence_domain":"memory_controller"' ] || return 1
    blk=$(readlink -f "/sys/block/${DX_PMEM#/dev/}")
    echo "$DX_PMEM: $blk"
    case "$blk" in "$bus/region0/"*) ;; *) return 1 ;; esac
}

dx_run "CXL: cxl create-region -t pmem over mem0 gives region0" dx_cxl_region
dx_run "CXL: fsdax namespace on fresh labels, queue/dax=1" dx_cxl_fsdax
dx_run "CXL: nd region0 is on the CXL bus, persistence_domain memory_controller" \
    nd_region_is_cxl

# ------------------------------------------------------------- the medium
# status --json's medium on the CXL region (the nd region and the CXL
# region are both region0 here): KIND DEVICE MODE
cxl_medium() {
    printf '%s' "\"medium\":\\{\"kind\":\"$1\",\"device\":\"$2\"," \
        "\"namespace\":\"namespace0\\.[0-9]+\",\"mode\":\"$3\"," \
        '"region":"region0","bus":"ndbus[0-9]+","provider":"CXL",' \
        '"persistence_domain":"memory_controller",' \
        '"cxl":\{"region":"region0","decoder":"decoder0\.0",' \
        '"memdevs":\["mem0"\]\},"reason":null\}'
}

# its line in status: DEVICE MODE
cxl_medium_line() {
    printf '%s' '^medium: +CXL region region0 \(decoder0\.0; memdevs mem0\), ' \
        "namespace0\\.[0-9]+ $2 \\($1\\) in region0 on ndbus[0-9]+ \\(CXL\\), " \
        'persistence domain memory_controller$'
}

guest_check_cxl() {
    # daxfile-guest check: no NFIT needed, the persistence domain of a CXL
    # region, and which CXL region it is
    local rc
    daxfile-guest check >/tmp/gc.out
    rc=$?
    cat /tmp/gc.out
    [ $rc -eq 0 ] &&
        grep 'for the ACPI NFIT table' /tmp/gc.out |
        grep -q "PASS (absent: the pmem is a CXL memory device's" &&
        grep 'region0 persistence domain' /tmp/gc.out |
        grep -q 'PASS (memory_controller (a CXL region)' &&
        grep 'region0 CXL region' /tmp/gc.out |
        grep -q 'PASS (region0 under root decoder decoder0.0, memdevs mem0)'
}

# ------------------------------------------------------------- the suite
wipe_zeros() {
    # wipe through MAP_SYNC, read back as zeros here too
    local f="$1" j
    j=$(daxfile wipe --json "$f") || return 1
    echo "$j"
    echo "$j" | grep -q '"map_sync" : true' &&
        echo "$j" | grep -q '"verified" : true' &&
        echo "$j" | grep -q "\"zeroed\" : $((16 * MB))" &&
        cmp -n $((16 * MB)) "$f" /dev/zero
}

suite() {
    local fs="$1" mnt="/mnt/$1" f="/mnt/$1/vm.img" op
    dx_run "$fs: mkfs for 2 MiB extents, mount -o dax" \
        dx_mkfs "$fs" "$mnt" --dev "$DX_PMEM"
    export DAXFILE_STATE_DIR="$mnt/daxfile-state"
    dx_run "$fs: daxfile create $SIZE: written, 2 MiB-aligned extents" sh -c \
        "daxfile create $f --size $SIZE 2>&1 | tee /tmp/create.out;
         grep -q 'every extent written and 2 MiB aligned' /tmp/create.out"
    dx_run "$fs: daxfile check: ready" daxfile check "$f"
    dx_run "$fs: status --json: dax, map_sync, aligned" status_has "$f" \
        '"dax" : true' '"map_sync" : true' '"aligned" : true'
    dx_run "$fs: status --json names the medium: CXL region0, decoder0.0, mem0, namespace, provider CXL, persistence domain" \
        medium_has "$f" "$(cxl_medium namespace "${DX_PMEM#/dev/}" fsdax)"
    dx_run "$fs: status names the medium in one line" status_line "$f" \
        "$(cxl_medium_line "${DX_PMEM#/dev/}" fsdax)"
    dx_run "$fs: daxfile-guest check recognises the CXL region" \
        guest_check_cxl
    dx_run "$fs: consumer maps it MAP_SYNC" consumer_start "$f"
    dx_run "$fs: enable engages the immutable guard" sh -c \
        "daxfile enable $f --owner test --consumer $CPID 2>&1 | tee /tmp/e.out;
         grep -q 'is now static (immutable-guard' /tmp/e.out"
    dx_run "$fs: status --json: enabled, immutable-guard, owner, layout" \
        status_has "$f" '"enabled" : true' \
        '"mechanism" : "immutable-guard"' '"owner" : "test"' \
        '"layout_unchanged" : true'
    dx_run "$fs: list --json names the static file's medium" \
        list_medium_has "$(cxl_medium namespace "${DX_PMEM#/dev/}" fsdax)"
    dx_run "$fs: the inode carries the immutable flag" sh -c \
        "lsattr $f; lsattr $f | awk '{ print \$1 }' | grep -q i"
    dx_run "$fs: store through the mapping while static" \
        cmd_ok write "$MB" 4096 17
    # the source the clone and dedupe operations name
    : >"$f.src"
    for op in $OPS $OPS_GUARD; do
        dx_is "$fs: static refuses $op with EPERM" \
            "$(daxfile-layout-ops "$f" "$op" "$f.src")" EPERM
    done
    dx_run "$fs: disable: layout unchanged" sh -c \
        "daxfile disable $f 2>&1 | tee /tmp/d.out;
         grep -q 'layout unchanged' /tmp/d.out"
    dx_run "$fs: data stored while static is intact" \
        cmd_ok verify "$MB" 4096 17
    dx_run "$fs: consumer exits cleanly" consumer_stop
    dx_run "$fs: wipe through MAP_SYNC, read back as zeros" wipe_zeros "$f"
    dx_run "$fs: crash.img static, stores through MAP_SYNC" crash_write \
        "$mnt/crash.img"
}

# -------------------------------------------------------------- the crash
crash_write() {
    local f="$1" s
    daxfile create "$f" --size 8M && consumer_start "$f" || return 1
    daxfile enable "$f" --owner crash --consumer "$CPID" || return 1
    for s in $CRASH_STORES; do
        cmd_ok write "${s%%:*}" 4096 "${s#*:}" || return 1
    done
    daxfile list
}

crash_verify() {
    # the stores of the killed boot, through a new (read-only: the file
    # is immutable) MAP_SYNC mapping
    local s
    consumer_start "$1" || return 1
    for s in $CRASH_STORES; do
        cmd_ok verify "${s%%:*}" 4096 "${s#*:}" || return 1
    done
}

after_crash() {
    local fs="$1" mnt="/mnt/$1" f="/mnt/$1/crash.img"
    dx_run "$fs after the crash: mount -o dax, no mkfs" \
        dx_mount "$mnt" --dev "$DX_PMEM" --type "$fs"
    export DAXFILE_STATE_DIR="$mnt/daxfile-state"
    dx_is "$fs after the crash: crash.img still static (rename EPERM)" \
        "$(daxfile-layout-ops "$f" rename)" EPERM
    dx_run "$fs after the crash: daxfile list shows crash.img for 'crash'" \
        sh -c "daxfile list --json | tee /tmp/l.json;
               grep -q '\"owner\" : \"crash\"' /tmp/l.json"
    dx_run "$fs after the crash: the MAP_SYNC stores are intact" \
        crash_verify "$f"
    dx_run "$fs after the crash: consumer exits cleanly" consumer_stop
    dx_run "$fs after the crash: disable: layout unchanged" sh -c \
        "daxfile disable $f 2>&1 | tee /tmp/d.out;
         grep -q 'layout unchanged' /tmp/d.out"
    dx_run "$fs after the crash: umount" dx_umount "$mnt"
}

# ------------------------------------------------------------ device-dax
devdax_ns() {
    # the region's fsdax namespace gives way to a devdax one; sets DAX
    local json
    dx_x ndctl destroy-namespace -f all -r region0 || return 1
    json=$(dx_x ndctl create-namespace -m devdax -r region0) || return 1
    echo "$json"
    DAX=/dev/$(dx_json_get chardev "$json")
    dx_wait_dev "$DAX" && [ -c "$DAX" ]
}

domain_xml() {
    # domain_xml NAME N ALIGN_KIB SIZE_KIB: a domain with the nvdimm $DAX
    cat <<XML
<domain type='qemu'>
  <name>$1</name>
  <uuid>11111111-2222-3333-4444-55555555555$2</uuid>
  <maxMemory slots='4' unit='KiB'>4194304</maxMemory>
  <memory unit='KiB'>524288</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <cpu><numa><cell id='0' cpus='0' memory='524288' unit='KiB'/></numa></cpu>
  <devices>
    <memory model='nvdimm' access='shared'>
      <source>
        <path>$DAX</path>
        <alignsize unit='KiB'>$3</alignsize>
        <pmem/>
      </source>
      <target><size unit='KiB'>$4</size><node>0</node></target>
      <alias name='nvdimm0'/>
    </memory>
  </devices>
</domain>
XML
}

hook() {
    # hook NAME N ALIGN_KIB SIZE_KIB OP SUBOP: daxfile-hook as libvirtd
    # runs it (managing device-dax devices only)
    domain_xml "$1" "$2" "$3" "$4" >/tmp/dom.xml
    DAXFILE_CONF=/tmp/hook.conf daxfile-hook "$1" "$5" "$6" - </tmp/dom.xml
}

hook_ok() {
    # hook ... exits 0 and says nothing
    local out rc
    out=$(hook "$@" 2>&1)
    rc=$?
    echo "hook $*: '$out' (exit $rc)"
    [ $rc -eq 0 ] && [ -z "$out" ]
}

reserved_for() {
    # the registry holds $DAX for domain NAME
    daxfile list --json | tee /tmp/l.json
    tr -d ' \n' </tmp/l.json |
        grep -q "\"path\":\"$DAX\",[^{}]*\"owner\":\"domain:$1\""
}

prepare_vm1() {
    hook_ok vm1 1 2048 "$KIB" prepare begin && reserved_for vm1
}

handed_over() {
    # stopped releases it; then vm2's prepare takes it, and release frees it
    hook_ok vm1 1 2048 "$KIB" stopped end &&
        hook_ok vm2 2 2048 "$KIB" prepare begin && reserved_for vm2 &&
        hook_ok vm2 2 2048 "$KIB" release end &&
        [ "$(daxfile list --json | tr -d ' \n')" = '[]' ]
}

devdax_suite() {
    export DAXFILE_STATE_DIR=/tmp/devdax-state
    printf '[hook]\ndevice_dax=true\n' >/tmp/hook.conf
    dx_run "devdax: ndctl create-namespace -m devdax on the CXL region" \
        devdax_ns
    dx_run "devdax: status --json of the dax device names its CXL medium" \
        medium_has "$DAX" "$(cxl_medium device_dax "${DAX#/dev/}" devdax)"
    dx_run "devdax: status names it in one line" status_line "$DAX" \
        "$(cxl_medium_line "${DAX#/dev/}" devdax)"
    KIB=$(($(cat "/sys/bus/dax/devices/${DAX#/dev/}/size") / 1024))
    dx_run "devdax: the hook's prepare accepts it for vm1 (devdax, 2 MiB pages, its size)" \
        prepare_vm1
    dx_run "devdax: status of the device shows vm1's reservation" \
        status_has "$DAX" '"state" : "reserved"' '"owner" : "domain:vm1"'
    dx_run "devdax: list --json names the reserved device's medium" \
        list_medium_has "$(cxl_medium device_dax "${DAX#/dev/}" devdax)"
    dx_run "devdax: the hook refuses it to vm2 while vm1 holds it" \
        expect_fail "is reserved for 'domain:vm1'" \
        hook vm2 2 2048 "$KIB" prepare begin
    dx_run "devdax: the hook refuses <alignsize> 4 KiB (it has 2 MiB pages)" \
        expect_fail "has 2 MiB pages but <alignsize> is 4 KiB" \
        hook vm3 3 4 "$KIB" prepare begin
    dx_run "devdax: the hook refuses a <size> other than the device's" \
        expect_fail "<target><size> is 8 MiB" \
        hook vm3 3 2048 8192 prepare begin
    dx_run "devdax: released at vm1's stop, then vm2 may have it" \
        handed_over
}

if [ -n "${CXL_VERIFY:-}" ]; then
    after_crash "$CXL_VERIFY"
fi
if [ -n "${CXL_DEVDAX:-}" ]; then
    devdax_suite
fi
if [ -n "${CXL_SUITE:-}" ]; then
    suite "$CXL_SUITE"
    dx_diag "DAXFILE-CXL-KILL-POINT"
    # the host kills QEMU here; should it not, the boot fails on its timeout
    sleep 3600
fi
dx_done

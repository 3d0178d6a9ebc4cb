#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# chain-l2: the innermost guest of the chain suite (tests/chain), started by
# libvirt inside an L1 host on real fsdax. Its two NVDIMMs are static files
# of that host (pmem0 on xfs, pmem1 on ext4).
#   CHAIN_PHASE=stream  on pmem1: fsdax namespace, ext4 -o dax, write the
#                       pattern of CHAIN_SEED+1 through MAP_SYNC, then
#                       write 256 KiB chunks w0, w1, ... (seed CHAIN_SEED+2+k)
#                       until the host dies, printing "ok - chunk k" after
#                       each chunk is durable
#   CHAIN_PHASE=verify  (after the host crashed and came back) mount it
#                       again, verify the pattern and chunks 0..CHAIN_COUNT-1
#                       Only pmem1 (the host's ext4): the host's xfs has a
#                       guest writing through it in the migrate phase, and
#                       a second NVDIMM's namespace, mkfs, pattern, chunks
#                       and verifies cost about a minute under nested TCG.
#   CHAIN_PHASE=migrate (one NVDIMM; the host migrates this guest live) as
#                       stream on pmem0, but after each chunk k read back the
#                       pattern and chunks 0..k (their sums taken right after
#                       each was written) and print "ok - chunk k
#                       written; pattern and chunks 0..k verified": every
#                       such line on the destination verified there what
#                       was written before, during and after the migration
#                       (this TAP goes to the console, through /dev/kmsg)
#   CHAIN_PHASE=write   (one NVDIMM: the CXL host's, see tests/chain/l1_cxl.py)
#                       as migrate, on pmem0: the pattern of CHAIN_SEED,
#                       then CHAIN_COUNT chunks w0, w1, ..., "ok - chunk k"
#                       after each is durable; then it powers off, and the
#                       host verifies them in a copy of its file
#   CHAIN_PHASE=vpmem-write  (a virtio-pmem device, Debian 13's kernel and
#                       its virtio_pmem module) ext4 -o dax on /dev/pmem0,
#                       the pattern of CHAIN_SEED+1, then CHAIN_COUNT chunks
#                       v0, v1, ..., each written through the mapping and
#                       msynced (the device's flush: QEMU fsyncs the host's
#                       file) before "ok - chunk k"; then it idles until the
#                       host dies
#   CHAIN_PHASE=vpmem-verify  (after the host crashed and came back) the
#                       ext4 mounted again, the pattern and the CHAIN_COUNT
#                       chunks verified
# Needs: --bin daxfile-guest, two NVDIMMs (migrate and write: one; the
# vpmem phases: one virtio-pmem device).
. /daxfile/lib/guest-lib.sh

: "${CHAIN_SEED:=7}" "${CHAIN_COUNT:=0}"
chunk=256K

set_up() { # I: the namespace and filesystem of NVDIMM I
    if [ "$CHAIN_PHASE" != verify ]; then
        dx_fsdax "$1" && dx_mkfs ext4 "/mnt/p$1"
    else
        dx_fsdax "$1" && dx_mount "/mnt/p$1" --type ext4
    fi
}

write_chunk() { # DIR K: chunk K (seed CHAIN_SEED+2+K) written in DIR
    mkdir -p "$1" &&
        daxfile-guest write --dir "$1" --seed $((CHAIN_SEED + 2 + $2)) \
            --size $chunk >/dev/null
}

write_chunks() { # PREFIX WHERE: chunks 0..CHAIN_COUNT-1 in PREFIX0,
    # PREFIX1, ..., "ok - chunk k" after each; the end at the first that fails
    local k=0
    while [ $k -lt "$CHAIN_COUNT" ]; do
        write_chunk "$1$k" $k || { dx_not_ok "chunk $k on $2"; dx_done; }
        dx_ok "chunk $k"
        k=$((k + 1))
    done
}

bad_chunks() { # PREFIX: which of chunks 0..CHAIN_COUNT-1 (in PREFIX0,
    # PREFIX1, ...) do not verify, or "none bad"
    local k=0 bad=
    while [ $k -lt "$CHAIN_COUNT" ]; do
        daxfile-guest verify --dir "$1$k" --seed $((CHAIN_SEED + 2 + k)) >&2 ||
            bad="$bad $k"
        k=$((k + 1))
    done
    echo "${bad:-none bad}"
}

vpmem_bus() {
    cat /sys/bus/nd/devices/ndbus*/provider >&2
    grep -qx virtio-pmem /sys/bus/nd/devices/ndbus0/provider &&
        [ ! -e /sys/firmware/acpi/tables/NFIT ] && dx_wait_dev /dev/pmem0
}

vpmem_write() { # DIR SEED SIZE: daxfile-guest write msyncs on virtio-pmem
    daxfile-guest write --dir "$1" --seed "$2" --size "$3" >/tmp/w.out 2>&1
    local rc=$?
    cat /tmp/w.out >&2
    [ "$rc" -eq 0 ] &&
        grep -qF "MAP_SHARED + msync (virtio-pmem: the device's flush)" /tmp/w.out
}

io=1
case "$CHAIN_PHASE" in
stream)
    i=$io
    dx_run "pmem$i: fsdax namespace, ext4 -o dax" set_up $i || dx_done
    dx_run "pmem$i: pattern of seed $((CHAIN_SEED + i)) written" \
        daxfile-guest write --dir "/mnt/p$i" --seed $((CHAIN_SEED + i)) \
        --size 2M || dx_done
    k=0
    while :; do
        write_chunk "/mnt/p$i/w$k" $k ||
            { dx_not_ok "chunk $k on pmem$i"; dx_done; }
        dx_ok "chunk $k"
        k=$((k + 1))
    done
    ;;
verify)
    for i in $io; do
        dx_run "pmem$i: the ext4 of the first boot mounted -o dax" set_up "$i" ||
            continue
        dx_run "pmem$i: pattern of seed $((CHAIN_SEED + i)) intact" \
            daxfile-guest verify --dir "/mnt/p$i" --seed $((CHAIN_SEED + i))
        dx_is "pmem$i: the $CHAIN_COUNT chunks completed before the crash intact" \
            "$(bad_chunks "/mnt/p$i/w")" "none bad"
    done
    ;;
migrate)
    # The TAP goes to the kernel log (the console, written by polling):
    # QEMU 7.2 loses ttyS1's transmit interrupt when a migration lands
    # while it sends, and the guest's output there stops for good.
    exec >/dev/kmsg
    # daxfile-guest's own verify costs a process start (seconds under
    # nested TCG) per chunk; the sums (in RAM, which migrates too) of what
    # it wrote are read back by one md5sum -c instead.
    sums=/run/chain-sums
    dx_run "pmem0: fsdax namespace, ext4 -o dax" set_up 0 || dx_done
    dx_run "pmem0: pattern of seed $CHAIN_SEED written" \
        daxfile-guest write --dir /mnt/p0 --seed "$CHAIN_SEED" --size 2M ||
        dx_done
    md5sum /mnt/p0/daxfile-guest.dat >$sums
    k=0
    while :; do
        write_chunk "/mnt/p0/w$k" $k ||
            { dx_not_ok "chunk $k on pmem0"; dx_done; }
        md5sum "/mnt/p0/w$k/daxfile-guest.dat" >>$sums
        dx_is "chunk $k written; pattern and chunks 0..$k verified" \
            "$(md5sum -c $sums 2>&1 | grep -v ': OK$')" ""
        k=$((k + 1))
    done
    ;;
write)
    dx_run "pmem0: fsdax namespace, ext4 -o dax" set_up 0 || dx_done
    dx_run "pmem0: pattern of seed $CHAIN_SEED written" \
        daxfile-guest write --dir /mnt/p0 --seed "$CHAIN_SEED" --size 2M ||
        dx_done
    write_chunks /mnt/p0/w pmem0
    ;;
vpmem-write | vpmem-verify)
    # shellcheck disable=SC2034 # the device of dx_mkfs and dx_mount
    DX_PMEM=/dev/pmem0
    dx_run "the pmem is a virtio-pmem device's (its NVDIMM bus, no NFIT)" \
        vpmem_bus || dx_done
    if [ "$CHAIN_PHASE" = vpmem-write ]; then
        dx_run "/dev/pmem0: ext4 -o dax" dx_mkfs ext4 /mnt/v || dx_done
        dx_run "pattern of seed $((CHAIN_SEED + 1)) written, msynced through the device's flush" \
            vpmem_write /mnt/v $((CHAIN_SEED + 1)) 2M || dx_done
        write_chunks /mnt/v/v "the virtio-pmem device"
        # what was flushed must survive the host's crash, which comes
        # while this guest still runs
        while :; do sleep 60; done
    fi
    dx_run "/dev/pmem0: the ext4 of the first boot mounted -o dax" \
        dx_mount /mnt/v --type ext4 || dx_done
    dx_run "pattern of seed $((CHAIN_SEED + 1)) intact" \
        daxfile-guest verify --dir /mnt/v --seed $((CHAIN_SEED + 1))
    dx_is "the $CHAIN_COUNT chunks flushed before the crash intact" \
        "$(bad_chunks /mnt/v/v)" "none bad"
    ;;
*)
    dx_not_ok "CHAIN_PHASE is stream, verify, migrate, write, vpmem-write or vpmem-verify" \
        "got '$CHAIN_PHASE'"
    ;;
esac
dx_done

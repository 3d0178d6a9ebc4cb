#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# host-helper: daxfile create/check/status on real filesystem DAX.
# statx DAX and the MAP_SYNC probe say yes, create gives written 2 MiB-aligned
# extents (filled through PMD faults), a 2 MiB write fault on the created file
# is one PMD fault, a fallocated file is unwritten, a misaligned mkfs makes
# create fail cleanly, dax=never says no. The first create on each fresh
# filesystem is 256 MiB on a 2 GiB namespace: there ext4 (6.1 and 6.12)
# places part of it misaligned, and create has to allocate again.
# Needs: --bin daxfile, --bin dax-probe, one NVDIMM of 2 GiB.
. /daxfile/lib/guest-lib.sh

dx_plan 30

json_has() {
    # json_has FILE TEXT...: every TEXT appears in FILE (pretty JSON)
    local f="$1"
    shift
    cat "$f"
    for t in "$@"; do
        grep -q -- "$t" "$f" || { echo "missing: $t"; return 1; }
    done
}

expect_fail() {
    # expect_fail WANT_TEXT CMD...: CMD exits 1 and says WANT_TEXT on one line
    local want="$1" out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    echo "$out (exit $rc)"
    [ "$rc" -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] &&
        echo "$out" | grep -q -- "$want"
}

check_fs() {
    local fs="$1" mnt="/mnt/$1" f="/mnt/$1/vm.img" j="/tmp/$1.json"
    dx_run "$fs: mkfs (aligned) and mount -o dax" dx_mkfs "$fs" "$mnt"
    dx_run "$fs: daxfile create 256 MiB" sh -c \
        "daxfile create $f --size 256M 2>&1 | tee /tmp/create.out;
         grep -q 'every extent written and 2 MiB aligned (populate' /tmp/create.out"
    dx_diag "$(cat /tmp/create.out)"
    dx_run "$fs: daxfile check: ready without --allow-non-dax" daxfile check "$f"
    daxfile status --json "$f" >"$j" 2>&1
    dx_run "$fs: status --json: dax true, map_sync true, dax=always" \
        json_has "$j" '"dax" : true' '"map_sync" : true' '"dax_mode" : "always"'
    dx_run "$fs: status --json: geometry aligned, static_ready, no problems" \
        json_has "$j" '"aligned" : true' '"static_ready" : true' '"problems" : \[\]'
    dx_run "$fs: filefrag agrees: written, 2 MiB aligned" dx_extents_aligned "$f"
    dx_run "$fs: 2 MiB MAP_SYNC write fault on the created file is one PMD fault" \
        dax-probe faults "$f" --sync --offset 8m --expect-pmd
    dx_run "$fs: fallocated file: check says unwritten" sh -c \
        "fallocate -l 8M $mnt/falloc.img &&
         daxfile check --json $mnt/falloc.img >/tmp/falloc.json;
         test \$? -eq 1 && grep -q '\"reason\" : \"unwritten\"' /tmp/falloc.json"
    dx_run "$fs: create refuses an existing file" expect_fail "already exists" \
        daxfile create "$f" --size 2M
    dx_run "$fs: umount" dx_umount "$mnt"
}

dx_run "fsdax namespace" dx_fsdax
check_fs ext4
check_fs xfs

dx_run "xfs-default: mkfs without su=2m, mount -o dax" dx_mkfs xfs-default /mnt/xd
dx_run "xfs-default: status names the mkfs fix" sh -c \
    ": > /mnt/xd/empty && daxfile status /mnt/xd/empty | grep 'fix: mkfs.xfs -d su=2m,sw=1'"
dx_run "xfs-default: create fails with the fix and leaves nothing" sh -c \
    "daxfile create /mnt/xd/vm.img --size 64M; rc=\$?; ls -la /mnt/xd;
     test \$rc -eq 1 && test ! -e /mnt/xd/vm.img &&
     test \"\$(ls -A /mnt/xd)\" = empty"
dx_run "xfs-default: the same layout is fine for 4 KiB pages" \
    daxfile create /mnt/xd/small.img --size 64M --align 4K
dx_run "xfs-default: umount" dx_umount /mnt/xd

dx_run "ext4 dax=never: mkfs and mount" dx_mkfs ext4 /mnt/nodax --no-dax
dx_run "ext4 dax=never: create works, check says not_dax" sh -c \
    "daxfile create /mnt/nodax/vm.img --size 16M &&
     daxfile check --json /mnt/nodax/vm.img > /tmp/nodax.json;
     test \$? -eq 1 && grep -q '\"reason\" : \"not_dax\"' /tmp/nodax.json"
dx_run "ext4 dax=never: status says dax false, map_sync false" sh -c \
    "daxfile status --json /mnt/nodax/vm.img > /tmp/nodax2.json;
     grep -q '\"dax\" : false' /tmp/nodax2.json && grep -q '\"map_sync\" : false' /tmp/nodax2.json"
dx_run "ext4 dax=never: umount" dx_umount /mnt/nodax
dx_done

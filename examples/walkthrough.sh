#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# examples/walkthrough.sh: static-file pmem for a libvirt guest, step by step,
# in development mode on a machine without pmem (README.md says what changes
# on a real pmem host). Needs daxfile installed (meson install, or the
# daxfile .deb: it puts the hook in /etc/libvirt/hooks/qemu.d/daxfile) and a
# running libvirtd. It cleans up after itself. With --host-only it stops
# after step 3: the steps that need no libvirtd.
set -eu
host_only=
case "${1-}" in
--host-only) host_only=yes ;;
"") ;;
*)
    echo "walkthrough.sh: unknown argument '$1'; see the comment at its top" >&2
    exit 2 ;;
esac
# a fresh directory per run, so that two runs never share a loop image
WORK=${WORK:-$(mktemp -d /var/tmp/daxfile-walkthrough.XXXXXX)}
GUEST=${GUEST:-daxfile-walkthrough}
chmod 755 "$WORK" # QEMU runs as its own user and must reach the file
here=$(cd "$(dirname "$0")" && pwd)

step() { printf '\n== %s\n' "$*"; }
cleanup() {
    if [ -z "$host_only" ]; then
        virsh destroy "$GUEST" >/dev/null 2>&1 || true
        virsh undefine "$GUEST" >/dev/null 2>&1 || true
    fi
    rm -f /etc/daxfile/daxfile.conf.d/walkthrough.conf
    umount "$WORK/pmem" 2>/dev/null || true
    rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT

step "1. A filesystem that allocates 2 MiB-aligned extents"
# On a pmem host: mkfs.xfs -d su=2m,sw=1 /dev/pmem0; mount -o dax /dev/pmem0 /mnt/pmem
# Here, without pmem: the same mkfs on a loop image, mounted without DAX.
mkdir -p "$WORK/pmem"
truncate -s 2G "$WORK/fs.img"
mkfs.xfs -q -f -d su=2m,sw=1 "$WORK/fs.img"
mount -o loop "$WORK/fs.img" "$WORK/pmem"

step "2. Tell the hook to manage that directory"
# On a pmem host this goes in /etc/daxfile/daxfile.conf, without allow_non_dax.
mkdir -p /etc/daxfile/daxfile.conf.d
cat >/etc/daxfile/daxfile.conf.d/walkthrough.conf <<CONF
[hook]
managed_roots=$WORK/pmem
allow_non_dax=true
CONF

step "3. Make a provisioned, verified backing file"
daxfile create "$WORK/pmem/guest1.img" --size 1G --allow-non-dax
daxfile check --allow-non-dax "$WORK/pmem/guest1.img"
if [ -n "$host_only" ]; then
    step "Done (--host-only: steps 4 to 7 need a running libvirtd)"
    exit 0
fi

step "4. A guest, and the file wired into it as an nvdimm"
# The example domain without its disk, as a TCG guest (no KVM needed); it
# only sits in the firmware, which is enough to see the hook at work.
sed -e "s|<name>guest1</name>|<name>$GUEST</name>|" \
    -e "s|<domain type='kvm'>|<domain type='qemu'>|" \
    -e "s|<cpu mode='host-model'>|<cpu mode='maximum'>|" \
    -e '/<disk /,/<\/disk>/d' \
    -e '/<memory model=.nvdimm./,/<\/memory>/d' \
    "$here/domain-nvdimm.xml" >"$WORK/guest.xml"
virsh define "$WORK/guest.xml"
daxfile attach "$GUEST" "$WORK/pmem/guest1.img" --label-size 128K --allow-non-dax
virsh dumpxml --inactive "$GUEST" | sed -n '/<memory model/,/<\/memory>/p'

step "5. Start it: the hook validates, then makes the file static"
virsh start "$GUEST"
daxfile status "$WORK/pmem/guest1.img"
daxfile list

step "6. Stop it: the hook releases the file and checks its layout"
virsh destroy "$GUEST"
daxfile list
daxfile status "$WORK/pmem/guest1.img" | grep '^static:'

step "7. A misconfiguration is refused before QEMU runs"
daxfile detach "$GUEST" "$WORK/pmem/guest1.img"
daxfile domain-xml --allow-non-dax "$WORK/pmem/guest1.img" | sed "s/ access=\"shared\"//" >"$WORK/private.xml"
virsh attach-device "$GUEST" "$WORK/private.xml" --config
if virsh start "$GUEST"; then
    echo "unexpected: the guest started with a private nvdimm" >&2
    exit 1
fi
echo "refused, as it should be"
step "Done"

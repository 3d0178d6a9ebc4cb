#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# chroot-run.sh [--bind SRC DST]... DIR CMD [ARG...]
#
# Run CMD chrooted into DIR, a plain directory that is not a mount point,
# as a root made by debootstrap or mmdebstrap is: /proc/self/mountinfo
# then has no entry for '/'. Meant to run under 'unshare --mount
# --propagation private', so that every mount made here goes with that
# namespace. The host's /usr (and the /bin, /lib... that lead into it),
# /etc, /dev, /sys and the source and build trees ($DAXFILE_SRCDIR,
# $DAXFILE_BUILDDIR) are bind-mounted in, /proc is mounted afresh, and
# each --bind mounts SRC on DST, both paths inside DIR.
set -eu

binds=""
while [ "${1:-}" = "--bind" ]; do
    binds="$binds $2:$3"
    shift 3
done
dir=$1
shift

bind() {
    mkdir -p "$dir$1"
    mount --bind "$1" "$dir$1"
}

for top in bin lib lib32 lib64 sbin; do
    if [ -L "/$top" ] && [ ! -L "$dir/$top" ]; then
        ln -s "$(readlink "/$top")" "$dir/$top"
    elif [ -d "/$top" ] && [ ! -L "/$top" ]; then
        bind "/$top"
    fi
done
for host in /usr /etc /dev /sys "${DAXFILE_SRCDIR:?}" "${DAXFILE_BUILDDIR:?}"; do
    bind "$host"
done
mkdir -p "$dir/proc"
mount -t proc proc "$dir/proc"
for pair in $binds; do
    mkdir -p "$dir${pair#*:}"
    mount --bind "$dir${pair%%:*}" "$dir${pair#*:}"
done
exec chroot "$dir" "$@"

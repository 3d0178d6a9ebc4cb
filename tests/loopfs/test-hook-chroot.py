#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The hook in a chroot whose root is not a mount point, as a root made
by debootstrap or mmdebstrap is (issue 35, item 13): there
/proc/self/mountinfo has no entry for '/', and sysfs names a loop
device's backing file by the host's path, which names nothing in the
chroot. The hook must decide as on the host, with the same golden files
(tests/data/hooks), and refuse, naming why, what it cannot place.

The chroot is tests/helpers/chroot-run.sh under 'unshare --mount': a
directory on the host's root filesystem with the host's /usr, /etc,
/dev, /sys and build tree bind-mounted in. The scratch directory of the
cases is in the chroot's own filesystem (not a mount), so the hook sees
it as /daxfile-chroot-w. Needs root (mount, chroot, losetup).
"""

import os
import shutil
import subprocess
import sys

from daxtest import Tap, need_root, tempdir
from hookworld import CHROOT_RUN, Case, World, check_case

INNER = "/daxfile-chroot-w"
RESERVED = (("domain:vm1", "reserved", "none"),)
CASES = (
    Case("prepare-ok", registry=RESERVED),
    # a managed file by another spelling: refused as on the host
    Case("prepare-relative-spelling"),
    Case("prepare-dot-spelling"),
    Case("prepare-dotdot-escape"),
    Case("prepare-also-disk-relative-spelling"),
    # the loop device's backing file, by device and inode
    Case("prepare-also-loop-device"),
    # a plain path outside every root, on the root's mount: not managed
    Case("prepare-unmanaged-ignored"),
    # a bind mount of the root: mountinfo cannot place the root's own
    # mount, so the hook cannot tell, and says so
    Case("prepare-bind-spelling-chroot"),
)


def root_unlisted(tap, w):
    """The condition itself: no mount point '/' in the chroot's mountinfo"""
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private",
                           CHROOT_RUN, *w.chroot, "cat",
                           "/proc/self/mountinfo"],
                          capture_output=True, text=True)
    points = [line.split()[4] for line in proc.stdout.splitlines()]
    tap.ok(proc.returncode == 0 and points and "/" not in points,
           "chroot: /proc/self/mountinfo has no entry for '/'", proc)


def cases(tap, w):
    good = w.create("vm1.img")
    w.create("spelt.img")
    shared = w.create("shared.img")
    shutil.copyfile(good, w.host(os.path.join(w.tmp, "outside.img")))
    os.makedirs(w.host(os.path.join(w.tmp, "bound")), exist_ok=True)
    loop = subprocess.run(["losetup", "-r", "-f", "--show", shared],
                          capture_output=True, text=True, check=True)
    w.placeholders["@LOOPDEV@"] = loop.stdout.strip()
    try:
        for case in CASES:
            check_case(tap, w, case)
    finally:
        subprocess.run(["losetup", "-d", w.placeholders.pop("@LOOPDEV@")])


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(len(CASES) + 1)
    with tempdir() as top:
        chroot = os.path.join(top, "root")
        os.mkdir(chroot, 0o755)
        os.mkdir(chroot + INNER)
        w = World(chroot + INNER, inner=INNER, variant="chroot",
                  chroot=("--bind", f"{INNER}/pmem", f"{INNER}/bound",
                          chroot))
        tap.subtest("mountinfo", root_unlisted, tap, w)
        tap.subtest("cases", cases, tap, w)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

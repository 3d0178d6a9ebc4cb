#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The chain suite inside its emulated pmem host (L1), started by
tests/vm/guest/chain-l1.sh once the fsdax filesystems (/mnt/xfs, /mnt/ext4)
and the state disk are mounted. Prints TAP.

What a user on a pmem host does, for real: libvirtd started by hand with a
stock qemu.conf (DAC driver, user libvirt-qemu, remember_owner), the daxfile
hook in qemu.d, `daxfile create` and `daxfile attach`, `virsh start`. L2 is
the all-built-in daxctl() kernel with tests/vm/guest/chain-l2.sh.

CHAIN_STAGE=first: the files are static while QEMU runs (every layout
change refused), libvirtd restarts without losing that, a stop releases
them with libvirt's owner and mode back; then four domains are left in
four phases (start stuck after prepare, started, running: L2 writing with
CHAIN_L2IO=1, else paused; just released) and the host crashes: sysrq-b
(CHAIN_CRASH=sysrq) or the test host kills our QEMU at the marker line
(CHAIN_CRASH=kill).

On Debian's 6.1, once: the users' paths around a start on real fsdax
(issue 35), with `daxfile watch` running and wipe_on_undefine=true: a
domain renamed keeps its file and starts under its new name, `daxfile
attach` hot-plugs a second file into it while it runs (made static, its
QEMU's new mapping attested), `virsh save` releases both files and `virsh
restore` makes them static again with the marker bytes intact, and its
undefine has the watch wipe both through MAP_SYNC.

CHAIN_VPMEM=N (Debian 13, whose libvirt starts a virtio-pmem domain):
before the crash a fifth domain's file is attached with `daxfile attach
--model virtio-pmem` and started for real: static, its QEMU's mapping
attested shared and whole without MAP_SYNC, every layout change refused;
its own L2 (Debian 13's kernel and virtio_pmem driver, CHAIN_L2VDIR) writes
N chunks, each msynced (the device's flush, QEMU's fsync of the file), and
runs on until the crash; after it that L2 verifies all N.

CHAIN_STAGE=after: the next boot on the same NVDIMMs and state disk: no
file is static without a registry entry, `daxfile repair` brings every
file back, every domain starts again, and (CHAIN_L2IO=1) L2 verifies what it
wrote before the crash (CHAIN_COUNT chunks) and powers off cleanly.

CHAIN_STAGE=migrate-src, migrate-dst: two such hosts on one network
(CHAIN_PEER is the other's address), each libvirtd listening on TCP. The
source creates and attaches a file on its xfs, starts L2 (which writes a
chunk and then verifies everything it ever wrote, over and over) and
migrates it live (--suspend); the destination's hook maps the path onto
its ext4 (path_map), creates and provisions the file there
(create_missing) and makes it static while the migration comes in; both
hosts print their file's sha256 for the test host to compare, and the
destination verifies L2's pattern and chunks in a copy of its file (their
count, against the chunks the source saw complete); both files are
released.

CHAIN_STAGE=migrate-repro: the same live migration in one host, two QEMUs
run by hand on plain files, no libvirt guest and nothing of daxfile (see
l1_repro.py).

CHAIN_STAGE=cxl: a host whose pmem is CXL persistent memory (issue 40; an
emulated CXL type-3 device, its region and fsdax namespace made by
chain-l1.sh, ext4 -o dax at /mnt/ext4): `daxfile create` (status names
the CXL medium), `daxfile attach`, `virsh start --paused`: the file is
static, QEMU's mapping attested shared with MAP_SYNC, every layout change
refused, the registry entry names the medium; then resumed, L2 writes its
pattern and CHAIN_COUNT chunks and powers off: the file is released, and
a copy of it holds all L2 wrote (see l1_cxl.py).
"""

import sys

from stallwatch import StallWatch
from l1common import cfg, tap
from l1_first import stage_first
from l1_after import stage_after
from l1_migrate import stage_migrate_src, stage_migrate_dst
from l1_repro import stage_migrate_repro, stage_plain_dst, stage_plain_src
from l1_cxl import stage_cxl

STAGES = {"first": stage_first, "migrate-src": stage_migrate_src,
          "migrate-dst": stage_migrate_dst,
          "migrate-repro": stage_migrate_repro,
          "migrate-plain-src": stage_plain_src,
          "migrate-plain-dst": stage_plain_dst, "cxl": stage_cxl}


def main():
    # a step that hangs says what this host was doing (the CI log shows it)
    StallWatch(tap).start()
    func = STAGES.get(cfg.stage, stage_after)
    tap.subtest(cfg.stage if cfg.stage in STAGES else "after", func)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

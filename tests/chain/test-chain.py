#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The whole chain for real, nested: an emulated pmem host (L1: a VM
harness guest on KERNEL with two NVDIMMs in fsdax mode, xfs and ext4
mounted -o dax, the host's own root as its userland, a state disk) runs
libvirtd, the daxfile hook and QEMU, which runs L2 on static files.

Boot 1 proves the guarantee while QEMU runs, across a libvirtd restart and
at stop, then crashes L1 with domains in four phases (start held after
prepare, started, running: L2 writing with --l2-io, else paused; just
released): sysrq-b, or (--crash kill) SIGKILL of L1's QEMU. Boot 2, on the
same NVDIMMs and state disk, proves that no file is static without a
registry entry, that `daxfile repair` brings every file back, that every
domain starts again, and (--l2-io) that L2 finds everything it completed
before the crash. See tests/chain/l1-chain.py.

Each TAP line of L1 is relayed as this test's own, prefixed with the boot.
"""

import argparse
import os
import re
import secrets
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
sys.path.insert(0, os.path.join(HERE, "..", "vm"))
from daxtest import SRCDIR, Tap, build_path, need_root  # noqa: E402
import daxfile_vm as vm  # noqa: E402

MECH = {"daxctl": "kernel"}
CRASH_RE = re.compile(r"^# CHAIN-CRASH-NOW chunks=(\d+)")


class Relay:
    """L1's TAP, relayed as ours"""

    def __init__(self, tap, prefix):
        self.tap, self.prefix = tap, prefix
        self.chunks = None
        self.results = 0

    def __call__(self, kind, val, text):
        if kind == "test":
            self.results += 1
            name = f"{self.prefix}: {val.name}"
            if val.directive == "SKIP":
                self.tap.skip(name, text.split("# SKIP", 1)[-1].strip())
            else:
                self.tap.ok(val.ok or val.directive == "TODO", name)
        elif kind == "bail":
            self.tap.ok(False, f"{self.prefix}: {text}")
        elif kind == "comment":
            m = CRASH_RE.match(text)
            if m:
                self.chunks = int(m.group(1))
            print(text, flush=True)


def boot_ok(tap, res, name, crashed=False):
    """The boot ended as it should: a crash where one was made, else a
    clean end; no kernel errors; the serial tail on failure"""
    problems = [p for p in res.problems
                if not (crashed and "before the guest printed its END" in p)]
    if crashed and res.end_seen:
        problems.append("L1 ran to its end instead of crashing")
    tap.ok(not problems, name, "\n".join(problems + res.tail(60))
           if problems else None)


def l2_files(l2, workdir, phase, seed, count=0):
    """vmlinux, initrd and cmdline of L2, where L1 copies them from"""
    d = os.path.join(workdir, "l2")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    shutil.copy2(l2.boot_kernel, os.path.join(d, "vmlinux"))
    script = vm.resolve_script("chain-l2")
    l2.initrd(os.path.join(d, "initrd"), script,
              {"CHAIN_PHASE": phase, "CHAIN_SEED": str(seed),
               "CHAIN_COUNT": str(count)})
    with open(os.path.join(d, "cmdline"), "w") as f:
        f.write(f"{vm.DEFAULT_APPEND} daxfile.script={script.name}\n")
    for name in os.listdir(d):
        os.chmod(os.path.join(d, name), 0o644)
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="6.1", help="L1's kernel flavour")
    ap.add_argument("--crash", choices=("sysrq", "kill"), default="sysrq")
    ap.add_argument("--l2-io", action="store_true",
                    help="boot L2 to write and verify through its NVDIMMs "
                    "(else QEMU only maps them: virsh start --paused)")
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("--timeout", type=int, default=1500)
    args = ap.parse_args()
    tap = Tap()
    need_root(tap)
    os.environ.setdefault("DAXFILE_SRCDIR", SRCDIR)
    os.environ.setdefault("DAXFILE_BUILDDIR", build_path())
    l1 = vm.build_image(args.kernel)
    # L2's initrd stays uncompressed: gunzip under nested TCG costs more
    # than a minute of every L2 boot.
    l2 = vm.build_image("daxctl", compress=False,
                        bins=[build_path("guest-tools", "daxfile-guest")])
    seed = secrets.randbelow(1 << 30)
    workdir = tempfile.mkdtemp(prefix="daxfile-chain-", dir="/var/tmp")
    os.chmod(workdir, 0o755)
    pmems = [vm.Pmem.create(os.path.join(vm.default_tmpdir(),
                                         f"{os.path.basename(workdir)}-{i}"),
                            "1G", temporary=True) for i in range(2)]
    disk = os.path.join(workdir, "state.img")
    with open(disk, "wb") as f:
        f.truncate(256 << 20)
    logs = args.log_dir or workdir
    base_env = {"CHAIN_MECH": MECH.get(args.kernel, "immutable-guard"),
                "CHAIN_CRASH": args.crash,
                "CHAIN_L2IO": "1" if args.l2_io else "0"}
    boot = dict(pmems=pmems, hostroot=True, smp=2, memory="3G",
                timeout=args.timeout, extra_qemu=[
                    "-drive", f"file={disk},if=virtio,format=raw"])
    try:
        tap.diag(f"L1 {l1.kernel.describe()}, L2 {l2.kernel.describe()}, "
                 f"crash by {args.crash}, seed {seed}")
        relay = Relay(tap, "boot 1")
        env = dict(base_env, CHAIN_STAGE="first",
                   CHAIN_L2DIR=l2_files(l2, workdir, "stream", seed))
        res = l1.boot("chain-l1", env=env, on_tap=relay,
                      kill_on=r"^# CHAIN-CRASH-NOW" if args.crash == "kill"
                      else None,
                      serial_log=os.path.join(logs, f"chain-{args.kernel}-"
                                              "boot1.serial.log"), **boot)
        boot_ok(tap, res, f"boot 1: L1 on {args.kernel} crashed by "
                f"{args.crash} right after the release", crashed=True)
        if relay.chunks is None:
            tap.ok(False, "boot 1 reached the crash point; boot 2 skipped")
            return tap.done()
        chunks = relay.chunks
        relay = Relay(tap, "boot 2")
        env = dict(base_env, CHAIN_STAGE="after", CHAIN_COUNT=str(chunks),
                   CHAIN_L2DIR=l2_files(l2, workdir, "verify", seed, chunks))
        res = l1.boot("chain-l1", env=env, on_tap=relay,
                      serial_log=os.path.join(logs, f"chain-{args.kernel}-"
                                              "boot2.serial.log"), **boot)
        boot_ok(tap, res, f"boot 2: L1 on {args.kernel} ran to its end")
        tap.ok(relay.results > 0, "boot 2 reported results")
    finally:
        for p in pmems:
            p.remove()
        shutil.rmtree(workdir, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

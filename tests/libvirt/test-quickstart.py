#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The README's quickstart, end to end, as a newcomer runs it: in its
default mode (an emulated pmem host: the file static under libvirt on
real fsdax, layout changes refused, data verified across a power-off;
--runs N runs it N times in a row, each about 3 minutes), then in
development mode (--dev) while libvirtd is already running with a domain
of someone else's. Every run reaches the success summary and leaves
nothing of its own behind on this machine (no domain, hook, mount, loop
device, registry entry, NVDIMM backing file or boot files); the
development run reuses the daemon and leaves the other domain alone.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "harness"))
from daxtest import BUILDDIR, SRCDIR, Tap, daxfile, need_root  # noqa: E402
import libvirt_env as lv  # noqa: E402

lv.daxfile_vm.add_guest_dir(os.path.join(HERE, "..", "vm", "guest"))

BYSTANDER = f"daxfile-bystander-{os.getpid()}"


def ours_left(logs=None):
    boot_files = [os.path.join(logs, n) for n in os.listdir(logs)
                  if n in ("vmlinux", "guest") or n.startswith("initrd-")] \
        if logs else []
    doms = lv.virsh("list", "--all", "--name").stdout.split()
    hooks = os.listdir(lv.HOOK_DIR) if os.path.isdir(lv.HOOK_DIR) else []
    mounts = open("/proc/mounts").read()
    loops = subprocess.run(["losetup", "-a"], capture_output=True,
                           text=True).stdout
    lst = daxfile("list", "--json")
    nvdimms = [os.path.join(d, n) for d in ("/dev/shm", "/var/tmp")
               for n in os.listdir(d) if n.startswith("daxfile-quickstart-")
               and n.endswith("-nvdimm")]
    return (boot_files + nvdimms +
            [d for d in doms if d.startswith("daxfile-quickstart-")] +
            [h for h in hooks if h.startswith("daxfile-quickstart-")] +
            (["a quickstart mount"] if "daxfile-quickstart-" in mounts
             else []) +
            (["a quickstart loop device"] if "daxfile-quickstart-" in loops
             else []) +
            [e["path"] for e in (lst.json() if lst.rc == 0 else [])
             if "daxfile-quickstart-" in e["path"]])


def quickstart(tap, name, args, want):
    """Run it; ok when it reaches its summary with every @want in it and
    leaves nothing behind but its logs"""
    proc = subprocess.run(["/usr/bin/python3",
                           os.path.join(SRCDIR, "tools", "quickstart.py"),
                           "--build-dir", BUILDDIR] + args,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    missing = [w for w in want if w not in proc.stdout]
    tap.ok(proc.returncode == 0 and "Proven in" in proc.stdout and
           not missing, f"{name} reaches the success summary", out if
           proc.returncode else f"missing {missing} in:\n{out}")
    m = re.search(r"^Logs: (/var/tmp/daxfile-quickstart-\S+)$", proc.stdout,
                  re.M)
    logs = m.group(1) if m else None
    left = ours_left(logs)
    tap.ok(logs and left == [], f"{name} leaves nothing behind but its logs",
           left if logs else out)
    if logs and proc.returncode == 0:
        shutil.rmtree(logs)
    tap.diag(proc.stdout)


# what the default mode proves, in its summary's words
EMULATED = ["on an emulated pmem host", "dax=always",
            "static mode engaged with mechanism 'immutable-guard'",
            "truncate EPERM", "fallocate EPERM", "rm EPERM",
            "daxfile-guest write --seed", "daxfile-guest verify --seed",
            "at each power-off the hook released the file"]
DEV = ["DEVELOPMENT MODE", "already running (reused)", "verify --seed"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1,
                    help="default-mode runs in a row")
    runs = ap.parse_args().runs
    tap = Tap()
    need_root(tap)
    tap.plan(2 * runs + 3)
    for i in range(1, runs + 1):
        quickstart(tap, f"./quickstart run {i} (emulated pmem host)", [],
                   EMULATED)
    with lv.Libvirtd(), lv.LoopDir() as loop:
        xml = lv.domain_xml(BYSTANDER, "/nonexistent-kernel", "/nonexistent",
                            "", "/dev/null", "/dev/null")
        lv.define(xml, loop.tmp, BYSTANDER)
        before = lv.virsh("dumpxml", "--inactive", BYSTANDER).stdout
        try:
            quickstart(tap, "./quickstart --dev", ["--dev"], DEV)
            tap.ok(lv.virsh("dumpxml", "--inactive", BYSTANDER).stdout ==
                   before, "the other domain is untouched")
        finally:
            lv.cleanup_domain(BYSTANDER)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

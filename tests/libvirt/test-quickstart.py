#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The README's quickstart, end to end, twice in a row, while libvirtd is
already running with a domain of someone else's: both runs reach the
success summary, reuse the daemon, leave the other domain alone and leave
nothing of their own behind.
"""

import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
sys.path.insert(0, HERE)
from daxtest import BUILDDIR, SRCDIR, Tap, daxfile, need_root  # noqa: E402
import libvirt_env as lv  # noqa: E402

BYSTANDER = f"daxfile-bystander-{os.getpid()}"


def ours_left(logs=None):
    boot_files = [os.path.join(logs, n) for n in os.listdir(logs)
                  if n == "vmlinux" or n.startswith("initrd-")] if logs else []
    doms = lv.virsh("list", "--all", "--name").stdout.split()
    hooks = os.listdir(lv.HOOK_DIR) if os.path.isdir(lv.HOOK_DIR) else []
    mounts = open("/proc/mounts").read()
    lst = daxfile("list", "--json")
    return (boot_files + [d for d in doms if d.startswith("daxfile-quickstart-")] +
            [h for h in hooks if h.startswith("daxfile-quickstart-")] +
            (["a quickstart loop mount"] if "daxfile-quickstart-" in mounts
             else []) +
            [e["path"] for e in (lst.json() if lst.rc == 0 else [])
             if "daxfile-quickstart-" in e["path"]])


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(5)
    with lv.Libvirtd(), lv.LoopDir() as loop:
        xml = lv.domain_xml(BYSTANDER, "/nonexistent-kernel", "/nonexistent",
                            "", "/dev/null", "/dev/null")
        lv.define(xml, loop.tmp, BYSTANDER)
        before = lv.virsh("dumpxml", "--inactive", BYSTANDER).stdout
        try:
            for i in (1, 2):
                proc = subprocess.run(
                    ["/usr/bin/python3",
                     os.path.join(SRCDIR, "tools", "quickstart.py"),
                     "--build-dir", BUILDDIR], capture_output=True,
                    text=True, timeout=900)
                tap.ok(proc.returncode == 0 and "Proven in" in proc.stdout and
                       "already running (reused)" in proc.stdout and
                       "verify --seed" in proc.stdout,
                       f"quickstart run {i} reaches the success summary",
                       proc.stdout + proc.stderr)
                m = re.search(r"^Logs: (/var/tmp/daxfile-quickstart-\S+)$",
                              proc.stdout, re.M)
                logs = m.group(1) if m else None
                left = ours_left(logs)
                tap.ok(logs and left == [], f"run {i} leaves nothing behind "
                       "but its logs", left if logs else proc.stdout)
                if logs:
                    shutil.rmtree(logs)
            tap.ok(lv.virsh("dumpxml", "--inactive", BYSTANDER).stdout ==
                   before, "the other domain is untouched")
        finally:
            lv.cleanup_domain(BYSTANDER)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

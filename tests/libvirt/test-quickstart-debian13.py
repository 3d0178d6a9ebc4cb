#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`./quickstart --debian 13` (issue 36): the quickstart on an emulated pmem
host whose kernel and userland are Debian 13's (.ci/debian13-root: kernel
6.12, libvirt 11.3, QEMU 10.0, ndctl 81) with AppArmor enforcing as Debian
boots it. It reaches its summary, which names that stack and QEMU confined
by the per-domain profile virt-aa-helper made; the file was static with
the guard (every layout change refused) and the data the guest wrote
through MAP_SYNC was verified after a power-off; nothing of it is left on
this machine.
"""

import importlib
import os
import re
import subprocess
import sys
import time

from daxtest import BUILDDIR, SRCDIR, Tap, need_root

# the longest the quickstart may stay silent, as test-quickstart has it
PROGRESS_GAP = 10


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(7)
    ours_left = importlib.import_module("test-quickstart").ours_left
    argv = ["/usr/bin/python3", os.path.join(SRCDIR, "tools", "quickstart.py"),
            "--build-dir", BUILDDIR, "--debian", "13"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines, gaps, last = [], [], time.monotonic()
    for line in proc.stdout:
        now = time.monotonic()
        gaps.append(now - last)
        last = now
        lines.append(line)
        tap.diag(line.rstrip("\n"))
    rc = proc.wait()
    out = "".join(lines)
    tail = "".join(lines[-30:])
    summary = out[out.find("Proven in"):] if "Proven in" in out else ""
    where = summary.split("\n", 1)[0]
    tap.ok(rc == 0 and summary, "./quickstart --debian 13 reached its "
           "summary", f"exit status {rc}\n{tail}")
    tap.ok(re.search(r"Debian GNU/Linux 13 .*libvirt 11\.\d.*QEMU 10\.\d.*"
                     r"Linux 6\.12\.\S+deb13", where),
           "the emulated host ran Debian 13: libvirt 11, QEMU 10, its kernel "
           "6.12", where)
    tap.ok(re.search(r"apparmor: QEMU confined as libvirt-[0-9a-f-]{36} "
                     r"\(enforce\)", where),
           "AppArmor enforcing: QEMU confined by its domain's profile", where)
    tap.ok("mechanism 'immutable-guard'" in summary and
           "every layout change was refused" in summary,
           "the file static with the guard while the guest ran, every "
           "layout change refused", summary)
    tap.ok(re.search(r"daxfile-guest verify --seed (\d+) \(4M with seed \1\)",
                     summary),
           "what the guest wrote through MAP_SYNC verified after a "
           "power-off", summary)
    tap.ok(max(gaps, default=0) <= PROGRESS_GAP,
           f"a line at least every {PROGRESS_GAP} s (longest silence "
           f"{max(gaps, default=0):.1f} s)")
    logs = re.search(r"^Logs: (\S+)$", summary, re.M)
    left = ours_left(logs.group(1) if logs else None)
    tap.ok(not left, "nothing of it left on this machine", left)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

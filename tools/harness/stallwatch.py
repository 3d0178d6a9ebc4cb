# SPDX-License-Identifier: GPL-2.0-or-later
"""What a guest is doing while a test step hangs in it.

A guest-side test (tests/chain/l1-chain.py) starts a StallWatch over its
Tap. Once no result has come for `stall` seconds, and again after twice,
four and eight times as long while none comes, it prints as TAP comments
the load, and each task that runs or waits uninterruptibly (R, D) or is
one of `names` (libvirtd, QEMU, virsh, daxfile...): its state, CPU time,
wchan and kernel stack (/proc/PID/stack). It reads /proc/PID/stat, wchan
and stack only, none of which waits for a task's memory map lock, so a
task stuck in a page fault does not stop it. A step that is merely slow
costs a few comment lines; nothing else changes.

Every `beat` seconds it also prints a heartbeat comment (HEARTBEAT): the
host that boots the guest tells a guest whose kernel has hung (no
heartbeat) from one whose step is slow, and kills the first in a minute
or two rather than after the steps' own timeouts.
"""

import os
import threading
import time

NAMES = ("libvirtd", "virtqemud", "qemu-system-x86", "virsh", "daxfile",
         "daxfile-hook", "daxfile-virt", "python3")


def _read(path, limit=4096):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError as e:
        return f"({e.strerror})"


def tasks(names=NAMES):
    """Lines about the tasks worth seeing now"""
    out = [f"loadavg {_read('/proc/loadavg').strip()}"]
    tick = os.sysconf("SC_CLK_TCK")
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()),
                      key=int):
        stat = _read(f"/proc/{pid}/stat")
        if ")" not in stat:
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) < 13:
            continue
        state = fields[0]
        if state not in "RD" and comm not in names:
            continue
        cpu = (int(fields[11]) + int(fields[12])) / tick
        wchan = _read(f"/proc/{pid}/wchan", 256).strip() or "-"
        out.append(f"pid {pid} {comm} state {state} cpu {cpu:.1f} s "
                   f"wchan {wchan}")
        if state in "RD":
            stack = _read(f"/proc/{pid}/stack").splitlines()[:12]
            out += [f"    {line}" for line in stack]
    return out


HEARTBEAT = "ALIVE"


class StallWatch(threading.Thread):
    """Prints tasks() through @tap when @tap has had no result for @stall
    seconds, and a HEARTBEAT comment every @beat seconds (see the module's
    docstring)"""

    def __init__(self, tap, stall=120, poll=5, beat=30):
        super().__init__(name="stallwatch", daemon=True)
        self.tap, self.stall, self.poll = tap, stall, poll
        self.beat = beat

    def run(self):
        seen, since, dumps = self.tap.n, time.monotonic(), 0
        beaten = since
        while True:
            time.sleep(self.poll)
            if time.monotonic() - beaten >= self.beat:
                beaten = time.monotonic()
                self.tap.diag(f"{HEARTBEAT} at {time.monotonic():.0f} s "
                              "of uptime")
            if self.tap.n != seen:
                seen, since, dumps = self.tap.n, time.monotonic(), 0
                continue
            quiet = time.monotonic() - since
            if quiet < self.stall * 2 ** dumps or dumps > 3:
                continue
            dumps += 1
            lines = [f"STALL: no result for {quiet:.0f} s; what runs:"]
            lines += [f"STALL: {line}" for line in tasks()]
            self.tap.diag("\n".join(lines))

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A randomized lifecycle (issue 35): seeded random define, undefine,
domrename, start, destroy, hot-plug (daxfile attach; virsh attach-device
--live of a new file, of a stopped domain's file; daxfile attach of a file
another running domain holds, refused) and libvirtd restarts, with `daxfile
watch` running and wipe_on_undefine=true, the guard engaged (fake-dax.so;
--verified: verified-only). A model of the domains predicts each outcome.
After every operation: no file of a defined (or running) domain was
zeroed (a marker per file), FS_IMMUTABLE_FL <=> an engaged registry entry,
and an entry exactly for each file a running domain holds, owned by it.
At the end (every domain stopped): every file of an undefined domain that
no other domain used when it went is zeros, every other file intact,
nothing left in the registry. The seed is printed; --seed N replays a
run, --ops N sets its length (default 200).
"""

import os
import random
import sys
import time
import traceback

from daxtest import Tap, is_immutable, need_root
import libvirt_env as lv
from lifeworld import M, World, nvdimm

SIZE = 4 * M
SLOTS = 4
MAX_DEFINED = 5
MAX_RUNNING = 3
WEIGHTS = {"define": 9, "undefine": 8, "rename": 5, "start": 20,
           "destroy": 17, "hotplug": 19, "restart": 2}
WIPES = "/var/lib/daxfile/wipes"


def option(name, default):
    args = sys.argv[1:]
    return int(args[args.index(name) + 1]) if name in args else default


class Run:
    """The world, the model of its domains, and what went wrong"""

    def __init__(self, tap, w, watcher, rng):
        self.tap, self.w, self.watcher, self.rng = tap, w, watcher, rng
        self.defined = {}    # name -> files of its definition
        self.running = {}    # name -> files its QEMU has (live)
        self.gone_defs = {}  # undefined while running: name -> its files
        self.files = []      # every file made, in order
        self.final = {}      # file -> "zeros" or "intact", once decided
        self.names = 0
        self.counts = dict.fromkeys(WEIGHTS, 0)
        self.seconds = dict.fromkeys(WEIGHTS, 0.0)
        self.wrong = []      # outcomes the model did not predict
        self.trail = []      # "operation domain", for the report
        self.current = None
        self.zeroed = []     # files of defined domains found zeroed
        self.mismatch = []   # immutable/registry/model disagreements

    # ------------------------------------------------------------ files

    def new_file(self):
        n = len(self.files)
        path = self.w.path(f"r{n}.img")
        res = self.w.dx("create", path, "--size", str(SIZE),
                        *([] if self.w.engaged else ["--allow-non-dax"]))
        if res.rc != 0:
            raise RuntimeError(f"daxfile create: {res}")
        with open(path, "r+b") as f:
            f.write(self.marker(n))
        self.files.append(path)
        return path

    def marker(self, n):
        return (f"daxfile-random file {n} ".encode() * 200)[:4096]

    def intact(self, path):
        with open(path, "rb") as f:
            return f.read(4096) == self.marker(self.files.index(path))

    @staticmethod
    def zeros(path):
        with open(path, "rb") as f:
            return not any(f.read())

    def live_elsewhere(self, path, name):
        """the running domain other than @name whose QEMU has @path"""
        for other, files in self.running.items():
            if other != name and path in files:
                return other
        return None

    def nvdimms(self, files):
        return "".join(nvdimm(f, size=SIZE) for f in files)

    # ------------------------------------------------------ operations

    def expect(self, ok, what):
        if not ok:
            self.wrong.append(what)

    def op_define(self):
        if len(self.defined) >= MAX_DEFINED:
            return False
        self.names += 1
        name = self.w.dom(f"d{self.names}")
        f = self.new_file()
        res = self.w.define(name, self.nvdimms([f]), slots=SLOTS)
        self.expect(res.returncode == 0, f"define {name}: {res.stderr}")
        self.defined[name] = [f]
        return True

    def decide(self, name, files):
        """@name is gone (undefined, stopped): the watch wipes each of its
        files unless another domain has it"""
        for f in files:
            other = self.live_elsewhere(f, name)
            line = self.watcher.take(f"'{f}'", ("wiped", "kept", "cannot"))
            if other:
                self.final[f] = "intact"
                self.expect(line and "kept" in line and other in line,
                            f"{name} gone, {f} in {other}: {line}")
            else:
                self.final[f] = "zeros"
                self.expect(line and "wiped" in line,
                            f"{name} gone, {f}: {line}; the watch said of "
                            f"them: {self.watcher.said(name[-4:])} "
                            f"{self.watcher.said(f)}; the operations: "
                            f"{[t for t in self.trail if name in t]}")

    def op_undefine(self):
        name = self.pick(self.defined)
        if not name:
            return False
        res = lv.virsh("undefine", name)
        self.expect(res.returncode == 0, f"undefine {name}: {res.stderr}")
        files = self.defined.pop(name)
        if name in self.running:
            line = self.watcher.wait(f"domain '{name}' was undefined")
            self.expect(line, f"undefine running {name}: no line")
            self.gone_defs[name] = files
        else:
            self.decide(name, files)
        return True

    def op_rename(self):
        name = self.pick([n for n in self.defined if n not in self.running])
        if not name:
            return False
        self.names += 1
        new = self.w.dom(f"d{self.names}")
        res = lv.virsh("domrename", name, new)
        self.expect(res.returncode == 0, f"domrename {name}: {res.stderr}")
        self.w.domains.append(new)
        self.defined[new] = self.defined.pop(name)
        return True

    def op_start(self):
        name = self.pick([n for n in self.defined if n not in self.running])
        if not name or len(self.running) >= MAX_RUNNING:
            return False
        held = [f for f in self.defined[name] if self.live_elsewhere(f, name)]
        res = lv.virsh("start", "--paused", name)
        if held:
            other = self.live_elsewhere(held[0], name)
            self.expect(res.returncode != 0 and
                        f"domain:{other}" in res.stderr,
                        f"start {name}, {held[0]} in {other}: {res.stderr}")
        else:
            self.expect(res.returncode == 0, f"start {name}: {res.stderr}")
        if res.returncode == 0:
            self.running[name] = list(self.defined[name])
        return True

    def op_destroy(self):
        name = self.pick(self.running)
        if not name:
            return False
        res = lv.virsh("destroy", name)
        self.expect(res.returncode == 0, f"destroy {name}: {res.stderr}")
        self.running.pop(name)
        if name in self.gone_defs:
            self.decide(name, self.gone_defs.pop(name))
        return True

    def op_hotplug(self):
        name = self.pick([n for n in self.running
                          if len(self.running[n]) < SLOTS and
                          len(self.defined.get(n, [])) < SLOTS])
        if not name:
            return False
        kind = self.rng.choice(("attach", "plug", "plug-stopped", "held"))
        if kind == "held":
            return self.plug_held(name)
        if kind == "plug-stopped":
            return self.plug_stopped(name)
        f = self.new_file()
        if kind == "attach":
            res = self.w.dx("attach", name, f,
                            *([] if self.w.engaged else ["--allow-non-dax"]))
            self.expect(res.rc == 0, f"attach {name} {f}: {res.err}")
            if name in self.defined and res.rc == 0:
                self.defined[name].append(f)
        else:
            res = self.w.plug(name, nvdimm(f, size=SIZE))
            line = self.watcher.wait(f"'{f}'")
            self.expect(res.returncode == 0 and line and "made" in line,
                        f"plug {name} {f}: {res.stderr} {line}")
        self.running[name].append(f)
        return True

    def plug_held(self, name):
        """daxfile attach of a file another running domain has: refused"""
        held = [(o, f) for o, files in self.running.items() if o != name
                for f in files]
        if not held:
            return False
        other, f = self.rng.choice(held)
        res = self.w.dx("attach", name, f,
                        *([] if self.w.engaged else ["--allow-non-dax"]))
        self.expect(res.rc == 1 and len(res.err.splitlines()) == 1 and
                    f"domain:{other}" in res.err,
                    f"attach {name} {f} held by {other}: {res.err}")
        return True

    def plug_stopped(self, name):
        """virsh attach-device --live of a stopped domain's file: the
        watch makes it static for this domain"""
        free = [f for n, files in self.defined.items()
                if n not in self.running for f in files
                if not self.live_elsewhere(f, None) and
                f not in self.running[name]]
        if not free:
            return False
        f = self.rng.choice(free)
        res = self.w.plug(name, nvdimm(f, size=SIZE))
        line = self.watcher.wait(f"'{f}'")
        self.expect(res.returncode == 0 and line and "made" in line,
                    f"plug {name} stopped domain's {f}: {res.stderr} {line}")
        self.running[name].append(f)
        return True

    def op_restart(self):
        if not self.w.daemon.restart():
            raise RuntimeError("the libvirtd is not the test's to restart")
        lost = self.watcher.wait("lost the connection")
        back = self.watcher.wait("watching")
        self.expect(lost and back, f"restart: watch {lost} {back}")
        return True

    def pick(self, names):
        names = sorted(names)
        name = self.rng.choice(names) if names else None
        self.trail.append(f"{self.current} {name}")
        return name

    # ---------------------------------------------------------- checks

    def check(self, step):
        """after every operation"""
        entries = {e["path"]: e for e in self.w.entries()}
        holders = {f: n for n, files in self.running.items() for f in files}
        for f in self.files:
            in_use = any(f in files for files in self.defined.values()) or \
                f in holders or self.final.get(f) == "intact"
            if in_use and not self.intact(f):
                self.zeroed.append(f"{step}: {f}")
            e = entries.get(os.path.realpath(f))
            engaged = bool(e) and e["state"] == "engaged" and \
                e["mechanism"] == "immutable-guard"
            owner = holders.get(f)
            if is_immutable(f) != engaged or \
                    (owner and (not e or e["owner"] != f"domain:{owner}")) or \
                    (e and not owner):
                self.mismatch.append(f"{step}: {f} immutable "
                                     f"{is_immutable(f)} entry {e} "
                                     f"holder {owner}")

    def step(self, i):
        ops = [op for op in WEIGHTS for _ in range(WEIGHTS[op])]
        while True:
            op = self.rng.choice(ops)
            self.current = f"op {i} {op}"
            began = time.monotonic()
            if getattr(self, f"op_{op}")():
                self.counts[op] += 1
                self.seconds[op] += time.monotonic() - began
                self.check(f"op {i} {op}")
                return

    def finish(self):
        """every domain stopped, the watch done"""
        for name in sorted(self.running):
            lv.virsh("destroy", name)
            self.running.pop(name)
            if name in self.gone_defs:
                self.decide(name, self.gone_defs.pop(name))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and os.listdir(WIPES):
            time.sleep(0.5)


def main():
    tap = Tap()
    need_root(tap)
    seed = option("--seed", int.from_bytes(os.urandom(4), "little"))
    ops = option("--ops", 200)
    engaged = "--verified" not in sys.argv[1:]
    tap.plan(7)
    tap.diag(f"seed {seed}: replay with test-random.py --seed {seed}"
             f"{'' if engaged else ' --verified'}")
    prefix = f"daxfile-rand-{os.getpid()}"
    start = time.monotonic()
    with lv.Libvirtd() as daemon, lv.LoopDir() as loop:
        with World(tap, daemon, loop, prefix, engaged=engaged,
                   conf_extra="wipe_on_undefine=true\n") as w:
            with w.watcher() as watcher:
                run = Run(tap, w, watcher, random.Random(seed))
                done, crash = 0, None
                try:
                    for done in range(1, ops + 1):
                        run.step(done)
                    run.finish()
                except Exception:  # noqa: BLE001 - reported below
                    crash = traceback.format_exc()
                tap.ok(not crash, f"seed {seed}: {done} random operations "
                       f"ran in {time.monotonic() - start:.0f} s", crash)
                tap.diag("operation: count, seconds: " + ", ".join(
                    f"{op} {run.counts[op]} {run.seconds[op]:.0f}"
                    for op in WEIGHTS))
                report(tap, w, run, watcher)
    return tap.done()


def report(tap, w, run, watcher):
    tap.ok(not run.wrong, "every operation had the outcome the model "
           "predicts", "\n".join(run.wrong))
    tap.ok(not run.zeroed, "no file of a defined or running domain was "
           "ever zeroed (its marker read after every operation)",
           "\n".join(run.zeroed))
    tap.ok(not run.mismatch, "after every operation: immutable <=> an "
           "engaged registry entry, and an entry exactly for each file a "
           "running domain has, owned by it", "\n".join(run.mismatch[:20]))
    bad = [f for f in run.files if
           (run.final.get(f) == "zeros") != run.zeros(f) or
           (run.final.get(f) != "zeros" and not run.intact(f))]
    zeros = sum(v == 'zeros' for v in run.final.values())
    tap.ok(not bad, f"at the end: the {zeros} "
           "files of undefined domains no other domain used are zeros, "
           f"the other {len(run.files)} - those intact", bad)
    left = [e for e in w.entries() if e["path"].startswith(w.loop.path)]
    imm = [f for f in run.files if is_immutable(f)]
    tap.ok(not left and not imm and not os.listdir(WIPES),
           "at the end: no registry entry, no immutable file, no wipe owed",
           (left, imm, os.listdir(WIPES)))
    failed = watcher.said("cannot") + watcher.said("NOT static")
    tap.ok(watcher.proc.poll() is None and not failed,
           "the watch ran throughout and reported no failure", failed)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Crash safety, races and hostile paths on real filesystems (root).

- SIGKILL at random moments of a large `create`: never a half-made file
  under the final name, nothing left behind (O_TMPFILE), and with the named
  temporary file of filesystems without O_TMPFILE, the next create removes
  the leftover.
- SIGKILL inside the hook at prepare (registry write), started (registry
  written, mechanism engaged) and release (flag cleared): the registry
  names every file that may be static; the release hook or `daxfile
  repair` clears it.
- enable and disable racing on one file.
- A symlink swapped in while `enable` holds the file open: daxfile keeps
  working on the inode it opened.
- Odd names (spaces, newline, non-UTF-8): one-line messages, valid JSON,
  a registry entry that repair can find again.
"""

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

from daxtest import (DAXFILE, WRAPPER, EngagedFs, LoopFs,
                     QemuStandIn, Tap, build_path, daxfile, finish_paused,
                     is_immutable, need_root, one_line_error, require_seams,
                     tempdir, wait_state)

tap = Tap()
HOOK = build_path("libvirt-hooks", "daxfile-hook")
# --engaged: xfs with fake-dax.so, the immutable guard really engaged
ENGAGED = "--engaged" in sys.argv[1:]


class Env:
    def __init__(self, state, conf=None, extra=None):
        self.env = dict(extra or {}, DAXFILE_STATE_DIR=state)
        if conf:
            self.env["DAXFILE_CONF"] = conf

    def __call__(self, *args, env=None):
        e = dict(self.env, **(env or {}))
        return daxfile(*args, env=e)

    def popen(self, *args, env=None):
        e = dict(os.environ, **self.env, **(env or {}))
        return subprocess.Popen(WRAPPER + [DAXFILE] + [str(a) for a in args],
                                env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                errors="surrogateescape")


def entries(dx):
    res = dx("list", "--json")
    return res.json() if res.rc == 0 else None


def test_create_kills(fs, dx):
    d = fs.path("kill")
    os.mkdir(d)
    target = os.path.join(d, "big.img")
    rng = random.Random(20261203)
    survivors = 0
    for i in range(8):
        proc = dx.popen("create", target, "--size", "1G")
        time.sleep(rng.uniform(0.0, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if os.path.exists(target):
            survivors += 1
            ok = dx("check", "--allow-non-dax", target).rc == 0
            os.unlink(target)
            if not ok:
                tap.ok(False, f"kill {i}: a file under the final name is "
                       "complete and verified")
                return
        leftovers = os.listdir(d)
        if leftovers:
            tap.ok(False, f"kill {i}: nothing left behind", leftovers)
            return
    tap.ok(True, "8 random SIGKILLs during a 1 GiB create: never a partial "
           f"file, nothing left behind ({survivors} had finished)")
    for point in ("create-allocated", "create-filled"):
        res = dx("create", target, "--size", "64M",
                 env={"DAXFILE_TEST_CRASH": point})
        tap.ok(res.rc == -9 and os.listdir(d) == [],
               f"SIGKILL at {point} (O_TMPFILE): nothing left", os.listdir(d))
    res = dx("create", target, "--size", "64M",
             env={"DAXFILE_TEST_CRASH": "create-filled",
                  "DAXFILE_TEST_NO_TMPFILE": "1"})
    # One temporary per allocation: when ext4 misplaced the first one
    # (free space here is what the random kills above left), create holds
    # it and allocates again, so up to DAXFILE_CREATE_ATTEMPTS are left.
    left = sorted(os.listdir(d))
    pat = re.compile(r"\.big\.img\.daxfile-([0-9]+)\.([1-3])\.tmp\Z")
    found = [pat.match(n) for n in left]
    tap.ok(res.rc == -9 and 1 <= len(left) <= 3 and all(found) and
           len({m.group(1) for m in found}) == 1 and
           not os.path.exists(target),
           "SIGKILL with a named temporary file: only the dead process's "
           "hidden temporaries are left, never the final name", left)
    res = dx("create", target, "--size", "64M",
             env={"DAXFILE_TEST_NO_TMPFILE": "1"})
    tap.ok(res.rc == 0 and os.listdir(d) == ["big.img"],
           "the next create removes the dead process's temporary file",
           os.listdir(d))
    # O_TMPFILE works but linking such a file is refused (as AppArmor
    # refuses it to the hook, in libvirtd's profile): a hidden name then
    os.unlink(target)
    res = dx("create", target, "--size", "64M",
             env={"DAXFILE_TEST_CRASH": "create-filled",
                  "DAXFILE_TEST_NO_TMPFILE": "link"})
    left = sorted(os.listdir(d))
    tap.ok(res.rc == -9 and left and all(map(pat.match, left)) and
           not os.path.exists(target),
           "an unnamed file that may not be linked (as under AppArmor): "
           "create builds the file under a hidden name", left)
    res = dx("create", target, "--size", "64M",
             env={"DAXFILE_TEST_NO_TMPFILE": "link"})
    tap.ok(res.rc == 0 and os.listdir(d) == ["big.img"] and
           os.path.getsize(target) == 64 << 20,
           "... and renames it into place, nothing else left",
           (res.err, os.listdir(d)))


def hook_xml(path, name="vm1"):
    return (f"<domain><name>{name}</name><devices><memory model='nvdimm' "
            f"access='shared'><source><path>{path}</path><alignsize "
            "unit='KiB'>2048</alignsize><pmem/></source><target><size "
            "unit='KiB'>65536</size><node>0</node></target></memory>"
            "</devices></domain>")


def hook(dx, op, subop, xml, crash=None):
    env = dict(os.environ, **dx.env)
    if crash:
        env["DAXFILE_TEST_CRASH"] = crash
    if op != "started":
        return subprocess.run(WRAPPER + [HOOK, "vm1", op, subop, "-"],
                              input=xml.encode(), env=env,
                              capture_output=True)
    with QemuStandIn(dx.pid_dir, xml, env=dx.env):  # QEMU has mapped it
        return subprocess.run(WRAPPER + [HOOK, "vm1", op, subop, "-"],
                              input=xml.encode(), env=env,
                              capture_output=True)


def test_hook_kills(fs, dx):
    """The hook changes all of a domain's files in one registry write per
    phase: at started the registry is written before any flag is set, at
    release the flags are cleared (durably) before it is written, so a
    kill at any point leaves the registry naming every file that may be
    static."""
    f = fs.path("hooked.img")
    dx("create", f, "--size", "64M")
    xml = hook_xml(f)
    res = hook(dx, "prepare", "begin", xml, crash="registry-written")
    tap.ok(res.returncode == -9 and entries(dx) == [],
           "SIGKILL in prepare before the registry rename: the registry is "
           "as before", entries(dx))
    tap.ok(hook(dx, "prepare", "begin", xml).returncode == 0 and
           [e["state"] for e in entries(dx)] == ["reserved"],
           "prepare works again afterwards")
    res = hook(dx, "started", "begin", xml, crash="enable-logged")
    ent = entries(dx)
    tap.ok(res.returncode == -9 and [e["state"] for e in ent] ==
           ["engaged"] and ent[0]["owner"] == "domain:vm1" and
           not is_immutable(f),
           "SIGKILL in started after the registry write, before the flag: "
           "the registry already names the file", ent)
    res = hook(dx, "release", "end", xml)
    tap.ok(res.returncode == 0 and entries(dx) == [] and not is_immutable(f),
           "the release libvirt runs after a failed start clears it", res)
    hook(dx, "prepare", "begin", xml)
    res = hook(dx, "started", "begin", xml, crash="enable-engaged")
    ent = entries(dx)
    tap.ok(res.returncode == -9 and [e["state"] for e in ent] ==
           ["engaged"] and is_immutable(f) == ENGAGED,
           "SIGKILL in started after engaging: the entry says engaged", ent)
    res = dx("repair")
    tap.ok(res.rc == 0 and "no process maps it" in res.err and
           entries(dx) == [] and not is_immutable(f),
           "repair releases it (no process maps it)", res)
    hook(dx, "prepare", "begin", xml)
    hook(dx, "started", "begin", xml)
    res = hook(dx, "release", "end", xml, crash="disable-released")
    ent = entries(dx)
    tap.ok(res.returncode == -9 and [e["state"] for e in ent] ==
           ["engaged"] and not is_immutable(f),
           "SIGKILL in release after the flag was cleared: the entry is "
           "still there", ent)
    res = dx("repair")
    tap.ok(res.rc == 0 and entries(dx) == [], "repair finishes the release",
           res)


def test_enable_disable_race(fs, dx):
    f = fs.path("race.img")
    dx("create", f, "--size", "8M")
    outcomes = []
    lock = threading.Lock()

    def worker(verb):
        for _ in range(15):
            res = dx(verb, "--allow-non-dax", f) if verb == "enable" else \
                dx(verb, f)
            with lock:
                outcomes.append((verb, res.rc, res.err.strip()))
    threads = [threading.Thread(target=worker, args=(v,))
               for v in ("enable", "disable", "enable", "disable")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    allowed = ("is busy", "is not static", "was already static",
               "is now static", "layout unchanged")
    bad = [o for o in outcomes if not any(a in o[2] for a in allowed)]
    dx("disable", f)
    tap.ok(not bad and entries(dx) == [],
           f"{len(outcomes)} racing enable/disable calls: each one either "
           "did its work or said busy/not static, and the registry ends "
           "consistent", bad)


def test_symlink_swap(fs, dx):
    a = fs.path("swap-a.img")
    b = fs.path("swap-b.img")
    dx("create", a, "--size", "8M")
    dx("create", b, "--size", "8M")
    ino_a = os.stat(a).st_ino
    proc = dx.popen("enable", "--allow-non-dax", "--owner", "swap", a,
                    env={"DAXFILE_TEST_PAUSE": "enable-opened"})
    stopped = wait_state(proc, True, timeout=60)
    os.rename(a, a + ".orig")
    os.symlink(b, a)
    finish_paused(proc)
    ent = entries(dx)
    tap.ok(stopped and proc.returncode == 0 and len(ent) == 1 and
           ent[0]["path"] == a + ".orig",
           "a symlink swapped in after the open: daxfile keeps the inode it "
           "opened", ent)
    os.unlink(a)
    dx("disable", a + ".orig")
    os.rename(a + ".orig", a)
    st = os.stat(a)
    tap.ok(st.st_ino == ino_a and entries(dx) == [], "released the same inode")


def test_odd_names(fs, dx):
    names = ["with space.img", "new\nline.img", "bad\udcff-utf8.img",
             "quote'\"<&>.img"]
    for n in names:
        f = fs.path(n)
        shown = n.encode("utf-8", "surrogateescape").decode("utf-8",
                                                            "replace")
        res = dx("create", f, "--size", "4M")
        # every stderr line is one whole message: the name's newline is
        # escaped, never printed raw
        ok = res.rc == 0 and all(line.startswith(("created ", "note: "))
                                 for line in res.err.splitlines())
        st = dx("status", "--json", f)
        try:
            parsed = json.loads(st.out)[0]
        except ValueError:
            parsed = None
        en = dx("enable", "--allow-non-dax", f)
        lst = dx("list", "--json")
        try:
            listed = json.loads(lst.out)
        except ValueError:
            listed = None
        dis = dx("disable", f)
        missing = dx("check", f + ".missing")
        tap.ok(ok and parsed is not None and en.rc == 0 and listed and
               len(listed) == 1 and dis.rc == 0 and one_line_error(missing)
               and entries(dx) == [],
               f"odd name {shown!r}: one-line messages, valid JSON, registry "
               "round trip", f"{res}\n{st}\n{en}\n{lst}\n{dis}\n{missing}")
    f = fs.path("bad\udcff-utf8.img")
    dx("enable", "--allow-non-dax", "--owner", "pid:999999999", f)
    res = dx("repair")
    tap.ok(res.rc == 0 and entries(dx) == [] and "\\xff" in res.err,
           "repair finds a non-UTF-8 path again and names it escaped", res)
    dx("enable", "--allow-non-dax", "--owner", "pid:999999999", f)
    res = dx("repair", "--json")
    try:
        done = json.loads(res.out)
    except ValueError:
        done = None
    tap.ok(res.rc == 0 and res.err == "" and entries(dx) == [] and done and
           len(done) == 1 and done[0]["action"] == "released" and
           done[0]["path"] == fs.path("bad\\xff-utf8.img"),
           "repair --json names a non-UTF-8 path escaped once", res)


def main():
    need_root(tap)
    require_seams(DAXFILE, HOOK)
    tap.plan(24)
    with tempdir() as state:
        with (EngagedFs() if ENGAGED else LoopFs("ext4")) as fs:
            extra = getattr(fs, "env", None)
            dx = Env(state, extra=extra)
            with open(fs.path("hook.conf"), "w") as f:
                f.write(f"[hook]\nmanaged_roots={fs.mnt}\nallow_non_dax=true\n"
                        f"qemu_pid_dir={state}/qemu\n")
            dxh = Env(state, fs.path("hook.conf"), extra)
            dxh.pid_dir = os.path.join(state, "qemu")
            tap.subtest("create kills", test_create_kills, fs, dx)
            tap.subtest("hook kills", test_hook_kills, fs, dxh)
            tap.subtest("enable/disable race", test_enable_disable_race, fs,
                        dx)
            tap.subtest("symlink swap", test_symlink_swap, fs, dx)
            tap.subtest("odd names", test_odd_names, fs, dx)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

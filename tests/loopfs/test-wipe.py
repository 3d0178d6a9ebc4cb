#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daxfile wipe on a real (non-DAX) xfs loop mount, as root: zeros read
back with their digest, refusals while anyone holds the file (a domain, a
static owner, a process that maps it or holds it open), an interrupted
wipe that nothing can use until it is finished and that resumes (by
itself, or by daxfile repair), SIGKILL at random points, and a device-dax
device (/dev/zero made one by a fake sysfs) whose killed wipe the hook
refuses until repair finishes it. The MAP_SYNC path needs real DAX (the
vm and chain suites)."""

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time

from daxtest import (DAXFILE, WRAPPER, FakeDevdax, LoopFs, Tap,
                     build_path, daxfile, need_root, one_line_error, tempdir)

M = 1 << 20
XATTR = "user.daxfile.wipe"
HOOK = build_path("libvirt-hooks", "daxfile-hook")
tap = Tap()


def fill(path, size, seed):
    rng = random.Random(seed)
    with open(path, "r+b") as f:
        for off in range(0, size, M):
            f.seek(off)
            f.write(rng.randbytes(64) * (M // 64))


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(M), b""):
            h.update(block)
    return h.hexdigest()


def zeros_digest(size):
    h = hashlib.sha256()
    block = bytes(M)
    for _ in range(size // M):
        h.update(block)
    return h.hexdigest()


def mark(path):
    try:
        return int(os.getxattr(path, XATTR))
    except OSError:
        return None


class World:
    def __init__(self, fs, state):
        self.fs = fs
        self.conf = os.path.join(state, "daxfile.conf")
        self.write_conf()
        self.env = {"DAXFILE_STATE_DIR": state, "DAXFILE_CONF": self.conf}

    def write_conf(self, extra=""):
        with open(self.conf, "w") as f:
            f.write(f"[hook]\nmanaged_roots={self.fs.mnt}\n"
                    f"allow_non_dax=true\ntrusted_owners=root\n{extra}")

    def dx(self, *args, env=None):
        return daxfile(*args, env=dict(self.env, **(env or {})))

    def popen(self, *args, env=None):
        return subprocess.Popen(WRAPPER + [DAXFILE] + list(args),
                                env=dict(os.environ, **self.env,
                                         **(env or {})),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def hook(self, path, op, subop, size=None, env=None):
        size = os.path.getsize(path) if size is None else size
        xml = ("<domain><name>vm1</name><devices><memory model='nvdimm' "
               f"access='shared'><source><path>{path}</path><alignsize "
               "unit='KiB'>2048</alignsize><pmem/></source><target><size "
               f"unit='KiB'>{size >> 10}</size><node>0"
               "</node></target></memory></devices></domain>")
        return subprocess.run(WRAPPER + [HOOK, "vm1", op, subop, "-"],
                              input=xml.encode(), capture_output=True,
                              env=dict(os.environ, **self.env,
                                       **(env or {})))

    def create(self, name, size, seed):
        path = self.fs.path(name)
        res = self.dx("create", path, "--size", str(size), "--allow-non-dax")
        assert res.rc == 0, res
        fill(path, size, seed)
        return path


def t_wipe(w):
    f = w.create("data.img", 64 * M, 1)
    res = w.dx("wipe", "--json", f)
    out = res.json() if res.rc == 0 else {}
    tap.ok(res.rc == 0 and out.get("verified") and
           out.get("sha256") == zeros_digest(64 * M) and
           out.get("zeroed") == 64 * M and out.get("resumed_from") == 0 and
           out.get("map_sync") is False and out.get("first_nonzero") is None,
           "wipe --json: all of it zeroed (page cache, msync here) and read "
           "back as zeros, with the SHA-256 of what was read", res)
    tap.ok(digest(f) == zeros_digest(64 * M) and mark(f) is None,
           "the file holds zeros, and no wipe mark is left", mark(f))
    fill(f, 64 * M, 2)
    res = w.dx("wipe", f)
    tap.ok(res.rc == 0 and res.out == "" and len(res.err.splitlines()) == 1
           and zeros_digest(64 * M) in res.err and "read back as zeros"
           in res.err, "wipe: one line saying what was done, with the "
           "digest", res)
    os.unlink(f)


def t_refusals(w):
    f = w.create("held.img", 8 * M, 3)
    before = digest(f)
    prep = w.hook(f, "prepare", "begin")
    res = w.dx("wipe", f)
    tap.ok(prep.returncode == 0 and res.rc == 1 and one_line_error(res) and
           "reserved for 'domain:vm1'" in res.err and digest(f) == before
           and mark(f) is None,
           "refused while a domain has it reserved; contents untouched",
           (prep.stderr, res))
    w.hook(f, "release", "end")
    w.dx("enable", "--allow-non-dax", "--align", "4K", f)
    res = w.dx("wipe", f)
    tap.ok(res.rc == 1 and one_line_error(res) and "for 'manual'" in
           res.err and "daxfile disable" in res.err and digest(f) == before,
           "refused while static for a manual owner, naming the fix", res)
    w.dx("disable", f)
    subprocess.run(["chattr", "+i", f], check=True)
    res = w.dx("wipe", f)
    subprocess.run(["chattr", "-i", f], check=True)
    tap.ok(res.rc == 1 and one_line_error(res) and digest(f) == before,
           "refused on an immutable file (open for writing fails, one line)",
           res)
    link = w.fs.path("link.img")
    os.symlink(f, link)
    res = w.dx("wipe", link)
    empty = w.fs.path("empty.img")
    open(empty, "w").close()
    res2 = w.dx("wipe", empty)
    tap.ok(res.rc == 1 and one_line_error(res) and "link" in res.err and
           res2.rc == 1 and one_line_error(res2) and "empty" in res2.err and
           digest(f) == before,
           "a symbolic link (without --follow-symlinks) and an empty file: "
           "refused in one line each", (res, res2))
    for p in (link, empty, f):
        os.unlink(p)


def t_interrupted(w):
    size = 512 * M
    f = w.create("big.img", size, 4)
    p = w.popen("wipe", "--json", f)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None and \
            not (mark(f) or 0) > 0:
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    data = json.loads(out) if out.strip() else {}
    done = mark(f)
    if not tap.ok(p.returncode == 130 and data.get("interrupted") and
                  len(err.splitlines()) == 1 and "was interrupted after" in
                  err and "run 'daxfile wipe' on it again" in err and
                  done and 0 < done < size,
                  "SIGINT: the wipe stops after a chunk, exit 130, one line "
                  "naming how far it got and the fix; the mark says where",
                  (p.returncode, data, err, done)):
        return
    chk = w.dx("check", "--allow-non-dax", f)
    st = w.dx("status", "--json", "--allow-non-dax", f)
    reasons = [r["reason"] for r in st.json()[0]["problems"]] \
        if st.rc == 0 else []
    prep = w.hook(f, "prepare", "begin")
    tap.ok(chk.rc == 1 and "wipe_unfinished" in chk.out + chk.err and
           "wipe_unfinished" in reasons and prep.returncode == 1 and
           b"did not finish" in prep.stderr and w.dx("list", "--json").json()
           == [],
           "until it is finished: check and status name it "
           "(wipe_unfinished), the hook refuses a domain, and nothing is "
           "left in the registry", (chk, reasons, prep.stderr))
    res = w.dx("wipe", "--json", f)
    again = res.json() if res.rc == 0 else {}
    tap.ok(res.rc == 0 and again.get("resumed_from") == done and
           again.get("zeroed") == size - done and again.get("verified") and
           mark(f) is None and digest(f) == zeros_digest(size) and
           w.dx("check", "--allow-non-dax", f).rc == 0,
           "run again it resumes where the mark says, finishes, and the file "
           "is usable again", (res, done))
    os.unlink(f)


def t_killed(w):
    size = 256 * M
    f = w.create("killed.img", size, 5)
    rng = random.Random(20261205)
    bad = []
    for i in range(4):
        fill(f, size, 10 + i)
        orig = digest(f)
        p = w.popen("wipe", f)
        time.sleep(rng.uniform(0.0, 1.5))
        p.kill()
        p.communicate()
        m = mark(f)
        if p.returncode != -9 and p.returncode != 0:
            bad.append(f"round {i}: exit {p.returncode}")
        # without a mark it is untouched (killed before its first write)
        # or all zeros (killed after the mark was cleared)
        if p.returncode == -9 and m is None and digest(f) not in (
                orig, zeros_digest(size)):
            bad.append(f"round {i}: killed, no mark, neither the old "
                       "contents nor all zeros")
        res = w.dx("wipe", f)
        if res.rc != 0 or mark(f) is not None or \
                digest(f) != zeros_digest(size):
            bad.append(f"round {i}: the next wipe did not finish it: {res}")
    tap.ok(not bad, "SIGKILL at random points: the file is untouched, wiped "
           "or marked unfinished, and the next wipe finishes it", bad)
    os.unlink(f)


def holder(path, mapped=False):
    """A process that maps @path (and closes its descriptor), or holds it
    open read-only"""
    if not mapped:
        with open(path, "rb") as f:
            return subprocess.Popen(["sleep", "600"], stdin=f)
    proc = subprocess.Popen(
        [sys.executable, "-c",
         "import mmap, sys\n"
         f"f = open({path!r}, 'rb')\n"
         "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\nf.close()\n"
         "print('mapped', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    return proc


def ended(proc):
    proc.kill()
    proc.wait()


def t_in_use(w):
    """a process that maps the file or holds it open: refused, naming it;
    a device-dax device by its device number"""
    f = w.create("used.img", 16 * M, 6)
    before = digest(f)
    p = holder(f, mapped=True)
    res = w.dx("wipe", f)
    ended(p)
    tap.ok(res.rc == 1 and one_line_error(res) and
           f"pid {p.pid} (python3) maps it" in res.err and "fix:" in res.err
           and digest(f) == before and mark(f) is None,
           "refused while a process maps the file, naming its pid and "
           "command; contents untouched", res)
    p = holder(f)
    res = w.dx("wipe", f)
    ended(p)
    again = w.dx("wipe", f)
    tap.ok(res.rc == 1 and one_line_error(res) and
           f"pid {p.pid} (sleep) holds it open" in res.err and
           again.rc == 0 and digest(f) == zeros_digest(16 * M),
           "refused while a process holds it open; wiped once it is gone",
           (res, again))
    os.unlink(f)
    with tempdir() as tmp:
        dd = FakeDevdax(tmp, size=16 * M, node="/dev/zero")
        p = holder("/dev/zero")
        res = w.dx("wipe", "/dev/zero", env=dd.env)
        ended(p)
        again = w.dx("wipe", "/dev/zero", env=dd.env)
    tap.ok(res.rc == 1 and one_line_error(res) and
           f"pid {p.pid} (sleep) holds it open" in res.err and again.rc == 0,
           "a device-dax device: refused while a process holds it open "
           "(by its device number); wiped once it is gone", (res, again))


def maps(pid, what):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return what in f.read()
    except OSError:
        return False


def t_owed(w):
    """a wipe owed is recorded: daxfile repair finishes an interrupted
    one; a device-dax device, which can carry no mark, is refused by the
    hook after its wipe was killed, until repair finishes it"""
    size = 256 * M
    f = w.create("owed.img", size, 7)
    p = w.popen("wipe", f)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None and \
            not (mark(f) or 0) > 0:
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=120)
    rep = w.dx("repair")
    tap.ok(p.returncode == 130 and rep.rc == 0 and f"wiped '{f}'" in rep.err
           and mark(f) is None and digest(f) == zeros_digest(size),
           "daxfile repair finishes an interrupted wipe", (p.returncode, rep))
    os.unlink(f)
    w.write_conf("device_dax=true\n")
    with tempdir() as tmp:
        dd = FakeDevdax(tmp, size=512 * M, node="/dev/zero")
        p = w.popen("wipe", "/dev/zero", env=dd.env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None and \
                not maps(p.pid, "/dev/zero"):
            time.sleep(0.001)
        p.kill()
        p.communicate()
        prep = w.hook("/dev/zero", "prepare", "begin", 512 * M, dd.env)
        tap.ok(p.returncode == -9 and prep.returncode == 1 and
               b"a wipe that did not finish" in prep.stderr and
               b"daxfile repair" in prep.stderr and
               len(prep.stderr.splitlines()) == 1,
               "a device-dax wipe killed: the hook refuses the device at "
               "prepare, naming why and the fix", (p.returncode, prep.stderr))
        rep = w.dx("repair", env=dd.env)
        prep = w.hook("/dev/zero", "prepare", "begin", 512 * M, dd.env)
        w.hook("/dev/zero", "release", "end", 512 * M, dd.env)
        tap.ok(rep.rc == 0 and "wiped '/dev/zero'" in rep.err and
               prep.returncode == 0,
               "daxfile repair finishes it; then the device is usable",
               (rep, prep.stderr))
    w.write_conf()


def main():
    need_root(tap)
    tap.plan(17)
    with tempdir() as state, LoopFs("xfs", size_mib=1536) as fs:
        w = World(fs, state)
        for func in (t_wipe, t_refusals, t_interrupted, t_killed, t_in_use,
                     t_owed):
            tap.subtest(func.__name__, func, w)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The immutable guard's record, with the guard really engaged (an xfs
loop mount whose files tests/helpers/fake-dax.so makes look like DAX, so
FS_IMMUTABLE_FL is really set), issue 35:

- whose it is (item 8): only the consumer named may keep the file open for
  writing: the domain's attested QEMU at started, `enable --consumer PID`;
  any other process that maps the file and keeps a writable descriptor
  (another domain's QEMU included) is refused. `repair` engages the flag
  of a running domain again, or says why not; it never drops its entry;
- that it exists (item 9): on every error path (fsync EIO after the flag,
  a flag change refused, ENOSPC on the registry), immutable => an entry
  that says so; tests/helpers/fake-fault.so makes the calls fail;
- where it is (item 11): a filesystem is known by its UUID: an xfs whose
  old device number holds another xfs is still found and its file
  released, and an entry of an older daxfile (no UUID) is kept, not
  dropped.
"""

import contextlib
import json
import mmap
import os
import subprocess
import sys
import time

from daxtest import (WRAPPER, EngagedFs, QemuStandIn, Tap,
                     build_path, daxfile, fake_dax_env, is_immutable,
                     need_root, one_line_error, tempdir)
import guardworld  # tests/loopfs, beside this test

M = 1 << 20
tap = Tap()
HOOK = build_path("libvirt-hooks", "daxfile-hook")
FAULT = build_path("tests", "helpers", "fake-fault.so")
DEAD_PID = 1 << 30   # above pid_max: never alive


def domain_xml(path, name="vm1"):
    return (f"<domain><name>{name}</name><devices><memory model='nvdimm' "
            f"access='shared'><source><path>{path}</path><alignsize "
            "unit='KiB'>2048</alignsize><pmem/></source><target><size "
            "unit='KiB'>8192</size><node>0</node></target></memory>"
            "</devices></domain>")


class World(guardworld.World):
    """test-guard's world (a managed root on the engaged filesystem, a
    state directory, a configuration naming both and the directory of
    QEMU's pid files), daxfile and the hook run with injected faults"""

    def dx(self, *args, env=None, faults=None):
        return daxfile(*args, env=self.with_faults(env, faults))

    def with_faults(self, env=None, faults=None):
        env = dict(self.env, **(env or {}))
        if faults:
            env["LD_PRELOAD"] = f"{env.get('LD_PRELOAD', '')} {FAULT}"
            env["DAXFILE_FAKE_FAULTS"] = faults
        return env

    def hook(self, op, subop, xml, name="vm1", faults=None):
        proc = subprocess.run(WRAPPER + [HOOK, name, op, subop, "-"],
                              input=xml, capture_output=True, text=True,
                              errors="replace",
                              env=dict(os.environ,
                                       **self.with_faults(None, faults)))
        proc.rc, proc.err = proc.returncode, proc.stderr
        return proc

    def qemu(self, path, name="vm1"):
        return QemuStandIn(self.pid_dir, domain_xml(path, name), name,
                           self.efs.env)

    def create(self, name):
        path = os.path.join(self.root, name)
        res = self.dx("create", path, "--size", str(8 * M))
        assert res.rc == 0, res
        return path

    def registry(self):
        path = os.path.join(self.state, "lib", "registry.json")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return json.load(f)["entries"]

    def entry(self, path):
        st = os.stat(path)
        return next((e for e in self.registry() if e["dev"] == st.st_dev and
                     e["ino"] == st.st_ino), None)

    def state_of(self, path):
        """(immutable, the state of its entry or None)"""
        e = self.entry(path)
        return is_immutable(path), e["state"] if e else None

    def recorded(self, path):
        """Immutable => an entry that says the guard may be on"""
        imm, state = self.state_of(path)
        return not imm or state in ("engaging", "engaged", "releasing")

    def reset(self, path):
        """Back to nothing, whatever a case left: no flag, no entry"""
        self.dx("repair")
        subprocess.run(["chattr", "-i", path], capture_output=True)
        self.dx("disable", path)

    def clean(self, path):
        self.reset(path)
        os.unlink(path)


@contextlib.contextmanager
def foreign_writer(path, mapped=True):
    """This test process as a foreign writer: it keeps an O_RDWR
    descriptor (on xfs, ftruncate() through it works under the flag) and
    (@mapped) maps the file shared"""
    fd = os.open(path, os.O_RDWR)
    m = mmap.mmap(fd, 4096, mmap.MAP_SHARED) if mapped else None
    try:
        yield fd
    finally:
        if m:
            m.close()
        os.close(fd)


# ------------------------------------------------ item 8: the consumer


def t_hook_consumer(w):
    f = w.create("consumer.img")
    xml = domain_xml(f)
    mine = f"process {os.getpid()} "
    # as libvirt runs them: prepare before QEMU exists (no other process
    # may map the file then), started once QEMU maps it
    prep = w.hook("prepare", "begin", xml)
    with w.qemu(f) as q:
        with foreign_writer(f) as fd:
            res = w.hook("started", "begin", xml)
            truncated = res.rc == 0 and try_truncate(fd)
        tap.ok(prep.rc == 0 and res.rc == 1 and len(res.err.splitlines()) == 1
               and f"is mapped by {mine}" in res.err and
               w.state_of(f) == (False, "reserved") and not truncated,
               "started: a process that maps the file and keeps it open for "
               "writing is not the consumer (no process but the domain's "
               "QEMU may map it): refused, in one line naming it",
               f"{prep.err}{res.err}{w.registry()}")
        with foreign_writer(f, mapped=False) as fd:
            res = w.hook("started", "begin", xml)
            truncated = res.rc == 0 and try_truncate(fd)
        tap.ok(res.rc == 1 and len(res.err.splitlines()) == 1 and
               mine in res.err and "not its consumer" in res.err and
               w.state_of(f) == (False, "reserved") and not truncated,
               "started: a process that keeps it open for writing without "
               "mapping it is not the consumer either: refused, in one line "
               "naming it", f"{res.err}{w.registry()}")
        with w.qemu(f, "vm2") as other:
            res = w.hook("started", "begin", xml)
        tap.ok(res.rc == 1 and f"process {other.proc.pid} " in res.err and
               w.state_of(f) == (False, "reserved"),
               "started: another domain's QEMU mapping the file for writing "
               "is refused too", res.err)
        res = w.hook("started", "begin", xml)
        tap.ok(res.rc == 0 and w.state_of(f) == (True, "engaged"),
               "started: the domain's own (attested) QEMU keeps its writable "
               f"descriptor (pid {q.proc.pid})", res.err)
    res = w.hook("release", "end", xml)
    tap.ok(res.rc == 0 and w.state_of(f) == (False, None), "released",
           res.err)
    w.clean(f)


def try_truncate(fd):
    try:
        os.ftruncate(fd, 4 * M)
        return True
    except OSError:
        return False


def t_enable_consumer(w):
    f = w.create("enable.img")
    with foreign_writer(f) as fd:
        res = w.dx("enable", f)
        truncated = res.rc == 0 and try_truncate(fd)
        tap.ok(one_line_error(res) and "not its consumer" in res.err and
               f"process {os.getpid()} " in res.err and not truncated and
               w.state_of(f) == (False, None),
               "enable without --consumer: a process that maps the file and "
               "keeps it open for writing is refused", res)
        res = w.dx("enable", f, "--consumer", str(os.getpid()))
        tap.ok(res.rc == 0 and w.state_of(f) == (True, "engaged"),
               "enable --consumer PID: that process may keep it", res)
        w.dx("disable", f)
    res = w.dx("enable", f, "--consumer", str(os.getppid()))
    tap.ok(one_line_error(res) and "is not mapped by process" in res.err and
           "; fix: " in res.err and w.state_of(f) == (False, None),
           "enable --consumer names a process that does not map the file: "
           "refused", res)
    w.clean(f)


def t_repair_running(w):
    f = w.create("running.img")
    xml = domain_xml(f)
    with w.qemu(f):
        w.hook("prepare", "begin", xml)
        w.hook("started", "begin", xml)
        subprocess.run(["chattr", "-i", f], check=True)
        res = w.dx("repair")
        tap.ok(res.rc == 0 and "engaged again" in res.err and
               w.state_of(f) == (True, "engaged"),
               "repair: a running domain's flag removed by hand is engaged "
               "again, its entry kept", res)
        subprocess.run(["chattr", "-i", f], check=True)
        with foreign_writer(f):
            res = w.dx("repair")
        tap.ok(one_line_error(res) and "not engaged again" in res.err and
               f"process {os.getpid()} " in res.err and
               "entry is kept" in res.err and
               w.state_of(f) == (False, "engaged"),
               "repair: when it cannot engage it again (a foreign writer) it "
               "says so in one line and keeps the entry", res)
        res = w.dx("repair")
        tap.ok(res.rc == 0 and w.state_of(f) == (True, "engaged"),
               "repair: engaged again once the writer is gone", res)
    res = w.dx("repair")
    tap.ok(res.rc == 0 and w.state_of(f) == (False, None),
           "repair: once its QEMU is gone the entry is released", res)
    w.clean(f)


# ------------------------------------------------ item 9: error paths

ENABLE_FAULTS = [
    # (faults, what, the flag after it, the entry after it)
    ("sync@1", "fsync after the flag fails (EIO)", False, None),
    ("sync@1,clear@1", "fsync after the flag fails, and so does clearing "
     "it", True, "engaging"),
    ("sync@1+", "every fsync after a flag change fails", False,
     "engaging"),
    ("set@1", "setting the flag fails (EIO)", False, None),
    ("registry@2,clear@1", "the registry write after the flag fails "
     "(ENOSPC), and clearing the flag fails", True, "engaging"),
    ("registry@2", "the registry write after the flag fails (ENOSPC)",
     False, None),
    ("registry@1", "the registry write before the flag fails (ENOSPC)",
     False, None),
]


def t_enable_faults(w):
    f = w.create("faults.img")
    w.dx("selftest", w.root)   # its probe is never faulted, but run it
    for faults, what, imm, state in ENABLE_FAULTS:
        res = w.dx("enable", f, faults=faults)
        after = w.state_of(f)
        kept = state is None or "daxfile repair" in res.err
        rep = w.dx("repair")
        tap.ok(one_line_error(res) and after == (imm, state) and kept and
               rep.rc == 0 and w.state_of(f) == (False, None),
               f"enable, {what}: refused in one line; immutable => an entry "
               f"({after}), and repair finishes", f"{res}\n{rep}")
        w.reset(f)
    w.clean(f)


HOOK_FAULTS = [
    ("sync@1", "fsync after the flag fails (EIO)", False, "reserved"),
    ("sync@1,clear@1", "fsync after the flag fails, and so does clearing "
     "it", True, "engaged"),
    ("registry@1", "the registry write fails (ENOSPC)", False, "reserved"),
]


def t_hook_faults(w):
    f = w.create("hookfaults.img")
    xml = domain_xml(f)
    for faults, what, imm, state in HOOK_FAULTS:
        w.hook("prepare", "begin", xml)
        with w.qemu(f):
            res = w.hook("started", "begin", xml, faults=faults)
            after = w.state_of(f)
        rel = w.hook("release", "end", xml)
        tap.ok(res.rc == 1 and len(res.err.splitlines()) == 1 and
               after == (imm, state) and w.recorded(f) and rel.rc == 0 and
               w.state_of(f) == (False, None),
               f"started, {what}: refused; immutable => an engaged entry "
               f"({after}); the release then clears both",
               f"{res.err}{rel.err}{after}")
        w.reset(f)
    w.hook("prepare", "begin", xml)
    with w.qemu(f):
        w.hook("started", "begin", xml)
        res = w.hook("release", "end", xml, faults="sync@1")
        after = w.state_of(f)
    rep = w.dx("repair")
    tap.ok(res.rc == 1 and after[1] == "engaged" and rep.rc == 0 and
           w.state_of(f) == (False, None),
           "release, fsync after clearing the flag fails: the entry stays "
           "until repair", f"{res.err}{after}\n{rep}")
    w.clean(f)


def t_disable_faults(w):
    f = w.create("disable.img")
    for faults, what in (("sync@1", "fsync after clearing the flag fails"),
                         ("clear@1", "clearing the flag fails"),
                         ("registry@2", "the last registry write fails")):
        w.dx("enable", f)
        res = w.dx("disable", f, faults=faults)
        after = w.state_of(f)
        rep = w.dx("repair")
        tap.ok(one_line_error(res) and after[1] == "releasing" and
               w.state_of(f) == (False, None) and rep.rc == 0,
               f"disable, {what}: the entry stays (releasing) until repair",
               f"{res}\n{after}\n{rep}")
        w.reset(f)
    w.clean(f)


# ------------------------------------------- item 11: the filesystem


def blkid_uuid(dev):
    out = subprocess.run(["blkid", "-p", "-o", "value", "-s", "UUID", dev],
                         capture_output=True, text=True, check=True).stdout
    return out.strip().replace("-", "")


def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)


def mkfs_xfs(top, name):
    image = os.path.join(top, name)
    with open(image, "wb") as fh:
        fh.truncate(1024 * M)
    sh("mkfs.xfs", "-q", "-f", "-m", "reflink=0", "-d", "su=2m,sw=1", image)
    return image


def attach_to(loopdev, image):
    """@image on the loop device @loopdev (freed asynchronously by the
    umount before)"""
    for _ in range(100):
        if subprocess.run(["losetup", loopdev, image],
                          capture_output=True).returncode == 0:
            return True
        time.sleep(0.1)
    return False


def source_of(mnt):
    return subprocess.run(["findmnt", "-no", "SOURCE", mnt],
                          capture_output=True, text=True,
                          check=True).stdout.strip()


def renumbered(w, top, variant):
    """One file static on xfs A; A comes back on another device at another
    place, and its old device number now holds xfs B (the same f_fsid,
    made of the device number). variant: "uuid" (FS_IOC_GETFSUUID),
    "superblock" (a kernel without it), "legacy" (an entry of registry
    version 1, without a UUID)."""
    faults = "fsuuid@1+" if variant == "superblock" else None
    a_img, b_img = mkfs_xfs(top, "a.img"), mkfs_xfs(top, "b.img")
    a_mnt, a2_mnt, b_mnt = (os.path.join(top, n) for n in ("a", "a2", "b"))
    for d in (a_mnt, a2_mnt, b_mnt):
        os.makedirs(d, exist_ok=True)
    sh("mount", "-o", "loop", a_img, a_mnt)
    loopdev = source_of(a_mnt)
    f = os.path.join(a_mnt, "r.img")
    env = fake_dax_env(a_mnt)
    w.dx("create", f, "--size", str(8 * M), env=env)
    res = w.dx("enable", f, "--owner", f"pid:{DEAD_PID}", env=env,
               faults=faults)
    e = w.entry(f) or {}
    uuid_ok = e.get("fs_uuid") == blkid_uuid(loopdev)
    if variant == "legacy":
        to_version_1(w)
    sh("umount", a_mnt)
    try:
        if not attach_to(loopdev, b_img):
            return tap.ok(False, f"{variant}: {loopdev} taken by b.img")
        sh("mount", loopdev, b_mnt)
        sh("mount", "-o", "loop", a_img, a2_mnt)
        moved = os.path.join(a2_mnt, "r.img")
        rep = w.dx("repair", faults=faults)
        after = (is_immutable(moved), len(w.registry()))
        if variant == "legacy":
            fix = w.dx("repair", "--path", moved)
            tap.ok(res.rc == 0 and rep.rc == 1 and after == (True, 1) and
                   "no filesystem UUID" in rep.err and fix.rc == 0 and
                   not is_immutable(moved) and w.registry() == [],
                   "an entry without a filesystem UUID (registry version "
                   "1), its xfs on another device and another xfs on its "
                   "old one: kept, not dropped; repair --path releases it",
                   f"{res}\n{rep}\n{fix}")
        else:
            tap.ok(res.rc == 0 and uuid_ok and rep.rc == 0 and
                   "released" in rep.err and after == (False, 0),
                   f"{variant}: the entry records its filesystem's UUID; "
                   "its xfs on another device, another xfs on its old one "
                   "(the same f_fsid): repair finds the file by UUID and "
                   "releases it", f"{res}\n{e}\n{rep}")
    finally:
        subprocess.run(["chattr", "-i", os.path.join(a2_mnt, "r.img")],
                       capture_output=True)
        for mnt in (a2_mnt, b_mnt, a_mnt):
            subprocess.run(["umount", mnt], capture_output=True)
        subprocess.run(["losetup", "-d", loopdev], capture_output=True)
        for image in (a_img, b_img):
            os.unlink(image)


def to_version_1(w):
    """The registry as daxfile wrote it before version 2: no fs_uuid"""
    path = os.path.join(w.state, "lib", "registry.json")
    with open(path) as fh:
        reg = json.load(fh)
    reg["version"] = 1
    for e in reg["entries"]:
        e.pop("fs_uuid", None)
    with open(path, "w") as fh:
        json.dump(reg, fh)


def t_fs_uuid(w):
    for variant in ("uuid", "superblock", "legacy"):
        with tempdir("daxfile-renumbered-") as top:
            renumbered(w, top, variant)


def main():
    need_root(tap)
    with tempdir() as state, EngagedFs() as efs:
        w = World(efs, state)
        for func in (t_hook_consumer, t_enable_consumer, t_repair_running,
                     t_enable_faults, t_hook_faults, t_disable_faults,
                     t_fs_uuid):
            tap.subtest(func.__name__, func, w)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

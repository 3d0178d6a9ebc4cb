#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`daxfile watch` with a real libvirtd (root) and wipe_on_undefine=true: an
undefined domain's file is wiped and nothing else is. Kept: a file another
domain names anywhere (its <disk>, a read-only nvdimm, a transient domain,
a device hot-plugged into a running domain only), a renamed domain's file,
a domain whose definition cannot be read (tests/helpers/fake-virt.so), a
file placed through a symbolic link, with two links or an untrusted owner,
a file a process maps (until it lets go). A wipe owed survives the watch:
a domain undefined while it runs, a wipe cut short by SIGTERM. Its
threads held at its hold points (-Dtest_seams): a definition is read at
its event whatever the main thread does, a domain undefined before that
read is said and its file left alone, a lost connection is said at once.
The daemon
is the running one, or one started here (and stopped after); the hook and
a config drop-in are installed for the test and removed after. Domains
are only ever started paused (QEMU, no guest).
"""

import os
import re
import subprocess
import sys
import time

from daxtest import Tap, build_path, daxfile, need_root, seams_cases
import libvirt_env as lv
import lifeworld  # tests/libvirt, beside this test)

PREFIX = f"daxfile-watch-{os.getpid()}"
M = 1 << 20
FAKE_VIRT = build_path("tests", "helpers", "fake-virt.so")
XATTR = "user.daxfile.wipe"
MARK = b"\xa5" * M
WIPES = "/var/lib/daxfile/wipes"


def dom(n):
    return f"{PREFIX}-{n}"


def domain_xml(name, devices=""):
    """A domain QEMU can start paused (no kernel, no disk) and that takes
    an nvdimm: maxMemory with slots, one NUMA cell, ACPI"""
    return f"""<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>128</memory>
  <maxMemory slots='4' unit='MiB'>2176</maxMemory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <features><acpi/></features>
  <cpu mode='maximum'>
    <numa><cell id='0' cpus='0' memory='128' unit='MiB'/></numa>
  </cpu>
  <devices>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
{devices}  </devices>
</domain>
"""


def nvdimm(path, size=16 * M, readonly=False):
    ro = "<readonly/>" if readonly else ""
    return (f"    <memory model='nvdimm' access='shared'>\n"
            f"      <source><path>{path}</path><alignsize unit='KiB'>2048"
            "</alignsize><pmem/></source>\n"
            f"      <target><size unit='KiB'>{size >> 10}</size><node>0"
            f"</node>{ro}</target>\n    </memory>\n")


def disk(path, target="vdb"):
    return ("    <disk type='file' device='disk'>\n"
            "      <driver name='qemu' type='raw'/>\n"
            f"      <source file='{path}'/>\n"
            f"      <target dev='{target}' bus='virtio'/>\n    </disk>\n")


def scribble(path):
    with open(path, "r+b") as f:
        f.write(MARK)


def intact(path):
    with open(path, "rb") as f:
        return f.read(M) == MARK


def zeros(path):
    with open(path, "rb") as f:
        return all(not any(block) for block in iter(lambda: f.read(M), b""))


def xattr(path):
    try:
        return int(os.getxattr(path, XATTR))
    except (OSError, ValueError):
        return None


class World:
    def __init__(self, tap, daemon, loop):
        self.tap = tap
        self.daemon = daemon
        self.loop = loop
        self.domains = []

    def path(self, name):
        return os.path.join(self.loop.path, name)

    def define(self, name, devices=""):
        path = os.path.join(self.loop.tmp, f"{name}.xml")
        with open(path, "w") as f:
            f.write(domain_xml(name, devices))
        self.domains.append(name)
        return lv.virsh("define", path)

    def create(self, name, size=16 * M, where=None):
        """A provisioned file with a marker in its first MiB"""
        path = os.path.join(where or self.loop.path, name)
        res = daxfile("create", path, "--size", str(size), "--allow-non-dax")
        if res.rc != 0:
            raise RuntimeError(f"daxfile create {path}: {res}")
        scribble(path)
        return path

    def cleanup(self):
        for name in self.domains:
            lv.cleanup_domain(name)


class Watcher(lifeworld.Watcher):
    """`daxfile watch`, its stderr lines collected, and what it watched
    when it began"""

    def __init__(self, env=None):
        super().__init__(env)
        self.counts = lifeworld.ready_counts(self.first)

    def knows(self, domains, files, timeout=60):
        """wait until it says it watches @domains and @files more than at
        its start (it rescans every 2 s)"""
        d0, f0 = self.counts
        return self.wait(f"watching {d0 + domains} defined domains "
                         f"({f0 + files} files", timeout)


def client_id(pid):
    """libvirtd's id of the client connection of process @pid"""
    out = lv.run(["virt-admin", "srv-clients-list", "libvirtd"]).stdout
    for cid in re.findall(r"^\s*(\d+)\s", out, re.M):
        info = lv.run(["virt-admin", "client-info", "libvirtd", cid]).stdout
        if re.search(rf"process_id\s*:\s*{pid}\b", info):
            return cid
    return None


def test_basics(w):
    """an undefined domain's file is wiped, one another domain still uses
    is kept, one undefined while it runs is wiped when it stops"""
    tap = w.tap
    watcher = Watcher()
    try:
        tap.ok(watcher.first is not None,
               "daxfile watch connects and learns the defined domains",
               watcher.lines)
        a, b, c, d = dom("wa"), dom("wb"), dom("wc"), dom("wd")
        fa, fb, fd = w.path("wa.img"), w.path("wb.img"), w.path("wd.img")
        ok = all(w.define(n).returncode == 0 for n in (a, b, c, d))
        for name, f, new in ((a, fa, True), (b, fb, True), (c, fb, False),
                             (d, fd, True)):
            res = daxfile("attach", name, f, "--allow-non-dax",
                          *(["--create", "--size", "16M"] if new else []))
            ok = ok and res.rc == 0
        for f in (fa, fb, fd):
            scribble(f)
        # attach changes the definitions without an event: the watcher
        # sees them at its next rescan, and says so
        seen = watcher.knows(4, 4)
        tap.ok(ok and seen, "four domains: a, b and c sharing one file, d; "
               "the watcher sees their files", seen)
        lv.virsh("undefine", a)
        line = watcher.wait(f"'{fa}'")
        tap.ok(line and line.startswith("daxfile: wiped") and zeros(fa),
               "undefine a: its file is wiped and reads back as zeros", line)
        lv.virsh("undefine", b)
        line = watcher.wait(f"'{fb}'")
        tap.ok(line and "kept" in line and c in line and intact(fb),
               "undefine b: the file c still uses is kept", line)
        start = lv.virsh("start", "--paused", d)
        lv.virsh("undefine", d)
        line = watcher.wait("while it runs")
        tap.ok(start.returncode == 0 and line and d in line and intact(fd),
               "undefine d while it runs: nothing yet (QEMU has the file)",
               (start.stderr, line))
        lv.virsh("destroy", d)
        line = watcher.wait(f"'{fd}'")
        tap.ok(line and line.startswith("daxfile: wiped") and zeros(fd),
               "d stops: its file is wiped", line)
        if w.daemon.restart():
            lost = watcher.wait("lost the connection")
            back = watcher.knows(1, 1)
            tap.ok(lost and back, "libvirtd restarts: the watcher says so, "
                   "reconnects and knows c again", (lost, back))
        else:
            tap.skip("libvirtd restarts: the watcher reconnects",
                     "the running libvirtd is not the test's to restart")
        lv.virsh("undefine", c)
        line = watcher.wait(f"'{fb}'")
        tap.ok(line and line.startswith("daxfile: wiped") and zeros(fb),
               "undefine c, the last user of b's file: now it is wiped", line)
    finally:
        rc = watcher.stop()
    tap.ok(rc == 0, "daxfile watch exits 0 on SIGTERM", rc)


def test_rename(w):
    """virsh domrename is no undefine: libvirt sends UNDEFINED (detail
    RENAMED), then DEFINED, with the same UUID; the file stays, and the
    watcher knows the domain by its new name"""
    tap = w.tap
    old, new = dom("r1"), dom("r2")
    f = w.create("r.img")
    watcher = Watcher()
    try:
        w.define(old, nvdimm(f))
        seen = watcher.knows(1, 1)
        res = lv.virsh("domrename", old, new)
        w.domains.append(new)
        time.sleep(5)  # two rescans: a wipe would have begun by now
        tap.ok(seen and res.returncode == 0 and intact(f) and
               not watcher.said(f"'{f}'"),
               "domrename with the watch running: the file is untouched",
               (res.stderr, watcher.all))
        lv.virsh("undefine", new)
        line = watcher.wait(f"'{f}'")
        tap.ok(line and line.startswith("daxfile: wiped") and
               f"domain '{new}'" in line and zeros(f),
               "undefine it by its new name: its file is wiped", line)
    finally:
        watcher.stop()
        os.unlink(f)


def test_unreadable(w):
    """a reconnection after which a domain's definition cannot be read:
    the domain still exists (libvirt finds it by UUID), so nothing of it
    is wiped; it is said once, and once readable it is undefined and
    wiped as usual"""
    tap = w.tap
    name = dom("u1")
    f = w.create("u.img")
    names = os.path.join(w.loop.tmp, "unreadable")
    open(names, "w").close()
    watcher = Watcher({"LD_PRELOAD": FAKE_VIRT,
                       "DAXFILE_FAKE_VIRT_UNREADABLE": names})
    try:
        w.define(name, nvdimm(f))
        seen = watcher.knows(1, 1)
        with open(names, "w") as out:
            out.write(name + "\n")
        cid = client_id(watcher.proc.pid)
        cut = lv.run(["virt-admin", "client-disconnect", "libvirtd",
                      str(cid)]) if cid else None
        lost = watcher.wait("lost the connection")
        back = watcher.wait("watching")
        time.sleep(5)
        tap.ok(seen and cut and cut.returncode == 0 and lost and back and
               intact(f) and not watcher.said(f"'{f}'"),
               "reconnected while its XML cannot be read: the domain is "
               "not taken as undefined, its file untouched",
               (cid, cut and cut.stderr, lost, back, watcher.all))
        tap.ok(watcher.said(f"domain '{name}' cannot be read") and
               len(watcher.said(f"domain '{name}' cannot be read")) == 1,
               "the watch says once that it cannot read the domain",
               watcher.all)
        open(names, "w").close()
        lv.virsh("undefine", name)
        line = watcher.wait(f"'{f}'")
        tap.ok(line and line.startswith("daxfile: wiped") and zeros(f),
               "readable again, then undefined: its file is wiped", line)
    finally:
        watcher.stop()
        os.unlink(f)


def test_placement(w):
    """files are placed as the hook places them: a symbolic link to a
    directory outside the managed root, a second hard link, an owner not
    in trusted_owners: refused in one line, nothing written anywhere"""
    tap = w.tap
    outside = os.path.join(w.loop.tmp, "outside")
    os.mkdir(outside)
    far = w.create("v.img", where=outside)
    os.symlink(outside, w.path("lnk"))
    linked = w.create("h1.img")
    os.link(linked, w.path("h2.img"))
    alien = w.create("alien.img")
    os.chown(alien, 12345, 12345)
    cases = [(dom("p1"), w.path("lnk/v.img"), far, "symbolic link"),
             (dom("p2"), linked, linked, "hard links"),
             (dom("p3"), alien, alien, "trusted_owners")]
    watcher = Watcher()
    try:
        for name, path, _, _ in cases:
            w.define(name, nvdimm(path))
        seen = watcher.knows(3, 3)
        for name, path, real, why in cases:
            lv.virsh("undefine", name)
            line = watcher.wait(f"'{path}'")
            tap.ok(seen and line and line.startswith("daxfile: cannot wipe")
                   and why in line and intact(real),
                   f"undefine a domain on a file with {why}: refused, "
                   "untouched", line)
    finally:
        watcher.stop()
        os.unlink(w.path("lnk"))
        for p in (far, linked, w.path("h2.img"), alien):
            os.unlink(p)


def start_transient(w, name, devices):
    path = os.path.join(w.loop.tmp, f"{name}.xml")
    with open(path, "w") as f:
        f.write(domain_xml(name, devices))
    w.domains.append(name)
    return lv.virsh("create", "--paused", path)


def hotplug_disk(w, name, path):
    xml = os.path.join(w.loop.tmp, f"{name}-disk.xml")
    with open(xml, "w") as f:
        f.write(disk(path))
    return lv.virsh("attach-device", name, xml, "--live")


def test_used_elsewhere(w):
    """a file another domain names in any way is kept: a <disk> of a
    defined domain, its read-only nvdimm, a transient domain, a device
    hot-plugged into a running domain only (its live XML)"""
    tap = w.tap
    files = {n: w.create(f"{n}.img") for n in ("disk", "ro", "tr", "hot")}
    users = {"disk": dom("e-disk"), "ro": dom("e-ro"),
             "tr": dom("e-tr"), "hot": dom("e-hot")}
    watcher = Watcher()
    try:
        w.define(users["disk"], disk(files["disk"]))
        w.define(users["ro"], nvdimm(files["ro"], readonly=True))
        tr = start_transient(w, users["tr"], disk(files["tr"]))
        w.define(users["hot"])
        hot = lv.virsh("start", "--paused", users["hot"])
        plug = hotplug_disk(w, users["hot"], files["hot"])
        inactive = lv.virsh("dumpxml", "--inactive", users["hot"]).stdout
        tap.ok(tr.returncode == 0 and hot.returncode == 0 and
               plug.returncode == 0 and files["hot"] not in inactive,
               "a transient domain, and a disk hot-plugged into a running "
               "domain alone (not in its definition)",
               (tr.stderr, hot.stderr, plug.stderr))
        for n in files:
            w.define(dom(f"o-{n}"), nvdimm(files[n]))
        seen = watcher.knows(2 + 1 + 4, 4)
        for n, f in files.items():
            lv.virsh("undefine", dom(f"o-{n}"))
            line = watcher.wait(f"'{f}'")
            tap.ok(seen and line and line.startswith("daxfile: kept") and
                   f"domain '{users[n]}' uses it too" in line and intact(f),
                   f"kept: the file a {n} user names", line)
    finally:
        watcher.stop()
        for name in (users["tr"], users["hot"]):
            lv.virsh("destroy", name)
        for f in files.values():
            os.unlink(f)


def test_in_use(w):
    """a process (here not QEMU) maps the file: the wipe is refused,
    naming it, and stays owed; once it lets go the file is wiped"""
    tap = w.tap
    name = dom("m1")
    f = w.create("m.img")
    mapper = subprocess.Popen(
        [sys.executable, "-c",
         "import mmap, sys\n"
         f"fd = open({f!r}, 'r+b')\n"
         "m = mmap.mmap(fd.fileno(), 0)\nfd.close()\n"
         "print('mapped', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    mapper.stdout.readline()
    watcher = Watcher()
    try:
        w.define(name, nvdimm(f))
        seen = watcher.knows(1, 1)
        lv.virsh("undefine", name)
        line = watcher.wait(f"'{f}'")
        tap.ok(seen and line and "cannot wipe" in line and
               f"pid {mapper.pid} (python3) maps it" in line and
               "tried again" in line and intact(f),
               "a process maps the file: not wiped, the process named, "
               "the wipe still owed", line)
        mapper.stdin.close()
        mapper.wait()
        line = watcher.wait(f"'{f}'")
        tap.ok(line and line.startswith("daxfile: wiped") and zeros(f),
               "the process is gone: the file is wiped at the next try",
               line)
    finally:
        mapper.kill()
        watcher.stop()
        os.unlink(f)


def test_owed(w):
    """a wipe owed outlives the watch: a domain undefined while it runs
    is wiped when it stops by the next watch; a wipe cut short by
    SIGTERM is finished by the next watch"""
    tap = w.tap
    name, big = dom("o1"), dom("o2")
    f = w.create("o1.img")
    g = w.create("o2.img", size=512 * M)
    watcher = Watcher()
    try:
        w.define(name, nvdimm(f))
        w.define(big, nvdimm(g, size=512 * M))
        start = lv.virsh("start", "--paused", name)
        lv.virsh("undefine", name)
        line = watcher.wait("while it runs")
        rc = watcher.stop()
        watcher = Watcher()
        lv.virsh("destroy", name)
        done = watcher.wait(f"'{f}'")
        tap.ok(start.returncode == 0 and line and rc == 0 and done and
               done.startswith("daxfile: wiped") and zeros(f),
               "undefined while it runs, the watch restarted, then it "
               "stops: the new watch wipes its file", (line, done))
        lv.virsh("undefine", big)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (xattr(g) or 0) > 0:
            time.sleep(0.005)
        rc = watcher.stop()
        cut = xattr(g)
        watcher = Watcher()
        done = watcher.wait(f"'{g}'", timeout=120)
        tap.ok(rc == 0 and cut and cut < 512 * M and done and
               done.startswith("daxfile: wiped") and zeros(g),
               "SIGTERM during a wipe: the next watch finishes it",
               (rc, cut, done))
    finally:
        watcher.stop()
        for p in (f, g):
            os.unlink(p)


def owed():
    """the wipes recorded as owed"""
    return os.listdir(WIPES) if os.path.isdir(WIPES) else []


BUSY_CASES = (
    "defined and undefined while the watch's main thread is held: the "
    "definition was read at its event, the file is wiped",
    "undefined before its definition could be read: the watch says so and "
    "leaves the file alone",
    "libvirtd restarts while the main thread is held: the watch says at "
    "once that it lost the connection, and reconnects when free",
    "libvirtd restarts while the watch asks whether an undefined domain is "
    "gone: no failure said, the file wiped on the new connection")


def test_busy(w):
    """the watch reads a definition on the event thread the moment
    libvirt says it was defined, whatever its main thread (wipes,
    rescans, hot-plugs) is busy with, and says at once that libvirtd went
    away; a domain undefined before even that read is said, and its file
    left alone. The threads are held at the watch's hold points
    (-Dtest_seams)."""
    tap = w.tap
    if not seams_cases(tap, BUSY_CASES, build_path("src", "daxfilectl",
                                                   "daxfile-virt")):
        return
    holds = lifeworld.Holds(w.loop.tmp)
    a, b, c = dom("ba"), dom("bb"), dom("bc")
    fa, fb, fc = w.create("ba.img"), w.create("bb.img"), w.create("bc.img")
    watcher = Watcher(holds.env)
    try:
        holds.hold("watch-main")
        held = holds.reached("watch-main")
        holds.forget("watch-defined")
        defined = w.define(a, nvdimm(fa))
        read = holds.reached("watch-defined")
        undefined = lv.virsh("undefine", a)
        holds.release("watch-main")
        line = watcher.wait(f"'{fa}'")
        tap.ok(held and defined.returncode == 0 and read and
               undefined.returncode == 0 and line and
               line.startswith("daxfile: wiped") and zeros(fa),
               BUSY_CASES[0],
               (held, defined.stderr, read, undefined.stderr, line))
        holds.hold("watch-main")
        held = holds.reached("watch-main")
        holds.hold("watch-event")
        defined = w.define(b, nvdimm(fb))
        stuck = holds.reached("watch-event")
        undefined = lv.virsh("undefine", b)
        holds.release("watch-event")
        holds.release("watch-main")
        line = watcher.wait(f"domain '{b}' was undefined before")
        time.sleep(3)  # a rescan: a wipe would have begun by now
        tap.ok(held and defined.returncode == 0 and stuck and
               undefined.returncode == 0 and line and
               "none was wiped" in line and intact(fb) and
               not watcher.said(f"'{fb}'") and not owed(),
               BUSY_CASES[1], (held, stuck, line, watcher.all))
        if w.daemon.ours:
            holds.hold("watch-main")
            held = holds.reached("watch-main")
            w.daemon.restart()
            lost = watcher.wait("lost the connection", timeout=30)
            holds.release("watch-main")
            back = watcher.wait("watching")
            tap.ok(held and lost and back, BUSY_CASES[2], (held, lost, back))
            holds.hold("watch-settle")
            defined = w.define(c, nvdimm(fc))
            undefined = lv.virsh("undefine", c)
            settling = holds.reached("watch-settle")
            w.daemon.restart()
            lost = watcher.wait("lost the connection", timeout=30)
            holds.release("watch-settle")
            line = watcher.wait(f"'{fc}'")
            tap.ok(defined.returncode == 0 and undefined.returncode == 0 and
                   settling and lost and line and
                   line.startswith("daxfile: wiped") and zeros(fc) and
                   not watcher.said("cannot"), BUSY_CASES[3],
                   (settling, lost, line, watcher.all))
        else:
            for case in BUSY_CASES[2:]:
                tap.skip(case,
                         "the running libvirtd is not the test's to restart")
    finally:
        for point in ("watch-main", "watch-event", "watch-settle"):
            holds.release(point)
        watcher.stop()
        for p in (fa, fb, fc):
            os.unlink(p)


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(9 + 2 + 3 + 3 + 5 + 2 + 2 + 4)
    with lv.Libvirtd() as daemon, lv.LoopDir() as loop:
        hook = lv.Hook(build_path("libvirt-hooks", "daxfile-hook"),
                       PREFIX, [loop.path], extra="wipe_on_undefine=true\n")
        w = World(tap, daemon, loop)
        try:
            hook.install(daemon)
            for name, func in (("wipe on undefine", test_basics),
                               ("domrename", test_rename),
                               ("unreadable definition", test_unreadable),
                               ("placement", test_placement),
                               ("used elsewhere", test_used_elsewhere),
                               ("in use", test_in_use),
                               ("owed", test_owed),
                               ("busy", test_busy)):
                tap.subtest(name, func, w)
        finally:
            w.cleanup()
            hook.remove()
            daxfile("repair")
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

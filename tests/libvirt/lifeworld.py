# SPDX-License-Identifier: GPL-2.0-or-later
"""The world of the lifecycle tests (test-hotplug, test-lifecycle,
test-random): a real libvirtd (tools/harness/libvirt_env), a loop-mounted
xfs as the managed root, the daxfile hook installed for the test, domains
QEMU starts paused (no kernel, no disk: QEMU maps the nvdimm files, which
is what the hook attests), `daxfile watch` with its lines collected.

Two modes. Verified-only: the files are not DAX (allow_non_dax), nothing
is enforced. Engaged: tests/helpers/fake-dax.so makes the loop mount's
files look like DAX to daxfile (the CLI, the watch, and the hook, which
libvirtd runs through a wrapper that sets its environment) and to QEMU
(<qemu:env> in each domain: its MAP_SYNC mapping shows VM_SYNC), so the
guard's self-test passes for real and FS_IMMUTABLE_FL is really set.
"""

import os
import re
import signal
import subprocess
import threading
import time

from daxtest import (DAXFILE, build_path, daxfile, fake_dax_env, is_immutable,
                     seams_missing)
import libvirt_env as lv

M = 1 << 20
HOOK = build_path("libvirt-hooks", "daxfile-hook")
# the watch's hold points are in the virt half of the CLI
DAXFILE_VIRT = build_path("src", "daxfilectl", "daxfile-virt")
MARK = b"\xa5" * M
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"


def nvdimm(path, size=16 * M, readonly=False):
    ro = "<readonly/>" if readonly else ""
    return (f"    <memory model='nvdimm' access='shared'>\n"
            f"      <source><path>{path}</path><alignsize unit='KiB'>2048"
            "</alignsize><pmem/></source>\n"
            f"      <target><size unit='KiB'>{size >> 10}</size><node>0"
            f"</node>{ro}</target>\n    </memory>\n")


def virtio_pmem(path, size=16 * M):
    return (f"    <memory model='virtio-pmem' access='shared'>\n"
            f"      <source><path>{path}</path></source>\n"
            f"      <target><size unit='KiB'>{size >> 10}</size></target>\n"
            "    </memory>\n")


def scribble(path):
    with open(path, "r+b") as f:
        f.write(MARK)


def intact(path):
    with open(path, "rb") as f:
        return f.read(M) == MARK


def zeros(path):
    with open(path, "rb") as f:
        return all(not any(block) for block in iter(lambda: f.read(M), b""))


class World:
    """One managed root on a loop-mounted xfs and the hook, in one mode"""

    def __init__(self, tap, daemon, loop, prefix, engaged=False,
                 conf_extra=""):
        self.tap = tap
        self.daemon = daemon
        self.loop = loop
        self.prefix = prefix
        self.engaged = engaged
        self.domains = []
        self.env = {}
        hook = HOOK
        if engaged:
            self.env = fake_dax_env(loop.path)
            # QEMU runs as libvirt-qemu and notes its MAP_SYNC mappings here
            os.chmod(self.env["DAXFILE_FAKE_DAX_SYNC"], 0o1777)
            hook = self._hook_wrapper()
        self.hook = lv.Hook(hook, prefix, [loop.path],
                            allow_non_dax=not engaged, extra=conf_extra)

    def _hook_wrapper(self):
        """libvirtd runs the hook with its own environment: a wrapper
        gives it fake-dax.so's"""
        path = os.path.join(self.loop.tmp, "hook-engaged.sh")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
            for k, v in self.env.items():
                f.write(f"{k}='{v}'; export {k}\n")
            f.write(f"exec '{HOOK}' \"$@\"\n")
        os.chmod(path, 0o755)
        return path

    def __enter__(self):
        self.hook.install(self.daemon)
        return self

    def __exit__(self, *exc):
        for name in self.domains:
            lv.cleanup_domain(name)
        self.hook.remove()
        self.dx("repair")
        return False

    def dom(self, n):
        return f"{self.prefix}-{n}"

    def path(self, name):
        return os.path.join(self.loop.path, name)

    def dx(self, *args, **kw):
        env = dict(self.env, **kw.pop("env", {}))
        return daxfile(*args, env=env, **kw)

    def with_env(self, xml):
        """@xml (a domain) with this mode's environment for its QEMU"""
        if not self.engaged:
            return xml
        qemu = ("  <qemu:commandline>\n" +
                "".join(f"    <qemu:env name='{k}' value='{v}'/>\n"
                        for k, v in self.env.items()) +
                "  </qemu:commandline>\n")
        xml = re.sub(r"^<domain type='(\w+)'>",
                     rf"<domain type='\1' xmlns:qemu='{QEMU_NS}'>", xml)
        return xml.replace("</domain>", qemu + "</domain>")

    def domain_xml(self, name, devices="", slots=4):
        """A domain QEMU can start paused (no kernel, no disk) and that
        takes nvdimms: maxMemory with slots, one NUMA cell, ACPI"""
        return self.with_env(f"""<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>128</memory>
  <maxMemory slots='{slots}' unit='MiB'>2176</maxMemory>
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
""")

    def xml_file(self, name, text):
        path = os.path.join(self.loop.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def define(self, name, devices="", slots=4):
        if name not in self.domains:
            self.domains.append(name)
        return lv.virsh("define", self.xml_file(
            f"{name}.xml", self.domain_xml(name, devices, slots)))

    def create_transient(self, name, devices=""):
        if name not in self.domains:
            self.domains.append(name)
        return lv.virsh("create", "--paused", self.xml_file(
            f"{name}.xml", self.domain_xml(name, devices)))

    def plug(self, name, device, *flags):
        """virsh attach-device NAME DEVICE (--live unless told)"""
        path = self.xml_file(f"dev-{name}-{time.monotonic_ns()}.xml", device)
        return lv.virsh("attach-device", name, path, *(flags or ["--live"]))

    def create(self, name, size=16 * M):
        """A provisioned file with a marker in its first MiB"""
        path = self.path(name)
        res = self.dx("create", path, "--size", str(size),
                      *([] if self.engaged else ["--allow-non-dax"]))
        if res.rc != 0:
            raise RuntimeError(f"daxfile create {path}: {res}")
        scribble(path)
        return path

    def entries(self, path=None):
        """The registry's entries (of @path's file only)"""
        res = self.dx("list", "--json")
        got = res.json() if res.rc == 0 else []
        if path is None:
            return got
        real = os.path.realpath(path)
        return [e for e in got if e["path"] == real]

    def entry(self, path):
        got = self.entries(path)
        return got[0] if len(got) == 1 else {}

    def status(self, path):
        res = self.dx("status", "--json", "--allow-non-dax", path)
        return res.json()[0].get("static", {}) if res.rc == 0 else {}

    def guarded(self, path):
        """Static for a domain, as this mode promises: engaged, and (with
        the guard) immutable"""
        e = self.entry(path)
        want = "immutable-guard" if self.engaged else "verified-only"
        return (e.get("state") == "engaged" and e.get("mechanism") == want
                and is_immutable(path) == self.engaged)

    def live_xml(self, name):
        return lv.virsh("dumpxml", name).stdout

    def inactive_xml(self, name):
        return lv.virsh("dumpxml", "--inactive", name).stdout

    def watcher(self, env=None):
        """`daxfile watch` with this world's environment, @env on top,
        and hold points for Watcher.define(): a directory of its own,
        unless @env names the caller's or the build has no test seams"""
        holds = Holds(self.loop.tmp)
        env = {**self.env, **holds.env, **(env or {})}
        if (env["DAXFILE_TEST_HOLD_DIR"] != holds.dir or
                os.environ.get("DAXFILE_TEST_SEAMS") == "false" or
                seams_missing(DAXFILE_VIRT)):
            holds = None
        return Watcher(env, holds)


class Watcher:
    """`daxfile watch`, its stderr lines collected"""

    def __init__(self, env=None, holds=None):
        self.lines = []
        self.all = []
        self.cond = threading.Condition()
        self.holds = holds
        self.proc = subprocess.Popen([DAXFILE, "watch"], text=True,
                                     env=dict(os.environ, **(env or {})),
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        threading.Thread(target=self._read, daemon=True).start()
        self.first = self.wait("watching")

    def _read(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.all.append(line.rstrip("\n"))
                self.cond.notify_all()

    def define(self, w, name, devices):
        """w.define(), then wait until this watch has read the definition
        (its event thread passed the hold point watch-defined). A domain
        undefined before that read leaves files the watch never knew,
        which it says and leaves alone (test-watch.py's busy case): a
        lifecycle row that undefines at once must wait for the read.
        Without hold points (a build without the test seams) the row is
        not synchronised."""
        if self.holds:
            self.holds.forget("watch-defined")
        res = w.define(name, devices)
        if self.holds and res.returncode == 0 and \
                not self.holds.reached("watch-defined"):
            raise RuntimeError(f"daxfile watch did not read {name}'s "
                               "definition in 60 s")
        return res

    def wait(self, text, timeout=60):
        """the first line since the last wait that holds @text, or None"""
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for i, line in enumerate(self.lines):
                    if text in line:
                        del self.lines[:i + 1]
                        return line
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self.cond.wait(left)

    def take(self, text, words, timeout=60):
        """the first line since the last wait that holds @text and one of
        @words, or None; only that line is taken: the lines about other
        files stay for their own take (the watch reports the files of one
        domain in the order of its records, not of the domain's XML)"""
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for i, line in enumerate(self.lines):
                    if text in line and any(w in line for w in words):
                        del self.lines[i]
                        return line
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self.cond.wait(left)

    def said(self, text):
        """every line it said so far that holds @text"""
        with self.cond:
            return [line for line in self.all if text in line]

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def one_line(res, *words):
    """@res failed with one line on stderr holding each of @words"""
    lines = res.err.splitlines()
    return (res.rc != 0 and len(lines) == 1 and
            all(w in lines[0] for w in words))


def qemu_pids(name):
    pid = lv.qemu_pid(name)
    return [pid] if pid else []


def ready_counts(line):
    """(domains, files) of a "watching N defined domains (M files" line"""
    m = re.search(r"watching (\d+) defined domains \((\d+) files",
                  line or "")
    return (int(m.group(1)), int(m.group(2))) if m else (-100, -100)


class Holds:
    """The watch's hold points (daxfile_test_hold_point()): hold(P) makes
    the thread that reaches P wait there; reached(P) waits until one
    has"""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "holds")
        os.makedirs(self.dir, exist_ok=True)
        self.env = {"DAXFILE_TEST_HOLD_DIR": self.dir}

    def hold(self, point):
        self.forget(point)
        open(os.path.join(self.dir, point), "w").close()

    def release(self, point):
        if os.path.exists(os.path.join(self.dir, point)):
            os.unlink(os.path.join(self.dir, point))

    def forget(self, point):
        mark = os.path.join(self.dir, point + ".reached")
        if os.path.exists(mark):
            os.unlink(mark)

    def reached(self, point, timeout=60):
        mark = os.path.join(self.dir, point + ".reached")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(mark):
                return True
            time.sleep(0.02)
        return False

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daxfile with a real libvirtd (root): `daxfile attach`, the qemu.d hook at
prepare/started/stopped/release, refusals shown by `virsh start`, two domains
racing for one file, detach (`daxfile watch`: test-watch.py). The daemon is
the running one, or one started here (and stopped after); the hook and a
config drop-in are installed for the test and removed after. Guests are TCG
with the VM harness's kernel.
"""

import os
import subprocess
import sys
import threading

from daxtest import Tap, build_path, daxfile, need_root
import libvirt_env as lv

HERE = os.path.dirname(os.path.abspath(__file__))

lv.daxfile_vm.add_guest_dir(os.path.join(HERE, "..", "vm", "guest"))

PREFIX = f"daxfile-test-{os.getpid()}"
M = 1 << 20


def dom(n):
    return f"{PREFIX}-{n}"


class World:
    def __init__(self, tap, daemon, loop, image):
        self.tap = tap
        self.daemon = daemon
        self.loop = loop
        self.image = image
        self.domains = []

    def path(self, name):
        return os.path.join(self.loop.path, name)

    def define(self, name, devices="", script="libvirt-smoke"):
        kernel, initrd, cmdline = self.image.files(script, tag=name)
        xml = lv.domain_xml(name, kernel, initrd, cmdline,
                            os.path.join(self.loop.tmp, f"{name}.console"),
                            os.path.join(self.loop.tmp, f"{name}.tap"),
                            devices=devices)
        self.domains.append(name)
        return lv.define(xml, self.loop.tmp, name)

    def console(self, name):
        return os.path.join(self.loop.tmp, f"{name}.console")

    def tapfile(self, name):
        return os.path.join(self.loop.tmp, f"{name}.tap")

    def cleanup(self):
        for name in self.domains:
            lv.cleanup_domain(name)


def static_of(path):
    res = daxfile("status", "--json", "--allow-non-dax", path)
    return res.json()[0].get("static", {}) if res.rc == 0 else {}


def registry_for(path):
    real = os.path.realpath(path)
    lst = daxfile("list", "--json")
    return [e for e in (lst.json() if lst.rc == 0 else [])
            if e["path"] == real]


def test_attach_start_stop(w):
    tap = w.tap
    name = dom("a")
    f = w.path("a.img")
    tap.ok(w.define(name).returncode == 0, "define a small TCG domain")
    res = daxfile("attach", name, f, "--create", "--size", "256M",
                  "--allow-non-dax")
    tap.ok(res.rc == 0 and "attached" in res.err,
           "daxfile attach --create provisions the file and wires it", res)
    xml = lv.virsh("dumpxml", "--inactive", name).stdout
    tap.ok("model='nvdimm' access='shared'" in xml and f in xml and
           "<pmem/>" in xml, "the inactive definition holds the nvdimm", xml)
    res = daxfile("attach", name, f, "--allow-non-dax")
    tap.ok(res.rc == 1 and "already attached" in res.err,
           "attaching the same file twice is refused", res)
    start = lv.virsh("start", name)
    tap.ok(start.returncode == 0, "virsh start with the hook installed",
           start.stderr)
    st = static_of(f)
    tap.ok(st.get("enabled") and st.get("owner") == f"domain:{name}" and
           st.get("mechanism") == "verified-only",
           "started: daxfile status shows it static, owned by the domain", st)
    ok = lv.wait_file(w.console(name), "DAXFILE-VM: END rc=0")
    oks, bad = lv.tap_results(w.tapfile(name))
    tap.ok(ok and len(oks) == 3 and not bad,
           "the guest sees the nvdimm: fsdax, ext4 -o dax, statx DAX",
           "\n".join(oks + bad))
    tap.ok(lv.wait_shutoff(name), "the guest powers off")
    tap.ok(registry_for(f) == [], "stopped/release: released, registry empty",
           registry_for(f))
    res = daxfile("detach", name, f)
    xml = lv.virsh("dumpxml", "--inactive", name).stdout
    tap.ok(res.rc == 0 and "nvdimm" not in xml, "daxfile detach removes it",
           res)
    detach_wipe(w, name, f)


def zeros(path):
    with open(path, "rb") as f:
        return all(not any(block) for block in iter(lambda: f.read(1 << 20),
                                                    b""))


def detach_wipe(w, name, f):
    """detach --wipe: refused before anything changes while the domain
    holds the file; once it stopped, detached and then wiped"""
    tap = w.tap
    daxfile("attach", name, f, "--allow-non-dax")
    start = lv.virsh("start", "--paused", name)
    held = daxfile("detach", "--wipe", name, f)
    xml = lv.virsh("dumpxml", "--inactive", name).stdout
    tap.ok(start.returncode == 0 and held.rc == 1 and
           len(held.err.splitlines()) == 1 and f"domain:{name}" in held.err
           and "nvdimm" in xml and not zeros(f),
           "detach --wipe of a file a running domain holds: refused, the "
           "definition and the file untouched", (start.stderr, held))
    lv.virsh("destroy", name)
    lv.wait_shutoff(name)
    res = daxfile("detach", "--wipe", name, f)
    xml = lv.virsh("dumpxml", "--inactive", name).stdout
    tap.ok(res.rc == 0 and "nvdimm" not in xml and "read back as zeros" in
           res.err and zeros(f),
           "detach --wipe once it stopped: detached, then wiped", res)


def misconfigured(w):
    good = w.path("good.img")
    daxfile("create", good, "--size", "64M", "--allow-non-dax")
    falloc = w.path("falloc.img")
    subprocess.run(["fallocate", "-l", "64M", falloc], check=True)

    def dev(path=good, access=" access='shared'", pmem="<pmem/>",
            align="<alignsize unit='KiB'>2048</alignsize>", size=65536):
        return (f"    <memory model='nvdimm'{access}>\n"
                f"      <source><path>{path}</path>{align}{pmem}</source>\n"
                f"      <target><size unit='KiB'>{size}</size><node>0</node>"
                "</target>\n    </memory>\n")
    return [
        ("no access='shared'", dev(access=""), "access is 'unset"),
        ("access='private'", dev(access=" access='private'"),
         "access is 'private'"),
        ("no <pmem/>", dev(pmem=""), "has no <pmem/>"),
        ("no <alignsize>", dev(align=""), "has no <alignsize>"),
        ("size differs from the file", dev(size=131072),
         "QEMU refuses a mismatch"),
        ("unprovisioned (fallocated) file", dev(path=falloc),
         "unwritten (fallocated, never written)"),
    ]


def test_refusals(w):
    tap = w.tap
    for i, (what, device, want) in enumerate(misconfigured(w)):
        name = dom(f"bad{i}")
        w.define(name, devices=device)
        res = lv.virsh("start", name)
        tap.ok(res.returncode != 0 and "Hook script execution failed" in
               res.stderr and want in res.stderr and
               f"domain '{name}'" in res.stderr and
               lv.state(name) == "shut off",
               f"virsh start refuses: {what}, with the hook's message",
               res.stderr)
    tap.ok(all(registry_for(w.path(n)) == [] for n in ("good.img",
                                                       "falloc.img")),
           "no refused start left a registry entry")


def test_race(w):
    tap = w.tap
    f = w.path("shared.img")
    daxfile("create", f, "--size", "128M", "--allow-non-dax")
    device = ("    <memory model='nvdimm' access='shared'>\n"
              f"      <source><path>{f}</path><alignsize unit='KiB'>2048"
              "</alignsize><pmem/></source>\n"
              "      <target><size unit='KiB'>131072</size><node>0</node>"
              "</target>\n    </memory>\n")
    names = [dom("r1"), dom("r2")]
    for n in names:
        w.define(n, devices=device)
    results = {}

    def start(n):
        results[n] = lv.virsh("start", n)
    threads = [threading.Thread(target=start, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [n for n in names if results[n].returncode == 0]
    lost = [n for n in names if results[n].returncode != 0]
    loser_err = results[lost[0]].stderr if lost else ""
    tap.ok(len(won) == 1 and len(lost) == 1 and
           f"'domain:{won[0]}'" in loser_err,
           "two domains started at once on one file: one wins, the other is "
           "refused with the owner named",
           "\n".join(f"{n}: {results[n].returncode} {results[n].stderr}"
                     for n in names))
    for n in won:
        lv.wait_shutoff(n)
    tap.ok(registry_for(f) == [], "after the winner stops, the file is free",
           registry_for(f))


# libvirt 9.0 (Debian 12) defines a domain with a virtio-pmem device but
# cannot start it: it has no parser for QEMU's report of the device.
LIBVIRT_NO_VIRTIO_PMEM = "virtio-pmem memory device info is not handled yet"


def test_virtio_pmem(w):
    """attach --model virtio-pmem wires the file as libvirt wants it; at
    start the hook reserves and engages it as an nvdimm's, and whatever
    the start comes to, the file is released after."""
    tap = w.tap
    name = dom("vp")
    f = w.path("vp.img")
    w.define(name)
    daxfile("create", f, "--size", "64M", "--allow-non-dax")
    bad = daxfile("attach", "--model", "virtio-pmem", "--label-size", "128K",
                  name, f, "--allow-non-dax")
    res = daxfile("attach", "--model", "virtio-pmem", name, f,
                  "--allow-non-dax")
    xml = lv.virsh("dumpxml", "--inactive", name).stdout
    tap.ok(bad.rc == 2 and "virtio-pmem device has no --label-size" in
           bad.err and res.rc == 0 and
           "model='virtio-pmem' access='shared'" in xml and f in xml and
           "<pmem/>" not in xml,
           "attach --model virtio-pmem: the definition holds it (and a "
           "label for it is refused)", (bad, res, xml))
    start = lv.virsh("start", "--paused", name)
    if start.returncode == 0:
        st = static_of(f)
        q = st.get("qemu") or {}
        tap.ok(st.get("enabled") and st.get("device") == "virtio-pmem" and
               q.get("attested"),
               "virsh start: static for the domain, QEMU's mapping attested",
               st)
        lv.virsh("destroy", name)
        lv.wait_shutoff(name)
    else:
        tap.ok(LIBVIRT_NO_VIRTIO_PMEM in start.stderr,
               "virsh start: this libvirt cannot start a virtio-pmem "
               "domain (libvirt's own error, not the hook's)", start.stderr)
    tap.ok(registry_for(f) == [] and not static_of(f).get("enabled"),
           "after the domain is down: released, registry empty",
           registry_for(f))
    res = daxfile("detach", name, f)
    xml = lv.virsh("dumpxml", "--inactive", name).stdout
    tap.ok(res.rc == 0 and "virtio-pmem" not in xml,
           "daxfile detach removes the virtio-pmem device", res)


def test_attach_prerequisites(w):
    tap = w.tap
    name = dom("plain")
    kernel, initrd, cmdline = w.image.files("libvirt-smoke", tag=name)
    xml = lv.domain_xml(name, kernel, initrd, cmdline, "/dev/null",
                        "/dev/null")
    xml = (xml.replace("<features><acpi/></features>", "")
           .replace("  <maxMemory slots='4' unit='MiB'>4608</maxMemory>\n",
                    ""))
    w.domains.append(name)
    lv.define(xml, w.loop.tmp, name)
    f = w.path("pre.img")
    daxfile("create", f, "--size", "64M", "--allow-non-dax")
    res = daxfile("attach", name, f, "--allow-non-dax")
    tap.ok(res.rc == 1 and "no <maxMemory slots=...>" in res.err and
           "fix:" in res.err, "attach names a missing <maxMemory> and the fix",
           res)
    res = daxfile("attach", "no-such-domain-here", f, "--allow-non-dax")
    tap.ok(res.rc == 1 and "no-such-domain-here" in res.err,
           "attach to an unknown domain fails clearly", res)


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(23 + 4)
    bins = [build_path("tests", "vm", "dax-probe")]
    with lv.Libvirtd() as daemon, lv.LoopDir() as loop:
        image = lv.GuestImage(loop.tmp, bins)
        hook = lv.Hook(build_path("libvirt-hooks", "daxfile-hook"),
                       PREFIX, [loop.path])
        w = World(tap, daemon, loop, image)
        try:
            hook.install(daemon)
            tap.subtest("attach/start/stop", test_attach_start_stop, w)
            tap.subtest("refusals", test_refusals, w)
            tap.subtest("race", test_race, w)
            tap.subtest("attach prerequisites", test_attach_prerequisites, w)
            tap.subtest("virtio-pmem", test_virtio_pmem, w)
        finally:
            w.cleanup()
            hook.remove()
            daxfile("repair")
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

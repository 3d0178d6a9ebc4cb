#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Hot-plug with a real libvirtd (issue 35 item 7): libvirt runs no hook
when a device is added to a running domain, so daxfile owns that path.
`daxfile attach` on a running domain does what a start does (the hook's
checks, reservation, attach, attestation of QEMU's new mapping, static
with that QEMU as the consumer; the reservation back when libvirt
refuses); `daxfile watch` takes up a device anyone else added (virsh
attach-device --live): static when it passes every check, else held for
the domain unguarded (daxfile list/status say so) or, when another domain
holds the file, one line; a domain whose file another domain's QEMU maps
does not start. Domains are started paused (QEMU maps the files).
--engaged: the guard really engaged (lifeworld.py: fake-dax.so).
"""

import os
import subprocess
import sys

from daxtest import Tap, build_path, is_immutable, need_root, seams_cases
import libvirt_env as lv
from lifeworld import (HOOK, M, Holds, World, intact, nvdimm, one_line,
                       virtio_pmem)

ENGAGED = "--engaged" in sys.argv[1:]
PREFIX = f"daxfile-plug{'-e' if ENGAGED else ''}-{os.getpid()}"


def nondax(w):
    return [] if w.engaged else ["--allow-non-dax"]


def running(w, name, *files, slots=4):
    """@name defined on @files (nvdimms) and started paused"""
    w.define(name, "".join(nvdimm(f) for f in files), slots=slots)
    res = lv.virsh("start", "--paused", name)
    if res.returncode != 0:
        raise RuntimeError(f"virsh start {name}: {res.stderr}")


def unprovisioned(w, name):
    path = w.path(name)
    subprocess.run(["fallocate", "-l", str(16 * M), path], check=True)
    return path


def hook_call(w, name, op, subop, xml):
    """The hook as libvirt runs it, with this process as its libvirtd"""
    return subprocess.run([HOOK, name, op, subop, "-"], input=xml, text=True,
                          capture_output=True, env=dict(os.environ, **w.env))


def t_attach(w):
    """daxfile attach on a running domain: checked, reserved, attached
    live and persistent, QEMU's mapping attested, static with that QEMU
    as the consumer"""
    tap = w.tap
    a = w.dom("a")
    fa, fb = w.create("a0.img"), w.create("a1.img")
    running(w, a, fa)
    res = w.dx("attach", a, fb, *nondax(w))
    tap.ok(res.rc == 0 and "(live and persistent)" in res.err and
           fb in w.live_xml(a) and fb in w.inactive_xml(a),
           "daxfile attach on a running domain: live and persistent", res)
    st = w.status(fb)
    qemu = st.get("qemu") or {}
    tap.ok(w.guarded(fb) and st.get("owner") == f"domain:{a}" and
           qemu.get("attested") and qemu.get("pid") == lv.qemu_pid(a),
           "the new file is static for the domain, QEMU's mapping attested",
           (w.entries(), st))
    lv.virsh("destroy", a)
    tap.ok(w.entries(fa) == [] and w.entries(fb) == [] and
           not is_immutable(fb),
           "the domain stops: both files released", w.entries())


def t_attach_refused(w):
    """libvirt refuses the device after daxfile's checks passed (the live
    domain has no free slot, its definition has): the reservation goes
    back, nothing is static"""
    tap = w.tap
    c = w.dom("c")
    f1, f2, f3 = (w.create(f"c{i}.img") for i in (1, 2, 3))
    running(w, c, f1, slots=2)
    full = w.plug(c, nvdimm(f2))
    res = w.dx("attach", c, f3, *nondax(w))
    tap.ok(full.returncode == 0 and
           one_line(res, "libvirt refused the nvdimm",
                    "its reservation was released") and
           w.entries(f3) == [] and not is_immutable(f3) and
           f3 not in w.live_xml(c) and f3 not in w.inactive_xml(c),
           "libvirt refuses the hot-plug: one line, the reservation "
           "released, nothing attached", (full.stderr, res, w.entries()))
    lv.virsh("destroy", c)


def t_held(w):
    """a file another domain holds: running, or stopped but reserved (its
    start under way): daxfile attach refuses it before libvirt sees it"""
    tap = w.tap
    a, a2, b = w.dom("ha"), w.dom("ha2"), w.dom("hb")
    fa, fa2, fb = w.create("ha.img"), w.create("ha2.img"), w.create("hb.img")
    running(w, a, fa)
    running(w, b, fb)
    res = w.dx("attach", b, fa, *nondax(w))
    tap.ok(one_line(res, fa, f"domain:{a}", "fix:") and
           fa not in w.live_xml(b) and fa not in w.inactive_xml(b) and
           w.guarded(fa) and w.entry(fa).get("owner") == f"domain:{a}",
           "attach of a file a running domain holds: refused in one line, "
           "nothing attached, its holder untouched", res)
    w.define(a2, nvdimm(fa2))
    xml = w.inactive_xml(a2)
    prep = hook_call(w, a2, "prepare", "begin", xml)
    res = w.dx("attach", b, fa2, *nondax(w))
    tap.ok(prep.returncode == 0 and
           one_line(res, fa2, f"domain:{a2}", "reserved") and
           fa2 not in w.live_xml(b),
           "attach of a file a stopped domain has reserved (its start "
           "under way): refused, naming it", (prep.stderr, res))
    hook_call(w, a2, "release", "end", xml)
    for name in (a, b):
        lv.virsh("destroy", name)


def t_watch(w):
    """virsh attach-device --live with the watch running: a valid file is
    made static; an unprovisioned one is held unguarded (list, status),
    survives a libvirtd restart (libvirt kills a domain whose reconnect
    hook fails) and is released when the domain stops; QEMU cannot unplug
    an nvdimm"""
    tap = w.tap
    d = w.dom("w")
    f0, f1 = w.create("w0.img"), w.create("w1.img")
    f2 = unprovisioned(w, "w2.img")
    running(w, d, f0)
    with w.watcher() as watcher:
        plug = w.plug(d, nvdimm(f1))
        line = watcher.wait(f"'{f1}'")
        tap.ok(plug.returncode == 0 and line and "made" in line and
               f"domain '{d}'" in line and "nvdimm1" in line and
               w.guarded(f1),
               "virsh attach-device --live: the watch makes it static, one "
               "line naming domain and device", (plug.stderr, line,
                                                 w.entries()))
        plug = w.plug(d, nvdimm(f2))
        line = watcher.wait(f"'{f2}'")
        e = w.entry(f2)
        listed = w.dx("list").out
        shown = w.dx("status", "--allow-non-dax", f2).out
        tap.ok(plug.returncode == 0 and line and "NOT static" in line and
               "unwritten" in line and f"domain '{d}'" in line and
               "nvdimm2" in line and e.get("state") == "reserved" and
               "unwritten" in (e.get("unguarded") or "") and
               "unguarded" in listed and "unguarded:" in shown and
               not is_immutable(f2),
               "an unprovisioned file: one line why, held for the domain "
               "unguarded, shown so by list and status",
               (line, e, listed, shown))
        unplug = lv.virsh("detach-device", d,
                          w.xml_file("unplug.xml", nvdimm(f1)), "--live")
        tap.ok(unplug.returncode != 0 and "not supported" in unplug.stderr
               and w.guarded(f1),
               "virsh detach-device --live: QEMU cannot unplug an nvdimm, "
               "the file stays static", unplug.stderr)
        restarted = w.daemon.restart()
        back = watcher.wait("watching") if restarted else None
        tap.ok(restarted and back and lv.state(d) == "paused" and
               w.guarded(f1) and w.entry(f2).get("unguarded"),
               "libvirtd restarts: the domain keeps running, static and "
               "unguarded as before", (restarted, back, lv.state(d),
                                       w.entries()))
        lv.virsh("destroy", d)
        tap.ok(all(w.entries(f) == [] and not is_immutable(f)
                   for f in (f0, f1, f2)),
               "the domain stops: every file released, the unguarded one "
               "too", w.entries())


SCAN_CASE = ("a domain started while the watch scans for hot-plugs: the "
             "scan leaves it to the hook, its file static for it")


def t_scan_started(w):
    """a domain that starts while the watch looks for devices added while
    it was not looking (a scan at another domain's stop) is the hook's:
    the scan says nothing of it, and its file stays static for it"""
    tap = w.tap
    if not seams_cases(tap, [SCAN_CASE], build_path("src", "daxfilectl",
                                                    "daxfile-virt")):
        return
    holds = Holds(w.loop.tmp)
    a, b = w.dom("sa"), w.dom("sb")
    fa, fb = w.create("sa.img"), w.create("sb.img")
    running(w, a, fa)
    w.define(b, nvdimm(fb))
    with w.watcher(holds.env) as watcher:
        try:
            holds.hold("watch-plug-scan")
            lv.virsh("destroy", a)
            held = holds.reached("watch-plug-scan")
            start = lv.virsh("start", "--paused", b)
        finally:
            holds.release("watch-plug-scan")
        line = watcher.wait(f"'{fb}'", timeout=10)
        e = w.entry(fb)
        tap.ok(held and start.returncode == 0 and not line and
               w.guarded(fb) and e.get("owner") == f"domain:{b}" and
               not e.get("unguarded"),
               SCAN_CASE, (held, start.stderr, line, e, watcher.all))
        lv.virsh("destroy", b)


def t_watch_held(w):
    """virsh attach-device --live of a file another domain holds; of a
    stopped domain's file, which that domain then cannot start on, with
    the watch running and without it"""
    tap = w.tap
    a, a3, b = w.dom("xa"), w.dom("xa3"), w.dom("xb")
    fa, fa3, fb = w.create("xa.img"), w.create("xa3.img"), w.create("xb.img")
    running(w, a, fa)
    running(w, b, fb)
    with w.watcher() as watcher:
        plug = w.plug(b, nvdimm(fa))
        if w.engaged:
            tap.ok(plug.returncode != 0 and fa not in w.live_xml(b) and
                   w.guarded(fa) and intact(fa),
                   "another domain's static file: the guard refuses QEMU "
                   "its writable open, libvirt refuses the device",
                   plug.stderr)
        else:
            line = watcher.wait(f"'{fa}'")
            tap.ok(plug.returncode == 0 and line and "NOT static" in line
                   and f"domain '{b}'" in line and f"domain:{a}" in line and
                   w.entry(fa).get("owner") == f"domain:{a}",
                   "another domain's file (nothing enforced, libvirt adds "
                   "it): one line naming both domains, the holder kept",
                   (plug.stderr, line))
        lv.virsh("destroy", a)
        # verified-only, b has it already: the watch takes it up once its
        # holder stopped
        plug = w.plug(b, nvdimm(fa)) if w.engaged else None
        line = watcher.wait(f"'{fa}'")
        start = lv.virsh("start", "--paused", a)
        tap.ok((not plug or plug.returncode == 0) and line and
               "made" in line and
               w.entry(fa).get("owner") == f"domain:{b}" and
               start.returncode != 0 and f"domain:{b}" in start.stderr and
               lv.state(a) == "shut off",
               "a stopped domain's file hot-plugged elsewhere: static for "
               "that domain; the first one's start is refused, naming it",
               (plug and plug.stderr, line, start.stderr))
    w.define(a3, nvdimm(fa3))
    plug = w.plug(b, nvdimm(fa3))
    start = lv.virsh("start", "--paused", a3)
    tap.ok(plug.returncode == 0 and w.entries(fa3) == [] and
           start.returncode != 0 and "is mapped by process" in start.stderr
           and "qemu" in start.stderr and lv.state(a3) == "shut off",
           "the same with no watch running: the start is refused, naming "
           "the QEMU that maps the file", (plug.stderr, start.stderr))
    lv.virsh("destroy", b)


def t_virtio_pmem(w):
    """virtio-pmem: attach adds it to the definition only (libvirt 9.0
    would hot-plug it, then kill the domain at its next restart, unable
    to read QEMU's report of it); one added live by hand is taken up by
    the watch as an nvdimm is"""
    tap = w.tap
    e, a = w.dom("v"), w.dom("va")
    f0, f1, f2 = w.create("v0.img"), w.create("v1.img"), w.create("v2.img")
    fa = w.create("va.img")
    running(w, e, f0)
    running(w, a, fa)
    res = w.dx("attach", "--model", "virtio-pmem", e, f1, *nondax(w))
    tap.ok(res.rc == 0 and "(persistent)" in res.err and
           "next boot" in res.err and f1 in w.inactive_xml(e) and
           f1 not in w.live_xml(e) and w.entries(f1) == [],
           "daxfile attach --model virtio-pmem on a running domain: the "
           "definition only, said", res)
    with w.watcher() as watcher:
        plug = w.plug(e, virtio_pmem(f2))
        line = watcher.wait(f"'{f2}'")
        st = w.status(f2)
        tap.ok(plug.returncode == 0 and line and "made" in line and
               w.guarded(f2) and (st.get("qemu") or {}).get("attested") and
               st.get("device") == "virtio-pmem",
               "virsh attach-device --live of a virtio-pmem device: the "
               "watch makes it static, QEMU's mapping attested",
               (plug.stderr, line, st))
        plug = w.plug(e, virtio_pmem(fa))
        line = None if w.engaged else watcher.wait(f"'{fa}'")
        tap.ok((plug.returncode != 0 if w.engaged else
                line and "NOT static" in line and f"domain:{a}" in line)
               and w.entry(fa).get("owner") == f"domain:{a}",
               "a virtio-pmem device on another domain's file: refused "
               "(guard) or said (verified-only), the holder kept",
               (plug.stderr, line))
    for name in (e, a):
        lv.virsh("destroy", name)
    tap.ok(all(w.entries(f) == [] for f in (f0, f2, fa)),
           "both domains stop: released", w.entries())


def t_transient(w):
    """a transient domain (virsh create) has no definition: attach plugs
    the device live only, with every check"""
    tap = w.tap
    t = w.dom("t")
    f0, f1 = w.create("t0.img"), w.create("t1.img")
    made = w.create_transient(t, nvdimm(f0))
    res = w.dx("attach", t, f1, *nondax(w))
    tap.ok(made.returncode == 0 and res.rc == 0 and "(live)" in res.err and
           f1 in w.live_xml(t) and w.guarded(f1),
           "daxfile attach on a transient domain: live only, static",
           (made.stderr, res))
    lv.virsh("destroy", t)
    tap.ok(w.entries(f1) == [] and not is_immutable(f1),
           "it stops: released", w.entries())


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(3 + 1 + 2 + 5 + 1 + 3 + 4 + 2)
    with lv.Libvirtd() as daemon, lv.LoopDir() as loop:
        with World(tap, daemon, loop, PREFIX, engaged=ENGAGED) as w:
            for name, func in (("attach", t_attach),
                               ("attach refused", t_attach_refused),
                               ("held", t_held),
                               ("watch", t_watch),
                               ("watch: a domain starting", t_scan_started),
                               ("watch: held elsewhere", t_watch_held),
                               ("virtio-pmem", t_virtio_pmem),
                               ("transient", t_transient)):
                tap.subtest(name, func, w)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The lifecycle matrix (issue 35, docs/guarantees.md "Every libvirt
operation"): each libvirt operation a user can run on a domain with a
managed nvdimm, against a real libvirtd, with `daxfile watch` running and
wipe_on_undefine=true: define and undefine (plain, --nvram, while
running), start, destroy, shutdown (a guest that answers the ACPI power
button), save and restore, managedsave, snapshot-create-as --memspec,
domrename, a transient domain, a libvirtd restart while the watch runs,
two watches at once. Each row checks the registry and the guard (static
while the domain runs, released when it stops), that no file of a defined
domain is zeroed, and what is wiped. save/restore measure what QEMU
writes of the pmem into the state file and what restore does to the
backing file. Hot-plug rows: test-hotplug.py; migration: test-migrate.py.
--engaged: the guard really engaged (lifeworld.py: fake-dax.so).
"""

import os
import sys
import time

from daxtest import Tap, is_immutable, need_root
import libvirt_env as lv
from lifeworld import M, World, intact, nvdimm, zeros

HERE = os.path.dirname(os.path.abspath(__file__))

lv.daxfile_vm.add_guest_dir(os.path.join(HERE, "..", "vm", "guest"))

ENGAGED = "--engaged" in sys.argv[1:]
PREFIX = f"daxfile-life{'-e' if ENGAGED else ''}-{os.getpid()}"
LATER = b"\x5a" * 4096  # written while a domain is saved
MANAGED_SAVE = "/var/lib/libvirt/qemu/save"


def start(name):
    res = lv.virsh("start", "--paused", name)
    if res.returncode != 0:
        raise RuntimeError(f"virsh start {name}: {res.stderr}")


def released(w, path):
    return w.entries(path) == [] and not is_immutable(path)


def marks(path, mark):
    """how many times @mark is in @path"""
    with open(path, "rb") as f:
        return f.read().count(mark)


def t_undefine(w, watcher):
    """define/undefine: plain and with --nvram, wiped; while it runs:
    still static, wiped only once it stopped"""
    tap = w.tap
    for flag in ([], ["--nvram"]):
        name = w.dom(f"u{len(flag)}")
        f = w.create(f"u{len(flag)}.img")
        # undefined at once: only after the watch has read the definition
        # (CI once undefined it first, and the watch rightly left the file
        # it had never known)
        watcher.define(w, name, nvdimm(f))
        res = lv.virsh("undefine", name, *flag)
        line = watcher.wait(f"'{f}'")
        tap.ok(res.returncode == 0 and line and
               line.startswith("daxfile: wiped") and zeros(f),
               f"undefine {' '.join(flag) or '(plain)'}: the file is wiped",
               (res.stderr, line, watcher.all[-5:]))
    name = w.dom("ur")
    f = w.create("ur.img")
    w.define(name, nvdimm(f))
    start(name)
    res = lv.virsh("undefine", name)
    line = watcher.wait("while it runs")
    tap.ok(res.returncode == 0 and line and name in line and w.guarded(f)
           and intact(f),
           "undefine while it runs: still static, nothing wiped yet",
           (res.stderr, line, w.entries()))
    lv.virsh("destroy", name)
    line = watcher.wait(f"'{f}'")
    tap.ok(line and line.startswith("daxfile: wiped") and zeros(f) and
           released(w, f),
           "it stops: released, then wiped", (line, w.entries()))


def t_start_destroy(w, watcher):
    """start: static for the domain; destroy: released, content kept"""
    tap = w.tap
    name = w.dom("s")
    f = w.create("s.img")
    w.define(name, nvdimm(f))
    start(name)
    tap.ok(w.guarded(f) and w.entry(f).get("owner") == f"domain:{name}",
           "start: static for the domain", w.entries())
    lv.virsh("destroy", name)
    tap.ok(released(w, f) and intact(f),
           "destroy: released, the file as it was", w.entries())


def t_shutdown(w, watcher):
    """virsh shutdown of a guest that powers off: released as at destroy"""
    tap = w.tap
    name = w.dom("g")
    f = w.create("g.img")
    # a slim image: Debian's kernel and the ACPI button driver, which
    # enables the power button the script waits for
    image = lv.GuestImage(w.loop.tmp, image=lv.daxfile_vm.build_image(
        "6.1", modules=["button"]))
    kernel, initrd, cmdline = image.files("acpi-shutdown", tag=name)
    console = os.path.join(w.loop.tmp, f"{name}.console")
    xml = lv.domain_xml(name, kernel, initrd, cmdline, console,
                        os.path.join(w.loop.tmp, f"{name}.tap"),
                        memory_mib=256, vcpus=1, devices=nvdimm(f),
                        loader=lv.nested_loader(), virt="qemu")
    w.domains.append(name)
    lv.define(w.with_env(xml), w.loop.tmp, name)
    res = lv.virsh("start", name)
    up = lv.wait_file(console, "DAXFILE-ACPI: ready", 240)
    tap.ok(res.returncode == 0 and up and w.guarded(f),
           "a booted guest: static for the domain", (res.stderr, up))
    res = lv.virsh("shutdown", name)
    off = lv.wait_shutoff(name, 240)
    tap.ok(res.returncode == 0 and off and released(w, f) and
           lv.tap_results(os.path.join(w.loop.tmp, f"{name}.tap"))[1] == [],
           "virsh shutdown: the guest powers off, the file is released",
           (res.stderr, off, w.entries()))


def t_save(w, watcher):
    """virsh save / restore: released while saved; the state file holds
    the pmem's contents (QEMU migrates a shared memory backend as RAM),
    and restore writes them back over the file"""
    tap = w.tap
    name = w.dom("sv")
    f = w.create("sv.img")
    state = os.path.join(w.loop.tmp, f"{name}.save")
    w.define(name, nvdimm(f))
    start(name)
    res = lv.virsh("save", name, state)
    tap.ok(res.returncode == 0 and released(w, f) and intact(f) and
           marks(state, b"\xa5" * 4096) >= 255,
           "virsh save: released; the state file holds the pmem's "
           "contents (the marker MiB)", (res.stderr, w.entries()))
    with open(f, "r+b") as out:
        out.seek(8 * M)
        out.write(LATER)
    res = lv.virsh("restore", state, "--paused")
    tap.ok(res.returncode == 0 and w.guarded(f) and intact(f) and
           marks(f, LATER) == 0,
           "virsh restore: static again; the file is the saved image "
           "again (a change made while saved is gone)",
           (res.stderr, w.entries()))
    res = lv.virsh("managedsave", name)
    saved = os.path.join(MANAGED_SAVE, f"{name}.save")
    held = marks(saved, b"\xa5" * 4096) if os.path.exists(saved) else 0
    tap.ok(res.returncode == 0 and released(w, f) and held >= 255,
           "virsh managedsave: released; libvirt's save image holds the "
           "pmem's contents", (res.stderr, w.entries()))
    start(name)
    tap.ok(w.guarded(f) and intact(f) and not os.path.exists(saved),
           "start from the managed save: restored, static again",
           w.entries())
    lv.virsh("destroy", name)


def t_snapshot(w, watcher):
    """snapshot-create-as --memspec (external): no hook runs, the domain
    runs on, static; the memory file holds the pmem's contents"""
    tap = w.tap
    name = w.dom("sn")
    f = w.create("sn.img")
    mem = os.path.join(w.loop.tmp, f"{name}.mem")
    w.define(name, nvdimm(f))
    start(name)
    res = lv.virsh("snapshot-create-as", name, "s1", "--memspec",
                   f"file={mem},snapshot=external")
    tap.ok(res.returncode == 0 and lv.state(name) == "paused" and
           w.guarded(f) and marks(mem, b"\xa5" * 4096) >= 255,
           "snapshot --memspec: the domain runs on, static; its memory "
           "file holds the pmem's contents", (res.stderr, w.entries()))
    lv.virsh("destroy", name)
    lv.virsh("snapshot-delete", name, "s1", "--metadata")


def t_rename(w, watcher):
    """domrename (of a stopped domain) is no undefine; the renamed domain
    starts and holds the file under its new name"""
    tap = w.tap
    old, new = w.dom("r1"), w.dom("r2")
    f = w.create("r.img")
    w.define(old, nvdimm(f))
    res = lv.virsh("domrename", old, new)
    w.domains.append(new)
    start(new)
    tap.ok(res.returncode == 0 and intact(f) and
           not watcher.said(f"'{f}'") and w.guarded(f) and
           w.entry(f).get("owner") == f"domain:{new}",
           "domrename: the file untouched, static for the new name",
           (res.stderr, w.entries()))
    lv.virsh("destroy", new)


def t_transient(w, watcher):
    """a transient domain (virsh create): static while it runs; at its
    end it is gone, but it was never defined: nothing is wiped"""
    tap = w.tap
    name = w.dom("t")
    f = w.create("t.img")
    res = w.create_transient(name, nvdimm(f))
    tap.ok(res.returncode == 0 and w.guarded(f),
           "virsh create: static for the domain", res.stderr)
    lv.virsh("destroy", name)
    tap.ok(released(w, f) and intact(f) and not watcher.said(f"'{f}'"),
           "it stops and is gone: released, not wiped", w.entries())


def t_restart(w, watcher):
    """libvirtd restarts while a domain runs and the watch watches: the
    domain runs on, static (reconnect); the watch reconnects and still
    wipes"""
    tap = w.tap
    name, other = w.dom("lr"), w.dom("lo")
    f, g = w.create("lr.img"), w.create("lo.img")
    w.define(name, nvdimm(f))
    w.define(other, nvdimm(g))
    start(name)
    restarted = w.daemon.restart()
    lost = watcher.wait("lost the connection") if restarted else None
    back = watcher.wait("watching") if restarted else None
    tap.ok(restarted and lost and back and lv.state(name) == "paused" and
           w.guarded(f),
           "libvirtd restarts: the domain runs on, static; the watch "
           "reconnects", (restarted, lost, back, w.entries()))
    lv.virsh("undefine", other)
    line = watcher.wait(f"'{g}'")
    tap.ok(line and line.startswith("daxfile: wiped") and zeros(g) and
           intact(f), "and wipes an undefined domain's file as before",
           line)
    lv.virsh("destroy", name)


def t_two_watches(w, watcher):
    """a second watch at once: a file is wiped once, whole, and nothing
    else is touched"""
    tap = w.tap
    name, keep = w.dom("tw"), w.dom("tk")
    f, g = w.create("tw.img"), w.create("tk.img")
    with w.watcher() as second:
        w.define(name, nvdimm(f))
        w.define(keep, nvdimm(g))
        lv.virsh("undefine", name)
        # Both react to the same event: when their checks overlap, each
        # sees the other's descriptor, says the file is in use and tries
        # again (every 2 s), until one of them finds it free and wipes it
        deadline = time.monotonic() + 60
        wiped = None
        while not wiped and time.monotonic() < deadline:
            wiped = (watcher.take(f"'{f}'", ["wiped"], timeout=0.5) or
                     second.take(f"'{f}'", ["wiped"], timeout=0.5))
        said = watcher.said(f"'{f}'") + second.said(f"'{f}'")
        tap.ok(wiped and zeros(f) and intact(g) and
               not [x for x in said if "cannot" in x and
                    "tried again" not in x],
               "two watches: the undefined domain's file wiped (by one of "
               "them), the other domain's kept", said)


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(4 + 2 + 2 + 4 + 1 + 1 + 2 + 2 + 1)
    with lv.Libvirtd() as daemon, lv.LoopDir() as loop:
        with World(tap, daemon, loop, PREFIX, engaged=ENGAGED,
                   conf_extra="wipe_on_undefine=true\n") as w:
            with w.watcher() as watcher:
                for name, func in (("undefine", t_undefine),
                                   ("start/destroy", t_start_destroy),
                                   ("shutdown", t_shutdown),
                                   ("save/restore", t_save),
                                   ("snapshot", t_snapshot),
                                   ("domrename", t_rename),
                                   ("transient", t_transient),
                                   ("libvirtd restart", t_restart),
                                   ("two watches", t_two_watches)):
                    tap.subtest(name, func, w, watcher)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

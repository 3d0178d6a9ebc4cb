# SPDX-License-Identifier: GPL-2.0-or-later
"""The chain suite's emulated host, CHAIN_STAGE=first (see l1-chain.py)."""

import contextlib
import hashlib
import os
import re
import subprocess
import sys
import termios
import time

from daxtest import daxfile, enforced
import libvirt_env as lv
from l1common import (FILES, IMAGES, LIFE, LIFE_FILES, M, MAIN,
                      PHASES, STALL, VPMEM, VPMEM_FILE, WORK, cfg,
                      console_tail, diag, domain, entries, entry_of,
                      export_caps, host_up, layout_refusals,
                      libvirtd_log_tail, libvirtd_start, libvirtd_stop,
                      owner_mode, qemu_vmflags, status, t_attested,
                      t_static_running, tap, wait_chunks)


# ---------------------------------------------------------- stage first

def t_create():
    for fs, path in FILES.items():
        res = daxfile("create", path, "--size", "128M")
        s = status(path) if res.rc == 0 else None
        tap.ok(s and s["static_ready"] and s["dax"],
               f"{fs}: daxfile create on the -o dax mount: DAX, written, "
               "aligned", res.err or s)


def t_running(orig):
    res = lv.virsh("start", "--paused", MAIN)
    if not tap.ok(res.returncode == 0, "virsh start --paused: the hook "
                  "engages at started, QEMU keeps its mapping",
                  res.stderr + libvirtd_log_tail()):
        return False
    for fs, path in FILES.items():
        t_static_running(fs, path, MAIN)
    return True


def t_attested_main():
    """What the hook attested at started, for both files"""
    for fs, path in FILES.items():
        t_attested(fs, path, MAIN)


NOSYNC = "/mnt/xfs/chain-nosync.img"
# (in /usr/bin: libvirtd's AppArmor profile lets it run programs there)
NOSYNC_QEMU = "/usr/bin/qemu-no-map-sync"


def t_no_map_sync():
    """A QEMU that maps its pmem without MAP_SYNC (as one built without
    libpmem does, with only a warning in the domain's log) is refused at
    started, on real DAX, and nothing is left engaged."""
    name = "chain-nosync"
    os.makedirs(os.path.dirname(NOSYNC_QEMU), exist_ok=True)
    with open(NOSYNC_QEMU, "w") as f:
        f.write("#!/usr/bin/python3\n# QEMU with its memory backends' pmem "
                "switched off\nimport os, sys\nargs = [a.replace("
                "'\"pmem\":true', '\"pmem\":false') for a in sys.argv[1:]]"
                "\nos.execv('/usr/bin/qemu-system-x86_64', "
                "['qemu-system-x86_64'] + args)\n")
    os.chmod(NOSYNC_QEMU, 0o755)
    res = daxfile("create", NOSYNC, "--size", "64M")
    # under AppArmor this domain's QEMU runs unconfined: its profile would
    # not let the stand-in (a Python script) run Python
    seclabel = ("  <seclabel type='none' model='apparmor'/>\n"
                if lv.apparmor_confines_libvirtd() else "")
    xml = lv.domain_xml(name, f"{IMAGES}/vmlinux", f"{IMAGES}/initrd",
                        "quiet", f"{WORK}/{name}.console",
                        f"{WORK}/{name}.tap", memory_mib=256,
                        loader=lv.nested_loader(), virt="qemu",
                        devices=f"    <emulator>{NOSYNC_QEMU}</emulator>\n")
    if seclabel:
        xml = xml.replace("</domain>", seclabel + "</domain>")
    defined = lv.define(xml, WORK, name)
    export_caps()
    att = daxfile("attach", name, NOSYNC) if defined.returncode == 0 \
        else None
    if not tap.ok(res.rc == 0 and att and att.rc == 0,
                  "a domain whose QEMU maps pmem without MAP_SYNC: defined "
                  "and attached", (res.err, defined.stderr,
                                   att.err if att else "")):
        return
    res = lv.virsh("start", "--paused", name)
    tap.ok(res.returncode != 0 and "without MAP_SYNC" in res.stderr and
           not entry_of(NOSYNC) and not enforced(NOSYNC) and
           lv.state(name) == "shut off",
           "its start is refused at started (the hook read QEMU's mapping: "
           "no VM_SYNC), nothing left engaged",
           res.stderr + str(entry_of(NOSYNC)))
    diag(res.stderr.strip().splitlines()[-1] if res.stderr.strip() else "")
    lv.cleanup_domain(name)
    os.unlink(NOSYNC)


def devdax_entry():
    return [e for e in entries() or [] if e["path"] == cfg.devdax]


def t_devdax():
    """A device-dax device of the emulated host, wired by daxfile attach
    (alignsize from sysfs) and started under libvirt: the hook holds it
    for the domain (mechanism device-dax; QEMU maps it through a node of
    its own /dev, which repair finds by the device number), refuses a
    second domain, and lets it go at stop."""
    one, two = "chain-devdax", "chain-devdax2"
    errs = [domain(n, [cfg.devdax]) for n in (one, two)]
    xml = lv.virsh("dumpxml", "--inactive", one).stdout
    if not tap.ok(errs == [None, None] and f"<path>{cfg.devdax}</path>" in xml
                  and "<alignsize unit='KiB'>2048</alignsize>" in xml,
                  f"{cfg.devdax}: attached to two domains, <alignsize> from "
                  "sysfs", (errs, xml)):
        return
    res = lv.virsh("start", "--paused", one)
    e = devdax_entry()
    tap.ok(res.returncode == 0 and len(e) == 1 and
           e[0]["mechanism"] == "device-dax" and e[0]["state"] == "engaged"
           and e[0]["owner"] == f"domain:{one}",
           f"{one}: started, the device held for it (mechanism device-dax)",
           (res.stderr, e))
    rep = daxfile("repair")
    tap.ok(rep.rc == 0 and devdax_entry() == e,
           "daxfile repair keeps it: QEMU maps the device (found by its "
           "device number through /proc/PID/map_files)", (rep, devdax_entry()))
    res2 = lv.virsh("start", "--paused", two)
    tap.ok(res2.returncode != 0 and f"is static for 'domain:{one}'" in
           res2.stderr and f"cannot be used by 'domain:{two}'" in
           res2.stderr and lv.state(two) == "shut off",
           f"{two}: its start is refused, the owner named", res2.stderr)
    lv.virsh("destroy", one)
    lv.wait_shutoff(one)
    freed = devdax_entry()
    res3 = lv.virsh("start", "--paused", two)
    now = devdax_entry()
    tap.ok(not freed and res3.returncode == 0 and len(now) == 1 and
           now[0]["owner"] == f"domain:{two}",
           f"{one} stopped: the device is free, and {two} starts with it",
           (freed, res3.stderr, now))
    lv.virsh("destroy", two)
    lv.wait_shutoff(two)
    tap.ok(not devdax_entry(), f"{two} stopped: released", devdax_entry())
    for n in (one, two):
        lv.cleanup_domain(n)
    res = daxfile("wipe", "--json", cfg.devdax)
    j = res.json() if res.rc == 0 else {}
    size = j.get("size", 0)
    tap.ok(res.rc == 0 and size > 0 and j.get("zeroed") == size and
           j.get("verified") and j.get("method", "").startswith(
               "device-dax mapping, non-temporal stores") and
           j.get("sha256") == hashlib.sha256(bytes(size)).hexdigest(),
           f"daxfile wipe {cfg.devdax}: {size >> 20} MiB zeroed through its "
           "mapping and read back as zeros", (res, j))


def t_restart():
    stopped = libvirtd_stop()
    took = libvirtd_start() if stopped else None
    tap.ok(took is not None and lv.state(MAIN) == "paused",
           f"libvirtd restarted while the domain runs ({took or 0:.1f} s), "
           "which reconnects to it", libvirtd_log_tail())
    for fs, path in FILES.items():
        st = (status(path) or {}).get("static") or {}
        tap.ok(st.get("enabled") and enforced(path),
               f"{fs}: still static after the reconnect", st)


def t_confined():
    """Under AppArmor (Debian 13): QEMU runs confined by the profile
    virt-aa-helper wrote for the domain, and that profile grants the
    files it maps"""
    uuid_ = lv.virsh("domuuid", MAIN).stdout.strip()
    label = lv.lsm_label(lv.qemu_pid(MAIN))
    tap.ok(label == f"libvirt-{uuid_} (enforce)", "AppArmor: QEMU runs "
           f"confined by its domain's profile, enforced ({label})")
    try:
        with open(f"/etc/apparmor.d/libvirt/libvirt-{uuid_}.files") as f:
            rules = f.read()
    except OSError as e:
        rules = str(e)
    granted = {fs: re.search(rf'^\s*"{re.escape(p)}" r\w*w\w*,$', rules,
                             re.M) is not None for fs, p in FILES.items()}
    tap.ok(all(granted.values()), "AppArmor: the domain's profile "
           "(libvirt-UUID.files) grants QEMU both files read-write",
           (granted, rules))


def apparmor_names(paths):
    """"PROFILE: PATH" for each of libvirt's per-domain AppArmor profiles
    on disk that names one of @paths"""
    found = []
    d = "/etc/apparmor.d/libvirt"
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, name), errors="replace") as f:
            text = f.read()
        found += [f"{name}: {p}" for p in paths if p in text]
    return found


def t_stop(orig):
    res = lv.virsh("destroy", MAIN)
    tap.ok(res.returncode == 0, "virsh destroy", res.stderr)
    if lv.apparmor_confines_libvirtd():
        uuid_ = lv.virsh("domuuid", MAIN).stdout.strip()
        with open("/sys/kernel/security/apparmor/profiles") as f:
            loaded = [x for x in f.read().splitlines() if uuid_ in x]
        named = apparmor_names(FILES.values())
        tap.ok(uuid_ and not loaded and not named, "AppArmor: at the "
               "release libvirt took the domain's profile away: none loaded "
               "for it, none on disk names its files", (loaded, named))
    for fs, path in FILES.items():
        tap.ok(not entry_of(path) and not enforced(path),
               f"{fs}: released at stop", entry_of(path))
        xattrs = [x for x in os.listxattr(path)
                  if x.startswith("trusted.libvirt.security")]
        tap.ok(owner_mode(path) == orig[path] and not xattrs,
               f"{fs}: libvirt's owner and mode are back "
               f"({orig[path][0]}:{orig[path][1]} {orig[path][2]:o}), no "
               "remembered label left", (owner_mode(path), xattrs))


# --------------------------------------------------- the users' paths

LIFE_MARK = b"daxfile chain: a marker no one may zero\n" * 64
LIFE_AT = 4 * M


def life_static(name):
    """{fs: why not} for each file of LIFE_FILES that is not static for
    domain @name, with the guard in force"""
    bad = {}
    for fs, path in LIFE_FILES.items():
        st = (status(path) or {}).get("static") or {}
        if not (st.get("enabled") and st.get("owner") == f"domain:{name}"
                and enforced(path)):
            bad[fs] = st
    return bad


def life_released():
    return {fs: entry_of(p) for fs, p in LIFE_FILES.items()
            if entry_of(p) or enforced(p)}


def life_marked():
    """the files whose marker is not there"""
    bad = []
    for fs, path in LIFE_FILES.items():
        with open(path, "rb") as f:
            f.seek(LIFE_AT)
            if f.read(len(LIFE_MARK)) != LIFE_MARK:
                bad.append(fs)
    return bad


def t_lifecycle():
    """Rename, hot-plug, save/restore and undefine on real fsdax, the watch
    running (see the module's docstring)"""
    from lifeworld import Watcher  # tests/libvirt

    for path in LIFE_FILES.values():
        res = daxfile("create", path, "--size", "32M")
        if res.rc == 0:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            os.pwrite(fd, LIFE_MARK, LIFE_AT)
            os.fsync(fd)
            os.close(fd)
    err = domain(LIFE, [LIFE_FILES["xfs"]])
    if not tap.ok(err is None, f"{LIFE}: created, marked and attached", err):
        return
    renamed = LIFE + "-renamed"
    with Watcher() as w:
        tap.ok(w.first, "daxfile watch follows libvirt, wipe_on_undefine on",
               w.all)
        res = lv.virsh("domrename", LIFE, renamed)
        time.sleep(3)  # the watch has had UNDEFINED(RENAMED) and DEFINED
        wiped = w.said("wiped")
        tap.ok(res.returncode == 0 and not wiped and not life_marked(),
               "virsh domrename with the watch running: nothing wiped, the "
               "marker intact", (res.stderr, wiped, w.all))
        res = lv.virsh("start", "--paused", renamed)
        plug = daxfile("attach", renamed, LIFE_FILES["ext4"])
        flags = qemu_vmflags(renamed, LIFE_FILES["ext4"]) \
            if plug.rc == 0 else []
        tap.ok(res.returncode == 0 and plug.rc == 0 and
               not life_static(renamed) and flags and
               all("sh" in f and "sf" in f for f in flags),
               "started under its new name; daxfile attach hot-plugs the "
               "ext4 file into it: both static for it, the new mapping "
               "shared with MAP_SYNC", (res.stderr, plug, life_static(renamed),
                                        flags))
        save = f"{WORK}/{LIFE}.save"
        res = lv.virsh("save", renamed, save, timeout=600)
        tap.ok(res.returncode == 0 and not life_released(),
               "virsh save: QEMU stops, both files released",
               (res.stderr, life_released()))
        res = lv.virsh("restore", save, timeout=600)
        tap.ok(res.returncode == 0 and not life_static(renamed) and
               not life_marked(), "virsh restore: both files static again "
               "(the hot-plugged one too), the markers intact",
               (res.stderr, life_static(renamed), life_marked()))
        with contextlib.suppress(OSError):
            os.unlink(save)
        res = lv.virsh("destroy", renamed)
        tap.ok(res.returncode == 0 and not life_released(),
               "virsh destroy: both released", life_released())
        res = lv.virsh("undefine", renamed)
        lines = [w.take(f"'{p}'", ("wiped", "kept", "cannot"),
                        timeout=120)
                 for p in LIFE_FILES.values()]
        zeroed = []
        for path in LIFE_FILES.values():
            with open(path, "rb") as f:
                zeroed.append(not any(f.read()))
        tap.ok(res.returncode == 0 and
               all("wiped" in (line or "") for line in lines) and
               all(zeroed),
               "virsh undefine: the watch wipes both files through MAP_SYNC, "
               "read back as zeros", (res.stderr, lines, zeroed, w.all))
        if lv.apparmor_confines_libvirtd():
            named = apparmor_names(LIFE_FILES.values())
            tap.ok(not named, "AppArmor: after the undefine no profile "
                   "names its files", named)
        rc = w.stop()
    tap.ok(rc == 0, "daxfile watch stops at SIGTERM (exit 0)", rc)


def t_vpmem():
    """A virtio-pmem device started for real (libvirt 10 and later): the
    hook validates, reserves and engages it as an nvdimm's, attests
    QEMU's mapping (shared and whole; without MAP_SYNC by design: the
    guest's flush is QEMU's fsync), every layout change is refused, and
    L2 (Debian 13's kernel, its virtio_pmem driver) writes and flushes
    cfg.vpmem chunks, which boot 2 verifies after the crash. It runs
    until the crash."""
    res = daxfile("create", VPMEM_FILE, "--size", "128M")
    err = (res.err.strip() if res.rc else
           domain(VPMEM, [VPMEM_FILE], model="virtio-pmem"))
    xml = lv.virsh("dumpxml", "--inactive", VPMEM).stdout
    if not tap.ok(err is None and "model='virtio-pmem'" in xml,
                  f"{VPMEM}: created, attached with daxfile attach --model "
                  "virtio-pmem", err or xml):
        return
    res = lv.virsh("start", VPMEM)
    if not tap.ok(res.returncode == 0, f"{VPMEM}: virsh start (libvirt "
                  "starts a virtio-pmem domain)",
                  res.stderr + libvirtd_log_tail()):
        return
    st = (status(VPMEM_FILE) or {}).get("static") or {}
    q = st.get("qemu") or {}
    flags = qemu_vmflags(VPMEM, VPMEM_FILE)
    tap.ok(st.get("enabled") and st.get("mechanism") == cfg.mech and
           st.get("device") == "virtio-pmem" and
           st.get("owner") == f"domain:{VPMEM}" and q.get("attested") and
           q.get("map_sync_required") is False and
           flags and all("sh" in f and "sf" not in f for f in flags),
           f"{VPMEM}: static ({cfg.mech}) while QEMU runs; its mapping "
           "attested shared and whole, without MAP_SYNC (VmFlags sh, no sf)",
           (st, flags))
    got, done = layout_refusals(VPMEM_FILE)
    tap.ok(not done, f"{VPMEM}: every layout change refused while QEMU "
           "runs (" + ", ".join(f"{op} {r}" for op, r in got.items()) + ")",
           f"succeeded: {done}")
    # its L2 boots Debian 13's kernel: about 20 s here
    chunks = wait_chunks(VPMEM, cfg.vpmem, 300)
    tap.ok(chunks == cfg.vpmem, f"{VPMEM}: L2 wrote and flushed "
           f"{chunks} of {cfg.vpmem} chunks through the virtio-pmem device",
           console_tail(VPMEM) if chunks != cfg.vpmem else None)


def t_crash():
    """Leave one domain in each phase, then crash this host."""
    for name, path in PHASES.items():
        res = daxfile("create", path, "--size", "64M")
        err = res.err.strip() if res.rc else domain(name, [path])
        tap.ok(err is None, f"{name}: created and attached", err)
    res = lv.virsh("start", "--paused", "chain-started")
    tap.ok(res.returncode == 0 and entry_of(PHASES["chain-started"]),
           "chain-started: started (static)", res.stderr)
    stuck = subprocess.Popen(["virsh", "-c", lv.URI, "start", "--paused",
                              "chain-prepared"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not os.path.exists(STALL) and time.monotonic() < deadline:
        time.sleep(0.2)
    e = entry_of(PHASES["chain-prepared"])
    path = PHASES["chain-prepared"]
    if cfg.mech == "kernel":
        # daxctl() lets QEMU open the file: static before QEMU exists
        tap.ok(e and e[0]["state"] == "engaged" and enforced(path),
               "chain-prepared: static (kernel) at prepare, its start held "
               "before QEMU runs", e)
    else:
        tap.ok(e and e[0]["state"] == "reserved" and not enforced(path),
               "chain-prepared: reserved by prepare, its start held before "
               "QEMU runs", e)
    res = lv.virsh("start", "--paused", "chain-released")
    tap.ok(res.returncode == 0, "chain-released: started", res.stderr)
    chunks = 0
    if cfg.vpmem:
        t_vpmem()
    if cfg.l2io:
        res = lv.virsh("start", MAIN)
        tap.ok(res.returncode == 0, f"{MAIN}: started; L2 writes its pattern "
               "and then chunks through MAP_SYNC", res.stderr)
        # L2 completes its first chunk 10-15 s after its start here: 300 s
        # says it hung, and leaves the boot time to tell why
        chunks = wait_chunks(MAIN, 1, 300) if res.returncode == 0 else 0
        tap.ok(chunks >= 1, f"{MAIN}: L2 completed {chunks} chunks on the "
               "NVDIMM backed by ext4", console_tail(MAIN) if chunks < 1
               else None)
    else:
        res = lv.virsh("start", "--paused", MAIN)
        tap.ok(res.returncode == 0, f"{MAIN}: started again (paused)",
               res.stderr)
    res = lv.virsh("destroy", "chain-released")
    tap.ok(res.returncode == 0 and not entry_of(PHASES["chain-released"]),
           "chain-released: destroyed and released", res.stderr)
    # No sync, no unmount: the crash comes right after the release, within
    # any filesystem's journal commit interval.
    tap.diag(f"CHAIN-CRASH-NOW chunks={chunks}")
    tap.done()
    sys.stdout.flush()
    # until the UART has sent it: a reset right after the write loses what
    # the tty still held (seen on a loaded machine: no plan, no crash line)
    with contextlib.suppress(OSError):
        termios.tcdrain(sys.stdout.fileno())
    if cfg.crash == "sysrq":
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("b")
    time.sleep(600)
    stuck.kill()


def stage_first():
    if not host_up():
        return
    t_create()
    with open(f"{IMAGES}/cmdline") as f:
        diag(f"L2 command line: {f.read().strip()}")
    err = domain(MAIN, FILES.values())
    if not tap.ok(err is None, f"{MAIN}: defined, both files attached with "
                  "daxfile attach", err):
        return
    orig = {p: owner_mode(p) for p in FILES.values()}
    if t_running(orig):
        if lv.apparmor_confines_libvirtd():
            t_confined()
        t_attested_main()
        t_restart()
        t_stop(orig)
    if cfg.users_paths:
        t_lifecycle()
        t_no_map_sync()  # libvirt probes the stand-in QEMU (~10 s here)
        if cfg.devdax:
            t_devdax()
    t_crash()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The chain suite inside its emulated pmem host (L1), started by
tests/vm/guest/chain-l1.sh once the fsdax filesystems (/mnt/xfs, /mnt/ext4)
and the state disk are mounted. Prints TAP.

What a user on a pmem host does, for real: libvirtd started by hand with a
stock qemu.conf (DAC driver, user libvirt-qemu, remember_owner), the daxfile
hook in qemu.d, `daxfile create` and `daxfile attach`, `virsh start`. L2 is
the all-built-in daxctl() kernel with tests/vm/guest/chain-l2.sh.

CHAIN_STAGE=first: the files are static while QEMU runs (every layout
change refused), libvirtd restarts without losing that, a stop releases
them with libvirt's owner and mode back; then four domains are left in
four phases (start stuck after prepare, started, running: L2 writing with
CHAIN_L2IO=1, else paused; just released) and the host crashes: sysrq-b
(CHAIN_CRASH=sysrq) or the test host kills our QEMU at the marker line
(CHAIN_CRASH=kill).

On Debian's 6.1, once: the users' paths around a start on real fsdax
(issue 35), with `daxfile watch` running and wipe_on_undefine=true: a
domain renamed keeps its file and starts under its new name, `daxfile
attach` hot-plugs a second file into it while it runs (made static, its
QEMU's new mapping attested), `virsh save` releases both files and `virsh
restore` makes them static again with the marker bytes intact, and its
undefine has the watch wipe both through MAP_SYNC.

CHAIN_STAGE=after: the next boot on the same NVDIMMs and state disk: no
file is static without a registry entry, `daxfile repair` brings every
file back, every domain starts again, and (CHAIN_L2IO=1) L2 verifies what it
wrote before the crash (CHAIN_COUNT chunks) and powers off cleanly.

CHAIN_STAGE=migrate-src, migrate-dst: two such hosts on one network
(CHAIN_PEER is the other's address), each libvirtd listening on TCP. The
source creates and attaches a file on its xfs, starts L2 (which writes a
chunk and then verifies everything it ever wrote, over and over) and
migrates it live (--suspend); the destination's hook maps the path onto
its ext4 (path_map), creates and provisions the file there
(create_missing) and makes it static while the migration comes in; both
hosts print their file's sha256 for the test host to compare, and the
destination verifies L2's pattern and chunks in a copy of its file (their
count, against the chunks the source saw complete); both files are
released.
"""

import contextlib
import errno
import hashlib
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import termios
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "harness"))
sys.path.insert(0, os.path.join(HERE, "..", "libvirt"))
from daxtest import (DAXFILE, Tap, build_path, daxfile,  # noqa: E402
                     enforced, layout_changes)
import libvirt_env as lv  # noqa: E402
from stallwatch import StallWatch  # noqa: E402

lv.QUIET = True
tap = Tap()
STAGE = os.environ.get("CHAIN_STAGE", "first")
L2DIR = os.environ.get("CHAIN_L2DIR", "")
MECH = os.environ.get("CHAIN_MECH", "immutable-guard")
CRASH = os.environ.get("CHAIN_CRASH", "sysrq")
COUNT = int(os.environ.get("CHAIN_COUNT", "0") or 0)
# L2 boots and writes through its NVDIMMs (minutes under nested TCG), or
# QEMU only maps the files (virsh start --paused: enough for the guard)
L2IO = os.environ.get("CHAIN_L2IO", "1") == "1"
PEER = os.environ.get("CHAIN_PEER", "")
# the devdax namespace of the third NVDIMM (first stage)
DEVDAX = os.environ.get("CHAIN_DEVDAX", "")
SEED = int(os.environ.get("CHAIN_SEED", "0") or 0)
M = 1 << 20
IMAGES = "/var/lib/libvirt/images/chain"
WORK = "/var/tmp/chain"
PIDFILE = "/run/chain-libvirtd.pid"
STALL = "/run/chain-stalled"
QEMU_USER = pwd.getpwnam("libvirt-qemu").pw_uid

MAIN = "chain"
FILES = {"xfs": "/mnt/xfs/chain.img", "ext4": "/mnt/ext4/chain.img"}
# the domains left in one phase each when the host crashes
PHASES = {"chain-prepared": "/mnt/ext4/prepared.img",
          "chain-started": "/mnt/xfs/started.img",
          "chain-released": "/mnt/ext4/released.img"}
ALL_FILES = list(FILES.values()) + list(PHASES.values())
# the migration's file on each host; the destination maps the source's path
MIG_SRC, MIG_DST = "/mnt/xfs/chain.img", "/mnt/ext4/chain.img"
# the users' paths (t_lifecycle): a domain on one file, a second hot-plugged
LIFE = "chain-life"
LIFE_FILES = {"xfs": "/mnt/xfs/life.img", "ext4": "/mnt/ext4/life-hp.img"}
HOOK_CONF = {
    "migrate-src": "managed_roots=/mnt/xfs\n",
    "migrate-dst": "managed_roots=/mnt/ext4\ncreate_missing=true\n"
                   "path_map=/mnt/xfs=/mnt/ext4\n",
}


def diag(text):
    tap.diag(text)


def sh(argv, timeout=300):
    return subprocess.run(argv, capture_output=True, text=True,
                          errors="replace", timeout=timeout)


# ------------------------------------------------------------- set-up

def stall_hook(hooks):
    """A second hook (run after daxfile's, in name order) that holds one
    domain's start right after its prepare: a start that never finishes"""
    path = os.path.join(hooks, "zz-chain-stall")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nif [ \"$1\" = chain-prepared ] && "
                "[ \"$2\" = prepare ]; then\n"
                f"    touch {STALL}\n    exec sleep 3600\nfi\nexit 0\n")
    os.chmod(path, 0o755)


PROBE = "/run/chain-probe"


def started_probe(hooks):
    """A second hook (after daxfile's, in name order) that records on the
    migration's destination what the file is when libvirt runs 'start'
    (before it executes QEMU) and 'started' (QEMU has mapped the file;
    libvirt runs it at the end of its Prepare step, before the source is
    told to send anything): its static state, and at 'started' whether it
    still holds only the zeros create wrote."""
    path = os.path.join(hooks, "zz-chain-probe")
    size = 128 * M
    with open(path, "w") as f:
        f.write("#!/bin/sh\nif [ \"$3\" = begin ]; then\n"
                "    case \"$2\" in start|started) "
                f"{DAXFILE} status --json {MIG_DST} >{PROBE}.$2.json 2>&1 "
                ";; esac\nfi\n"
                "if [ \"$2\" = started ] && [ \"$3\" = begin ]; then\n"
                f"    if cmp -s -n {size} {MIG_DST} /dev/zero; then echo "
                f"zeros; else echo data; fi >{PROBE}.data\nfi\nexit 0\n")
    os.chmod(path, 0o755)


def install():
    """The configuration a user writes, the hook, a stock qemu.conf with
    what this L1 lacks switched off, the L2 boot files."""
    os.makedirs("/etc/daxfile", exist_ok=True)
    with open("/etc/daxfile/daxfile.conf", "w") as f:
        f.write("[hook]\n" + HOOK_CONF.get(STAGE, "managed_roots=/mnt/xfs;"
                                           "/mnt/ext4\ndevice_dax=true\n"
                                           "wipe_on_undefine=true\n"))
    hooks = "/etc/libvirt/hooks/qemu.d"
    os.makedirs(hooks, exist_ok=True)
    shutil.copy2(build_path("libvirt-hooks", "daxfile-hook"),
                 os.path.join(hooks, "daxfile"))
    if STAGE == "first":
        stall_hook(hooks)
    if STAGE == "migrate-dst":
        started_probe(hooks)
    lv.nested_host_conf()
    with open(lv.QEMU_CONF, "a") as f:
        f.write('\n# chain suite\nstdio_handler = "file"\n')
    os.makedirs(WORK, exist_ok=True)
    os.makedirs(IMAGES, exist_ok=True)
    for name in os.listdir(L2DIR):
        shutil.copy(os.path.join(L2DIR, name), IMAGES)


def libvirtd_start(listen=False):
    """libvirtd by hand; listen: also on TCP without authentication (the
    two hosts of a migration, on their own network), with a host UUID of
    its own (both hosts share the test host's machine-id)"""
    global SEEDED_CAPS
    t0 = time.monotonic()
    SEEDED_CAPS = lv.seed_caps(os.environ.get("CHAIN_CAPS", ""))
    argv = ["taskset", "-c", "0", "libvirtd", "-d", "-p", PIDFILE]
    if listen:
        conf = "/run/chain-libvirtd.conf"
        with open(conf, "w") as f:
            f.write('listen_tls = 0\nlisten_tcp = 1\nauth_tcp = "none"\n'
                    f'host_uuid = "{uuid.uuid4()}"\n')
        argv += ["--listen", "-f", conf]
    res = sh(argv)
    deadline = time.monotonic() + 120
    while res.returncode == 0 and time.monotonic() < deadline:
        if lv.virsh("-q", "version", timeout=30).returncode == 0:
            return time.monotonic() - t0
        time.sleep(0.3)
    return None


SEEDED_CAPS = {}  # the probe cache libvirtd has, as the real host knows it


def export_caps():
    """After a define (libvirtd has probed the domain's QEMU by then): hand
    each new probe to the real host for the next boot"""
    global SEEDED_CAPS
    SEEDED_CAPS = lv.export_caps(SEEDED_CAPS)


def libvirtd_stop():
    with open(PIDFILE) as f:
        return lv.terminate(int(f.read()), timeout=60)


def libvirtd_log_tail():
    try:
        with open("/var/log/libvirt/libvirtd.log", errors="replace") as f:
            return "".join(f.readlines()[-20:])
    except OSError:
        return "(no libvirtd.log)"


# --------------------------------------------------------------- facts

def status(path):
    res = daxfile("status", "--json", path)
    return res.json()[0] if res.rc == 0 else None


def entries():
    res = daxfile("list", "--json")
    return res.json() if res.rc == 0 else None


def entry_of(path):
    return [e for e in entries() or [] if e["path"] == path]


def owner_mode(path):
    st = os.stat(path)
    return st.st_uid, st.st_gid, st.st_mode & 0o7777


def layout(path):
    s = status(path)
    return (s["size"], s["fingerprint"]) if s else None


def domain(name, files):
    """Define @name booting L2 (its initrd is the host's: the stream phase
    on the first boot, the verify phase on the next) and attach @files"""
    # a migrating domain runs under TCG on both hosts: the destination's
    # daxctl() kernel has no KVM
    xml = lv.domain_xml(name, f"{IMAGES}/vmlinux", f"{IMAGES}/initrd",
                        open(f"{IMAGES}/cmdline").read().strip(),
                        f"{WORK}/{name}.console", f"{WORK}/{name}.tap",
                        memory_mib=256, loader=lv.nested_loader(),
                        virt="qemu" if STAGE.startswith("migrate") else None)
    res = lv.define(xml, WORK, name)
    if res.returncode != 0:
        return res.stderr.strip()
    export_caps()
    for path in files:
        res = daxfile("attach", name, path)
        if res.rc != 0:
            return res.err.strip()
    return None


# ------------------------------------------------- what must be refused

def attempt(func):
    """'done' when @func succeeded, else the errno name it failed with"""
    try:
        func()
        return "done"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


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
        s = status(path)
        st = (s or {}).get("static") or {}
        tap.ok(st.get("enabled") and st.get("mechanism") == MECH and
               st.get("owner") == f"domain:{MAIN}",
               f"{fs}: static while QEMU runs, mechanism {MECH}", st)
        tap.ok(os.stat(path).st_uid == QEMU_USER,
               f"{fs}: libvirt's DAC driver handed it to libvirt-qemu",
               owner_mode(path))
        before = layout(path)
        got = {op: attempt(f) for op, f in layout_changes(path).items()}
        for stray in (path + ".moved", path + ".link"):
            if os.path.lexists(stray):  # a refusal that failed: undo it
                os.unlink(stray)
        done = [op for op, r in got.items() if r == "done"]
        tap.ok(not done and layout(path) == before and
               os.path.exists(path),
               f"{fs}: every layout change refused while QEMU runs ("
               + ", ".join(f"{op} {r}" for op, r in got.items()) + ")",
               f"succeeded: {done}")
    return True


def qemu_vmflags(name, path):
    """VmFlags of the domain's QEMU mapping of @path, read here from
    /proc/PID/smaps (libvirt's pid file), as the hook reads it"""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    with open(f"/run/libvirt/qemu/{name}.pid") as f:
        pid = int(f.read().strip())
    flags, mine = [], False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", fields[0]):
                mine = len(fields) > 4 and fields[3] == dev and \
                    fields[4] == str(st.st_ino)
            elif mine and fields[0] == "VmFlags:":
                flags.append(fields[1:])
    return flags


def t_attested():
    """What the hook attested at started, read independently: QEMU's
    mapping of each file is shared and carries VM_SYNC (MAP_SYNC took)."""
    for fs, path in FILES.items():
        flags = qemu_vmflags(MAIN, path)
        q = ((status(path) or {}).get("static") or {}).get("qemu") or {}
        tap.ok(flags and all("sh" in f and "sf" in f for f in flags) and
               q.get("attested") and (q.get("mapping") or {}).get("sync"),
               f"{fs}: QEMU's mapping is shared with MAP_SYNC (VmFlags sh, "
               "sf), as the hook attested at started and daxfile status "
               "shows", (flags, q))


NOSYNC = "/mnt/xfs/chain-nosync.img"
NOSYNC_QEMU = "/usr/local/libexec/qemu-no-map-sync"


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
    xml = lv.domain_xml(name, f"{IMAGES}/vmlinux", f"{IMAGES}/initrd",
                        "quiet", f"{WORK}/{name}.console",
                        f"{WORK}/{name}.tap", memory_mib=256,
                        loader=lv.nested_loader(),
                        devices=f"    <emulator>{NOSYNC_QEMU}</emulator>\n")
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
    return [e for e in entries() or [] if e["path"] == DEVDAX]


def t_devdax():
    """A device-dax device of the emulated host, wired by daxfile attach
    (alignsize from sysfs) and started under libvirt: the hook holds it
    for the domain (mechanism device-dax; QEMU maps it through a node of
    its own /dev, which repair finds by the device number), refuses a
    second domain, and lets it go at stop."""
    one, two = "chain-devdax", "chain-devdax2"
    errs = [domain(n, [DEVDAX]) for n in (one, two)]
    xml = lv.virsh("dumpxml", "--inactive", one).stdout
    if not tap.ok(errs == [None, None] and f"<path>{DEVDAX}</path>" in xml
                  and "<alignsize unit='KiB'>2048</alignsize>" in xml,
                  f"{DEVDAX}: attached to two domains, <alignsize> from "
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
    res = daxfile("wipe", "--json", DEVDAX)
    j = res.json() if res.rc == 0 else {}
    size = j.get("size", 0)
    tap.ok(res.rc == 0 and size > 0 and j.get("zeroed") == size and
           j.get("verified") and j.get("method", "").startswith(
               "device-dax mapping, non-temporal stores") and
           j.get("sha256") == hashlib.sha256(bytes(size)).hexdigest(),
           f"daxfile wipe {DEVDAX}: {size >> 20} MiB zeroed through its "
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


def t_stop(orig):
    res = lv.virsh("destroy", MAIN)
    tap.ok(res.returncode == 0, "virsh destroy", res.stderr)
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
        rc = w.stop()
    tap.ok(rc == 0, "daxfile watch stops at SIGTERM (exit 0)", rc)


class L2Tap:
    """L2's TAP, relayed as it comes: from its file (on a migration's
    destination a new one, with only what L2 printed there), or with
    console=True its lines in the kernel log on the console (see
    chain-l2.sh: a migration can silence ttyS1)"""

    KMSG_RE = re.compile(r"^(?:\[[^\]]*\]\s*)+((?:not )?ok \d+ - .*|# .*)$")

    def __init__(self, name, console=False):
        self.name, self.console = name, console
        self.path = f"{WORK}/{name}.{'console' if console else 'tap'}"
        self.seen, self.chunks, self.failed = 0, [], False

    def lines(self):
        try:
            with open(self.path, errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        if not self.console:
            return lines
        return [m.group(1) for m in map(self.KMSG_RE.match, lines) if m]

    def poll(self):
        lines = self.lines()
        for line in lines[self.seen:]:
            diag(f"L2: {line}")
            if line.startswith("not ok"):
                self.failed = True
            elif line.startswith("ok") and " - chunk " in line:
                self.chunks.append(int(line.split(" - chunk ")[1].split()[0]))
        self.seen = len(lines)

    def wait(self, want, timeout):
        """until @want chunks, a failure, or the domain stops running"""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            if (len(self.chunks) >= want or self.failed or
                    lv.state(self.name) != "running"):
                break
            time.sleep(0.5)
        return -1 if self.failed else len(self.chunks)


def wait_chunks(name, want, timeout):
    """Relay L2's TAP as it comes; the number of chunks it completed"""
    return L2Tap(name).wait(want, timeout)


def released(path, orig):
    """no entry, not static, libvirt's owner and mode back and no label it
    remembered: (True, None) or (False, what is left)"""
    xattrs = [x for x in os.listxattr(path)
              if x.startswith("trusted.libvirt.security")]
    ok = (not entry_of(path) and not enforced(path) and
          owner_mode(path) == orig and not xattrs)
    return ok, (None if ok else (entry_of(path), enforced(path),
                                 owner_mode(path), orig, xattrs))


def console_tail(name):
    """L2's console, its state and its QEMU's log: why it did not do what
    it was started for"""
    parts = [lv.virsh("domstate", "--reason", name, timeout=30).stdout]
    for what, path in (("console", f"{WORK}/{name}.console"),
                       ("QEMU log", f"/var/log/libvirt/qemu/{name}.log")):
        try:
            with open(path, errors="replace") as f:
                parts.append(f"--- {what} ({path}):\n" + f.read()[-3000:])
        except OSError as e:
            parts.append(f"--- {what}: {e}")
    return "\n".join(parts)


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
    if MECH == "kernel":
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
    if L2IO:
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
    if CRASH == "sysrq":
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("b")
    time.sleep(600)
    stuck.kill()


def stage_first():
    install()
    took = libvirtd_start()
    if not tap.ok(took is not None,
                  f"libvirtd started by hand ({took or 0:.1f} s)",
                  libvirtd_log_tail()):
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
        t_attested()
        t_restart()
        t_stop(orig)
    if os.uname().release.startswith("6.1.0-"):  # once, on Debian's 6.1:
        t_lifecycle()
        t_no_map_sync()  # libvirt probes the stand-in QEMU (~10 s here)
        if DEVDAX:
            t_devdax()
    t_crash()


# ---------------------------------------------------------- stage after

def t_after_crash():
    got = entries()
    listed = {e["path"]: e for e in got or []}
    for path in ALL_FILES:
        on = enforced(path)
        tap.ok(not on or path in listed,
               f"{path}: never static without a registry entry after the "
               f"crash (enforced: {on}, entry: {path in listed})",
               listed.get(path))
    # What a hook phase finished before the crash is on disk: the domains
    # that had started keep their entries and (the immutable flag; the
    # kernel's state lives in the in-core inode only) their files static:
    # the engage was fsynced before `started` returned.
    for name, path in [(MAIN, p) for p in FILES.values()] + \
            [("chain-started", PHASES["chain-started"])]:
        want = MECH != "immutable-guard" or enforced(path)
        tap.ok(want and path in listed,
               f"{path}: its entry survived the crash"
               + (", and the flag: engaged durably before started returned"
                  if MECH == "immutable-guard" else ""), listed.get(path))
    before = {p: os.stat(p).st_mtime_ns for p in listed if p in ALL_FILES}
    res = daxfile("repair")
    diag(res.err)
    tap.ok(res.rc == 0, "daxfile repair", res.err)
    if MECH == "kernel":
        # static in the kernel at the crash: stores since the last stamp
        # may not show in mtime (kernel/README.md, "Fault path")
        later = [p for p, t in before.items() if os.stat(p).st_mtime_ns > t]
        tap.ok(before and sorted(later) == sorted(before) and
               res.err.count("its mtime is now") == len(before),
               f"repair stamped the mtime of the {len(before)} files left "
               f"static in the kernel", (before, later, res.err))
    left = [e["path"] for e in entries() or [] if e["path"] in ALL_FILES]
    static = [p for p in ALL_FILES if enforced(p)]
    tap.ok(not left and not static, "after repair: no entry and no file "
           "static", (left, static))


def t_start_again():
    for name in PHASES:
        res = lv.virsh("start", "--paused", name)
        ok = res.returncode == 0 and entry_of(PHASES[name])
        lv.virsh("destroy", name)
        tap.ok(ok and not entry_of(PHASES[name]),
               f"{name}: starts and stops again", res.stderr)


def t_verify():
    orig = {p: owner_mode(p) for p in FILES.values()}
    if L2IO:
        res = lv.virsh("start", MAIN)
        ok = res.returncode == 0 and lv.wait_shutoff(MAIN, timeout=300)
        oks, bad = lv.tap_results(f"{WORK}/{MAIN}.tap")
        for line in oks + bad:
            diag(f"L2: {line}")
        tap.ok(ok and not bad and len(oks) == 3,
               f"{MAIN}: L2 verified its pattern and the {COUNT} chunks it "
               "completed before the crash, on the NVDIMM backed by ext4, "
               "and powered off",
               (res.stderr + console_tail(MAIN)) if not ok else bad)
    else:
        res = lv.virsh("start", "--paused", MAIN)
        ok = res.returncode == 0 and all(
            ((status(p) or {}).get("static") or {}).get("enabled")
            for p in FILES.values())
        res2 = lv.virsh("destroy", MAIN)
        tap.ok(ok and res2.returncode == 0, f"{MAIN}: starts (paused) with "
               "both files static, and stops", res.stderr + res2.stderr)
    # libvirt forgets the owner it remembered when the host crashed (its
    # xattrs carry the boot time), so "back" means: as before this start.
    for fs, path in FILES.items():
        xattrs = [x for x in os.listxattr(path)
                  if x.startswith("trusted.libvirt.security")]
        tap.ok(not entry_of(path) and not enforced(path) and
               owner_mode(path) == orig[path] and not xattrs,
               f"{fs}: released after the power-off, owner and mode as "
               "before the start, no remembered label left",
               (entry_of(path), owner_mode(path), orig[path], xattrs))


def t_wipe():
    """daxfile wipe on real DAX: the file of a stopped domain zeroed
    through MAP_SYNC with non-temporal stores, read back, its digest that
    of zeros (and the bytes are zeros, read independently)"""
    path = PHASES["chain-released"]
    res = daxfile("wipe", "--json", path)
    j = res.json() if res.rc == 0 else {}
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        data = f.read()
    zeros = hashlib.sha256(bytes(size)).hexdigest()
    tap.ok(res.rc == 0 and j.get("map_sync") and
           j.get("method", "").startswith("MAP_SYNC, non-temporal stores")
           and j.get("verified") and j.get("zeroed") == size and
           j.get("sha256") == zeros and not any(data),
           f"daxfile wipe on real DAX (ext4 -o dax): MAP_SYNC, non-temporal "
           f"stores, {size >> 20} MiB read back as zeros", (res, j))


def stage_after():
    install()
    took = libvirtd_start()
    if not tap.ok(took is not None, f"libvirtd started ({took or 0:.1f} s)",
                  libvirtd_log_tail()):
        return
    doms = lv.virsh("list", "--all", "--name").stdout.split()
    tap.ok(all(d in doms for d in [MAIN] + list(PHASES)),
           "the domain definitions survived the crash", doms)
    t_after_crash()
    t_start_again()
    t_verify()
    t_wipe()

# ------------------------------------------------------- stages migrate


def static_of(path):
    return ((status(path) or {}).get("static")) or {}


def migrate_host_up():
    """install, and libvirtd listening on TCP for the other host"""
    install()
    took = libvirtd_start(listen=True)
    return tap.ok(took is not None, f"libvirtd started by hand, listening "
                  f"on TCP ({took or 0:.1f} s)", libvirtd_log_tail())


def stage_migrate_src():
    if not migrate_host_up():
        return
    path = MIG_SRC
    res = daxfile("create", path, "--size", "128M")
    s = status(path) if res.rc == 0 else None
    tap.ok(s and s["static_ready"] and s["dax"], "xfs: daxfile create on "
           "the -o dax mount: DAX, written, aligned", res.err or s)
    err = domain(MAIN, [path])
    if not tap.ok(err is None, f"{MAIN}: defined, its file attached", err):
        return
    orig = owner_mode(path)
    res = lv.virsh("start", MAIN)
    if not tap.ok(res.returncode == 0, f"{MAIN}: started; L2 writes chunks "
                  "and verifies all it wrote after each", res.stderr):
        return
    st = static_of(path)
    tap.ok(st.get("enabled") and st.get("mechanism") == MECH and
           enforced(path), f"xfs: static while QEMU runs, mechanism {MECH}",
           st)
    l2 = L2Tap(MAIN, console=True)
    before = l2.wait(1, 1200)
    if not tap.ok(before >= 1, f"{MAIN}: L2 completed {before} chunks here",
                  console_tail(MAIN)):
        return
    dest = f"qemu+tcp://{PEER}/system"
    deadline = time.monotonic() + 600
    while (sh(["virsh", "-c", dest, "-q", "version"], timeout=60).returncode
           and time.monotonic() < deadline):
        time.sleep(1)
    t0 = time.monotonic()
    res = sh(["virsh", "-c", lv.URI, "migrate", "--live", "--persistent",
              "--undefinesource", "--suspend", MAIN, dest, f"tcp://{PEER}"],
             timeout=1200)
    took = time.monotonic() - t0
    l2.poll()
    tap.ok(res.returncode == 0, f"virsh migrate --live to {PEER} ({took:.1f}"
           f" s; L2 had completed {before} chunks here when it began, "
           f"{len(l2.chunks)} when it ended)",
           res.stderr + libvirtd_log_tail())
    diag(f"CHAIN-COMPLETED {len(l2.chunks)}")
    doms = lv.virsh("list", "--all", "--name").stdout.split()
    tap.ok(MAIN not in doms, f"{MAIN}: gone from the source "
           "(--undefinesource)", doms)
    ok, left = released(path, orig)
    tap.ok(ok, "xfs: released on the source after the migration, "
           "libvirt's owner and mode back", left)
    print_sha256(path)


def verify_copy(path):
    """Verify what L2 wrote into the NVDIMM backed by @path, here, with
    daxfile-guest on a copy (the file stays as QEMU has it): find the ext4
    after the fsdax namespace's info block, mount it (its journal replays
    on the copy) and verify the pattern and the chunks w0, w1, ... up to
    the first that is missing or incomplete (the one being written when
    the guest stopped). (chunks verified, None) or (n, what failed)."""
    copy, mnt = "/run/chain-verify.img", "/run/chain-verify"
    shutil.copyfile(path, copy)
    try:
        with open(copy, "rb") as f:
            f.seek(4096)  # struct nd_pfn_sb, drivers/nvdimm/pfn.h
            sb = f.read(80)
        if sb[:16] != b"NVDIMM_PFN_INFO\0":
            return 0, f"{path}: no fsdax info block at 4 KiB"
        off = int.from_bytes(sb[56:64], "little") + \
            int.from_bytes(sb[76:80], "little")  # dataoff + start_pad
        os.makedirs(mnt, exist_ok=True)
        res = sh(["mount", "-t", "ext4", "-o", f"loop,offset={off}", copy,
                  mnt])
        if res.returncode != 0:
            return 0, f"mount at offset {off}: {res.stderr.strip()}"
        try:
            return verify_chunks(mnt)
        finally:
            sh(["umount", mnt])
    finally:
        os.unlink(copy)


def verify_chunks(mnt):
    """daxfile-guest verify of L2's pattern and its chunks w0, w1, ... in
    the filesystem on @mnt: (how many chunks hold theirs, None), or (0,
    why the pattern failed)"""
    guest = build_path("guest-tools", "daxfile-guest")
    res = sh([guest, "verify", "--dir", mnt, "--seed", str(SEED)])
    if res.returncode != 0:
        return 0, res.stderr.strip()
    n = 0
    while os.path.exists(f"{mnt}/w{n}/daxfile-guest.dat"):
        if sh([guest, "verify", "--dir", f"{mnt}/w{n}", "--seed",
               str(SEED + 2 + n)]).returncode != 0:
            break
        n += 1
    return n, None


def print_sha256(path):
    """for the test host, which compares the two hosts' files"""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(4 * M):
            h.update(chunk)
    diag(f"CHAIN-SHA256 {path} {h.hexdigest()}")


# a domain on its way in; then (virsh migrate --suspend) it stays paused here
INCOMING = ("paused (starting up)", "paused (migrating)")


def watch_incoming(path, timeout):
    """Poll the domain on its way in; [(state, static?)] until it has
    arrived. Until libvirt has its status file, looking costs nothing: a
    virsh every 0.2 s through L2's boot on the other host took a share of
    the two host cores that this L1 shares with it."""
    seen = []
    deadline = time.monotonic() + timeout
    while (not os.path.exists(f"/run/libvirt/qemu/{MAIN}.xml") and
           time.monotonic() < deadline):
        time.sleep(0.2)
    while time.monotonic() < deadline:
        res = lv.virsh("domstate", "--reason", MAIN)
        state = res.stdout.strip() if res.returncode == 0 else None
        if state:
            on = os.path.exists(path) and enforced(path)
            seen.append((state, on))
            if state not in INCOMING:
                break
        time.sleep(0.2)
    return seen


def probed():
    """{phase: the file's static object} at 'start' and 'started', and
    'zeros' or 'data' at 'started', as started_probe() saw them"""
    seen = {}
    for phase in ("start", "started"):
        try:
            with open(f"{PROBE}.{phase}.json") as f:
                seen[phase] = json.loads(f.read())[0].get("static") or {}
        except (OSError, ValueError, IndexError) as e:
            seen[phase] = {"error": str(e)}
    try:
        with open(f"{PROBE}.data") as f:
            data = f.read().strip()
    except OSError as e:
        data = str(e)
    return seen, data


def stage_migrate_dst():
    if not migrate_host_up():
        return
    path = MIG_DST
    seen = watch_incoming(path, 1500)
    here = bool(seen) and seen[-1][0] not in INCOMING
    if not tap.ok(here, f"{MAIN}: arrived, held paused here (--suspend: "
                  f"{seen[-1][0] if seen else 'never seen'})", seen[-5:] or
                  libvirtd_log_tail()):
        return
    diag("states seen on the way in: " + ", ".join(
        f"{state} ({'static' if on else 'not static'})"
        for state, on in dict.fromkeys(seen)))
    s = status(path)
    tap.ok(s and s["dax"] and s["size"] == 128 * M,
           f"ext4: the hook created and provisioned {path} (the source's "
           "/mnt/xfs path mapped by path_map) on this host's -o dax mount",
           s)
    xml = lv.virsh("dumpxml", MAIN).stdout
    tap.ok(f"<path>{path}</path>" in xml, f"{MAIN}: runs on the rewritten "
           "path", xml)
    paused = [on for state, on in seen if state == INCOMING[1]]
    tap.ok(True in paused and all(paused[paused.index(True):]) and
           seen[-1][1], "ext4: static while the migration came in, before "
           f"the guest could run here ({len(paused)} looks while it came "
           f"in, static in {sum(paused)})", seen)
    seen, data = probed()
    static = {p: bool(v.get("enabled")) and v.get("mechanism") == MECH
              for p, v in seen.items()}
    if MECH == "kernel":
        tap.ok(static["start"], "ext4: static before QEMU opened and "
               "mapped it (libvirt's 'start', before it runs QEMU: the "
               "kernel mechanism engages at prepare)", seen)
    else:
        tap.ok(seen["start"].get("state") == "reserved", "ext4: reserved "
               "before QEMU opened it (the guard would refuse QEMU's own "
               "open; it engages at 'started')", seen)
    tap.ok(static["started"] and data == "zeros", "ext4: static when "
           "libvirt ran 'started', before the source sent any RAM: the "
           "file then held only the zeros create wrote", (seen, data))
    st = static_of(path)
    tap.ok(st.get("enabled") and st.get("mechanism") == MECH and
           st.get("owner") == f"domain:{MAIN}",
           f"ext4: static while QEMU runs, mechanism {MECH}", st)
    print_sha256(path)
    n, err = verify_copy(path)
    tap.ok(err is None, f"ext4: daxfile-guest verify, on a copy of the "
           f"file, finds L2's pattern and {n} chunks intact (those it "
           "completed before and during the migration)", err)
    diag(f"CHAIN-VERIFIED {n}")
    # The guest is not resumed here: under nested TCG (QEMU 7.2 in both
    # L1s) L2 resumed after a live migration with corrupt RAM (kernel
    # oopses, ld.so assertions), on stock kernels as on the daxctl() one,
    # while a migration between two QEMUs on the test host itself (no
    # nesting) ran on with its data intact.
    orig = (0, 0, 0o600)  # as the hook made it
    res = lv.virsh("destroy", MAIN)
    ok, left = released(path, orig)
    tap.ok(res.returncode == 0 and ok, "ext4: released at stop, libvirt's "
           "owner and mode back", (res.stderr, left))


def main():
    # a step that hangs says what this host was doing (the CI log shows it)
    StallWatch(tap).start()
    if STAGE == "first":
        tap.subtest("first", stage_first)
    elif STAGE == "migrate-src":
        tap.subtest("migrate-src", stage_migrate_src)
    elif STAGE == "migrate-dst":
        tap.subtest("migrate-dst", stage_migrate_dst)
    else:
        tap.subtest("after", stage_after)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The whole chain for real, nested: an emulated pmem host (L1: a VM
harness guest on KERNEL with two NVDIMMs in fsdax mode, xfs and ext4
mounted -o dax, the host's own root as its userland, a state disk) runs
libvirtd, the daxfile hook and QEMU, which runs L2 on static files.

Boot 1 proves the guarantee while QEMU runs, across a libvirtd restart and
at stop, then crashes L1 with domains in four phases (start held after
prepare, started, running: L2 writing with --l2-io, else paused; just
released): sysrq-b, or (--crash kill) SIGKILL of L1's QEMU. Boot 2, on the
same NVDIMMs and state disk, proves that no file is static without a
registry entry, that `daxfile repair` brings every file back, that every
domain starts again, and (--l2-io) that L2 finds everything it completed
before the crash. See tests/chain/l1-chain.py.

--migrate: two such hosts at once (KERNEL, and --dst-kernel), joined by a
UDP socket netdev on the loopback: the source starts L2 on a static file on
its xfs and migrates it live while L2 writes; the destination's hook creates
the file on its ext4 and makes it static before the guest can run there; the
two files' sha256 (printed by each L1) must be equal, and the destination
must verify at least the chunks the source saw L2 complete. --resume: then
the destination resumes L2, which writes on there and checks everything it
wrote before and after the switchover. See l1-chain.py.

--migrate --plain: the same two hosts and migration with no libvirt guest
and nothing of daxfile: QEMU run by hand on a plain file in each
(tests/chain/l1_repro.py).

--repro: the same live migration within one L1, with no libvirt guest
and nothing of daxfile: two QEMUs run by hand on plain files, migrating L2
back and forth (--rounds) and comparing the files page by page at each
switchover (tests/chain/l1_repro.py).

--cxl: one boot of a host whose pmem is CXL persistent memory (an emulated
CXL type-3 device: Debian 13's QEMU 10 runs L1): on its CXL region's fsdax
namespace, ext4 -o dax; libvirt starts L2 on a static file there: the
medium named, the file static and QEMU's mapping attested while it runs,
every layout change refused; L2 writes and powers off, the file is
released and a copy of it holds all L2 wrote (tests/chain/l1_cxl.py).

Each TAP line of L1 is relayed as this test's own, prefixed with the boot.
"""

import argparse
import base64
import os
import re
import secrets
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

from daxtest import SRCDIR, Tap, build_path, need_root
from stallwatch import HEARTBEAT
import daxfile_vm as vm
import libvirt_env as lv

HERE = os.path.dirname(os.path.abspath(__file__))

vm.add_guest_dir(os.path.join(HERE, "..", "vm", "guest"))

MECH = {"daxctl": "kernel"}
# the stacks users run, where the chain also walks the users' paths
USERS_PATHS = {"6.1", "debian13"}
# where libvirt can start a virtio-pmem domain (libvirt 9.0 cannot): with
# --l2-io, a second L2 on Debian 13's kernel (virtio_pmem) writes through
# such a device and flushes, and its data must survive the host's crash
VPMEM = {"debian13"}
VPMEM_CHUNKS = 4
# that L2's modules, in load order (and what they need): a slim image, as
# every MiB of initramfs costs the nested boot
VPMEM_MODULES = ["crc32c_generic", "ext4", "libnvdimm", "nd_pmem",
                 "virtio_pci", "virtio_pmem"]
CRASH_RE = re.compile(r"^# CHAIN-CRASH-NOW chunks=(\d+)")
SHA_RE = re.compile(r"^# CHAIN-SHA256 (\S+) ([0-9a-f]{64})$")
# a crc32 of each page of that file that is not all zeros, in parts
PAGES_RE = re.compile(r"^# CHAIN-PAGES (\S+) (\d+)/(\d+) (\S+)$")
# chunks L2 completed on the source, chunks verified on the destination
COUNT_RE = re.compile(r"^# CHAIN-(COMPLETED|VERIFIED) (\d+)$")


class Relay:
    """L1's TAP, relayed as ours (from one boot, or from two at once)"""

    LOCK = threading.Lock()

    def __init__(self, tap, prefix, caps, todo=None):
        """@todo(name): why a failed result of L1 is a known cause's, with
        the evidence for it (Tap.todo), or None"""
        self.tap, self.prefix, self.caps = tap, prefix, caps
        self.todo = todo
        self.last_result = time.monotonic()
        self.last_beat = None
        self.stalled = None
        self.chunks = None
        self.results = 0
        self.passed = []
        self.sha256 = {}
        self.pages = {}
        self.counts = {}

    def __call__(self, kind, val, text):
        with self.LOCK:
            self._relay(kind, val, text)

    def _relay(self, kind, val, text):
        if kind in ("test", "bail"):
            self.last_result = time.monotonic()
        if kind == "comment" and text.startswith("# " + HEARTBEAT + " "):
            self.last_beat = time.monotonic()
            return  # not for the log
        if kind == "test":
            self.results += 1
            name = f"{self.prefix}: {val.name}"
            why = None if val.ok or not self.todo else self.todo(val.name)
            if val.directive == "SKIP":
                self.tap.skip(name, text.split("# SKIP", 1)[-1].strip())
            elif why:
                self.tap.todo(name, why)
            elif self.tap.ok(val.ok or val.directive == "TODO", name):
                self.passed.append(val.name)
        elif kind == "bail":
            self.tap.ok(False, f"{self.prefix}: {text}")
        elif kind == "comment" and text.startswith(lv.CAPS_LINE):
            lv.save_caps(text, self.caps)
        elif kind == "comment":
            m = CRASH_RE.match(text)
            if m:
                self.chunks = int(m.group(1))
            m = SHA_RE.match(text)
            if m:
                self.sha256[m.group(1)] = m.group(2)
            m = PAGES_RE.match(text)
            if m:
                self.pages.setdefault(m.group(1), []).append(m.group(4))
                return  # a part of the page map: not for the log
            m = COUNT_RE.match(text)
            if m:
                self.counts[m.group(1)] = int(m.group(2))
            print(text, flush=True)


def page_map(parts):
    """{page: crc32} of a CHAIN-PAGES map (pages not listed: all zeros)"""
    raw = zlib.decompress(base64.b64decode("".join(parts)))
    return dict(struct.iter_unpack("<II", raw))


def page_diff(src, dst):
    """[(page, crc32 on the source, on the destination)] where the two
    hosts' page maps differ (0: all zeros), or why they cannot be read"""
    if not src or not dst:
        return "no page map from both hosts"
    try:
        a, b = page_map(src), page_map(dst)
    except (ValueError, zlib.error) as e:
        return f"a page map did not decode: {e}"
    return [(p, a.get(p, 0), b.get(p, 0))
            for p in sorted(a.keys() | b.keys()) if a.get(p) != b.get(p)]


def describe_diff(diff):
    if isinstance(diff, str):
        return f"({diff})"
    lines = [f"page {p} (file offset {p * 4096:#x}): crc32 {a:08x} on the "
             f"source, {b:08x} on the destination (0: all zeros)"
             for p, a, b in diff[:32]]
    if len(diff) > 32:
        lines.append(f"... {len(diff)} pages in all")
    return "\n".join(lines) or "(the page maps agree)"


# At most this many pages that the migration did not carry are put down
# to it; more is not a page the guest wrote late, it is a file gone wrong
LOST_PAGES = 8


def lost_in_migration(diff):
    """Why the two files differ where nothing of the hosts can have made
    them differ, or None. daxfile and libvirt write nothing into the file
    but zeros (create, provisioning, wipe), so a few pages that differ and
    hold data on both hosts are guest writes the migration did not carry,
    not the hosts' doing (seen in about one run in five under CI's load:
    one page, where both maps were printed; the same migration with QEMU
    run by hand on plain files, l1_repro.py, has not shown it yet: issue
    36); a page of data on the source that is zeros on the destination,
    or many pages, could be the destination host's, and fail the test."""
    if isinstance(diff, str) or not diff or len(diff) > LOST_PAGES:
        return None
    if any(a and not b for _, a, b in diff):
        return None
    return (f"{len(diff)} page(s) the guest wrote differ, none zeroed at "
            "the destination: guest writes the live migration did not carry "
            "(QEMU under nested TCG, or the emulated hosts' DAX; issue 36): "
            "neither daxfile nor libvirt writes data into the file")


def boot_ok(tap, res, name, crashed=False):
    """The boot ended as it should: a crash where one was made, else a
    clean end; no kernel errors; the serial tail on failure"""
    problems = [p for p in res.problems
                if not (crashed and "before the guest printed its END" in p)]
    if crashed and res.end_seen:
        problems.append("L1 ran to its end instead of crashing")
    tap.ok(not problems, name, "\n".join(problems + res.tail(60))
           if problems else None)


def l2_files(l2, workdir, phase, seed, count=0, sub="l2"):
    """vmlinux, initrd and cmdline of L2, where L1 copies them from"""
    d = os.path.join(workdir, sub)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    shutil.copy2(l2.boot_kernel, os.path.join(d, "vmlinux"))
    script = vm.resolve_script("chain-l2")
    l2.initrd(os.path.join(d, "initrd"), script,
              {"CHAIN_PHASE": phase, "CHAIN_SEED": str(seed),
               "CHAIN_COUNT": str(count)})
    # printk.devkmsg=on: the migrate phase prints its TAP through /dev/kmsg
    # to the console, which therefore stays loud
    with open(os.path.join(d, "cmdline"), "w") as f:
        f.write(f"{vm.DEFAULT_APPEND} daxfile.script={script.name} "
                + ("printk.devkmsg=on" if phase == "migrate" else
                   lv.NESTED_APPEND) + "\n")
    for name in os.listdir(d):
        os.chmod(os.path.join(d, name), 0o644)
    return d


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# each migration host's file (tests/chain/l1common.py: MIG_SRC, MIG_DST)
MIG_FILES = {"src": "/mnt/xfs/chain.img", "dst": "/mnt/ext4/chain.img"}


def switchover(relays):
    """the sha256 of the source's and of the destination's file as each
    host printed it, or None"""
    return (relays["src"].sha256.get(MIG_FILES["src"]) if "src" in relays
            else None,
            relays["dst"].sha256.get(MIG_FILES["dst"]) if "dst" in relays
            else None)


def migrate(args, tap, l2, workdir, logs, seed):
    """Both hosts at once; the source's end cancels a destination still
    waiting for a domain that will never come"""
    sides = {"src": args.kernel, "dst": args.dst_kernel or args.kernel}
    addr = {"src": "10.0.9.1", "dst": "10.0.9.2"}
    port = {side: free_udp_port() for side in sides}
    l2dir = l2_files(l2, workdir, "migrate", seed)
    results, relays = {}, {}
    cancel = threading.Event()
    pmems = {side: vm.Pmem.create(os.path.join(
        vm.default_tmpdir(), f"{os.path.basename(workdir)}-{side}"), "1G",
        temporary=True) for side in sides}

    def after_stop(name):
        """The destination's checks after the resumed guest's stop, when
        the switchover already lost pages to the migration: the chunks
        L2 completed there stand on what was lost (a stale journal block
        is enough), so a shortfall is that loss's, not the hosts'"""
        if not name.startswith("ext4: after the stop"):
            return None
        src, dst = switchover(relays)
        if not src or not dst or src == dst:
            return None
        return lost_in_migration(page_diff(
            relays["src"].pages.get(MIG_FILES["src"]),
            relays["dst"].pages.get(MIG_FILES["dst"])))

    def boot(side, image):
        peer = "dst" if side == "src" else "src"
        relays[side] = Relay(tap, side, lv.caps_cache(sides[side]),
                             todo=after_stop if side == "dst" else None)
        net = ["-netdev", f"socket,id=n0,udp=127.0.0.1:{port[peer]},"
               f"localaddr=127.0.0.1:{port[side]}",
               "-device", "virtio-net-pci,netdev=n0,"
               f"mac=52:54:00:00:09:{addr[side].split('.')[-1].zfill(2)}"]
        env = {"CHAIN_STAGE": f"migrate-{'plain-' if args.plain else ''}"
                              f"{side}",
               "CHAIN_MECH": MECH.get(sides[side], "immutable-guard"),
               "CHAIN_ADDR": addr[side], "CHAIN_PEER": addr[peer],
               "CHAIN_RESUME": "1" if args.resume else "0",
               "CHAIN_L2DIR": l2dir, "CHAIN_SEED": str(seed),
               "CHAIN_CAPS": lv.caps_cache(sides[side])}
        results[side] = image.boot(
            "chain-l1", env=env, on_tap=relays[side], pmems=[pmems[side]],
            hostroot=True, smp=vm.emulated_host_cpus(sides[side]),
            memory="2G",
            timeout=args.timeout, extra_qemu=net, cancel=cancel,
            serial_log=os.path.join(
                logs, f"chain-migrate-{'plain-' if args.plain else ''}"
                f"{sides['src']}-{side}.serial.log"),
            shares=own_root_shares(image, workdir, sides[side]))

    try:
        # one CPU slot for both hosts (each boot holds it): the destination
        # waits, idle, for all but the migration's few seconds
        images = {side: vm.build_image(k) for side, k in sides.items()}
        tap.diag(f"source L1 {images['src'].kernel.describe()}, destination "
                 f"L1 {images['dst'].kernel.describe()}, L2 "
                 f"{l2.kernel.describe()}, seed {seed}")
        threads = {side: threading.Thread(target=boot,
                                          args=(side, images[side]))
                   for side in ("dst", "src")}
        for t in threads.values():
            t.start()
        threads["src"].join()
        moved = any(n.startswith(("virsh migrate --live",
                                  "live migration to"))
                    for n in relays["src"].passed)
        # a destination whose guest never came has nothing left to show
        threads["dst"].join(None if moved else 60)
        cancel.set()
        threads["dst"].join()
        src, dst = switchover(relays)
        name = ("the destination's file is byte for byte what the source's "
                f"was when the guest stopped there (sha256 "
                f"{(dst or '-')[:16]}...): the pattern, the chunks L2 "
                "verified there, and what it was writing during the "
                "migration")
        diff = page_diff(relays["src"].pages.get(MIG_FILES["src"]),
                         relays["dst"].pages.get(MIG_FILES["dst"]))
        why = lost_in_migration(diff) if src and dst and src != dst else None
        text = f"source {src}, destination {dst}\n" + describe_diff(diff)
        if why:
            tap.todo(name, why, text)
        else:
            tap.ok(src and src == dst, name, text)
        done = relays["src"].counts.get("COMPLETED")
        verified = relays["dst"].counts.get("VERIFIED")
        tap.ok(done is not None and verified is not None and verified >= done,
               f"every chunk L2 completed on the source ({done}) verifies on "
               f"the destination ({verified} there)")
        for side in ("src", "dst"):
            boot_ok(tap, results[side], f"{side}: L1 on {sides[side]} ran to "
                    "its end")
            tap.ok(relays[side].results > 0, f"{side}: reported results")
    finally:
        # DAXFILE_CHAIN_KEEP=1: both hosts' NVDIMMs stay, to take the two
        # files apart after a failure
        for p in pmems.values():
            if os.environ.get("DAXFILE_CHAIN_KEEP") == "1":
                tap.diag(f"kept: {p.path}")
            else:
                p.remove()


def repro(args, tap, l2, workdir, logs, seed):
    """One L1 with both fsdax filesystems, which migrates L2 between two
    QEMUs of its own (CHAIN_STAGE=migrate-repro)"""
    l1 = vm.build_image(args.kernel)
    pmems = [vm.Pmem.create(os.path.join(vm.default_tmpdir(),
                                         f"{os.path.basename(workdir)}-{i}"),
                            "1G", temporary=True) for i in range(2)]
    try:
        tap.diag(f"L1 {l1.kernel.describe()}, L2 {l2.kernel.describe()}, "
                 f"{args.rounds} migrations, seed {seed}")
        relay = Relay(tap, "repro", lv.caps_cache(args.kernel))
        env = {"CHAIN_STAGE": "migrate-repro", "CHAIN_SEED": str(seed),
               "CHAIN_CAPS": lv.caps_cache(args.kernel),
               "CHAIN_REPRO_ROUNDS": str(args.rounds),
               "CHAIN_L2DIR": l2_files(l2, workdir, "migrate", seed)}
        res = watched_boot(
            l1, relay, env=env, pmems=pmems, hostroot=True,
            smp=vm.emulated_host_cpus(args.kernel), memory="2G",
            timeout=args.timeout, shares=own_root_shares(l1, workdir,
                                                         args.kernel),
            serial_log=os.path.join(
                logs, f"chain-repro-{args.kernel}.serial.log"))
        boot_ok(tap, res, f"L1 on {args.kernel} ran to its end")
        tap.ok(relay.results > 0, "reported results")
    finally:
        for p in pmems:
            p.remove()


# the chunks the CXL host's L2 writes (each a process start: seconds under
# nested TCG) before it powers off
CXL_CHUNKS = 3


def cxl(args, tap, l2, workdir, logs, seed):
    """One L1 whose only pmem is a CXL type-3 device (CHAIN_STAGE=cxl)"""
    l1 = vm.build_image(args.kernel)
    pmem = vm.Pmem.create(os.path.join(vm.default_tmpdir(),
                                       f"{os.path.basename(workdir)}-cxl"),
                          "1G", temporary=True, model="cxl")
    # QEMU 10's CPU is not QEMU 7.2's (libvirt's hostCPUSignature in L1:
    # family 6, model 6 under 10; 15, 107 under 7.2), and libvirt takes
    # a probe made under another as stale: not chain-KERNEL's probes
    caps = lv.caps_cache(f"{args.kernel}-cxl")
    try:
        tap.diag(f"L1 {l1.kernel.describe()} on a CXL type-3 device, L2 "
                 f"{l2.kernel.describe()}, seed {seed}")
        relay = Relay(tap, "cxl", caps)
        env = {"CHAIN_STAGE": "cxl", "CHAIN_L2IO": "1",
               "CHAIN_MECH": MECH.get(args.kernel, "immutable-guard"),
               "CHAIN_SEED": str(seed), "CHAIN_COUNT": str(CXL_CHUNKS),
               "CHAIN_CAPS": caps,
               "CHAIN_L2DIR": l2_files(l2, workdir, "write", seed,
                                       CXL_CHUNKS)}
        res = watched_boot(
            l1, relay, env=env, pmems=[pmem], hostroot=True,
            smp=vm.emulated_host_cpus(args.kernel), memory="2G",
            timeout=args.timeout, shares=own_root_shares(l1, workdir,
                                                         args.kernel),
            serial_log=os.path.join(
                logs, f"chain-cxl-{args.kernel}.serial.log"))
        if relay.stalled:
            hung(tap, res, relay, "the CXL host")
        boot_ok(tap, res, f"L1 on {args.kernel} on CXL pmem ran to its end")
        tap.ok(relay.results > 0, "reported results")
    finally:
        pmem.remove()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="6.1", help="L1's kernel flavour")
    ap.add_argument("--crash", choices=("sysrq", "kill"), default="sysrq")
    ap.add_argument("--l2-io", action="store_true",
                    help="boot L2 to write and verify through its NVDIMMs "
                    "(else QEMU only maps them: virsh start --paused)")
    ap.add_argument("--migrate", action="store_true",
                    help="two L1 hosts; L2 migrates live between them")
    ap.add_argument("--dst-kernel", default=None,
                    help="the migration destination's kernel (--kernel)")
    ap.add_argument("--resume", action="store_true",
                    help="--migrate: the destination resumes L2, which "
                    "writes on there")
    ap.add_argument("--plain", action="store_true",
                    help="--migrate: QEMU run by hand on plain files in "
                    "both hosts: no libvirt guest, no daxfile")
    ap.add_argument("--repro", action="store_true",
                    help="one L1 migrates L2 between two QEMUs of its own, "
                    "plain files, no libvirt guest, no daxfile")
    ap.add_argument("--cxl", action="store_true",
                    help="one L1 whose pmem is a CXL type-3 device's: "
                    "L2 on a static file there")
    ap.add_argument("--rounds", type=int, default=3,
                    help="--repro: how many migrations")
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("--timeout", type=int, default=1500)
    args = ap.parse_args()
    tap = Tap()
    need_root(tap)
    os.environ.setdefault("DAXFILE_SRCDIR", SRCDIR)
    os.environ.setdefault("DAXFILE_BUILDDIR", build_path())
    l1 = None if args.migrate or args.cxl else vm.build_image(args.kernel)
    # L2's initrd stays uncompressed: gunzip under nested TCG costs more
    # than a minute of every L2 boot.
    l2 = vm.build_image("daxctl", compress=False,
                        bins=[build_path("guest-tools", "daxfile-guest")])
    l2v = None
    if args.kernel in VPMEM and args.l2_io and not args.migrate:
        l2v = vm.build_image("debian13", compress=False,
                             bins=[build_path("guest-tools", "daxfile-guest")],
                             tools=["/usr/sbin/mke2fs"],
                             modules=VPMEM_MODULES)
    seed = secrets.randbelow(1 << 30)
    workdir = tempfile.mkdtemp(prefix="daxfile-chain-", dir="/var/tmp")
    os.chmod(workdir, 0o755)
    logs = args.log_dir or workdir
    modes = [f for on, f in ((args.migrate, migrate), (args.repro, repro),
                             (args.cxl, cxl)) if on]
    if modes:
        try:
            modes[0](args, tap, l2, workdir, logs, seed)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return tap.done()
    try:
        for attempt in (1, 2):
            if not chain(args, tap, l1, (l2, l2v), workdir, logs, seed):
                break
            if attempt == 1:
                seed = secrets.randbelow(1 << 30)
                tap.diag("the emulated host hung and was killed (what it "
                         "was doing: the STALL lines above, if any); the "
                         f"chain runs once more from the start, seed {seed}")
            else:
                tap.ok(False, "the emulated host hung twice (the STALL "
                       "lines above, if any)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return tap.done()


# An emulated host that reports no result for this long has hung: its own
# steps time out sooner (virsh 300 s, L2's first chunk and power-off 300 s)
STALL_KILL = 420
# An emulated host whose StallWatch has sent no heartbeat (every 30 s) for
# this long has hung in its kernel. What the chain saw: its two CPUs busy
# under TCG as it ran L2 under its own KVM, nothing printed, not even the
# STALL lines (once in the last five full runs); found this way it costs
# 100 s, not 420.
SILENT_KILL = 100


def watched_boot(image, relay, **kwargs):
    """image.boot(), killed when @relay has had no result for STALL_KILL
    seconds, or no heartbeat for SILENT_KILL once one came (relay.stalled
    says so)"""
    cancel = threading.Event()
    done = threading.Event()

    def watch():
        while not done.wait(5):
            now = time.monotonic()
            if now - relay.last_result > STALL_KILL:
                relay.stalled = f"reported no result for {STALL_KILL} s"
            elif (relay.last_beat is not None and
                  now - relay.last_beat > SILENT_KILL):
                relay.stalled = (f"sent no heartbeat for {SILENT_KILL} s "
                                 "(its kernel hung)")
            if relay.stalled:
                cancel.set()
                return

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        return image.boot("chain-l1", on_tap=relay, cancel=cancel, **kwargs)
    finally:
        done.set()
        t.join()


def hung(tap, res, relay, boot):
    """Say where @boot hung and how @relay saw it, keep its serial log
    beside the next one's; True"""
    tap.diag(f"{boot} hung: the emulated host {relay.stalled}; the last "
             "lines of its serial log:\n"
             + "\n".join(res.tail(30)))
    if res.serial_log_path:
        os.replace(res.serial_log_path,
                   res.serial_log_path.replace(".serial.log",
                                               ".hung.serial.log"))
    return True


def own_root_shares(image, workdir, kernel):
    """What an L1 on a root of its own (the Debian 13 one) must be given
    besides the checkout and the build: L2's files in @workdir and
    libvirt's cached probes; an L1 on this machine's root sees them"""
    if image.kernel.userland == Path("/"):
        return []
    caps = lv.caps_cache(kernel)
    os.makedirs(caps, exist_ok=True)
    return [workdir, caps]


def chain(args, tap, l1, l2s, workdir, logs, seed):
    """Boot 1 to the crash, boot 2 after it, on new NVDIMMs and a new
    state disk; True when the emulated host hung (nothing reported).
    @l2s: L2's image, and the virtio-pmem L2's (or None)"""
    l2, l2v = l2s
    # two for fsdax (xfs, ext4), a small one for devdax
    pmems = [vm.Pmem.create(os.path.join(vm.default_tmpdir(),
                                         f"{os.path.basename(workdir)}-{i}"),
                            size, temporary=True)
             for i, size in enumerate(("1G", "1G", "128M"))]
    disk = os.path.join(workdir, "state.img")
    with open(disk, "wb") as f:
        f.truncate(0)
        f.truncate(256 << 20)
    base_env = {"CHAIN_MECH": MECH.get(args.kernel, "immutable-guard"),
                "CHAIN_CRASH": args.crash,
                "CHAIN_L2IO": "1" if args.l2_io else "0",
                "CHAIN_CAPS": lv.caps_cache(args.kernel),
                "CHAIN_USERS_PATHS": "1" if args.kernel in USERS_PATHS
                else "0",
                "CHAIN_VPMEM": str(VPMEM_CHUNKS) if l2v else "0"}
    boot = dict(pmems=pmems, hostroot=True,
                smp=vm.emulated_host_cpus(args.kernel), memory="3G",
                timeout=args.timeout, extra_qemu=[
                    "-drive", f"file={disk},if=virtio,format=raw"],
                shares=own_root_shares(l1, workdir, args.kernel))
    try:
        tap.diag(f"L1 {l1.kernel.describe()}, L2 {l2.kernel.describe()}"
                 + (f" (virtio-pmem: {l2v.kernel.describe()})" if l2v
                    else "") + f", crash by {args.crash}, seed {seed}")

        def l2v_dir(phase):
            return l2_files(l2v, workdir, phase, seed, VPMEM_CHUNKS,
                            sub="l2v") if l2v else ""

        relay = Relay(tap, "boot 1", lv.caps_cache(args.kernel))
        env = dict(base_env, CHAIN_STAGE="first",
                   CHAIN_L2DIR=l2_files(l2, workdir, "stream", seed),
                   CHAIN_L2VDIR=l2v_dir("vpmem-write"))
        res = watched_boot(l1, relay, env=env,
                           kill_on=r"^# CHAIN-CRASH-NOW"
                           if args.crash == "kill" else None,
                           serial_log=os.path.join(
                               logs, f"chain-{args.kernel}-boot1.serial.log"),
                           **boot)
        if relay.stalled:
            return hung(tap, res, relay, "boot 1")
        boot_ok(tap, res, f"boot 1: L1 on {args.kernel} crashed by "
                f"{args.crash} right after the release", crashed=True)
        if relay.chunks is None:
            tap.ok(False, "boot 1 reached the crash point; boot 2 skipped")
            return False
        chunks = relay.chunks
        relay = Relay(tap, "boot 2", lv.caps_cache(args.kernel))
        env = dict(base_env, CHAIN_STAGE="after", CHAIN_COUNT=str(chunks),
                   CHAIN_L2DIR=l2_files(l2, workdir, "verify", seed, chunks),
                   CHAIN_L2VDIR=l2v_dir("vpmem-verify"))
        res = watched_boot(l1, relay, env=env,
                           serial_log=os.path.join(
                               logs, f"chain-{args.kernel}-boot2.serial.log"),
                           **boot)
        if relay.stalled:
            return hung(tap, res, relay, "boot 2")
        boot_ok(tap, res, f"boot 2: L1 on {args.kernel} ran to its end")
        tap.ok(relay.results > 0, "boot 2 reported results")
        return False
    finally:
        for p in pmems:
            p.remove()


if __name__ == "__main__":
    sys.exit(main())

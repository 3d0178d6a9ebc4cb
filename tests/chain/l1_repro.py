# SPDX-License-Identifier: GPL-2.0-or-later
"""The chain suite's emulated host, CHAIN_STAGE=migrate-repro and
migrate-plain-src/-dst (see l1-chain.py): does a live migration under
nested TCG keep a guest's file-backed NVDIMM byte for byte, with nothing
of daxfile and no libvirt running the guest?

migrate-plain-src/-dst: two hosts, as chain-migrate-debian13's, over the
same network; QEMU run by hand on a plain file in each (see below the
line that says so).

migrate-repro:

Two QEMUs in this one host, run by hand: the source's NVDIMM is a plain
file on the xfs -o dax (written with zeros, nothing static), the
destination's one on the ext4 -o dax; QEMU's own command line is what
libvirt would run for the chain's domain (virsh domxml-to-native, its
monitor swapped for a QMP socket of ours). L2 (chain-l2.sh, migrate
phase) writes chunks through MAP_SYNC and verifies all it wrote after
each. Each round migrates it live (QMP migrate) to a new QEMU started
-incoming -S on the other file, compares the two files page by page while
both QEMUs are stopped, resumes L2 there and has it write on; the last
round's destination is killed, as virsh destroy does, and the file then
must hold every chunk L2 completed."""

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import zlib

import libvirt_env as lv
from l1common import (IMAGES, M, MIG_DST, MIG_SRC, L2Tap, WORK, cfg, diag,
                      libvirtd_start, tap)
from l1_migrate import RESUMED_CHUNKS, print_sha256, verify_copy

NAME = "repro"
FILES = ("/mnt/xfs/repro.img", "/mnt/ext4/repro.img")
SIZE = 128 * M
PAGE = 4096
ROUNDS = int(os.environ.get("CHAIN_REPRO_ROUNDS", "3") or 3)
# chunks L2 completes after each switchover before the next migration
AFTER = 1
# as fast as the chain's migration between two emulated hosts went (about
# 384 MiB in 30-40 s), so that it takes as many rounds of dirty pages
BANDWIDTH = 12 * M


class Qmp:
    """QEMU's machine protocol on a unix socket: one command at a time,
    events skipped"""

    def __init__(self, path, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.f = self.sock.makefile("rw")
        self.f.readline()  # the greeting
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}) + "\n")
        self.f.flush()
        while True:
            line = self.f.readline()
            if not line:
                raise OSError(f"QMP {name}: QEMU closed its monitor")
            msg = json.loads(line)
            if "return" in msg:
                return msg["return"]
            if "error" in msg:
                raise OSError(f"QMP {name}: {msg['error'].get('desc')}")

    def close(self):
        self.f.close()
        self.sock.close()


def native_argv():
    """QEMU's argv for the chain's domain with an NVDIMM on @FILES[0], as
    libvirt would start it, without libvirt's monitor"""
    nvdimm = ("<memory model='nvdimm' access='shared'><source>"
              f"<path>{FILES[0]}</path>"
              "<alignsize unit='KiB'>2048</alignsize><pmem/></source>"
              f"<target><size unit='KiB'>{SIZE >> 10}</size><node>0</node>"
              "</target></memory>\n")
    xml = lv.domain_xml(NAME, f"{IMAGES}/vmlinux", f"{IMAGES}/initrd",
                        open(f"{IMAGES}/cmdline").read().strip(),
                        f"{WORK}/{NAME}.console", f"{WORK}/{NAME}.tap",
                        memory_mib=256, loader=lv.nested_loader(),
                        virt="qemu", vcpus=1, devices=nvdimm)
    path = f"{WORK}/{NAME}.xml"
    with open(path, "w") as f:
        f.write(xml)
    res = lv.virsh("domxml-to-native", "qemu-argv", "--xml", path)
    if res.returncode != 0:
        return None, res.stderr.strip()
    words = shlex.split(res.stdout.replace("\\\n", " "))
    while words and "=" in words[0] and not words[0].startswith("/"):
        words.pop(0)  # LC_ALL=C PATH=... before the binary
    argv, skip = [], False
    for w in words:
        if skip:
            skip = False
            if "charmonitor" in w or "masterKey0" in w:
                argv.pop()  # libvirt's monitor, its secret's key file
                continue
        elif w in ("-chardev", "-mon", "-object"):
            skip = True
        elif w == "-S":
            continue  # libvirt's: it starts the vCPUs once set up
        argv.append(w)
    return argv, None


def ram_file(side):
    return f"/dev/shm/{NAME}-ram-{side}"


def ram_on_file(word, side):
    """libvirt's RAM backend @word, as a shared file of this QEMU's in
    /dev/shm: the two QEMUs' RAM can then be compared too"""
    try:
        obj = json.loads(word)
    except ValueError:
        return word
    if not isinstance(obj, dict) or \
            obj.get("qom-type") != "memory-backend-ram":
        return word
    obj.update({"qom-type": "memory-backend-file", "share": True,
                "mem-path": ram_file(side)})
    return json.dumps(obj, separators=(",", ":"))


def start(argv, side, path, incoming=None, ram=True):
    """QEMU on @path, its RAM on ram_file(@side) (@ram) or as libvirt has
    it; its QMP socket, console file and process"""
    qmp = f"/run/{NAME}-{side}.qmp"
    console = f"{WORK}/{NAME}-{side}.console"
    for p in (qmp, console, ram_file(side)):
        if os.path.exists(p):
            os.unlink(p)
    argv = [(ram_on_file(w, side) if ram else w).replace(FILES[0], path)
            .replace(f"{WORK}/{NAME}.console", console)
            .replace(f"{WORK}/{NAME}.tap", f"{WORK}/{NAME}-{side}.tap")
            for w in argv]
    argv += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    if incoming:
        argv += ["-S", "-incoming", incoming]
    log = open(f"{WORK}/{NAME}-{side}.log", "w")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT)
    return Qmp(qmp), console, proc


def plain_file(path):
    """a plain file of SIZE, written with zeros and fsynced"""
    zero = bytes(4 * M)
    with open(path, "wb") as f:
        for _ in range(SIZE // len(zero)):
            f.write(zero)
        os.fsync(f.fileno())


def differing_pages(a, b):
    """the 4 KiB pages in which files @a and @b differ"""
    pages = []
    with open(a, "rb") as fa, open(b, "rb") as fb:
        i = 0
        while True:
            x, y = fa.read(M), fb.read(M)
            if not x and not y:
                break
            if x != y:
                pages += [i + k // PAGE for k in range(0, max(len(x), len(y)),
                                                       PAGE)
                          if x[k:k + PAGE] != y[k:k + PAGE]]
            i += M // PAGE
    return pages


def describe_pages(pages, a, b):
    """@pages of @a and @b, with each one's crc32 in both"""
    out = []
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for p in pages[:16]:
            fa.seek(p * PAGE)
            fb.seek(p * PAGE)
            x, y = fa.read(PAGE), fb.read(PAGE)
            out.append(f"page {p} (offset {p * PAGE:#x}): crc32 "
                       f"{zlib.crc32(x):08x} vs {zlib.crc32(y):08x}, "
                       f"{sum(u != v for u, v in zip(x, y))} bytes differ")
    if len(pages) > 16:
        out.append(f"... and {len(pages) - 16} more")
    return "\n".join(out)


def l2_on(console):
    """L2's TAP in the console file of a QEMU run by hand (chain-l2.sh
    prints it through the kernel log)"""
    return L2Tap(NAME, console=True, path=console)


def alive(proc):
    return lambda: proc.poll() is None


def migrate(src, dst_uri, timeout=1200, bandwidth=BANDWIDTH):
    """QMP migrate at @bandwidth and wait: (status and its error,
    seconds)"""
    t0 = time.monotonic()
    src.cmd("migrate-set-parameters", **{"max-bandwidth": bandwidth})
    src.cmd("migrate", uri=dst_uri)
    info = {}
    while time.monotonic() - t0 < timeout:
        info = src.cmd("query-migrate")
        if info.get("status") in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.5)
    status = info.get("status")
    if info.get("error-desc"):
        status += f": {info['error-desc']}"
    return status, time.monotonic() - t0


def kill(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()


def set_up(files):
    """L2's boot files, QEMU's command line from libvirt, @files plain:
    the argv, or None"""
    lv.nested_host_conf()
    for d in (WORK, IMAGES):
        os.makedirs(d, exist_ok=True)
    for name in os.listdir(cfg.l2dir):
        shutil.copy(os.path.join(cfg.l2dir, name), IMAGES)
    took = libvirtd_start()
    if not tap.ok(took is not None, "libvirtd started by hand (only for "
                  "virsh domxml-to-native: it runs no guest here)"):
        return None
    argv, err = native_argv()
    if not tap.ok(argv is not None, "QEMU's command line for the chain's "
                  "domain with a plain-file NVDIMM, as libvirt would run it",
                  err):
        return None
    diag("QEMU: " + shlex.join(argv))
    for path in files:
        plain_file(path)
    return argv


def stage_migrate_repro():
    argv = set_up(FILES)
    if not argv:
        return
    procs = []
    try:
        run_rounds(argv, procs)
    finally:
        for proc in procs:
            kill(proc)


def run_rounds(argv, procs):
    src, console, proc = start(argv, "r0", FILES[0])
    procs.append(proc)
    l2 = l2_on(console)
    done = l2.wait(1, 600, alive(proc))
    if not tap.ok(done >= 1, f"L2 booted on the source and completed {done} "
                  "chunks", open(console, errors="replace").read()[-3000:]):
        return
    total = done
    for r in range(1, ROUNDS + 1):
        here, there = FILES[(r - 1) % 2], FILES[r % 2]
        # a unix socket: this host has no network up
        uri = f"unix:/run/{NAME}-r{r}.migrate"
        dst, dconsole, dproc = start(argv, f"r{r}", there, incoming=uri)
        procs.append(dproc)
        status, took = migrate(src, uri)
        l2.poll()
        total = max(total, len(l2.chunks))
        if not tap.ok(status == "completed", f"round {r}: live migration "
                      f"{here} -> {there} {status} ({took:.1f} s; L2 "
                      f"completed {total} chunks by then)",
                      "the destination's QEMU: " +
                      open(f"{WORK}/{NAME}-r{r}.log").read()[-2000:] +
                      "\nthe source's QEMU: " +
                      open(f"{WORK}/{NAME}-r{r - 1}.log").read()[-2000:]):
            return
        # both stopped now: the source in postmigrate, the destination -S
        pages = differing_pages(here, there)
        tap.ok(not pages, f"round {r}: the destination's file is byte for "
               "byte the source's at the switchover", describe_pages(
                   pages, here, there) if pages else None)
        a, b = ram_file(f"r{r - 1}"), ram_file(f"r{r}")
        pages = differing_pages(a, b)
        tap.ok(not pages, f"round {r}: and so is the destination's RAM",
               f"{len(pages)} pages differ:\n" +
               describe_pages(pages, a, b) if pages else None)
        src.close()
        kill(proc)
        os.unlink(a)
        src, proc = dst, dproc
        src.cmd("cont")
        l2 = l2_on(dconsole)
        want = AFTER + (2 if r == ROUNDS else 0)
        got = l2.wait(want, 600, alive(proc))
        tap.ok(got >= want, f"round {r}: L2 runs on at the destination: "
               f"{got} chunks more, after each the pattern and every chunk "
               "it ever wrote read back intact",
               open(dconsole, errors="replace").read()[-3000:])
        total = max(total, max(l2.chunks, default=-1) + 1)
    src.close()
    kill(proc)
    n, err = verify_copy(there)
    tap.ok(err is None and n >= total, f"after the last destination was "
           f"killed, its file holds the pattern and {n} chunks intact "
           f"(L2 completed {total})", err)


# ------------------------------------------- two hosts, as the chain's

# CHAIN_STAGE=migrate-plain-src and -dst: what chain-migrate-debian13 does
# between two hosts, with QEMU run by hand on plain files: no libvirt
# guest, no hook, nothing static. The files' paths are the chain's, so the
# test host compares them as it does there (CHAIN-SHA256, CHAIN-PAGES).
PORT = 4444


def stage_plain_src():
    argv = set_up([MIG_SRC])
    if not argv:
        return
    src, console, proc = start(argv, "src", MIG_SRC, ram=False)
    try:
        l2 = l2_on(console)
        done = l2.wait(1, 1200, alive(proc))
        if not tap.ok(done >= 1, f"L2 booted here and completed {done} "
                      "chunks",
                      open(console, errors="replace").read()[-3000:]):
            return
        # until the other host's QEMU listens (-incoming takes the first
        # connection as the migration's: no probing it)
        uri = f"tcp:{cfg.peer}:{PORT}"
        deadline = time.monotonic() + 900
        while True:
            # no limit: as libvirt's, the network between the hosts is
            status, took = migrate(src, uri, bandwidth=1 << 40)
            if "Failed to connect" not in (status or "") or \
                    time.monotonic() > deadline:
                break
            time.sleep(2)
        l2.poll()
        tap.ok(status == "completed", f"live migration to {cfg.peer} "
               f"{status} ({took:.1f} s; L2 had completed {done} chunks "
               f"here when it began, {len(l2.chunks)} when it ended)",
               open(f"{WORK}/{NAME}-src.log").read()[-2000:])
        diag(f"CHAIN-COMPLETED {len(l2.chunks)}")
        src.close()
    finally:
        kill(proc)
    print_sha256(MIG_SRC)


def stage_plain_dst():
    argv = set_up([MIG_DST])
    if not argv:
        return
    dst, console, proc = start(argv, "dst", MIG_DST, ram=False,
                               incoming=f"tcp:0.0.0.0:{PORT}")
    try:
        deadline = time.monotonic() + 1800
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            status = dst.cmd("query-migrate").get("status")
            if status in ("completed", "failed"):
                break
            time.sleep(1)
        if not tap.ok(status == "completed", f"the migration came in: "
                      f"{status}", open(f"{WORK}/{NAME}-dst.log").read()):
            return
        print_sha256(MIG_DST)
        n, err = verify_copy(MIG_DST)
        tap.ok(err is None, f"a copy of the file holds L2's pattern and "
               f"{n} chunks", err)
        diag(f"CHAIN-VERIFIED {n}")
        dst.cmd("cont")
        l2 = l2_on(console)
        got = l2.wait(RESUMED_CHUNKS, 900, alive(proc))
        tap.ok(got >= RESUMED_CHUNKS, f"L2 runs on here: {got} chunks "
               "more, after each the pattern and every chunk it wrote "
               "before and after the migration read back intact",
               open(console, errors="replace").read()[-3000:])
        n = max(n, max(l2.chunks, default=-1) + 1)
        dst.close()
    finally:
        kill(proc)
    after, err = verify_copy(MIG_DST)
    tap.ok(err is None and after >= n, f"after QEMU was killed, a copy "
           f"finds the pattern and {after} chunks intact, the {n} L2 "
           "completed before and after the migration among them", err)

# SPDX-License-Identifier: GPL-2.0-or-later
"""The chain suite's emulated host, CHAIN_STAGE=migrate-src and
migrate-dst (see l1-chain.py)."""

import base64
import hashlib
import json
import os
import shutil
import struct
import time
import zlib

from daxtest import build_path, daxfile, enforced
import libvirt_env as lv
from l1common import (L2Tap, M, MAIN, MIG_DST, MIG_SRC, PROBE,
                      cfg, console_tail, diag, domain, host_up,
                      libvirtd_log_tail, owner_mode, released, sh, status,
                      tap)


# ------------------------------------------------------- stages migrate


def static_of(path):
    return ((status(path) or {}).get("static")) or {}


def stage_migrate_src():
    if not host_up(listen=True):
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
    tap.ok(st.get("enabled") and st.get("mechanism") == cfg.mech and
           enforced(path),
           f"xfs: static while QEMU runs, mechanism {cfg.mech}", st)
    l2 = L2Tap(MAIN, console=True)
    before = l2.wait(1, 1200)
    if not tap.ok(before >= 1, f"{MAIN}: L2 completed {before} chunks here",
                  console_tail(MAIN)):
        return
    dest = f"qemu+tcp://{cfg.peer}/system"
    deadline = time.monotonic() + 600
    while (sh(["virsh", "-c", dest, "-q", "version"], timeout=60).returncode
           and time.monotonic() < deadline):
        time.sleep(1)
    t0 = time.monotonic()
    res = sh(["virsh", "-c", lv.URI, "migrate", "--live", "--persistent",
              "--undefinesource", "--suspend", MAIN, dest,
              f"tcp://{cfg.peer}"],
             timeout=1200)
    took = time.monotonic() - t0
    l2.poll()
    tap.ok(res.returncode == 0,
           f"virsh migrate --live to {cfg.peer} ({took:.1f} s; L2 had "
           f"completed {before} chunks here when it began, "
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
    res = sh([guest, "verify", "--dir", mnt, "--seed", str(cfg.seed)])
    if res.returncode != 0:
        return 0, res.stderr.strip()
    n = 0
    while os.path.exists(f"{mnt}/w{n}/daxfile-guest.dat"):
        if sh([guest, "verify", "--dir", f"{mnt}/w{n}", "--seed",
               str(cfg.seed + 2 + n)]).returncode != 0:
            break
        n += 1
    return n, None


def print_sha256(path):
    """for the test host, which compares the two hosts' files: their
    sha256, and a crc32 of each 4 KiB page that is not all zeros (zlib,
    base64, in lines of PAGES_LINE), with which it names the pages the
    files differ in"""
    h = hashlib.sha256()
    pages = bytearray()
    zero = bytes(4096)
    with open(path, "rb") as f:
        i = 0
        while chunk := f.read(4 * M):
            h.update(chunk)
            for k in range(0, len(chunk), 4096):
                page = chunk[k:k + 4096]
                if page != zero:
                    pages += struct.pack("<II", i, zlib.crc32(page))
                i += 1
    text = base64.b64encode(zlib.compress(bytes(pages), 9)).decode()
    parts = [text[k:k + PAGES_LINE] for k in range(0, len(text), PAGES_LINE)]
    for n, part in enumerate(parts):
        diag(f"CHAIN-PAGES {path} {n + 1}/{len(parts)} {part}")
    diag(f"CHAIN-SHA256 {path} {h.hexdigest()}")


PAGES_LINE = 1000


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
    if not host_up(listen=True):
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
    static = {p: bool(v.get("enabled")) and v.get("mechanism") == cfg.mech
              for p, v in seen.items()}
    if cfg.mech == "kernel":
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
    tap.ok(st.get("enabled") and st.get("mechanism") == cfg.mech and
           st.get("owner") == f"domain:{MAIN}",
           f"ext4: static while QEMU runs, mechanism {cfg.mech}", st)
    print_sha256(path)
    n, err = verify_copy(path)
    tap.ok(err is None, f"ext4: daxfile-guest verify, on a copy of the "
           f"file, finds L2's pattern and {n} chunks intact (those it "
           "completed before and during the migration)", err)
    diag(f"CHAIN-VERIFIED {n}")
    # Without cfg.resume the guest is not resumed here: under nested TCG
    # (QEMU 7.2 in both L1s, Debian 12) L2 resumed after a live migration
    # with corrupt RAM (kernel oopses, ld.so assertions), on stock kernels
    # as on the daxctl() one, while a migration between two QEMUs on the
    # test host itself (no nesting) ran on with its data intact.
    if cfg.resume:
        n = resume_here(path, n)
    orig = (0, 0, 0o600)  # as the hook made it
    res = lv.virsh("destroy", MAIN)
    ok, left = released(path, orig)
    tap.ok(res.returncode == 0 and ok, "ext4: released at stop, libvirt's "
           "owner and mode back", (res.stderr, left))
    if cfg.resume:
        after, err = verify_copy(path)
        tap.ok(err is None and after >= n, f"ext4: after the stop, "
               f"daxfile-guest verify on a copy finds the pattern and {after} "
               f"chunks intact, the {n} L2 completed before and after the "
               "migration among them", err)


# chunks L2 must complete here, after the switchover
RESUMED_CHUNKS = 2


def resume_here(path, verified):
    """virsh resume the guest that arrived paused: L2 writes on, and after
    each chunk checks the pattern and every chunk it wrote, on the source
    and here. The number of chunks it completed in all (at least
    @verified, what the copy held before it resumed)."""
    l2 = L2Tap(MAIN, console=True)
    l2.poll()
    res = lv.virsh("resume", MAIN)
    if not tap.ok(res.returncode == 0, f"{MAIN}: virsh resume here",
                  res.stderr):
        return verified
    got = l2.wait(RESUMED_CHUNKS, 900)
    last = max(l2.chunks, default=-1)
    running = lv.state(MAIN) == "running"
    tap.ok(got >= RESUMED_CHUNKS and running, f"{MAIN}: L2 runs on here: "
           f"{max(got, 0)} chunks more (up to chunk {last}), after each the "
           "pattern and every chunk it wrote before and after the migration "
           "read back intact", console_tail(MAIN))
    st = static_of(path)
    tap.ok(st.get("enabled") and st.get("mechanism") == cfg.mech and
           enforced(path), "ext4: still static while L2 writes here", st)
    return max(verified, last + 1)

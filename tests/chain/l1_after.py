# SPDX-License-Identifier: GPL-2.0-or-later
"""The chain suite's emulated host, CHAIN_STAGE=after (see l1-chain.py)."""

import hashlib
import os
import time

from daxtest import daxfile, enforced
import libvirt_env as lv
from l1common import (ALL_FILES, FILES, MAIN, PHASES, VPMEM, VPMEM_FILE,
                      WORK, cfg, console_tail, diag, entries, entry_of,
                      install, libvirtd_log_tail, libvirtd_start, owner_mode,
                      released, status, tap)


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
            [("chain-started", PHASES["chain-started"])] + \
            ([(VPMEM, VPMEM_FILE)] if cfg.vpmem else []):
        want = cfg.mech != "immutable-guard" or enforced(path)
        tap.ok(want and path in listed,
               f"{path}: its entry survived the crash"
               + (", and the flag: engaged durably before started returned"
                  if cfg.mech == "immutable-guard" else ""), listed.get(path))
    before = {p: os.stat(p).st_mtime_ns for p in listed if p in ALL_FILES}
    # this boot's clock: the last one's stamps can be ahead of it (an
    # emulated host's clock ran fast under load: stamps of the crashed
    # boot later than this boot's repair, seen in CI), so "now" is not
    # "later than before"; a file system's clock for timestamps is the
    # coarse one, up to a tick behind
    t0 = time.time_ns() - 1_000_000_000
    res = daxfile("repair")
    diag(res.err)
    tap.ok(res.rc == 0, "daxfile repair", res.err)
    if cfg.mech == "kernel":
        # static in the kernel at the crash: stores since the last stamp
        # may not show in mtime (kernel/README.md, "Fault path")
        now = {p: os.stat(p).st_mtime_ns for p in before}
        later = [p for p, t in before.items() if now[p] != t and now[p] >= t0]
        tap.ok(before and sorted(later) == sorted(before) and
               res.err.count("its mtime is now") == len(before),
               f"repair stamped the mtime of the {len(before)} files left "
               f"static in the kernel", (before, now, t0, res.err))
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


def l2_verifies(name, want, what):
    """Start @name, whose L2 verifies and powers off; its TAP relayed, and
    a test point: @want oks, none bad, shut off (@what it verified)"""
    res = lv.virsh("start", name)
    ok = res.returncode == 0 and lv.wait_shutoff(name, timeout=300)
    oks, bad = lv.tap_results(f"{WORK}/{name}.tap")
    for line in oks + bad:
        diag(f"L2: {line}")
    good = ok and not bad and len(oks) == want
    # L2's console and QEMU's log whenever it fails: an L2 that powered
    # off without a line of TAP (seen once in CI) says why only there
    tap.ok(good, f"{name}: L2 verified {what}, and powered off",
           None if good else
           "\n".join([f"{len(oks)} of {want} oks, not ok: {bad}",
                      res.stderr, console_tail(name)]))


def t_verify():
    orig = {p: owner_mode(p) for p in FILES.values()}
    if cfg.l2io:
        l2_verifies(MAIN, 3, f"its pattern and the {cfg.count} chunks it "
                    "completed before the crash, on the NVDIMM backed by "
                    "ext4")
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


def t_verify_vpmem():
    """The virtio-pmem domain's L2 finds every chunk it flushed before the
    crash; the file is released after its power-off"""
    orig = owner_mode(VPMEM_FILE)
    l2_verifies(VPMEM, 4, f"its pattern and the {cfg.vpmem} chunks it had "
                "flushed through the virtio-pmem device before the crash")
    ok, left = released(VPMEM_FILE, orig)
    tap.ok(ok, f"{VPMEM}: released after the power-off, owner and mode as "
           "before the start, no remembered label left", left)


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
    tap.ok(all(d in doms for d in [MAIN] + list(PHASES)
               + ([VPMEM] if cfg.vpmem else [])),
           "the domain definitions survived the crash", doms)
    t_after_crash()
    t_start_again()
    t_verify()
    if cfg.vpmem:
        t_verify_vpmem()
    t_wipe()

# SPDX-License-Identifier: GPL-2.0-or-later
"""The chain suite's emulated host, CHAIN_STAGE=cxl (see l1-chain.py):
its pmem is CXL persistent memory (issue 40)."""

import libvirt_env as lv
from daxtest import daxfile
from l1common import (FILES, MAIN, L2Tap, cfg, console_tail, domain,
                      entry_of, host_up, libvirtd_log_tail, owner_mode,
                      released, status, t_attested, t_static_running, tap)
from l1_migrate import verify_copy

FS = "ext4"
PATH = FILES[FS]
# QEMU maps all of it into L2; every byte L1 reads or writes there is
# emulated MMIO of the test host's QEMU (about 10 MiB/s): small
SIZE = "32M"


def mount_device(mnt):
    """The block device mounted at @mnt (its name: pmem0), as the kernel
    says, or None"""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1] == mnt and fields[0].startswith("/dev/"):
                return fields[0][len("/dev/"):]
    return None


def cxl_medium(medium, device):
    """Where @medium (of status or list --json) is not the fsdax namespace
    of block device @device in the nd region of CXL region0 (root decoder
    decoder0.0, memdev mem0: what chain-l1.sh made): {key: value}"""
    medium = medium or {}
    want = {"kind": "namespace", "device": device, "mode": "fsdax",
            "provider": "CXL", "persistence_domain": "memory_controller",
            "cxl": {"region": "region0", "decoder": "decoder0.0",
                    "memdevs": ["mem0"]}}
    return {k: medium.get(k) for k, v in want.items() if medium.get(k) != v}


def t_create(device):
    res = daxfile("create", PATH, "--size", SIZE)
    s = status(PATH) if res.rc == 0 else None
    tap.ok(s and s["static_ready"] and s["dax"],
           f"{FS}: daxfile create on the -o dax mount on CXL pmem: DAX, "
           "written, aligned", res.err or s)
    bad = cxl_medium((s or {}).get("medium"), device)
    tap.ok(s and not bad, f"{FS}: status --json names the medium: the "
           f"fsdax namespace ({device}) of CXL region0 (decoder0.0, "
           "memdev mem0), provider CXL, persistence domain "
           "memory_controller", (bad, (s or {}).get("medium")))


def t_running(device):
    """The hook's guarantee while QEMU runs, on CXL pmem"""
    t_static_running(FS, PATH, MAIN)
    t_attested(FS, PATH, MAIN)
    e = entry_of(PATH)
    bad = cxl_medium(e[0].get("medium") if e else None, device)
    tap.ok(e and not bad, f"{FS}: list --json names the static file's "
           "CXL medium", (bad, e))


def t_l2(orig):
    """L2 runs, writes its pattern and chunks through the nvdimm and
    powers off; the file is released and holds all it wrote"""
    res = lv.virsh("resume", MAIN)
    l2 = L2Tap(MAIN)
    # L2 boots in about 10 s under the emulated host's KVM, then writes
    # through CXL memory (emulated MMIO): 300 s without progress says it
    # hung
    chunks = l2.wait(cfg.count, 300) if res.returncode == 0 else 0
    off = res.returncode == 0 and lv.wait_shutoff(MAIN, timeout=120)
    reason = lv.virsh("domstate", "--reason", MAIN).stdout.strip()
    tap.ok(chunks == cfg.count and off and reason == "shut off (shutdown)",
           f"{MAIN}: resumed; L2 wrote its pattern and {chunks} of "
           f"{cfg.count} chunks through MAP_SYNC on the nvdimm backed by "
           f"the static file, and powered off ({reason})",
           res.stderr + console_tail(MAIN))
    ok, left = released(PATH, orig)
    tap.ok(ok, f"{FS}: released at the power-off, libvirt's owner and mode "
           "back, no remembered label left", left)
    n, err = verify_copy(PATH)
    tap.ok(err is None and n == cfg.count == len(l2.chunks),
           f"{FS}: a copy of the file, read back from CXL pmem, holds L2's "
           f"pattern and all {cfg.count} chunks it wrote ({n} verified)",
           err)


def stage_cxl():
    if not host_up():
        return
    device = mount_device(f"/mnt/{FS}")
    t_create(device)
    err = domain(MAIN, [PATH])
    if not tap.ok(err is None, f"{MAIN}: defined, its file attached with "
                  "daxfile attach", err):
        return
    orig = owner_mode(PATH)
    res = lv.virsh("start", "--paused", MAIN)
    if not tap.ok(res.returncode == 0, "virsh start --paused: the hook "
                  "engages at started, QEMU keeps its mapping",
                  res.stderr + libvirtd_log_tail()):
        return
    t_running(device)
    t_l2(orig)

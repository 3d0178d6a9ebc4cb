#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/run guest, inside the emulated pmem host (L1): started by
bench/guest/bench-guest-l1.sh once xfs and ext4 are mounted -o dax on
/mnt/xfs and /mnt/ext4 and the device-dax namespace is made. Prints TAP,
and one `# BENCH {json}` comment per run of the guest for bench_guest.py.

What a user on a pmem host does: libvirtd (started here, a stock
qemu.conf), the daxfile hook managing /mnt/xfs/static, /mnt/ext4/static
and device-dax devices, and per run one guest (L2, under this host's KVM,
bench/guest/bench-guest-l2.sh) whose one nvdimm is backed by
  static  a `daxfile create`d file, `daxfile attach`ed: the hook makes it
          static once QEMU has mapped it (immutable-guard on Debian's
          kernels), which `daxfile status` must say while the guest runs;
  falloc  a fallocated file of the same size, outside the managed roots,
          `<pmem/>` (QEMU maps it MAP_SYNC);
  sparse  the same made by truncate;
  devdax  the device-dax namespace, `daxfile attach`ed.
Each file is made afresh for its run and removed after it; every nvdimm
has the device-dax device's size. The rounds rotate the order of the arms
(and of the filesystems). While the guest runs, qemutrace records what
this kernel did for QEMU: see that module.

Configuration (environment, from bench_guest.py): DXG_ROUNDS, DXG_ARMS,
DXG_FS, DXG_REGION (the guest's), DXG_L2DIR (the guest's vmlinux, initrd,
cmdline), DXG_CAPS (libvirt's probe cache), DXG_TIMEOUT (per guest run),
DXG_WARMUP (1: a device-dax run first, its BENCH line marked "warmup");
DXG_DEVDAX (from bench-guest-l1.sh); DAXFILE_BUILDDIR.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import libvirt_env as lv
import qemutrace
from daxtap import Tap

IMAGES = "/var/lib/libvirt/images/daxfile-bench"
WORK = "/var/tmp/daxfile-bench-guest"
TRACE = f"{WORK}/trace.txt"
MB = 1 << 20
# a second hook, after daxfile's (name order): what `daxfile status` says
# of a static arm's file at started, once daxfile's hook has engaged it and
# before the guest runs (a status beside the running guest would take the
# emulated host's CPU from it)
PROBE = "/etc/libvirt/hooks/qemu.d/zz-dxbench-status"
PROBE_OUT = "/run/dxbench-status.json"
PROBE_SH = """#!/bin/sh
if [ "$2" = started ] && [ "$3" = begin ]; then
    case "$1" in
    dxbench-static-*)
        fs=${{1#dxbench-static-}}
        {daxfile} status --json "/mnt/$fs/static/static.img" >{out} 2>&1 ;;
    esac
fi
exit 0
"""


class Config:
    """What bench_guest.py asked for"""

    def __init__(self, env):
        self.rounds = int(env.get("DXG_ROUNDS", "3"))
        self.arms = env.get("DXG_ARMS", "devdax static falloc sparse").split()
        self.fs = env.get("DXG_FS", "xfs ext4").split()
        self.l2dir = env["DXG_L2DIR"]
        self.caps = env.get("DXG_CAPS", "")
        self.timeout = int(env.get("DXG_TIMEOUT", "300"))
        # one device-dax run first, not measured: the first guest of a
        # boot pays for TCG translating this host's paths
        self.warmup = env.get("DXG_WARMUP", "0") == "1"
        self.devdax = env["DXG_DEVDAX"]
        build = env["DAXFILE_BUILDDIR"]
        self.daxfile = os.path.join(build, "src", "daxfilectl", "daxfile")
        self.hook = os.path.join(build, "libvirt-hooks", "daxfile-hook")

    def schedule(self, rnd):
        """(arm, fs) of round @rnd in order: each round starts with
        another arm, and every other round with the other filesystem"""
        k = rnd % len(self.arms)
        fss = self.fs if rnd % 2 == 0 else self.fs[::-1]
        return [(arm, None) if arm == "devdax" else (arm, fs)
                for arm in self.arms[k:] + self.arms[:k]
                for fs in ([None] if arm == "devdax" else fss)]


def sh(argv, timeout=300):
    return subprocess.run([str(a) for a in argv], capture_output=True,
                          text=True, errors="replace", timeout=timeout)


def read_first(path):
    with open(path) as f:
        return f.read().strip()


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return f"({path}: none)"


class Host:
    """This emulated host's libvirt set-up and the runs on it"""

    def __init__(self, cfg, tap):
        self.cfg, self.tap = cfg, tap
        self.defined = set()
        self.seeded = {}
        self.daemon = None
        name = os.path.basename(cfg.devdax)
        self.size = int(read_first(f"/sys/bus/dax/devices/{name}/size"))
        self.align = int(read_first(f"/sys/bus/dax/devices/{name}/align"))

    def set_up(self):
        """The hook, libvirtd, the guest's boot files"""
        roots = [f"/mnt/{fs}/static" for fs in self.cfg.fs]
        for d in roots + [f"/mnt/{fs}/plain" for fs in self.cfg.fs] + \
                [IMAGES, WORK]:
            os.makedirs(d, mode=0o755, exist_ok=True)
        lv.Hook(self.cfg.hook, "daxfile", roots, allow_non_dax=False,
                extra="device_dax=true\n").install()
        with open(PROBE, "w") as f:
            f.write(PROBE_SH.format(daxfile=shlex.quote(self.cfg.daxfile),
                                    out=PROBE_OUT))
        os.chmod(PROBE, 0o755)
        lv.nested_host_conf()
        self.seeded = lv.seed_caps(self.cfg.caps)
        self.daemon = lv.Libvirtd()
        self.daemon.__enter__()
        for name in ("vmlinux", "initrd", "cmdline"):
            shutil.copy(os.path.join(self.cfg.l2dir, name), IMAGES)
            os.chmod(os.path.join(IMAGES, name), 0o644)

    def daxfile(self, *args):
        res = sh([self.cfg.daxfile] + list(args))
        if res.returncode != 0:
            raise RuntimeError(f"daxfile {' '.join(args)}: "
                               f"{res.stderr.strip()}")
        return res.stdout

    def backing(self, arm, fs):
        """The arm's nvdimm backing, made afresh"""
        if arm == "devdax":
            return self.cfg.devdax
        path = f"/mnt/{fs}/{'static' if arm == 'static' else 'plain'}/" \
               f"{arm}.img"
        self.remove(arm, path)  # left by a run that failed
        if arm == "static":
            self.daxfile("create", path, "--size", str(self.size))
        else:
            with open(path, "wb") as f:
                if arm == "falloc":
                    os.posix_fallocate(f.fileno(), 0, self.size)
                else:
                    f.truncate(self.size)
        return path

    def domain(self, arm, fs, path):
        """The arm's domain, defined with its nvdimm the first time"""
        name = f"dxbench-{arm}" + (f"-{fs}" if fs else "")
        if name in self.defined:
            return name
        with open(os.path.join(IMAGES, "cmdline")) as f:
            cmdline = f.read().strip()
        xml = lv.domain_xml(name, f"{IMAGES}/vmlinux", f"{IMAGES}/initrd",
                            cmdline, f"{WORK}/{name}.console",
                            f"{WORK}/{name}.tap", memory_mib=256, vcpus=1,
                            loader=lv.nested_loader())
        res = lv.define(xml, WORK, name)
        if res.returncode != 0:
            raise RuntimeError(f"virsh define {name}: {res.stderr.strip()}")
        self.seeded = lv.export_caps(self.seeded)
        if arm in ("static", "devdax"):
            self.daxfile("attach", name, path)
        else:
            dev = os.path.join(WORK, f"{name}-nvdimm.xml")
            with open(dev, "w") as f:
                f.write(self.daxfile("domain-xml", "--no-check", "--size",
                                     str(self.size), path))
            res = lv.virsh("attach-device", name, dev, "--config")
            if res.returncode != 0:
                raise RuntimeError(f"virsh attach-device {name}: "
                                   f"{res.stderr.strip()}")
        self.defined.add(name)
        return name

    @staticmethod
    def static_state():
        """daxfile status's static object for the static arm's file, as
        the probe hook saw it at started"""
        try:
            with open(PROBE_OUT) as f:
                return json.load(f)[0].get("static") or {}
        except (OSError, ValueError, IndexError) as e:
            return {"error": str(e)}
        finally:
            if os.path.exists(PROBE_OUT):
                os.unlink(PROBE_OUT)

    def remove(self, arm, path, wait=10):
        """Remove a backing file; a static one once the hook has released
        it (at the domain's release, which may come a little after libvirt
        says it is shut off)"""
        deadline = time.monotonic() + wait
        while arm != "devdax":
            try:
                os.unlink(path)
                return
            except FileNotFoundError:
                return
            except PermissionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def close(self):
        for name in self.defined:
            lv.cleanup_domain(name)
        if self.daemon:
            self.daemon.__exit__(None, None, None)


def fresh_logs(name):
    for ext in ("console", "tap"):
        path = f"{WORK}/{name}.{ext}"
        if os.path.exists(path):
            os.replace(path, f"{path}.prev")


def guest_result(name):
    """(the guest's measurement or None, its TAP failures)"""
    path = f"{WORK}/{name}.tap"
    _, bad = lv.tap_results(path)
    rec = None
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("# BENCH "):
                    rec = json.loads(line[len("# BENCH "):])["result"]
    except (OSError, ValueError, KeyError):
        pass
    return rec, bad


def host_counts(trace_path, pid, arm, path):
    """qemutrace's counts of both passes for the run's backing"""
    events = qemutrace.parse(trace_path, pid)
    dev = ino = None
    if arm != "devdax":
        st = os.stat(path)
        dev, ino = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", st.st_ino
    return {k: qemutrace.count(events, w, dev, ino)
            for k, w in qemutrace.windows(events).items()}


def start_guest(host, name, arm, label):
    """virsh start, QEMU's pid and (a static arm) the file's static state
    once the hook engaged it; None when the start failed"""
    tap = host.tap
    res = lv.virsh("start", name)
    pid = lv.qemu_pid(name) if res.returncode == 0 else None
    if not tap.ok(pid, f"{label}: virsh start",
                  res.stderr + tail("/var/log/libvirt/libvirtd.log")):
        return None, {}
    return pid, host.static_state() if arm == "static" else {}


def launch(host, arm, fs, label):
    """Make the backing, start the guest with the trace on and wait for
    its end: the run's facts, and where its time went (s)"""
    t0 = time.monotonic()
    run = {"path": host.backing(arm, fs), "done": False, "times": {}}
    run["name"] = host.domain(arm, fs, run["path"])
    fresh_logs(run["name"])
    trace = qemutrace.QemuTrace()
    trace.start()
    t1 = time.monotonic()
    try:
        run["pid"], run["state"] = start_guest(host, run["name"], arm, label)
        t2 = time.monotonic()
        if run["pid"] is not None:
            run["done"] = lv.wait_shutoff(run["name"], host.cfg.timeout)
            if not run["done"]:
                lv.virsh("destroy", run["name"])
    finally:
        run["lost"] = trace.stop(TRACE)
    run["times"] = {"prepare": t1 - t0, "virsh_start": t2 - t1,
                    "guest": time.monotonic() - t2}
    return run


def run_one(host, arm, fs, rnd, order):
    """One guest run: its TAP results and its BENCH line"""
    tap = host.tap
    label = (f"r{rnd + 1}" if rnd >= 0 else "warm-up") + f" {arm}" + \
        (f" on {fs}" if fs else "")
    run = launch(host, arm, fs, label)
    state, name = run["state"], run["name"]
    if run["pid"] is None:
        host.remove(arm, run["path"])
        return
    if arm == "static":
        tap.ok(state.get("enabled") and
               state.get("mechanism") == "immutable-guard",
               f"{label}: static while the guest runs (immutable-guard)",
               state)
    tap.ok(run["done"], f"{label}: the guest ran to its end ("
           + ", ".join(f"{k} {v:.1f} s" for k, v in run["times"].items())
           + ")", tail(f"{WORK}/{name}.console"))
    rec, bad = guest_result(name)
    tap.ok(rec and not bad, f"{label}: the guest measured both passes",
           "\n".join(bad) + tail(f"{WORK}/{name}.tap"))
    try:
        counts, why = host_counts(TRACE, run["pid"], arm, run["path"]), None
    except (OSError, ValueError, qemutrace.TraceError) as e:
        counts, why = None, str(e)
    tap.ok(counts and not run["lost"], f"{label}: the host's trace holds "
           "both passes, no event lost", why or f"{run['lost']} events lost")
    host.remove(arm, run["path"])
    if rec:
        print("# BENCH " + json.dumps(
            {"bench": "guest", "arm": arm, "fs": fs, "round": rnd,
             "warmup": rnd < 0, "order": order, "bytes": host.size,
             "static": state, "times": run["times"],
             "trace_lost": run["lost"],
             "guest": rec, "host": counts}), flush=True)


def main():
    cfg = Config(os.environ)
    tap = Tap()
    host = Host(cfg, tap)
    tap.diag(f"emulated host {os.uname().release}; nvdimms of "
             f"{host.size // MB} MiB; {cfg.devdax} align {host.align}; "
             f"{cfg.rounds} round(s) of {' '.join(cfg.arms)} on "
             f"{' '.join(cfg.fs)}")
    try:
        t0 = time.monotonic()
        host.set_up()
        tap.diag(f"the hook and libvirtd ready in {time.monotonic() - t0:.0f}"
                 " s")
        tap.ok(host.align == 2 * MB, f"{cfg.devdax}: device-dax, align 2M",
               host.align)
        if cfg.warmup:
            tap.subtest("warm-up", run_one, host, "devdax", None, -1, 0)
        for rnd in range(cfg.rounds):
            for order, (arm, fs) in enumerate(cfg.schedule(rnd)):
                tap.subtest(f"r{rnd + 1} {arm} {fs or ''}", run_one, host,
                            arm, fs, rnd, order)
    finally:
        host.close()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

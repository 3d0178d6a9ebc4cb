# SPDX-License-Identifier: GPL-2.0-or-later
"""hook: what the daxfile qemu.d hook adds to `virsh start` (and destroy),
with 1 and 4 nvdimms, against the same start with no hook, rounds
interleaved. The hook is installed behind a timing wrapper (bench-dax time
--append), so the time libvirt spends in it at each phase is measured
inside libvirt, which a difference of two noisy `virsh start` times cannot
resolve. Also the hook alone, run by hand at prepare begin / release end,
and the process start of daxfile's binaries (wall time, shared libraries, page
faults), which is most of the hook's time per phase.
Uses tools/harness/libvirt_env.py (the running libvirtd, or one started by
hand and stopped after)."""

import json
import os
import random
import subprocess
import time

from benchlib import (MIB, BenchError, goal, interleaved, log, median, pct,
                      run as run_cmd, table)

NAME = "hook"
# goals (issue 17): per device at start, with 1 and with 4 nvdimms
PER_DEVICE_MS = {1: 10.0, 4: 5.0}
ATTEST_MS = 2.0  # issue 19: the attestation at started, per device
START_MS = 5.0   # daxfile --version, net of a bare process start
FILE_SIZE = 256 * MIB
ARMS = ("none", "daxfile")
START_OPS = ("prepare", "start", "started")
STOP_OPS = ("stopped", "release")


def device_xml(path, size):
    return ("    <memory model='nvdimm' access='shared'>\n"
            f"      <source><path>{path}</path><alignsize unit='KiB'>2048"
            "</alignsize><pmem/></source>\n"
            f"      <target><size unit='KiB'>{size >> 10}</size>"
            "<node>0</node></target>\n    </memory>\n")


class Arms:
    """Switches between no hook and the daxfile hook (behind the timing
    wrapper) by moving the wrapper in and out of qemu.d: libvirt lists
    qemu.d on every call once it has seen a hook (one SIGHUP at install)."""

    def __init__(self, lv, daemon, loop, ctx, tag):
        self.timelog = os.path.join(loop.tmp, "hook-times.jsonl")
        wrapper = os.path.join(loop.tmp, "hook-wrapper")
        with open(wrapper, "w") as f:
            f.write(f"#!/bin/sh\nexec {ctx.benchdax} time --append "
                    f"{self.timelog} {ctx.hook} \"$@\"\n")
        os.chmod(wrapper, 0o755)
        self.hook = lv.Hook(wrapper, tag, [loop.path])
        self.stash = os.path.join(loop.tmp, "hook-stash")
        self.daemon = daemon

    def install(self):
        self.hook.install(self.daemon)   # wrapper + conf drop-in, SIGHUP
        self.set("none")

    def set(self, arm):
        if arm == "daxfile":
            if os.path.exists(self.stash):
                os.rename(self.stash, self.hook.hook)
        elif os.path.exists(self.hook.hook):
            os.rename(self.hook.hook, self.stash)

    def take_times(self):
        """{op: seconds} of the hook calls since the last call"""
        out = {}
        try:
            with open(self.timelog) as f:
                for line in f:
                    rec = json.loads(line)
                    op = rec["argv"].split()[1]
                    out[op] = out.get(op, 0.0) + rec["seconds"]
            os.unlink(self.timelog)
        except FileNotFoundError:
            pass
        return out

    def remove(self):
        try:
            os.unlink(self.stash)
        except FileNotFoundError:
            pass
        self.hook.remove()


def timed_virsh(lv, *args):
    t0 = time.perf_counter()
    res = lv.virsh(*args)
    dt = time.perf_counter() - t0
    if res.returncode != 0:
        raise BenchError(f"virsh {' '.join(args)}: {res.stderr.strip()}")
    return dt


def start_stop(lv, name):
    t_start = timed_virsh(lv, "start", name)
    t_destroy = timed_virsh(lv, "destroy", name)
    if not lv.wait_shutoff(name, timeout=60):
        raise BenchError(f"domain '{name}' did not stop")
    return t_start, t_destroy


def registry_holds(ctx, path):
    res = run_cmd([ctx.daxfile, "list", "--json"], check=False)
    return os.path.realpath(path) in res.stdout


def hook_by_hand(ctx, lv, domains, runs):
    """Seconds of the hook binary alone at prepare begin and release end."""
    out = {}
    for name, (ndev, files) in domains.items():
        xml = lv.virsh("dumpxml", name).stdout
        argvs = {op: [ctx.hook, name, op, "begin" if op == "prepare" else
                      "end", "-"] for op in ("prepare", "release")}
        times = {"prepare": [], "release": []}
        for _ in range(runs):
            for op in ("prepare", "release"):
                t0 = time.perf_counter()
                p = subprocess.run(argvs[op], input=xml, text=True,
                                   capture_output=True)
                times[op].append(time.perf_counter() - t0)
                if p.returncode != 0:
                    raise BenchError(f"hook {op} by hand failed: "
                                     f"{p.stderr.strip()}")
        out[ndev] = {op: median(t) * 1e3 for op, t in times.items()}
    return out


def attestation(ctx, lv, domains):
    """The hook's attestation alone (bench-attest: daxfile_attest() per
    file, as the hook calls it at started) against the QEMU of the
    4-nvdimm domain, started with the hook in place."""
    if not ctx.benchattest:
        return None
    name, (ndev, files) = max(domains.items(), key=lambda d: d[1][0])
    res = lv.virsh("start", "--paused", name)
    if res.returncode != 0:
        raise BenchError(f"start {name}: {res.stderr.strip()}")
    try:
        with open(f"/run/libvirt/qemu/{name}.pid") as f:
            pid = f.read().strip()
        out = json.loads(run_cmd([ctx.benchattest, pid, str(2 * MIB)] +
                                 files).stdout)
    finally:
        lv.virsh("destroy", name)
        lv.wait_shutoff(name, timeout=60)
    if not all(f["attested"] for f in out["files"]):
        raise BenchError(f"bench-attest: not attested: {out}")
    out["devices"] = ndev
    return out


def libraries(path):
    """shared libraries the dynamic loader maps for @path (ldd, no vdso)"""
    out = subprocess.run(["ldd", path], capture_output=True,
                         text=True).stdout
    return sum(1 for line in out.splitlines()
               if "=>" in line or line.strip().startswith("/"))


def minflt(argv):
    """minor page faults of one run of @argv"""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    return os.wait4(p.pid, 0)[2].ru_minflt


def process_starts(ctx):
    """The cost of starting each of daxfile's programs, against /bin/true:
    the hook pays it at every phase libvirt calls it for."""
    virt = os.path.join(os.path.dirname(ctx.daxfile), "daxfile-virt")
    progs = [("/bin/true", ["/bin/true"]),
             ("daxfile --version", [ctx.daxfile, "--version"]),
             ("daxfile-hook --version", [ctx.hook, "--version"]),
             ("daxfile-virt --version", [virt, "--version"])]
    times = interleaved(progs, runs=30, warmup=3)
    return {name: {"median_ms": median(times[name]) * 1e3,
                   "libraries": libraries(argv[0]),
                   "minflt": minflt(argv)} for name, argv in progs}


def run(ctx):
    import libvirt_env as lv
    lv.QUIET = not ctx.verbose
    runs = 4 if ctx.quick else 9
    tag = f"daxfile-bench-{os.getpid()}"
    samples = {}
    data = {"runs": runs, "method": {
        "arms": "none: no hook in qemu.d; daxfile: the daxfile-hook "
                "binary behind a timing wrapper (/bin/sh exec bench-dax time "
                "--append LOG daxfile-hook ...), with a drop-in naming the "
                "loop directory as managed (allow_non_dax: the host has no "
                "DAX)",
        "hook_time": "what the wrapper measured around daxfile-hook at each "
                     "phase, inside libvirt; start = prepare + start + "
                     "started, stop = stopped + release",
        "domain": "TCG, 512 MiB RAM, 2 vCPUs, the VM harness's 6.1 kernel "
                  "and initramfs (tools/harness/guest/idle.sh); 1 or 4 "
                  f"nvdimms of {FILE_SIZE >> 20} MiB, daxfile-created on a "
                  "loop xfs (su=2m)",
        "timing": "wall time of `virsh start` and of `virsh destroy` (each a "
                  "new virsh process); one warm-up start per domain; rounds "
                  "rotate the order of the arms",
        "by_hand": "the hook binary run directly with the domain XML on "
                   "stdin at prepare begin and release end (median of 15)"}}
    with lv.Libvirtd() as daemon, lv.LoopDir(size_mib=1536) as loop:
        data["libvirtd"] = "started here" if daemon.ours else "already running"
        image = lv.GuestImage(loop.tmp, [], kernel=ctx.kernels[0])
        arms = Arms(lv, daemon, loop, ctx, tag)
        domains = {}
        try:
            for ndev in (1, 4):
                name = f"{tag}-{ndev}"
                files = [loop.path + f"/d{ndev}-{i}.img" for i in range(ndev)]
                for f in files:
                    run_cmd([ctx.daxfile, "create", f, "--size",
                             str(FILE_SIZE), "--allow-non-dax"])
                kernel, initrd, cmdline = image.files("idle", tag=name)
                xml = lv.domain_xml(
                    name, kernel, initrd, cmdline,
                    os.path.join(loop.tmp, f"{name}.console"),
                    os.path.join(loop.tmp, f"{name}.tap"),
                    devices="".join(device_xml(f, FILE_SIZE) for f in files))
                res = lv.define(xml, loop.tmp, name)
                if res.returncode != 0:
                    raise BenchError(f"define {name}: {res.stderr.strip()}")
                domains[name] = (ndev, files)
            arms.install()
            for name in domains:
                start_stop(lv, name)        # warm-up
            checked = set()
            for rnd in range(runs):
                order = ARMS if rnd % 2 == 0 else ARMS[::-1]
                for name, (ndev, files) in domains.items():
                    for arm in order:
                        arms.set(arm)
                        arms.take_times()
                        t_s = timed_virsh(lv, "start", name)
                        if (arm, ndev) not in checked:
                            held = registry_holds(ctx, files[0])
                            if held != (arm == "daxfile"):
                                ran = "did not run" if held is False \
                                    else "ran"
                                raise BenchError(
                                    f"arm {arm}: the daxfile hook {ran}")
                            checked.add((arm, ndev))
                        t_d = timed_virsh(lv, "destroy", name)
                        if not lv.wait_shutoff(name, timeout=60):
                            raise BenchError(f"'{name}' did not stop")
                        s = samples.setdefault(f"{arm}/{ndev}",
                                               {"start": [], "destroy": [],
                                                "hook": []})
                        s["start"].append(t_s)
                        s["destroy"].append(t_d)
                        if arm == "daxfile":
                            s["hook"].append(arms.take_times())
                log(f"hook: round {rnd + 1}/{runs} done")
            arms.set("daxfile")
            data["by_hand_ms"] = hook_by_hand(ctx, lv, domains, 15)
            data["attestation"] = attestation(ctx, lv, domains)
            data["process_start"] = process_starts(ctx)
            data["other_hooks_seen"] = sorted(
                f for f in os.listdir(lv.HOOK_DIR) if not f.startswith(tag))
        finally:
            for name in domains:
                lv.cleanup_domain(name)
            arms.remove()
            run_cmd([ctx.daxfile, "repair"], check=False)
    return report(data, samples)


def boot_ci(a, b, reps=2000, seed=1):
    """90 % bootstrap interval of median(a) - median(b)"""
    rng = random.Random(seed)
    d = sorted(median([rng.choice(a) for _ in a]) -
               median([rng.choice(b) for _ in b]) for _ in range(reps))
    return d[int(0.05 * reps)], d[int(0.95 * reps)]


def hook_phase_ms(calls, ops):
    """median over runs of the summed hook time at ops, ms"""
    return median([sum(c.get(op, 0.0) for op in ops) for c in calls]) * 1e3


def report(data, samples):
    stats = {}
    for key, s in samples.items():
        stats[key] = {op: {"median_ms": median(v) * 1e3,
                           "p25_ms": pct(v, 0.25) * 1e3,
                           "p75_ms": pct(v, 0.75) * 1e3,
                           "all_ms": [x * 1e3 for x in v]}
                      for op, v in s.items() if op != "hook"}
        if s.get("hook"):
            stats[key]["hook_calls_s"] = s["hook"]
    data["stats"] = stats
    goals = []
    rows = []
    hook_rows = []
    in_hook = {}
    for ndev in (1, 4):
        none, dax = samples[f"none/{ndev}"], samples[f"daxfile/{ndev}"]
        for arm, s in (("none", none), ("daxfile", dax)):
            st = stats[f"{arm}/{ndev}"]
            rows.append([ndev, arm, st["start"]["median_ms"],
                         f"{st['start']['p25_ms']:.0f}–"
                         f"{st['start']['p75_ms']:.0f}",
                         st["destroy"]["median_ms"]])
        lo, hi = boot_ci(dax["start"], none["start"])
        d_start = (median(dax["start"]) - median(none["start"])) * 1e3
        d_destroy = (median(dax["destroy"]) - median(none["destroy"])) * 1e3
        in_hook[ndev] = {
            "start_ms": hook_phase_ms(dax["hook"], START_OPS),
            "stop_ms": hook_phase_ms(dax["hook"], STOP_OPS),
            "per_op_ms": {op: hook_phase_ms(dax["hook"], (op,))
                          for op in START_OPS + STOP_OPS},
            "virsh_start_delta_ms": d_start,
            "virsh_start_delta_ci90_ms": [lo * 1e3, hi * 1e3],
            "virsh_destroy_delta_ms": d_destroy}
        h = in_hook[ndev]
        hook_rows.append([ndev] + [h["per_op_ms"][op]
                                   for op in START_OPS + STOP_OPS] +
                         [h["start_ms"], h["start_ms"] / ndev,
                          f"{d_start:+.0f} [{lo * 1e3:+.0f}, "
                          f"{hi * 1e3:+.0f}]"])
        target = PER_DEVICE_MS[ndev]
        goals.append(goal(
            f"hook: time in the hook per device at start < "
            f"{target:.0f} ms ({ndev} nvdimm{'s' if ndev > 1 else ''}"
            ": prepare + start + started, measured inside libvirt, / "
            "devices)", h["start_ms"] / ndev, target,
            h["start_ms"] / ndev < target, "ms",
            note=f"virsh start with - without the hook: {d_start:+.0f} ms, "
                 f"90% CI [{lo * 1e3:+.0f}, {hi * 1e3:+.0f}]"))
    marginal = (in_hook[4]["start_ms"] - in_hook[1]["start_ms"]) / 3
    data["in_hook"] = in_hook
    data["marginal_ms_per_device"] = marginal
    goals.append(goal(
        f"hook: marginal time per extra device at start < "
        f"{PER_DEVICE_MS[4]:.0f} ms ((hook time with 4 - with 1) / 3)",
        marginal, PER_DEVICE_MS[4], marginal < PER_DEVICE_MS[4], "ms"))
    tables = [("virsh start / destroy wall time (ms, median of "
               f"{data['runs']}; p25–p75)",
               table(["nvdimms", "hook", "start", "start p25–p75",
                      "destroy"], rows)),
              ("Time spent in daxfile-hook inside libvirt (ms, median per "
               "start/destroy cycle; last column: virsh start with - without "
               "the hook, median and 90% bootstrap interval)",
               table(["nvdimms"] + list(START_OPS + STOP_OPS) +
                     ["start total", "per device", "Δ virsh start"],
                     hook_rows))]
    ps = data.get("process_start")
    if ps:
        base = ps["/bin/true"]["median_ms"]
        tables.append((
            "Process start (ms, median of 30 interleaved rounds, wall time "
            "from a fork in Python; net = minus /bin/true's; minor page "
            "faults of one run)",
            table(["program", "ms", "net ms", "shared libraries",
                   "page faults"],
                  [[n, v["median_ms"], v["median_ms"] - base, v["libraries"],
                    v["minflt"]] for n, v in ps.items()])))
        net = ps["daxfile --version"]["median_ms"] - base
        hook_ps = ps['daxfile-hook --version']
        goals.append(goal(
            f"start: daxfile --version <= {START_MS:.0f} ms on the host (net "
            "of /bin/true's process start)", net, START_MS, net <= START_MS,
            "ms", note=f"{ps['daxfile --version']['libraries']} shared "
                       "libraries; the hook binary: "
                       f"{hook_ps['libraries']}, "
                       f"{hook_ps['median_ms'] - base:.1f} ms net"))
    at = data.get("attestation")
    if at:
        per = at["per_device_us"] / 1e3
        tables.append((
            "The attestation at started alone, as the hook does it: QEMU's "
            f"smaps ({at['smaps_bytes']} bytes, the running QEMU of "
            f"{at['devices']} nvdimms) read once, then each device judged "
            "(µs, median of 201)",
            table(["what", "median µs", "p90 µs"],
                  [["read smaps", at["read_median_us"], "-"],
                   [f"read + all {at['devices']} devices",
                    at["all_median_us"], "-"]] +
                  [[f"judge {os.path.basename(f['path'])}", f["median_us"],
                    f["p90_us"]] for f in at["files"]])))
        goals.append(goal(
            f"attestation at started < {ATTEST_MS:.0f} ms per device (smaps "
            f"read once + {at['devices']} devices judged, / devices)", per,
            ATTEST_MS, per < ATTEST_MS, "ms"))
    bh = data.get("by_hand_ms")
    if bh:
        tables.append(("The hook alone, by hand (ms, median of 15, "
                       "process start included)", table(
                           ["nvdimms", "prepare begin", "release end"],
                           [[n, v["prepare"], v["release"]]
                            for n, v in sorted(bh.items())])))
    return {"data": data, "goals": goals, "tables": tables}

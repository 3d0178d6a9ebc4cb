# SPDX-License-Identifier: GPL-2.0-or-later
"""guest: what a guest sees when it writes its pmem for the first time,
through libvirt and QEMU on real fsdax, with its nvdimm backed by a static
`daxfile create`d file, a fallocated file, a sparse file (both pmem=on,
mapped MAP_SYNC) and a device-dax namespace, in one run.

An emulated pmem host (L1: a --hostroot boot of the VM harness, under
TCG, bench/guest/bench-guest-l1.sh and bench_guest_l1.py) runs libvirtd,
the daxfile hook and, once per arm and round, a guest (L2) under its own
KVM (on the SVM that TCG emulates) with one nvdimm: the guest
(bench/guest/bench-guest-l2.sh) writes every 4 KiB page of a fallocated
file on its DAX ext4 twice (bench-dax touch), timing each 2 MiB step,
while the host traces what its kernel did for QEMU in each pass
(qemutrace: the faults on the backing, the journal handles and xfs
transactions). Ratios against device-dax in the same run, on xfs and
ext4."""

import json
import os
import shutil
import tempfile

import benchlib
import daxfile_vm as vm      # tools/harness, on the path by benchlib
import libvirt_env as lv
from benchlib import BenchError, goal, log, median, ratio, table
from bench_faults import guest_script

NAME = "guest"
ARMS = ("devdax", "static", "falloc", "sparse")
ARM_TEXT = {"devdax": "device-dax", "static": "static (daxfile)",
            "falloc": "fallocated, pmem=on", "sparse": "sparse, pmem=on"}
FILESYSTEMS = ("xfs", "ext4")
THROUGHPUT_MIN = 0.9   # goal: static first-touch throughput >= 0.9x devdax
P99_MAX = 1.5          # goal: static first-touch p99 <= 1.5x devdax
SAVES_MIN = 10.0       # expected: fallocated and sparse >= 10x static
STEADY_SPREAD = 1.10   # goal: steady state, fastest / slowest <= 1.1
# the guest's userland and modules (a slim initramfs: under the emulated
# host's KVM every MiB of it costs boot time)
L2_TOOLS = ("/usr/sbin/mke2fs", "/usr/bin/ndctl")
L2_MODULES = ("crc32c_generic", "ext4", "nfit", "nd_pmem")


class Plan:
    """Sizes and rounds of a full or a --quick run"""

    def __init__(self, quick, lazytime=True):
        self.quick = quick
        # the emulated host's filesystems mounted lazytime, as
        # docs/benchmarks.md advises: without it each write fault that
        # finds the clock moved logs the file's mtime (an xfs transaction,
        # an ext4 inode handle)
        self.lazytime = lazytime
        self.rounds = 1 if quick else 5
        # --quick: the four arms on xfs alone (each guest run costs about
        # 25-35 s here: libvirt's start, the guest's boot and stop)
        self.fs = FILESYSTEMS[:1] if quick else FILESYSTEMS
        self.region = "64M" if quick else "256M"
        # xfs, ext4 (fsdax), device-dax. Every nvdimm of the guest has the
        # device-dax device's size, which ndctl wants a multiple of the
        # region's alignment (16 MiB) in the guest: a 912 MiB namespace
        # keeps 16 MiB for its page map (64 bytes a page, aligned to 2 MiB)
        # and leaves 896 MiB
        self.nvdimms = ("2G", "2G", "912M")
        self.runs = self.rounds * (1 + len(self.fs) * (len(ARMS) - 1)) + \
            (0 if quick else 1)
        self.guest_timeout = 300
        self.timeout = 600 + self.runs * 150
        # the emulated host's vCPUs: two for the numbers (its guest on one,
        # the host's tracing and QEMU's own threads on the other); --quick
        # asserts counts, not times, on one, which takes one CPU slot of
        # ./run-tests's two (tools/harness/vm_cpus.py)
        self.host_cpus = 1 if quick else 2

    def env(self, l2dir, caps):
        return {"DXG_ROUNDS": str(self.rounds), "DXG_ARMS": " ".join(ARMS),
                "DXG_FS": " ".join(self.fs), "DXG_L2DIR": l2dir,
                "DXG_CAPS": caps, "DXG_TIMEOUT": str(self.guest_timeout),
                "DXG_WARMUP": "0" if self.quick else "1",
                "DXG_LAZYTIME": "1" if self.lazytime else "0"}


def debian_kernel(ctx):
    """The kernel of both levels: the first of --kernels, which must have
    KVM (Debian's; the daxctl() kernels have none)"""
    kernel = ctx.kernels[0] if ctx.kernels else "6.1"
    if kernel.startswith("daxctl"):
        raise BenchError(f"guest needs a Debian kernel with KVM for the "
                         f"emulated host, not '{kernel}'; put 6.1 or 6.12 "
                         "first in --kernels")
    return kernel


def l2_files(ctx, kernel, plan, workdir):
    """The guest's vmlinux, initrd and cmdline, where the emulated host
    copies them from (its root is this machine's)"""
    image = vm.build_image(kernel, compress=False, bins=[ctx.benchdax],
                           tools=L2_TOOLS, modules=L2_MODULES)
    d = os.path.join(workdir, "l2")
    os.makedirs(d, mode=0o755)
    shutil.copy2(image.boot_kernel, os.path.join(d, "vmlinux"))
    script = vm.resolve_script(guest_script("bench-guest-l2"))
    image.initrd(os.path.join(d, "initrd"), script,
                 {"DXG_REGION": plan.region})
    with open(os.path.join(d, "cmdline"), "w") as f:
        f.write(f"{vm.DEFAULT_APPEND} {lv.NESTED_APPEND} "
                f"daxfile.script={script.name}\n")
    for name in os.listdir(d):
        os.chmod(os.path.join(d, name), 0o644)
    return d


class Relay:
    """The emulated host's TAP: its BENCH lines, its results, libvirt's
    probe cache; each result logged as it comes (a run takes minutes)"""

    def __init__(self, caps):
        self.caps = caps
        self.records = []
        self.failed = []
        self.diags = []

    def __call__(self, kind, val, text):
        if kind == "comment" and text.startswith("# BENCH "):
            self.records.append(json.loads(text[len("# BENCH "):]))
        elif kind == "comment" and text.startswith(lv.CAPS_LINE):
            lv.save_caps(text, self.caps)
        elif kind == "comment":
            self.diags.append(text)
        elif kind == "test":
            if val.failed:
                self.failed.append(text)
            log(f"guest: {text}")
        elif kind == "bail":
            self.failed.append(text)


def boot_l1(ctx, kernel, plan, workdir):
    """The emulated host, until it has run every round; (BootResult,
    Relay, serial log)"""
    relay = Relay(lv.caps_cache(kernel))
    env = dict(plan.env(l2_files(ctx, kernel, plan, workdir), relay.caps),
               DAXFILE_SRCDIR=benchlib.SRC, DAXFILE_BUILDDIR=ctx.build)
    pmems = []
    log_path = os.path.join(ctx.logdir, f"guest-{kernel}.serial.log")
    try:
        for size in plan.nvdimms:
            pmems.append(vm.Pmem.temporary_file(size))
        res = vm.build_image(kernel).boot(
            guest_script("bench-guest-l1"), pmems=pmems, env=env,
            hostroot=True, smp=plan.host_cpus, memory="2G",
            timeout=plan.timeout,
            on_tap=relay, serial_log=log_path)
    finally:
        for p in pmems:
            p.remove()
    return res, relay, log_path


HOST_COUNTS = ("faults", "pmd_faults", "nested_faults", "metadata_ops",
               "timestamp_ops", "empty_handles", "layout_ops",
               "sync_flushes")


def host_summary(h):
    """The host's counts of the rounds @h: per round, and per fault"""
    if not h:
        return {"host_rounds": 0}
    out = {"host_rounds": len(h)}
    for k in HOST_COUNTS:
        out[k] = sum(x[k] for x in h) / len(h)
    faults = out["faults"]
    for k in ("metadata_ops", "timestamp_ops", "empty_handles",
              "layout_ops", "sync_flushes"):
        out[f"{k}_per_fault"] = out[k] / faults if faults else None
    by = {}
    for x in h:
        for k, v in x["by"].items():
            by[k] = by.get(k, 0) + v
    out["metadata_by"] = by
    times = [x["nested_fault_time"] for x in h if x.get("nested_fault_time")]
    for k in ("p50_us", "p99_us", "total_ms"):
        out[f"nested_fault_{k}"] = median([t[k] for t in times])
    return out


def summarise(recs, which):
    """The runs @recs of one arm (and filesystem), pass @which ('first' or
    'steady'): the guest's view (median over rounds of each round's value;
    max over all) and the host's (per round, and per fault)"""
    g = [r["guest"][which] for r in recs]
    return dict({
        "rounds": len(recs),
        "mib_per_s": median([x["mib_per_s"] for x in g]),
        "mib_per_s_rounds": [x["mib_per_s"] for x in g],
        "p50_ms": median([x["steps"]["p50_us"] for x in g]) / 1000,
        "p99_ms": median([x["steps"]["p99_us"] for x in g]) / 1000,
        "max_ms": max(x["steps"]["max_us"] for x in g) / 1000,
        "guest_faults": median([x["faults"] for x in g]),
    }, **host_summary([r["host"][which] for r in recs if r.get("host")]))


def summaries(records, filesystems):
    """{fs: {arm: {'first': summary, 'steady': summary}}}; device-dax
    (no filesystem) is every filesystem's reference"""
    out = {}
    for fs in filesystems:
        out[fs] = {}
        for arm in ARMS:
            want = None if arm == "devdax" else fs
            recs = [r for r in records if r["arm"] == arm and
                    r["fs"] == want]
            if recs:
                out[fs][arm] = {w: summarise(recs, w)
                                for w in ("first", "steady")}
    return out


def compare(fs_sums):
    """The ratios of one filesystem's arms, against device-dax (the
    guest's view) and against the static file (what daxfile saves)"""
    dev = fs_sums.get("devdax", {})
    st = fs_sums.get("static", {})
    out = {}
    for arm, s in fs_sums.items():
        first, steady = s["first"], s["steady"]
        d1, d2 = dev.get("first", {}), dev.get("steady", {})
        s1 = st.get("first", {})
        out[arm] = {
            "throughput_vs_devdax": ratio(first["mib_per_s"],
                                          d1.get("mib_per_s")),
            "p99_vs_devdax": ratio(first["p99_ms"], d1.get("p99_ms")),
            "steady_vs_devdax": ratio(steady["mib_per_s"],
                                      d2.get("mib_per_s")),
            "p99_vs_static": ratio(first["p99_ms"], s1.get("p99_ms")),
            "fault_time_vs_static": ratio(
                first.get("nested_fault_total_ms"),
                s1.get("nested_fault_total_ms")),
        }
    steady = [s["steady"]["mib_per_s"] for s in fs_sums.values()]
    out["steady_spread"] = (max(steady) / min(steady)
                            if len(steady) == len(ARMS) and min(steady)
                            else None)
    return out


def changes(s):
    """Metadata changes per QEMU fault: allocations, conversions,
    timestamp updates, and the synchronous flushes MAP_SYNC makes a fault
    wait for; not the handles ext4 starts and ends with nothing in them"""
    if s.get("layout_ops_per_fault") is None:
        return None
    return s["layout_ops_per_fault"] + s["timestamp_ops_per_fault"] + \
        s["sync_flushes_per_fault"]


def static_goals(fs, sums, cmp):
    st = cmp.get("static", {})
    s1 = sums.get("static", {}).get("first", {})
    thr, p99 = st.get("throughput_vs_devdax"), st.get("p99_vs_devdax")
    opf, chg = s1.get("metadata_ops_per_fault"), changes(s1)
    empty = s1.get("empty_handles_per_fault")
    return [
        goal(f"guest {fs}: static first-touch throughput >= "
             f"{THROUGHPUT_MIN}x device-dax", thr, THROUGHPUT_MIN,
             thr is not None and thr >= THROUGHPUT_MIN, "x"),
        goal(f"guest {fs}: static first-touch p99 per 2 MiB step <= "
             f"{P99_MAX}x device-dax", p99, P99_MAX,
             p99 is not None and p99 <= P99_MAX, "x"),
        goal(f"guest {fs}: static: 0 metadata operations per QEMU fault "
             "on the host (journal handles + xfs transactions, as the "
             "faults benchmark counts them)", opf, 0, opf == 0, "/fault",
             note=(f"{benchlib.fnum(empty)} of them empty handles (stock "
                   "ext4 starts one on every write fault)"
                   if empty else "")),
        goal(f"guest {fs}: static: 0 metadata changes per QEMU fault "
             "(allocation, conversion, timestamp, MAP_SYNC flush; "
             "criterion set here)", chg, 0, chg == 0, "/fault")]


def fs_goals(fs, sums, cmp):
    """The issue's goals on one filesystem"""
    goals = static_goals(fs, sums, cmp)
    st_chg = changes(sums.get("static", {}).get("first", {}))
    for arm in ("falloc", "sparse"):
        r99 = cmp.get(arm, {}).get("p99_vs_static")
        goals.append(goal(
            f"guest {fs}: {ARM_TEXT[arm]}: first-touch p99 / static's "
            f"(expected >= {SAVES_MIN:.0f}x)", r99, SAVES_MIN,
            r99 is not None and r99 >= SAVES_MIN, "x"))
        rft = cmp.get(arm, {}).get("fault_time_vs_static")
        goals.append(goal(
            f"guest {fs}: {ARM_TEXT[arm]}: the time QEMU's faults kept the "
            "guest out over the first touch / static's (expected >= "
            f"{SAVES_MIN:.0f}x; criterion set here)", rft, SAVES_MIN,
            rft is not None and rft >= SAVES_MIN, "x"))
        chg = changes(sums.get(arm, {}).get("first", {}))
        what = (f"guest {fs}: {ARM_TEXT[arm]}: metadata changes per QEMU "
                f"fault / static's (expected >= {SAVES_MIN:.0f}x)")
        if st_chg == 0:
            # static's none: the ratio has no bound, say the count
            goals.append(goal(what, chg, "> 0 /fault", bool(chg),
                              "/fault", note="static: 0 per fault"))
        else:
            r = ratio(chg, st_chg)
            goals.append(goal(what, r, SAVES_MIN,
                              r is not None and r >= SAVES_MIN, "x"))
    spread = cmp.get("steady_spread")
    goals.append(goal(
        f"guest {fs}: steady state: all four within 10 % (fastest / "
        "slowest MiB/s)", spread, STEADY_SPREAD,
        spread is not None and spread <= STEADY_SPREAD, "x"))
    return goals


def guest_table(sums, cmp):
    """The guest's view: each pass's throughput and 2 MiB steps"""
    rows = []
    for arm in ARMS:
        for which in ("first", "steady") if arm in sums else ():
            s, c = sums[arm][which], cmp[arm]
            rows.append([
                ARM_TEXT[arm], which, s["mib_per_s"], s["p50_ms"],
                s["p99_ms"], s["max_ms"],
                c["throughput_vs_devdax" if which == "first"
                  else "steady_vs_devdax"],
                c["p99_vs_devdax"] if which == "first" else "-"])
    return table(["backing", "pass", "MiB/s", "p50 ms", "p99 ms", "max ms",
                  "MiB/s x devdax", "p99 x devdax"], rows)


def host_table(sums):
    """The host's view of the first passes: QEMU's faults, what they
    cost the guest, the metadata operations they ran"""
    rows = []
    for arm in ARMS:
        s = sums.get(arm, {}).get("first")
        if s and s["host_rounds"]:
            rows.append([
                ARM_TEXT[arm], s["faults"], s["pmd_faults"],
                s["nested_faults"], s["nested_fault_p50_us"],
                s["nested_fault_p99_us"], s["nested_fault_total_ms"],
                s["metadata_ops"], s["metadata_ops_per_fault"],
                s["timestamp_ops_per_fault"], s["empty_handles_per_fault"],
                s["layout_ops_per_fault"], s["sync_flushes_per_fault"]])
    return table(["backing", "QEMU faults", "PMD", "nested faults",
                  "p50 us", "p99 us", "total ms", "metadata ops",
                  "per fault", "timestamps", "empty handles",
                  "alloc/convert", "fsyncs"], rows)


def steady_quiet(sums):
    """True when no steady pass made QEMU fault or the guest exit for a
    page"""
    return all(s["steady"].get("faults", 0) == 0 and
               s["steady"].get("nested_faults", 0) == 0
               for s in sums.values())


def fs_notes(fs, sums):
    notes = []
    for arm in ARMS[1:]:
        by = sums.get(arm, {}).get("first", {}).get("metadata_by")
        if by:
            what = ", ".join(f"{k} {v}" for k, v in sorted(
                by.items(), key=lambda kv: -kv[1]))
            notes.append(f"{fs} {arm}: QEMU's metadata operations in the "
                         f"first passes of all rounds: {what}")
    return notes


def checks(sums, plan, problems):
    """What --quick asserts (bench/run --tap): every arm produced its
    numbers, and QEMU's faults on the static file ran no metadata
    operation (ext4: none but the empty handle each write fault starts)"""
    out = [(not problems, "guest: the emulated host ran every round "
            "without a failed step", "\n".join(problems))]
    for fs in plan.fs:
        for arm in ARMS:
            s = sums.get(fs, {}).get(arm)
            first = (s or {}).get("first", {})
            got = s is not None and all(
                s[w][k] is not None for w in ("first", "steady")
                for k in ("mib_per_s", "p50_ms", "p99_ms", "max_ms")) and \
                first["host_rounds"] == plan.rounds and \
                (first.get("faults") or 0) > 0
            out.append((got, f"guest {fs}: {ARM_TEXT[arm]}: throughput and "
                        "p50/p99/max per 2 MiB step of both passes, and "
                        "QEMU's faults on the host", json.dumps(s)[:2000]))
        s1 = sums.get(fs, {}).get("static", {}).get("first", {})
        opf, empty = (s1.get("metadata_ops_per_fault"),
                      s1.get("empty_handles_per_fault"))
        # ext4's DAX write fault starts (and ends) a journal handle before
        # it knows whether it allocates; on a static file it changes
        # nothing: there, no change and nothing else
        strict = fs != "ext4"
        ok = changes(s1) == 0 and opf is not None and \
            (opf == 0 if strict else opf == empty)
        out.append((ok, f"guest {fs}: static: 0 metadata operations per "
                    f"QEMU fault{'' if strict else ' but empty handles'} "
                    f"({s1.get('faults')} faults; per fault: "
                    f"{benchlib.fnum(opf)} handles and transactions, "
                    f"{benchlib.fnum(empty)} of them empty)",
                    json.dumps(s1.get("metadata_by"))))
    return out


METHOD = {
    "harness": "tools/harness: an emulated pmem host (L1, QEMU TCG -cpu "
               "max, {host_cpus}, 2 GiB, --hostroot) running libvirtd "
               "9.0, the "
               "daxfile hook and QEMU; its guests (L2, 1 vCPU, 256 MiB) "
               "under its KVM on the SVM that TCG emulates",
    "l1_nvdimms": "xfs -d su=2m,sw=1 and ext4 -E stride=512,"
                  "stripe_width=512, both -o dax and lazytime (unless "
                  "--no-lazytime); a device-dax namespace "
                  "(align 2M) whose size every guest nvdimm has",
    "arms": "static: daxfile create + daxfile attach (the hook engaged: "
            "immutable-guard); falloc: fallocate, <pmem/>; sparse: "
            "truncate, <pmem/>; devdax: daxfile attach of the device",
    "guest": "fsdax namespace, ext4 -o dax (noinit_itable), a fallocated "
             "file; bench-dax touch writes every 4 KiB page whole, twice, "
             "timing each 2 MiB step (CLOCK_MONOTONIC)",
    "host": "ftrace in L1 (qemutrace), events of QEMU's threads only "
            "(record-tgid), in the windows the guest's CPUID markers "
            "(kvm:kvm_cpuid) draw: fs_dax:dax_pmd/pte_fault_done of the "
            "backing file (device-dax: a kprobe on dev_dax_huge_fault), "
            "jbd2:jbd2_handle_start + xfs:xfs_trans_alloc (metadata "
            "operations), jbd2:jbd2_handle_stats (handles that dirtied "
            "blocks), kvm:kvm_page_fault at >= 4 GiB (nested faults)",
    "aggregation": "MiB/s, p50, p99: median over rounds of each round's "
                   "value; max over all; host counts per round",
}


def run(ctx):
    plan = Plan(ctx.quick, lazytime=ctx.lazytime)
    kernel = debian_kernel(ctx)
    workdir = tempfile.mkdtemp(prefix="daxfile-bench-guest.", dir="/var/tmp")
    os.chmod(workdir, 0o755)
    log(f"guest: an emulated pmem host on {kernel}, {plan.rounds} round(s) "
        f"of {plan.runs // plan.rounds} guest runs ({plan.region} each)")
    try:
        res, relay, log_path = boot_l1(ctx, kernel, plan, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    problems = list(res.problems) + relay.failed
    if not relay.records:
        raise BenchError(f"no measurements from the emulated host "
                         f"({log_path}): {'; '.join(problems[:3])}")
    data = {"kernel": kernel, "boot_seconds": res.duration,
            "serial_log": log_path, "problems": problems,
            "l1_diag": relay.diags[:20],
            "warmup": [r for r in relay.records if r.get("warmup")]}
    return analyse([r for r in relay.records if not r.get("warmup")], plan,
                   problems, data)


def analyse(records, plan, problems, data):
    """The summaries, ratios, goals, tables and checks of the guest runs
    @records (bench/run's result of this benchmark); @data: what else the
    results keep"""
    sums = summaries(records, plan.fs)
    data = dict(data, records=records, summaries=sums, ratios={},
                method=dict(METHOD, harness=METHOD["harness"].format(
                                host_cpus=f"{plan.host_cpus} vCPU"
                                + ("s" if plan.host_cpus > 1 else "")),
                            rounds=plan.rounds, region=plan.region,
                            l1_nvdimm_sizes=list(plan.nvdimms),
                            lazytime=plan.lazytime))
    goals, tables, notes = [], [], [f"guest: problem: {p}" for p in problems]
    for fs in plan.fs:
        cmp = data["ratios"][fs] = compare(sums[fs])
        goals += fs_goals(fs, sums[fs], cmp)
        tables.append((f"The guest's view, emulated host on {fs} (L1 TCG, "
                       f"L2 under its KVM on emulated SVM; {plan.region} "
                       "written twice, per 2 MiB step; median of "
                       f"{plan.rounds} round(s))", guest_table(sums[fs], cmp)))
        tables.append((f"The host's view of the first passes on {fs} (per "
                       "round; nested faults: the guest's exits for its "
                       "NVDIMM, and how long each kept it out, in the "
                       "emulated host; metadata operations per QEMU fault "
                       "by kind)", host_table(sums[fs])))
        notes += fs_notes(fs, sums[fs])
        if not steady_quiet(sums[fs]):
            notes.append(f"{fs}: a steady pass made QEMU fault or the "
                         "guest exit for its NVDIMM")
    return {"data": data, "goals": goals, "tables": tables, "notes": notes,
            "checks": checks(sums, plan, problems)}

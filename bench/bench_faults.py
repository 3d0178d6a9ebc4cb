# SPDX-License-Identifier: GPL-2.0-or-later
"""faults: first-write fault latency on real fsdax in a TCG guest
(bench/guest/bench-faults.sh), daxfile-created vs sparse vs fallocated
files (all MAP_SYNC) against device-dax in the same boot; on the daxctl()
kernels (kernel/, both series) also the created file made static in the
kernel (the fault path of patch 5), with the filesystem's journal handles
and transactions per fault."""

import json
import os

from benchlib import BENCH_DIR, BenchError, goal, log, median, ratio, table

NAME = "faults"
KINDS = ("devdax", "created", "static", "sparse", "falloc")
STATIC_VS_DEVDAX = 1.5   # goal: static p50 <= 1.5 x device-dax p50
SPARSE_VS_STATIC = 30.0  # goal: sparse MAP_SYNC p50 >= 30 x static p50
# the kernel arm (a file static through daxctl()) against device-dax
KERNEL_P50 = 1.1         # goal: p50 <= 1.1 x device-dax
KERNEL_P99 = 1.5         # goal: p99 <= 1.5 x device-dax


def parse_bench_lines(tap, bench):
    out = []
    for line in tap:
        if line.startswith("# BENCH "):
            rec = json.loads(line[len("# BENCH "):])
            if rec.get("bench") == bench:
                out.append(rec)
    return out


def guest_records(res, bench, log_path, problems):
    """(every BENCH line of @bench, those with a result); no result is an
    error naming the serial log and the first problems it shows."""
    lines = parse_bench_lines(res.tap, bench)
    recs = [r for r in lines if "result" in r]
    if not recs:
        raise BenchError(f"no measurements from the guest ({log_path}): "
                         f"{'; '.join(problems[:3])}")
    return lines, recs


def guest_script(script):
    """bench/guest/SCRIPT.sh: the VM harness runs a script given as a path
    (benchmarks are not tests: their guest scripts are bench's own)."""
    return os.path.join(BENCH_DIR, "guest", f"{script}.sh")


def boot(ctx, script, kernel, pmem_sizes, env, tag):
    """Boot once and run bench/guest/SCRIPT.sh; returns (BootResult, serial
    log path, problems). A boot with problems still returns what it
    measured."""
    import daxfile_vm as vm
    image = vm.build_image(kernel, bins=[ctx.daxfile, ctx.benchdax])
    pmems = []
    try:
        for size in pmem_sizes:
            pmems.append(vm.Pmem.temporary_file(size))
        log_path = os.path.join(ctx.logdir, f"{tag}-{kernel}.serial.log")
        res = image.boot(guest_script(script), pmems=pmems, env=env,
                         timeout=ctx.vm_timeout, serial_log=log_path)
    finally:
        for p in pmems:
            p.remove()
    problems = list(res.problems) + [t.line for t in res.failed_tests]
    if problems:
        log(f"{script} on {kernel}: {len(problems)} problem(s), see "
            f"{log_path}: {problems[0]}")
    return res, log_path, problems


def summarise(records):
    """records of one (fs, mode, kind) over rounds -> summary"""
    firsts = [r["result"]["first"] for r in records]
    n = sum(r["result"]["n"] for r in records)
    faults = sum(r["result"]["faults"] for r in records)
    extra = [r["result"]["pmd_extra_faults"] for r in records]
    p50s = [f["p50_us"] for f in firsts]
    handles = sum(r.get("handles", 0) for r in records)
    traced = sum(r.get("traced_faults", 0) for r in records)
    return {
        "rounds": len(records),
        "n_per_round": records[0]["result"]["n"],
        "p50_us": median(p50s),
        "p99_us": median([f["p99_us"] for f in firsts]),
        "max_us": max(f["max_us"] for f in firsts),
        "p50_us_rounds": p50s,
        "nofault_p50_us": median([r["result"]["nofault"]["p50_us"]
                                  for r in records]),
        "faults_per_store": faults / n if n else None,
        "pmd": (all(e == 0 for e in extra)
                if records[0]["mode"] == "2m" else None),
        "handles_per_fault": handles / traced if traced else None,
    }


def run(ctx):
    rounds = 1 if ctx.quick else 3
    env = {"BF_ROUNDS": str(rounds), "BF_FS": "xfs ext4",
           "BF_PAGES_4K": "1024" if ctx.quick else "4096",
           "BF_PAGES_2M": "64" if ctx.quick else "128"}
    method = {
        "harness": "tools/harness daxfile_vm, QEMU TCG, emulated NVDIMMs "
                   "backed by prefilled files in /dev/shm",
        "nvdimms": "0: 2 GiB fsdax (xfs su=2m / ext4 stride=512, -o dax); "
                   "1: 1 GiB devdax align 2M; 2: 512 MiB devdax align 4K",
        "stores": "one byte per page, timed with CLOCK_MONOTONIC; 4 KiB "
                  "mode maps with MADV_NOHUGEPAGE; MAP_SHARED_VALIDATE|"
                  "MAP_SYNC everywhere",
        "handles": "after each timed run, 64 stores of a new mapping of "
                   "the same file with jbd2:jbd2_handle_start and "
                   "xfs:xfs_trans_alloc traced: events of bench-dax per "
                   "fault",
        "static": "daxctl() kernels only: `daxfile create`, then `daxfile "
                  "enable --mechanism kernel`",
        "per_round": f"{env['BF_PAGES_4K']} x 4 KiB and "
                     f"{env['BF_PAGES_2M']} x 2 MiB stores per file, fresh "
                     "files each round",
        "rounds": rounds,
        "aggregation": "p50/p99: median over rounds of the per-round value; "
                       "max: over all rounds"}
    data = {"method": method, "kernels": {}}
    goals = []
    tables = []
    notes = []
    for kernel in ctx.kernels:
        log(f"faults: booting {kernel}")
        res, log_path, problems = boot(ctx, "bench-faults", kernel,
                                       ["2G", "1G", "512M"], env, "faults")
        lines, recs = guest_records(res, "faults", log_path, problems)
        kd = {"boot_seconds": res.duration, "serial_log": log_path,
              "problems": problems,
              "events": [r for r in lines if "event" in r],
              "guest_kernel": next((t[2:] for t in res.tap
                                    if t.startswith("# kernel ")), None),
              "fs": {}}
        rows = []
        for fs in sorted({r["fs"] for r in recs}):
            fd = kd["fs"][fs] = {}
            for mode in ("2m", "4k"):
                md = fd[mode] = {}
                for kind in KINDS:
                    sel = [r for r in recs if r["fs"] == fs and
                           r["mode"] == mode and r["kind"] == kind]
                    if sel:
                        md[kind] = summarise(sel)
                dev, st = md.get("devdax"), md.get("created")
                sp, fa = md.get("sparse"), md.get("falloc")
                kst = md.get("static")
                md["ratios_p50"] = {
                    "kernel_static_vs_devdax": ratio(kst and kst["p50_us"],
                                                     dev and dev["p50_us"]),
                    "static_vs_devdax": ratio(st and st["p50_us"],
                                              dev and dev["p50_us"]),
                    "sparse_vs_static": ratio(sp and sp["p50_us"],
                                              st and st["p50_us"]),
                    "falloc_vs_static": ratio(fa and fa["p50_us"],
                                              st and st["p50_us"]),
                }
                md["ratios_p99"] = {
                    "kernel_static_vs_devdax": ratio(kst and kst["p99_us"],
                                                     dev and dev["p99_us"]),
                }
                r = md["ratios_p50"]
                size = "2 MiB" if mode == "2m" else "4 KiB"
                where = f"{kernel} {fs} {size}"
                if kst:
                    k50 = r["kernel_static_vs_devdax"]
                    k99 = md["ratios_p99"]["kernel_static_vs_devdax"]
                    goals.append(goal(
                        f"faults: kernel static <= {KERNEL_P50}x device-dax "
                        f"p50 ({where})", k50, KERNEL_P50,
                        k50 is not None and k50 <= KERNEL_P50, "x"))
                    goals.append(goal(
                        f"faults: kernel static <= {KERNEL_P99}x device-dax "
                        f"p99 ({where})", k99, KERNEL_P99,
                        k99 is not None and k99 <= KERNEL_P99, "x"))
                    hpf = kst["handles_per_fault"]
                    goals.append(goal(
                        f"faults: kernel static: 0 journal handles or "
                        f"transactions per fault ({where})", hpf, 0,
                        hpf == 0, "/fault"))
                goals.append(goal(
                    f"faults: static <= {STATIC_VS_DEVDAX}x device-dax p50 "
                    f"({where})", r["static_vs_devdax"], STATIC_VS_DEVDAX,
                    r["static_vs_devdax"] is not None and
                    r["static_vs_devdax"] <= STATIC_VS_DEVDAX, "x"))
                goals.append(goal(
                    f"faults: sparse MAP_SYNC >= {SPARSE_VS_STATIC:.0f}x "
                    f"static p50 ({where})", r["sparse_vs_static"],
                    SPARSE_VS_STATIC,
                    r["sparse_vs_static"] is not None and
                    r["sparse_vs_static"] >= SPARSE_VS_STATIC, "x"))
                for kind in KINDS:
                    s = md.get(kind)
                    if not s:
                        continue
                    rows.append([fs, size, kind, s["p50_us"], s["p99_us"],
                                 s["max_us"],
                                 ratio(s["p50_us"],
                                       dev and dev["p50_us"]),
                                 s["faults_per_store"],
                                 s["handles_per_fault"],
                                 "-" if s["pmd"] is None else
                                 ("yes" if s["pmd"] else "NO")])
        data["kernels"][kernel] = kd
        for e in kd["events"]:
            why = e["message"].split("; fix: ")[0].strip()
            notes.append(f"{kernel} {e['fs']}: daxfile create failed once "
                         f"and was retried ({e['file']}): {why}")
        for p in problems:
            notes.append(f"{kernel}: guest problem: {p}")
        tables.append((f"First-write fault latency, guest {kernel} "
                       f"(µs, TCG; ratio = p50 / device-dax p50)",
                       table(["fs", "page", "file", "p50", "p99", "max",
                              "x devdax", "faults/store", "handles/fault",
                              "PMD"], rows)))
    return {"data": data, "goals": goals, "tables": tables, "notes": notes}

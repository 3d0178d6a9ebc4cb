# SPDX-License-Identifier: GPL-2.0-or-later
"""provision: `daxfile create` of N GiB against fallocate + dd and
fallocate + pwrite, and against the raw write bandwidth of the same kind of
device in the same run: in a TCG guest on real fsdax
(bench/guest/bench-provision.sh) and on the host on a loop-mounted xfs
(su=2m)."""

import json
import os

from benchlib import (GIB, MIB, LoopDev, LoopFs, fmt_size, goal,
                      log, median, ratio, run as run_cmd, table, tmpfs_or_disk)
from bench_faults import boot, guest_records

NAME = "provision"
VS_RAW = 0.8     # goal: create >= 0.8 x raw bandwidth
VS_NAIVE = 1.5   # goal: create >= 1.5 x the naive method
NAIVE = ("falloc-dd", "falloc-pwrite")
RAW = ("raw-dd", "raw-pwrite")


def summarise(records, size):
    """{method: {...}} from BENCH/host records of one filesystem; the
    daxfile-version records give create's process start."""
    out = {}
    for m in sorted({r["method"] for r in records}):
        secs = [r["result"]["seconds"] for r in records if r["method"] == m]
        med = median(secs)
        out[m] = {"seconds": secs, "median_s": med}
        if m != "daxfile-version":
            out[m]["mib_per_s"] = size / MIB / med
        # the wipe's own split: zeroing, and reading back with SHA-256
        for part in ("zero_seconds", "verify_seconds"):
            got = [r["result"][part] for r in records
                   if r["method"] == m and part in r["result"]]
            if got:
                out[m][f"{part[:-8]}_median_s"] = median(got)
    ver = out.pop("daxfile-version", None)
    if ver and "create" in out:
        net = out["create"]["median_s"] - ver["median_s"]
        out["create"]["process_start_s"] = ver["median_s"]
        out["create"]["net_of_process_start_mib_per_s"] = (
            size / MIB / net if net > 0 else None)
    return out


def judge(where, methods, goals):
    """Ratios of create's bandwidth and the goals, for one setting."""
    c = methods.get("create")
    if not c:
        goals.append(goal(f"provision: create ({where})", None, None, False,
                          note="every create failed; see the errors"))
        return {}
    bw = {m: v["mib_per_s"] for m, v in methods.items()}
    r = {f"create_vs_{m}": ratio(bw["create"], bw[m]) for m in bw
         if m != "create"}
    for m in RAW:
        if "wipe" in bw and m in bw:
            r[f"wipe_vs_{m}"] = ratio(bw["wipe"], bw[m])
    best_raw = max((m for m in RAW if m in bw), key=lambda m: bw[m],
                   default=None)
    best_naive = max((m for m in NAIVE if m in bw), key=lambda m: bw[m],
                     default=None)
    for m, target, label in ((best_raw, VS_RAW, "raw"),
                             (best_naive, VS_NAIVE, "naive")):
        if not m:
            continue
        v = r[f"create_vs_{m}"]
        notes = [f"vs {o}: {r[f'create_vs_{o}']:.2f}x"
                 for o in (RAW if label == "raw" else NAIVE)
                 if f"create_vs_{o}" in r and o != m]
        net = c.get("net_of_process_start_mib_per_s")
        if net:
            notes.append(f"without create's process start "
                         f"({c['process_start_s'] * 1e3:.0f} ms): "
                         f"{net / bw[m]:.2f}x")
        goals.append(goal(
            f"provision: create >= {target}x {label} ({where}; "
            f"vs the faster {label} method, {m})", v, target, v >= target,
            "x", note="; ".join(notes)))
    return r


def rows_for(where, fs, methods, ratios):
    rows = []
    for m in ("raw-dd", "raw-pwrite", "create", "wipe", "falloc-populate",
              "falloc-populate-sync", "falloc-dd", "falloc-pwrite",
              "falloc-pwrite-64m"):
        v = methods.get(m)
        if not v:
            continue
        rows.append([where, fs, m, v["median_s"], v["mib_per_s"],
                     "-" if m == "create" else ratios.get(f"create_vs_{m}")])
        for part, label in (("zero", "(wipe: zeroing)"),
                            ("verify", "(wipe: read back, SHA-256)")):
            t = v.get(f"{part}_median_s")
            if t:
                rows.append([where, fs, label, t,
                             v["mib_per_s"] * v["median_s"] / t, "-"])
        if m == "create" and v.get("process_start_s") is not None:
            rows.append([where, fs, "(daxfile --version)",
                         v["process_start_s"], "-", "-"])
    return rows


def guest(ctx, size, rounds, goals):
    kernel = ctx.kernels[0]
    env = {"BP_SIZE": str(size), "BP_ROUNDS": str(rounds),
           "BP_FS": "xfs ext4"}
    log(f"provision: booting {kernel}, {fmt_size(size)} per method")
    fs_nv = size + 512 * MIB
    raw_nv = size + 256 * MIB
    res, log_path, problems = boot(ctx, "bench-provision", kernel,
                                   [str(fs_nv), str(raw_nv)], env,
                                   "provision")
    lines, recs = guest_records(res, "provision", log_path, problems)
    out = {"kernel": kernel, "serial_log": log_path, "problems": problems,
           "errors": [r for r in lines if "error" in r], "fs": {}}
    rows = []
    for fs in sorted({r["fs"] for r in recs}):
        methods = summarise([r for r in recs if r["fs"] == fs], size)
        ratios = judge(f"guest {kernel} {fs}", methods, goals)
        out["fs"][fs] = {"methods": methods, "ratios": ratios}
        rows += rows_for(f"guest {kernel}", fs, methods, ratios)
    return out, rows


def guest_notes(g):
    notes = [f"guest {g['kernel']} {e['fs']}: daxfile create failed in round "
             f"{e['round']} (not timed): {e['error'].strip()}"
             for e in g.get("errors", [])]
    return notes + [f"guest problem: {p}" for p in g.get("problems", [])]


def host_once(ctx, fsys, raw, size, method, rnd):
    run_cmd(["sync"])
    if method == "daxfile-version":
        res = json.loads(run_cmd([ctx.benchdax, "time", ctx.daxfile,
                                  "--version"]).stdout)
        return {"method": method, "round": rnd, "result": res}
    if method.startswith("raw-"):
        target = raw.dev
    else:
        target = fsys.path("p.img")
    argv = [ctx.benchdax, "fill", target, str(size), method,
            "--daxfile", ctx.daxfile, "--allow-non-dax"]
    res = json.loads(run_cmd(argv).stdout)
    if not method.startswith("raw-"):
        os.unlink(target)
    return {"method": method, "round": rnd, "result": res}


def host(ctx, size, rounds, goals):
    where = tmpfs_or_disk(3 * size)
    methods = ["raw-dd", "create", "falloc-dd", "falloc-pwrite", "raw-pwrite",
               "wipe"]
    log(f"provision: host loop devices in {where}, {fmt_size(size)} per "
        "method")
    recs = []
    with LoopFs("xfs", size + 768 * MIB, where) as fsys, \
            LoopDev(size, where) as raw:
        for rnd in range(rounds):
            k = rnd % len(methods)
            for m in methods[k:] + methods[:k] + ["daxfile-version"]:
                recs.append(host_once(ctx, fsys, raw, size, m, rnd))
    summary = summarise(recs, size)
    ratios = judge("host loop xfs", summary, goals)
    out = {"backing": where, "fs": {"xfs": {"methods": summary,
                                            "ratios": ratios}},
           "note": "loop devices over files in " + where + "; buffered "
                   "loop I/O (the host page cache sits under both the raw "
                   "device and the filesystem)"}
    return out, rows_for("host loop", "xfs", summary, ratios)


def run(ctx):
    size = 256 * MIB if ctx.quick else GIB
    rounds = 1 if ctx.quick else 3
    goals = []
    data = {"size": size, "rounds": rounds,
            "method": {
                "raw-dd": "dd if=/dev/zero bs=1M oflag=direct conv=fsync to "
                          "the raw device (guest: a second fsdax namespace "
                          "/dev/pmem1; host: a second loop device)",
                "raw-pwrite": "O_DIRECT pwrite of a zeroed 1 MiB buffer to "
                              "the raw device, fsync",
                "create": "daxfile create FILE --size N (process, "
                          "allocation, fill, fsync, FIEMAP verification)",
                "falloc-dd": "fallocate, then dd if=/dev/zero bs=1M "
                             "conv=notrunc,fsync",
                "falloc-pwrite": "fallocate, then pwrite of a zeroed 1 MiB "
                                 "buffer, fsync",
                "wipe": "daxfile wipe of a file daxfile create made "
                        "(untimed): zeros through MAP_SYNC (DAX) or msync, "
                        "then all of it read back and hashed",
                "falloc-populate": "guest only: fallocate, mmap, "
                                   "MADV_POPULATE_WRITE, fsync (the fill "
                                   "daxfile create uses on DAX)",
                "aggregation": "median of the rounds; rounds rotate the "
                               "order of the methods"}}
    rows = []
    data["guest"], r = guest(ctx, size, rounds, goals)
    rows += r
    data["host"], r = host(ctx, size, rounds, goals)
    rows += r
    tables = [(f"Provisioning {fmt_size(size)} (median of {rounds}; "
               "ratio = create bandwidth / method bandwidth)",
               table(["where", "fs", "method", "seconds", "MiB/s",
                      "create ÷ method"], rows))]
    return {"data": data, "goals": goals, "tables": tables,
            "notes": guest_notes(data["guest"])}

# SPDX-License-Identifier: GPL-2.0-or-later
"""prealloc: QEMU start with an nvdimm memory-backend-file prealloc=on on a
static (daxfile-created) file against a sparse one, and against the same
start with prealloc=off, on a loop-mounted xfs (su=2m) on the host: time
from spawning QEMU (-S, TCG) to its QMP greeting (the backend is
preallocated while the machine is built, before the monitor answers). The
host has no DAX, so the same preallocation is also done the way QEMU 7.2
does it (MADV_POPULATE_WRITE over a MAP_SYNC mapping) in a TCG guest on
real fsdax (bench/guest/bench-prealloc.sh), against device-dax."""

import json
import os
import socket
import subprocess
import tempfile
import time

from benchlib import (GIB, MIB, LoopFs, BenchError, fmt_size, goal, log,
                      median, pct, ratio, run as run_cmd, table, tmpfs_or_disk)
from bench_faults import boot, guest_records

NAME = "prealloc"
ARMS = ("static-off", "static-cold", "static-warm", "sparse")


def qemu_argv(path, size, prealloc, sock):
    return ["qemu-system-x86_64", "-nodefaults", "-no-user-config",
            "-display", "none", "-accel", "tcg", "-S",
            "-machine", "pc,nvdimm=on",
            "-m", f"256M,slots=2,maxmem={256 + size // MIB}M",
            "-object", f"memory-backend-file,id=mem0,share=on,"
                       f"mem-path={path},size={size},align=2M,"
                       f"prealloc={'on' if prealloc else 'off'}",
            "-device", "nvdimm,memdev=mem0,id=nv0",
            "-qmp", f"unix:{sock},server=on,wait=off"]


def qmp_ready_seconds(argv, sock, timeout=300):
    """Seconds from spawning QEMU to its QMP greeting; then quit."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        s = None
        while s is None:
            if proc.poll() is not None:
                raise BenchError("QEMU exited early: " + proc.stderr.read())
            if time.perf_counter() - t0 > timeout:
                raise BenchError("QEMU's QMP did not answer")
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sock)
            except (FileNotFoundError, ConnectionRefusedError):
                s.close()
                s = None
                time.sleep(0.002)
        f = s.makefile("rw")
        greeting = f.readline()
        ready = time.perf_counter() - t0
        if "QMP" not in greeting:
            raise BenchError(f"unexpected QMP greeting: {greeting!r}")
        for cmd in ("qmp_capabilities", "quit"):
            f.write(json.dumps({"execute": cmd}) + "\n")
            f.flush()
            f.readline()
        s.close()
        proc.wait(timeout=60)
        return ready
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        try:
            os.unlink(sock)
        except FileNotFoundError:
            pass


def drop_file_cache(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def one(ctx, fsys, arm, size, static, sock):
    run_cmd(["sync"])
    if arm == "sparse":
        path = fsys.path("sparse.img")
        with open(path, "wb") as f:
            f.truncate(size)
    else:
        path = static
        if arm == "static-cold":
            drop_file_cache(path)
    t = qmp_ready_seconds(qemu_argv(path, size, arm != "static-off", sock),
                          sock)
    if arm == "sparse":
        os.unlink(path)
    return t


GUEST_KINDS = ("devdax", "created", "sparse", "falloc")


def guest(ctx, size, rounds):
    kernel = ctx.kernels[0]
    log(f"prealloc: booting {kernel}, {fmt_size(size)} per file")
    res, log_path, problems = boot(
        ctx, "bench-prealloc", kernel,
        [str(2 * size + 512 * MIB), str(size + 64 * MIB)],
        {"BR_SIZE": str(size), "BR_ROUNDS": str(rounds),
         "BR_FS": "xfs ext4"}, "prealloc")
    lines, recs = guest_records(res, "prealloc", log_path, problems)
    out = {"kernel": kernel, "serial_log": log_path, "problems": problems,
           "events": [r for r in lines if "event" in r], "fs": {}}
    rows = []
    for fs in sorted({r["fs"] for r in recs}):
        st = {}
        for kind in GUEST_KINDS:
            secs = [r["result"]["seconds"] for r in recs
                    if r["fs"] == fs and r["kind"] == kind]
            if secs:
                st[kind] = {"seconds": secs, "median_s": median(secs),
                            "faults": [r["result"]["faults"] for r in recs
                                       if r["fs"] == fs and
                                       r["kind"] == kind]}
        out["fs"][fs] = st
        stat = st.get("created", {}).get("median_s")
        dev = st.get("devdax", {}).get("median_s")
        for kind in GUEST_KINDS:
            if kind in st:
                m = st[kind]["median_s"]
                rows.append([f"guest {kernel}", fs, kind, m * 1e3,
                             size / MIB / m, ratio(m, stat), ratio(m, dev)])
    return out, rows


def run(ctx):
    size = 512 * MIB if ctx.quick else GIB
    runs = 3 if ctx.quick else 7
    where = tmpfs_or_disk(3 * size)
    samples = {a: [] for a in ARMS}
    log(f"prealloc: {fmt_size(size)} backend, loop xfs in {where}")
    with LoopFs("xfs", 2 * size + 512 * MIB, where) as fsys, \
            tempfile.TemporaryDirectory(prefix="daxfile-bench-qmp.") as tmp:
        static = fsys.path("static.img")
        run_cmd([ctx.daxfile, "create", static, "--size", str(size),
                 "--allow-non-dax"])
        sock = os.path.join(tmp, "qmp.sock")
        for arm in ARMS:        # one warm-up round, not counted
            one(ctx, fsys, arm, size, static, sock)
        for rnd in range(runs):
            k = rnd % len(ARMS)
            for arm in ARMS[k:] + ARMS[:k]:
                samples[arm].append(one(ctx, fsys, arm, size, static, sock))
    data_guest, guest_rows = guest(ctx, size, 1 if ctx.quick else 3)
    st = {a: {"median_s": median(v), "p25_s": pct(v, 0.25),
              "p75_s": pct(v, 0.75), "all_s": v} for a, v in samples.items()}
    base = st["static-off"]["median_s"]
    for a in ARMS:
        st[a]["prealloc_cost_s"] = st[a]["median_s"] - base
    cost_static = st["static-cold"]["prealloc_cost_s"]
    cost_sparse = st["sparse"]["prealloc_cost_s"]
    data = {"size": size, "runs": runs, "backing": where, "stats": st,
            "guest": data_guest,
            "ratio_sparse_vs_static_total": ratio(
                st["sparse"]["median_s"], st["static-cold"]["median_s"]),
            "ratio_sparse_vs_static_prealloc_cost": ratio(cost_sparse,
                                                          cost_static),
            "method": {
                "qemu": "qemu-system-x86_64 -accel tcg -S -machine "
                        "pc,nvdimm=on, one memory-backend-file "
                        "(share=on, align=2M, prealloc=on|off) + nvdimm, "
                        "-qmp unix socket; time from spawn to the QMP "
                        "greeting, then quit",
                "arms": "static-off: daxfile-created file, prealloc=off "
                        "(QEMU start without preallocation: the baseline); "
                        "static-cold: the same file, prealloc=on, its page "
                        "cache dropped first (fadvise DONTNEED); "
                        "static-warm: prealloc=on, cached; sparse: a new "
                        "ftruncated file, prealloc=on",
                "aggregation": f"one warm-up round, then median of {runs} "
                               "rounds; rounds rotate the order"}}
    rows = [[a, st[a]["median_s"] * 1e3,
             f"{st[a]['p25_s'] * 1e3:.0f}–{st[a]['p75_s'] * 1e3:.0f}",
             st[a]["prealloc_cost_s"] * 1e3,
             ratio(st[a]["median_s"], st["static-cold"]["median_s"])]
            for a in ARMS]
    goals = [goal("prealloc: host QEMU start with prealloc=on, sparse / "
                  "static-cold (no number stated; reported; non-DAX host)",
                  data["ratio_sparse_vs_static_total"], None, True, "x",
                  note="prealloc cost (minus prealloc=off): sparse / static "
                       "= " + fmt_ratio(
                           data['ratio_sparse_vs_static_prealloc_cost']))]
    for fs, gst in data_guest["fs"].items():
        if "created" in gst and "sparse" in gst:
            goals.append(goal(
                f"prealloc: guest {data_guest['kernel']} {fs} (real DAX), "
                "populate of a sparse file / of a static file (no number "
                "stated; reported)",
                ratio(gst["sparse"]["median_s"], gst["created"]["median_s"]),
                None, True, "x"))
    for g in goals:
        g["met"] = None
    tables = [(f"Host: QEMU start to QMP ready, {fmt_size(size)} nvdimm "
               f"backend (ms, median of {runs}; loop xfs in {where}, no DAX)",
               table(["file / prealloc", "ms", "p25–p75",
                      "minus prealloc=off", "÷ static-cold"], rows)),
              (f"Guest, real fsdax: QEMU's prealloc done by hand "
               f"(MADV_POPULATE_WRITE over a MAP_SYNC mapping of "
               f"{fmt_size(size)}; ms, median of {1 if ctx.quick else 3})",
               table(["where", "fs", "file", "ms", "MiB/s", "÷ created",
                      "÷ devdax"], guest_rows))]
    notes = [f"guest {data_guest['kernel']} {e['fs']}: daxfile create failed "
             "once and was retried" for e in data_guest["events"]]
    notes += [f"guest problem: {p}" for p in data_guest["problems"]]
    return {"data": data, "goals": goals, "tables": tables, "notes": notes}


def fmt_ratio(x):
    return "-" if x is None else f"{x:.1f}x"

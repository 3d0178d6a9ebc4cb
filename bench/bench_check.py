# SPDX-License-Identifier: GPL-2.0-or-later
"""check: `daxfile check` time against file size and extent count, on
loop-mounted xfs (su=2m) and ext4 over big sparse images: contiguous
fallocated files up to 1 TiB (fallocate only writes metadata, and check
walks an unwritten map just as it walks a written one), daxfile-created
(written) files, and files fragmented on purpose by allocating two files in
turn. Every command runs once per round, rounds shuffled; the walk is the
paired difference to `daxfile --version` (process start) in the same round.
The bare FIEMAP walk of each file is timed inside bench-dax (no process
start)."""

import json

from benchlib import (GIB, MIB, TIB, LoopFs, fmt_size, goal, interleaved,
                      linear_fit, log, median, paired_median, ratio,
                      run as run_cmd, table)

NAME = "check"
LIMIT_1TIB_MS = 50.0
EXT4_1TIB_EXTENTS = 8192   # a written 1 TiB ext4 file: 128 MiB extents


def files_xfs(quick):
    """(label, kind, how, size or count) on the 4 TiB xfs"""
    f = [("xfs falloc 1 GiB", "contiguous", "falloc", GIB),
         ("xfs falloc 16 GiB", "contiguous", "falloc", 16 * GIB),
         ("xfs falloc 128 GiB", "contiguous", "falloc", 128 * GIB),
         ("xfs falloc 1 TiB", "contiguous", "falloc", TIB),
         ("xfs created 256 MiB", "created", "create", 256 * MIB)]
    if not quick:
        f += [("xfs created 1 GiB", "created", "create", GIB)]
    return f


def files_xfs_frag(quick):
    """on a two-AG xfs (AGs of 128 GiB), where two files of one directory
    allocated in turn interleave in the first AG"""
    f = [("xfs frag 2M x 1024", "fragmented", ("falloc", 2 * MIB), 1024),
         ("xfs frag 2M x 16384", "fragmented", ("falloc", 2 * MIB), 16384),
         ("xfs frag 4K x 65536", "fragmented", ("falloc", 4096), 65536),
         ("xfs written frag 4K x 16384", "fragmented, written",
          ("write", 4096), 16384)]
    if not quick:
        f += [("xfs frag 2M x 4096", "fragmented", ("falloc", 2 * MIB), 4096),
              ("xfs frag 4K x 131072", "fragmented", ("falloc", 4096),
               131072),
              ("xfs written frag 2M x 256", "fragmented, written",
               ("write", 2 * MIB), 256)]
    return f


def files_ext4(quick):
    f = [("ext4 falloc 1 TiB", "contiguous", "falloc", TIB),
         ("ext4 created 256 MiB", "created", "create", 256 * MIB)]
    if not quick:
        f += [("ext4 falloc 16 GiB", "contiguous", "falloc", 16 * GIB),
              ("ext4 frag 4K x 16384", "fragmented", ("falloc", 4096),
               16384)]
    return f


# (name, fs type, image size, mkfs options, files)
FILESYSTEMS = (
    ("xfs", "xfs", 4 * TIB, ["-l", "size=128m"], files_xfs),
    ("xfs-frag", "xfs", 256 * GIB, ["-l", "size=128m", "-d", "agcount=2"],
     files_xfs_frag),
    ("ext4", "ext4", 1100 * GIB, [], files_ext4),
)


def make(ctx, fsys, i, label, how, arg):
    path = fsys.path(f"f{i}")
    if how == "falloc":
        run_cmd(["fallocate", "-l", str(arg), path])
    elif how == "create":
        run_cmd([ctx.daxfile, "create", path, "--size", str(arg),
                 "--allow-non-dax"])
    else:
        mode, chunk = how
        argv = [ctx.benchdax, "frag", path, path + ".other", "--chunk",
                str(chunk), "--count", str(arg)]
        if mode == "write":
            argv.append("--write")
        run_cmd(argv)
    ext = json.loads(run_cmd([ctx.benchdax, "extents", path, "--repeat",
                              "20"]).stdout)
    return {"label": label, "path": path, "size": ext["size"],
            "extents": ext["extents"], "unwritten": ext["unwritten"],
            "fiemap_us": ext["walk_p50_us"]}


def measure(ctx, fstype, image_size, extra, specs, runs):
    with LoopFs(fstype, image_size, "/var/tmp", extra) as fsys:
        files = []
        for i, (label, kind, how, arg) in enumerate(specs):
            log(f"check: making {label}")
            f = make(ctx, fsys, i, label, how, arg)
            f["kind"] = kind
            files.append(f)
        run_cmd(["sync"])
        cmds = [("baseline", [ctx.daxfile, "--version"])]
        for f in files:
            cmds.append((f["label"], [ctx.daxfile, "check", "--allow-non-dax",
                                      f["path"]]))
        log(f"check: timing {len(files)} files on {fstype}, {runs} rounds")
        times = interleaved(cmds, runs=runs, warmup=3)
        for f in files:
            # check exits 1 for a file that is not ready: expected here
            f["ready"] = run_cmd([ctx.daxfile, "check", "--allow-non-dax",
                                  f["path"]], check=False).returncode == 0
    return files, times


def run(ctx):
    runs = 10 if ctx.quick else 30
    method = {
        "images": "sparse image files in /var/tmp on loop devices: xfs "
                  "4 TiB (mkfs.xfs -m reflink=0 -d su=2m,sw=1 -K -l "
                  "size=128m); xfs 256 GiB with two allocation groups "
                  "(-d agcount=2) for the fragmented files, so two files "
                  "allocated in turn really interleave; ext4 1100 GiB "
                  "(stride=512, lazy init, mounted noinit_itable)",
        "contiguous": "fallocate -l SIZE: unwritten extents, as long as the "
                      "filesystem makes them",
        "created": "daxfile create --allow-non-dax: written, aligned",
        "fragmented": "bench-dax frag: CHUNK-sized allocations to two files "
                      "in turn (fallocate, or O_DIRECT writes of zeroes), so "
                      "each file has about COUNT extents",
        "timing": f"{runs} rounds after 3 warm-up rounds; each round runs "
                  "every command once (posix_spawn from Python, output to "
                  "/dev/null) in a shuffled order; check ms = median; walk "
                  "ms = median over rounds of (check - daxfile --version of "
                  "the same round); FIEMAP = median of 20 walks inside "
                  "bench-dax (daxfile_fiemap_read, as daxfile reads the "
                  "map: 512 extents per ioctl, FIEMAP_FLAG_SYNC first)"}
    data = {"method": method, "files": []}
    all_files = []
    base = {}
    for name, fstype, size, extra, specs in FILESYSTEMS:
        files, times = measure(ctx, fstype, size, extra, specs(ctx.quick),
                               runs)
        b = times["baseline"]
        base[name] = {"daxfile_version_ms": median(b) * 1e3}
        for f in files:
            c = times[f["label"]]
            f["fs"] = name
            f["check_ms"] = median(c) * 1e3
            f["check_ms_p90"] = sorted(c)[int(0.9 * (len(c) - 1))] * 1e3
            f["walk_ms"] = paired_median(c, b) * 1e3
            f["walk_us_per_extent"] = f["walk_ms"] * 1e3 / f["extents"]
            all_files.append(f)
    data["baselines"] = base
    data["files"] = all_files

    fit = linear_fit([(f["extents"], f["walk_ms"]) for f in all_files])
    a, b, r2 = fit if fit else (None, None, None)
    data["fit"] = {"intercept_ms": a, "us_per_extent": b * 1e3 if b else None,
                   "r2": r2,
                   "note": "walk_ms = intercept + slope x extents, least "
                           "squares over every file of both filesystems"}
    by = {f["label"]: f for f in all_files}
    x1t, x1g = by.get("xfs falloc 1 TiB"), by.get("xfs falloc 1 GiB")
    e1t = by.get("ext4 falloc 1 TiB")
    b_dax = base["xfs"]["daxfile_version_ms"]
    predicted = (b_dax + a + b * EXT4_1TIB_EXTENTS) if fit else None
    data["extrapolation"] = {
        "ext4_written_1tib_extents": EXT4_1TIB_EXTENTS,
        "predicted_check_ms": predicted,
        "how": "daxfile --version median + fitted intercept + fitted "
               f"slope x {EXT4_1TIB_EXTENTS} extents (a written 1 TiB ext4 "
               "file in 128 MiB extents; a fallocated one reports fewer, "
               "see the measured row)"}
    size_ratio = ratio(x1t and x1t["check_ms"], x1g and x1g["check_ms"])
    goals = []
    for f in (x1t, e1t):
        if f:
            goals.append(goal(
                f"check: 1 TiB contiguous file < {LIMIT_1TIB_MS:.0f} ms "
                f"(measured, {f['label']}, {f['extents']} extents, "
                "whole command)", f["check_ms"], LIMIT_1TIB_MS,
                f["check_ms"] < LIMIT_1TIB_MS, "ms"))
    goals.append(goal(
        f"check: 1 TiB ext4 written file, {EXT4_1TIB_EXTENTS} extents < "
        f"{LIMIT_1TIB_MS:.0f} ms (extrapolated from the fit)", predicted,
        LIMIT_1TIB_MS, predicted is not None and predicted < LIMIT_1TIB_MS,
        "ms"))
    goals.append(goal(
        "check: O(extents): linear fit of walk time vs extents, r^2 >= 0.95 "
        "(criterion set here)", r2, 0.95, r2 is not None and r2 >= 0.95))
    goals.append(goal(
        "check: O(extents), not O(size): check time 1 TiB / 1 GiB "
        "contiguous xfs <= 1.25 (criterion set here)", size_ratio, 1.25,
        size_ratio is not None and size_ratio <= 1.25, "x"))
    rows = [[f["label"], fmt_size(f["size"]), f["extents"],
             "yes" if f["ready"] else "no", f["check_ms"], f["walk_ms"],
             f["fiemap_us"], f["walk_us_per_extent"]]
            for f in all_files]
    starts = ", ".join(f"{k} {v['daxfile_version_ms']:.1f} ms"
                       for k, v in base.items())
    tables = [(f"daxfile check (median of {runs} rounds; process start, "
               f"daxfile --version, in each group: {starts})",
               table(["file", "size", "extents", "ready", "check ms",
                      "walk ms", "FIEMAP µs", "walk µs/extent"], rows))]
    if fit:
        tables.append(("Fit and extrapolation", table(
            ["intercept ms", "µs per extent", "r²",
             f"predicted ms, {EXT4_1TIB_EXTENTS} extents (1 TiB ext4 "
             "written)"], [[a, b * 1e3, r2, predicted]])))
    return {"data": data, "goals": goals, "tables": tables}

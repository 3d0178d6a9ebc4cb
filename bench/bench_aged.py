# SPDX-License-Identifier: GPL-2.0-or-later
"""aged: how much of an aged filesystem's aligned free space `daxfile
create` can turn into static-ready files. Each filesystem (3 GiB loop xfs
su=2m and ext4 stride=512) is aged: filled with files of 4 KiB to 3.5 MiB
until 150 MiB are left, then a random half of them deleted. Its free space
and the part of it in whole aligned 2 MiB pages are read from its own
free-space map (FS_IOC_GETFSMAP). Then 128 MiB files are created until one
is refused; the measure is the bytes created over the aligned free space
before. Baseline, in the same run on a second filesystem aged with the same
seed: plain fallocate of 128 MiB files until ENOSPC, counting those whose
every extent is 2 MiB aligned (what a user without daxfile would get)."""

import fcntl
import os
import struct
import time

from benchlib import (GIB, MIB, LoopFs, goal, log, run as run_cmd, table,
                      tmpfs_or_disk)
# tools/harness, on the path by benchlib
from fsops import age_filesystem, fiemap_flags

NAME = "aged"
FILE = 128 * MIB
ALIGN = 2 * MIB
GOAL = 0.9

# linux/fsmap.h
_FSMAP = struct.Struct("=IIQQQQ3Q")
_HEAD = struct.Struct("=IIII6Q")
_GETFSMAP = (3 << 30) | ((_HEAD.size + 2 * _FSMAP.size) << 16) | \
    (ord("X") << 8) | 59
_OWN_FREE = 1
_OF_LAST = 0x20


def census(path):
    """(free bytes, bytes in whole aligned ALIGN pages) of the filesystem
    holding @path, from FS_IOC_GETFSMAP"""
    n = 512
    lo = _FSMAP.pack(0, 0, 0, 0, 0, 0, 0, 0, 0)
    hi = _FSMAP.pack(0xffffffff, 0xffffffff, 2**64 - 1, 2**64 - 1,
                     2**64 - 1, 0, 0, 0, 0)
    free = aligned = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            buf = bytearray(_HEAD.pack(0, 0, n, 0, 0, 0, 0, 0, 0, 0) + lo +
                            hi + bytes(_FSMAP.size * n))
            fcntl.ioctl(fd, _GETFSMAP, buf)
            entries = struct.unpack_from("=I", buf, 12)[0]
            last = None
            for i in range(entries):
                off = _HEAD.size + 2 * _FSMAP.size + _FSMAP.size * i
                _, flags, phys, owner, _, length = struct.unpack_from(
                    "=IIQQQQ", buf, off)
                last = (off, flags)
                if owner != _OWN_FREE:
                    continue
                free += length
                first = -(-phys // ALIGN) * ALIGN
                if phys + length >= first + ALIGN:
                    aligned += (phys + length - first) // ALIGN * ALIGN
            if last is None or last[1] & _OF_LAST:
                return free, aligned
            lo = bytes(buf[last[0]:last[0] + _FSMAP.size])
    finally:
        os.close(fd)


def aligned_extents(path):
    """every extent of @path starts and ends on an ALIGN boundary"""
    return all(e[1] % ALIGN == 0 and e[2] % ALIGN == 0
               for e in fiemap_flags(path))


def fill(ctx, fs, how):
    """files of FILE made by @how until one fails: (fit bytes, files,
    seconds, the failure)"""
    fit, made, why = 0, 0, None
    t0 = time.monotonic()
    for i in range(64):
        path = fs.path(f"vm{i}.img")
        if how == "create":
            res = run_cmd([ctx.daxfile, "create", path, "--size",
                           str(FILE)], check=False)
            if res.returncode != 0:
                why = res.stderr.strip()
                break
            fit += FILE
        else:
            res = run_cmd(["fallocate", "-l", str(FILE), path], check=False)
            if res.returncode != 0:
                why = res.stderr.strip()
                break
            fit += FILE if aligned_extents(path) else 0
        made += 1
    return fit, made, time.monotonic() - t0, why


def run(ctx):
    where = tmpfs_or_disk(8 * GIB)
    rows, results, goals = [], [], []
    for fstype in ("ext4", "xfs"):
        for how in ("create", "fallocate"):
            with LoopFs(fstype, 3 * GIB, where) as fs:
                log(f"aged: {fstype}: aging, then {how}")
                age_filesystem(fs.mnt, 17, 150 * MIB)
                free, aligned = census(fs.mnt)
                fit, made, secs, why = fill(ctx, fs, how)
                left = census(fs.mnt)
            frac = fit / aligned if aligned else None
            results.append({"fs": fstype, "method": how, "free": free,
                            "aligned_free": aligned, "files": made,
                            "fit_bytes": fit, "fraction": frac,
                            "seconds": secs, "stopped_by": why,
                            "aligned_free_after": left[1]})
            rows.append([fstype, how, f"{free // MIB}", f"{aligned // MIB}",
                         str(made), f"{fit // MIB}",
                         "-" if frac is None else f"{frac * 100:.0f} %",
                         f"{left[1] // MIB}"])
            if how == "create":
                goals.append(goal(
                    f"aged {fstype}: create uses >= {GOAL * 100:.0f} % of "
                    "the aligned free space (128 MiB files)", frac, GOAL,
                    frac is not None and frac >= GOAL))
    tables = [("aged filesystems: 128 MiB files until one fails (MiB)",
               table(["fs", "method", "free", "aligned free", "files",
                      "fit", "fit / aligned free", "aligned free after"],
                     rows))]
    data = {"method": __doc__.strip(), "file_size": FILE,
            "results": results}
    return {"data": data, "goals": goals, "tables": tables}

# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared pieces of daxfile's benchmarks (bench/run): paths to the built
binaries, timing and statistics, loop devices and filesystems, the load
sampler, goals and tables. Standard library only."""

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(BENCH_DIR)
# the VM and libvirt harness (daxfile_vm, libvirt_env) and fsops
sys.path.insert(0, os.path.join(SRC, "tools", "harness"))
sys.dont_write_bytecode = True

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
TIB = 1 << 40

VERBOSE = False


def log(msg):
    print(f"# bench: {msg}", file=sys.stderr, flush=True)


def debug(msg):
    if VERBOSE:
        log(msg)


def run(argv, check=True, timeout=900, **kw):
    """Run argv (a list), capture text output; raise on failure if check."""
    debug("$ " + " ".join(str(a) for a in argv))
    proc = subprocess.run([str(a) for a in argv], capture_output=True,
                          text=True, errors="replace", timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise BenchError(f"{' '.join(str(a) for a in argv)} failed "
                         f"(exit {proc.returncode}): "
                         f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc


class BenchError(Exception):
    pass


def fmt_size(n):
    for unit, div in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    for unit, div in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def parse_size(text):
    text = str(text).strip()
    mult = {"K": KIB, "M": MIB, "G": GIB, "T": TIB}
    if text and text[-1].upper() in mult:
        return int(float(text[:-1]) * mult[text[-1].upper()])
    return int(text)


# ------------------------------------------------------------- statistics

def median(xs):
    return statistics.median(xs) if xs else None


def pct(xs, q):
    """Nearest-rank percentile (q in 0..1)."""
    if not xs:
        return None
    s = sorted(xs)
    rank = min(len(s), max(1, math.ceil(q * len(s))))
    return s[rank - 1]


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def linear_fit(points):
    """Least squares y = a + b*x over [(x, y)]: (a, b, r2)."""
    n = len(points)
    if n < 2:
        return None
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None
    sxy = sum((p[0] - mx) * (p[1] - my) for p in points)
    b = sxy / sxx
    a = my - b * mx
    ss_tot = sum((p[1] - my) ** 2 for p in points)
    ss_res = sum((p[1] - a - b * p[0]) ** 2 for p in points)
    r2 = 1 - ss_res / ss_tot if ss_tot else 1.0
    return a, b, r2


# ----------------------------------------------------------------- timing

def interleaved(commands, runs=30, warmup=3, seed=8):
    """Time each (name, argv) of commands runs times, in rounds: every
    round runs every command once, in a shuffled order, so a change of
    load hits all of them alike. stdout/stderr go to /dev/null; the exit
    status is ignored. Returns {name: [seconds per round]}."""
    import random
    rng = random.Random(seed)
    order = list(range(len(commands)))
    out = {name: [] for name, _ in commands}
    for rnd in range(warmup + runs):
        rng.shuffle(order)
        for i in order:
            name, argv = commands[i]
            t0 = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            dt = time.perf_counter() - t0
            if rnd >= warmup:
                out[name].append(dt)
    return out


def paired_median(xs, base):
    """Median over rounds of xs[i] - base[i] (same round, so drift of the
    load between rounds cancels)."""
    return median([x - b for x, b in zip(xs, base)])


# ------------------------------------------------------------ environment

class LoadSampler:
    """Samples /proc/loadavg (1 min) and the busy CPU share (/proc/stat)
    every few seconds while the benchmarks run."""

    def __init__(self, every=3.0):
        self.every = every
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _cpu():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + v[4]
        return sum(v), idle

    def _loop(self):
        last = self._cpu()
        while not self._stop.wait(self.every):
            with open("/proc/loadavg") as f:
                load1 = float(f.read().split()[0])
            cur = self._cpu()
            dt = cur[0] - last[0]
            busy = 1 - (cur[1] - last[1]) / dt if dt else 0.0
            last = cur
            self.samples.append((time.time(), load1, busy))

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=10)

    def window(self, t0, t1):
        """Load during [t0, t1] (time.time())."""
        s = [x for x in self.samples if t0 <= x[0] <= t1]
        if not s:
            with open("/proc/loadavg") as f:
                return {"load1": [float(f.read().split()[0])] * 3,
                        "busy_cpu": None, "samples": 0}
        loads = [x[1] for x in s]
        busy = [x[2] for x in s]
        return {"load1": [min(loads), statistics.fmean(loads), max(loads)],
                "busy_cpu": [min(busy), statistics.fmean(busy), max(busy)],
                "samples": len(s)}


def machine_info():
    info = {"kernel": os.uname().release, "nproc": os.cpu_count()}
    try:
        lscpu = run(["lscpu", "-J"], check=False).stdout
        fields = {e["field"].rstrip(":"): e["data"]
                  for e in json.loads(lscpu)["lscpu"]}
        for k in ("Model name", "CPU(s)", "Thread(s) per core",
                  "Core(s) per socket", "Socket(s)", "Hypervisor vendor",
                  "Virtualization type", "L3 cache", "Flags"):
            if k in fields:
                info[k.lower().replace(" ", "_").replace("(s)", "s")] = (
                    fields[k] if k != "Flags" else
                    " ".join(f for f in fields[k].split()
                             if f in ("avx2", "avx512f", "vmx", "svm",
                                      "hypervisor", "clwb", "clflushopt")))
    except (BenchError, ValueError, KeyError):
        pass
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                info["mem_gib"] = round(int(line.split()[1]) / (1 << 20), 1)
    for name, argv in (("qemu", ["qemu-system-x86_64", "--version"]),
                       ("libvirt", ["libvirtd", "--version"])):
        try:
            info[name] = run(argv, check=False).stdout.splitlines()[0]
        except (OSError, IndexError):
            info[name] = None
    return info


def tmpfs_or_disk(need_bytes):
    """/dev/shm when it has need_bytes plus 4 GiB free, else /var/tmp."""
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize > need_bytes + 4 * GIB:
            return "/dev/shm"
    except OSError:
        pass
    return "/var/tmp"


# ---------------------------------------------------------- loop devices

class LoopDev:
    """A loop device over a new sparse image file; removed on exit."""

    def __init__(self, size, directory, prefix="daxfile-bench."):
        self.size = size
        self.directory = directory
        self.prefix = prefix
        self.image = None
        self.dev = None

    def __enter__(self):
        fd, self.image = tempfile.mkstemp(prefix=self.prefix, suffix=".img",
                                          dir=self.directory)
        os.ftruncate(fd, self.size)
        os.close(fd)
        try:
            self.dev = run(["losetup", "--find", "--show", self.image]
                           ).stdout.strip()
        except BaseException:
            os.unlink(self.image)
            raise
        return self

    def __exit__(self, *exc):
        if self.dev:
            run(["losetup", "-d", self.dev], check=False)
        if self.image:
            try:
                os.unlink(self.image)
            except FileNotFoundError:
                pass
        return False


class LoopFs:
    """A filesystem on a LoopDev, mounted on a temporary directory.
    fstype: 'xfs' (mkfs.xfs -m reflink=0 -d su=2m,sw=1: 2 MiB-aligned
    extents, as daxfile wants) or 'ext4' (stride=512, lazy init, mounted
    noinit_itable so a huge sparse image is not zeroed behind our back)."""

    def __init__(self, fstype, size, directory, mkfs_extra=()):
        self.fstype = fstype
        self.mkfs_extra = list(mkfs_extra)
        self.loop = LoopDev(size, directory)
        self.mnt = None

    def __enter__(self):
        self.loop.__enter__()
        try:
            if self.fstype == "xfs":
                run(["mkfs.xfs", "-q", "-f", "-K", "-m", "reflink=0",
                     "-d", "su=2m,sw=1"] + self.mkfs_extra + [self.loop.dev])
                opts = "noatime"
            else:
                run(["mkfs.ext4", "-q", "-F", "-b", "4096", "-E",
                     "stride=512,stripe_width=512,nodiscard,"
                     "lazy_itable_init=1,lazy_journal_init=1"]
                    + self.mkfs_extra + [self.loop.dev])
                opts = "noatime,noinit_itable"
            self.mnt = tempfile.mkdtemp(prefix="daxfile-bench-mnt.")
            run(["mount", "-t", self.fstype, "-o", opts, self.loop.dev,
                 self.mnt])
        except BaseException:
            self.__exit__()
            raise
        return self

    def path(self, name):
        return os.path.join(self.mnt, name)

    def __exit__(self, *exc):
        if self.mnt:
            if run(["umount", self.mnt], check=False).returncode != 0:
                run(["umount", "-l", self.mnt], check=False)
            os.rmdir(self.mnt)
            self.mnt = None
        self.loop.__exit__()
        return False


# ---------------------------------------------------------------- results

def goal(name, value, target, met, unit="", note=""):
    """One stated goal with the measured value."""
    return {"goal": name, "value": value, "target": target,
            "met": None if value is None else bool(met), "unit": unit,
            "note": note}


def fnum(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "0"
    mag = abs(x)
    if mag >= 1000:
        return f"{x:.0f}"
    if mag >= 100:
        return f"{x:.1f}"
    if mag >= 1:
        return f"{x:.{max(digits - 1, 1)}f}"
    return f"{x:.{digits}g}"


def table(headers, rows):
    """A Markdown table (also readable as plain text)."""
    cells = [[str(h) for h in headers]] + [[fnum(c) if not isinstance(c, str)
                                            else c for c in r] for r in rows]
    width = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for i, r in enumerate(cells):
        out.append("| " + " | ".join(c.ljust(width[j])
                                     for j, c in enumerate(r)) + " |")
        if i == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in width) + "|")
    return "\n".join(out)

# SPDX-License-Identifier: GPL-2.0-or-later
"""The host side of bench/run guest, inside the emulated pmem host (L1):
what the kernel did for QEMU while its guest (L2) wrote its NVDIMM, from
ftrace. Standard library only.

The guest's measuring program (bench-dax touch --marker) executes CPUID
with a leaf of its own right before its first pass, between the passes and
after them: each is a VM exit that KVM traces (kvm:kvm_cpuid) in QEMU's
vCPU thread, so the passes are windows of the trace itself. In each window
it counts, for QEMU's threads only (options/record-tgid):

- the faults on the backing file (fs_dax:dax_pmd_fault_done and
  dax_pte_fault_done of its inode; a PMD fault that fell back to PTEs is
  not counted, its PTE faults are), or on the device-dax device (a kprobe
  on dev_dax_huge_fault, which serves every size, with its pe_size);
- the filesystem's metadata operations, as the faults benchmark counts
  them: journal handles started (jbd2:jbd2_handle_start) and transactions
  allocated (xfs:xfs_trans_alloc); and what they were: timestamp updates
  (the transactions of xfs_vn_update_time, ext4's inode handles),
  handles that changed nothing (jbd2:jbd2_handle_stats with no dirtied
  block) and the rest (allocation, unwritten conversion);
- the synchronous flushes MAP_SYNC adds to a fault that left metadata to
  commit (xfs:xfs_file_fsync, ext4:ext4_sync_file_enter);
- the nested page faults (kvm:kvm_page_fault) at guest-physical addresses
  from 4 GiB up, where a pc machine with less than 3 GiB of RAM keeps its
  NVDIMMs, and how long each kept the guest out: from the exit to KVM's
  next entry into the guest (kvm:kvm_entry), which covers KVM's fault,
  the filesystem's and MAP_SYNC's flush.

Started and stopped with guest-lib.sh's dx_trace_start/dx_trace_stop.
"""

import collections
import os
import re
import subprocess

GUEST_LIB = "/daxfile/lib/guest-lib.sh"
TRACEFS = "/sys/kernel/tracing"
MARK_FIRST, MARK_STEADY, MARK_END = 0x44415801, 0x44415802, 0x44415803
KPROBE = "p:dxbench/devdax_fault dev_dax_huge_fault pe_size=%si:u32"
EVENTS = ("fs_dax/dax_pmd_fault_done", "fs_dax/dax_pte_fault_done",
          "jbd2/jbd2_handle_start", "jbd2/jbd2_handle_stats",
          "xfs/xfs_trans_alloc", "xfs/xfs_file_fsync",
          "ext4/ext4_sync_file_enter", "kvm/kvm_cpuid", "kvm/kvm_page_fault",
          "kvm/kvm_entry")
FILTERS = {"kvm/kvm_cpuid": f"function >= {MARK_FIRST:#x} && "
                            f"function <= {MARK_END:#x}",
           "kvm/kvm_page_fault": "fault_address >= 0x100000000"}
# ext4's handle types (fs/ext4/ext4_jbd2.h)
EXT4_HANDLES = ("misc", "inode", "write_page", "map_blocks", "dir",
                "truncate", "quota", "resize", "migrate", "move_extents",
                "xattr", "ext_convert")
LINE_RE = re.compile(r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\(\s*(?P<tgid>[\d-]+)"
                     r"\)\s+\[\d+\]\s+\S+\s+(?P<ts>\d+\.\d+):\s+"
                     r"(?P<event>\w+):\s*(?P<rest>.*)$")
Event = collections.namedtuple("Event", "ts tgid event rest")


class TraceError(Exception):
    pass


def write(path, text):
    with open(os.path.join(TRACEFS, path), "w") as f:
        f.write(text)


def dx(func, *args, ok=(0,)):
    """One of guest-lib.sh's dx_* helpers, in a shell; its exit status
    must be one of @ok"""
    res = subprocess.run(["sh", "-c", f'. {GUEST_LIB} && {func} "$@"',
                          func, *args], capture_output=True, text=True)
    if res.returncode not in ok:
        raise TraceError(f"{func} {' '.join(args)} failed: "
                         f"{res.stderr.strip()}")


class QemuTrace:
    """The events above, for one run of the guest"""

    def __init__(self, buffer_kb=16384):
        self.buffer_kb = buffer_kb
        self.events = list(EVENTS)

    def start(self):
        write("buffer_size_kb", str(self.buffer_kb))
        write("trace_clock", "global")
        write("options/record-tgid", "1")
        for event, expr in FILTERS.items():
            write(f"events/{event}/filter", expr)
        if "dxbench/devdax_fault" not in self.events:
            try:
                write("kprobe_events", KPROBE)
                self.events.append("dxbench/devdax_fault")
            except OSError:
                pass  # no kprobes: device-dax faults are not counted
        dx("dx_trace_start", *self.events)

    def stop(self, path):
        """Stop, save the trace to @path; the events lost to a full
        buffer (0 when none were)"""
        dx("dx_trace_stop", path, ok=(0, 1))  # 1: grep found no event
        lost = 0
        for cpu in os.listdir(os.path.join(TRACEFS, "per_cpu")):
            with open(os.path.join(TRACEFS, "per_cpu", cpu, "stats")) as f:
                for line in f:
                    if line.startswith("overrun:"):
                        lost += int(line.split()[1])
        return lost


def parse(path, tgid):
    """The events of process @tgid's threads in the trace saved at
    @path, in time order"""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE_RE.match(line)
            if m and m.group("tgid") == str(tgid):
                out.append(Event(float(m.group("ts")), tgid,
                                 m.group("event"), m.group("rest")))
    out.sort(key=lambda e: e.ts)
    return out


def field(rest, name):
    """The word after @name in an event's text"""
    words = rest.replace(",", " ").split()
    try:
        return words[words.index(name) + 1]
    except (ValueError, IndexError):
        return None


def windows(events):
    """{"first": (t0, t1), "steady": (t1, t2)} from the guest's markers"""
    marks = {}
    for e in events:
        if e.event == "kvm_cpuid":
            marks.setdefault(int(field(e.rest, "func"), 16), e.ts)
    if not all(m in marks for m in (MARK_FIRST, MARK_STEADY, MARK_END)):
        raise TraceError(f"the guest's markers are not all in the trace "
                         f"(found {sorted(hex(m) for m in marks)})")
    return {"first": (marks[MARK_FIRST], marks[MARK_STEADY]),
            "steady": (marks[MARK_STEADY], marks[MARK_END])}


def _fault(e, dev, ino):
    """'pmd' or 'pte' for a fault on file (@dev 'MAJ:MIN', @ino), or on
    the device-dax device when @ino is None; else None"""
    if e.event == "devdax_fault":
        if ino is not None:
            return None
        return "pte" if "pe_size=0" in e.rest.split() else "pmd"
    if e.event not in ("dax_pmd_fault_done", "dax_pte_fault_done") or \
            ino is None or field(e.rest, "dev") != dev or \
            int(field(e.rest, "ino"), 16) != ino:
        return None
    if e.event == "dax_pmd_fault_done":
        return None if "FALLBACK" in e.rest else "pmd"
    return "pte"


def _handle(e, c):
    """A journal handle's end (jbd2_handle_stats): what it was for"""
    kind = int(field(e.rest, "type"))
    name = EXT4_HANDLES[kind] if kind < len(EXT4_HANDLES) else str(kind)
    dirtied = int(field(e.rest, "dirtied_blocks"))
    if name == "inode":  # ext4_dirty_inode: the fault's mtime and ctime
        c["timestamp_ops"] += 1
    elif dirtied == 0:
        c["empty_handles"] += 1
    else:
        c["layout_ops"] += 1
    c["by"][f"ext4 handle {name}" + ("" if dirtied else " (empty)")] += 1


def _metadata(e, c):
    """Count @e into @c if it is a metadata operation or a flush"""
    if e.event == "jbd2_handle_start":
        c["handles"] += 1
    elif e.event == "jbd2_handle_stats":
        _handle(e, c)
    elif e.event == "xfs_trans_alloc":
        caller = (field(e.rest, "caller") or "?").split("+")[0]
        c["transactions"] += 1
        c["timestamp_ops" if caller == "xfs_vn_update_time"
          else "layout_ops"] += 1
        c["by"][f"xfs transaction from {caller}"] += 1
    elif e.event in ("xfs_file_fsync", "ext4_sync_file_enter"):
        c["sync_flushes"] += 1


def _stats_us(seconds):
    """p50, p99, max (us) and total (ms) of @seconds"""
    if not seconds:
        return None
    s = sorted(seconds)
    return {"p50_us": s[(len(s) - 1) // 2] * 1e6,
            "p99_us": s[min(len(s) - 1, -(-len(s) * 99 // 100) - 1)] * 1e6,
            "max_us": s[-1] * 1e6, "total_ms": sum(s) * 1e3}


def count(events, window, dev=None, ino=None):
    """What QEMU's threads did in @window (t0, t1) for a backing file
    (@dev 'MAJ:MIN' and @ino of it) or, with @ino None, a device-dax
    device. metadata_ops: handles started + transactions allocated (the
    faults benchmark's count), of which timestamp_ops (mtime/ctime
    updates), empty_handles (ext4 handles that changed nothing) and
    layout_ops (the rest: block allocation, unwritten conversion);
    sync_flushes: fsyncs (MAP_SYNC's, at the end of a fault);
    nested_fault_time: the time each nested fault kept the guest out"""
    t0, t1 = window
    c = {"faults": 0, "pmd_faults": 0, "pte_faults": 0, "handles": 0,
         "transactions": 0, "timestamp_ops": 0, "empty_handles": 0,
         "layout_ops": 0, "sync_flushes": 0, "nested_faults": 0,
         "by": collections.Counter()}
    exit_ts, out = None, []
    for e in events:
        if e.event == "kvm_entry" and exit_ts is not None:
            out.append(e.ts - exit_ts)
            exit_ts = None
        if not t0 <= e.ts <= t1:
            continue
        kind = _fault(e, dev, ino)
        if kind:
            c["faults"] += 1
            c[f"{kind}_faults"] += 1
        elif e.event == "kvm_page_fault":
            c["nested_faults"] += 1
            exit_ts = e.ts
        else:
            _metadata(e, c)
    c["metadata_ops"] = c["handles"] + c["transactions"]
    c["by"] = dict(c["by"])
    c["nested_fault_time"] = _stats_us(out)
    return c

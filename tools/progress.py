#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run one long step of ./quickstart or ./run-tests so that it is never
silent: a line at least every --every seconds saying what it is doing.

  progress.py [--log FILE] [--every S] --what TEXT -- COMMAND [ARG...]

--log FILE  the command's output goes to FILE; a line "  <what> ..." as
            it starts, and every S seconds "  <what>: 41 s: <its last
            line>". On failure: the command,
            its exit status and the last 20 lines of FILE.
(no --log)  the output passes through; when the command printed nothing
            for S seconds a line "  ... <what>: 41 s, running: <tests>"
            names the programs the command has running (meson test's
            tests, apt's dpkg).
Exits with the command's status.
"""

import argparse
import os
import shlex
import subprocess
import sys
import threading
import time

TAIL = 20


def children():
    """{ppid: [pid]} of every process now"""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the comm field may hold spaces and parentheses: split after it
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode("utf-8", "replace").split("\0")[:-1]
    except OSError:
        return []
    return argv


def program(argv):
    """What a person calls this program: an interpreter's script, else the
    binary, with its first option-less argument"""
    names = [os.path.basename(a) for a in argv]
    if names and names[0].startswith("python") and len(names) > 1:
        names = names[1:]
    words = names[:1] + [n for n in names[1:3] if not n.startswith("-")]
    return " ".join(words[:2])


def running(pid):
    """The programs under @pid that do the work: the children of the
    meson process (its tests), else the leaves of the tree"""
    kids = children()
    found, leaves, todo = [], [], [pid]
    while todo:
        p = todo.pop()
        below = kids.get(p, [])
        argv = cmdline(p)
        if any(os.path.basename(a) == "meson" for a in argv[:2]):
            found += [program(cmdline(k)) for k in below]
            continue
        if not below and p != pid:
            leaves.append(program(argv))
        todo += below
    names = [n for n in (found or leaves) if n]
    return sorted(set(names))


class Last:
    """The last line the command printed, and when"""

    def __init__(self):
        self.line = ""
        self.when = time.monotonic()
        self.lock = threading.Lock()

    def saw(self, line):
        with self.lock:
            self.line = line.strip() or self.line
            self.when = time.monotonic()


def pump(src, dst, last):
    for raw in iter(src.readline, b""):
        dst.write(raw)
        dst.flush()
        last.saw(raw.decode("utf-8", "replace"))


def run(args):
    out = open(args.log, "ab") if args.log else sys.stdout.buffer
    if args.log:
        print(f"  {args.what} ...", file=sys.stderr, flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(args.command, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    last = Last()
    reader = threading.Thread(target=pump, args=(proc.stdout, out, last),
                              daemon=True)
    reader.start()
    ticked = start
    while proc.poll() is None:
        time.sleep(0.5)
        now = time.monotonic()
        # with the output passing through, only a silence needs a line
        quiet_since = ticked if args.log else max(ticked, last.when)
        if now - quiet_since < args.every:
            continue
        ticked = now
        if args.log:
            tick = f"{args.what}: {now - start:.0f} s: {last.line[:100]}"
        else:
            busy = ", ".join(running(proc.pid)[:4]) or "(nothing)"
            tick = f"... {args.what}: {now - start:.0f} s, running: {busy}"
        print(f"  {tick}", file=sys.stderr, flush=True)
    reader.join()
    return proc.returncode, start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--log")
    p.add_argument("--every", type=float, default=8)
    p.add_argument("--what", required=True)
    p.add_argument("command", nargs="+")
    args = p.parse_args()
    try:
        rc, start = run(args)
    except FileNotFoundError:
        print(f"{args.what}: '{args.command[0]}' not found", file=sys.stderr)
        return 127
    if rc != 0 and args.log:
        with open(args.log, errors="replace") as f:
            tail = f.readlines()[-TAIL:]
        print(f"{args.what} failed after {time.monotonic() - start:.0f} s "
              f"(exit status {rc}): {shlex.join(args.command)}\n"
              f"the last {len(tail)} lines of its output ({args.log}):\n"
              + "".join(f"  | {line}" for line in tail), end="",
              file=sys.stderr, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())

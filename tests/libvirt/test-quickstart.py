#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The README's quickstart, end to end, as a newcomer runs it: `./quickstart`
from a fresh copy of this checkout in a place no other test uses, under
/tmp (which the emulated pmem host mounts afresh), in a directory only
root can enter (as /root is), its name with a space and a non-ASCII
letter. It installs (nothing: CI has it all), builds, and runs the default
mode (an emulated pmem host: the file static under libvirt on real fsdax,
layout changes refused, data verified across a power-off; --runs N runs
it N times); it never stays silent for more than PROGRESS_GAP seconds.
From the same copy the suites that run programs as an unprivileged user
(unit, test-host-helper, test-bad-inputs) pass. Then development mode
(--dev) while libvirtd is already running with a domain of someone else's.
Every run reaches the success summary and leaves nothing of its own
behind on this machine (no domain, hook, mount, loop device, registry
entry, NVDIMM backing file or boot files); the development run reuses the
daemon and leaves the other domain alone.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import daxfile_vm as vm
from daxtest import BUILDDIR, SRCDIR, Tap, daxfile, need_root
import libvirt_env as lv

BYSTANDER = f"daxfile-bystander-{os.getpid()}"
# the longest a quickstart may stay silent (it prints a whole line at
# least every 7-8 s: the bound, with room for a loaded machine)
PROGRESS_GAP = 10
# what the unprivileged-user suites are, in the copy's build
AS_NOBODY = ["--suite", "unit", "test-host-helper", "test-bad-inputs"]


def ours_left(logs=None):
    boot_files = [os.path.join(logs, n) for n in os.listdir(logs)
                  if n in ("vmlinux", "guest") or n.startswith("initrd-")] \
        if logs else []
    doms = lv.virsh("list", "--all", "--name").stdout.split()
    hooks = os.listdir(lv.HOOK_DIR) if os.path.isdir(lv.HOOK_DIR) else []
    mounts = open("/proc/mounts").read()
    loops = subprocess.run(["losetup", "-a"], capture_output=True,
                           text=True).stdout
    lst = daxfile("list", "--json")
    nvdimms = [os.path.join(d, n) for d in ("/dev/shm", "/var/tmp")
               for n in os.listdir(d) if n.startswith("daxfile-quickstart-")
               and n.endswith("-nvdimm")]
    return (boot_files + nvdimms +
            [d for d in doms if d.startswith("daxfile-quickstart-")] +
            [h for h in hooks if h.startswith("daxfile-quickstart-")] +
            (["a quickstart mount"] if "daxfile-quickstart-" in mounts
             else []) +
            (["a quickstart loop device"] if "daxfile-quickstart-" in loops
             else []) +
            [e["path"] for e in (lst.json() if lst.rc == 0 else [])
             if "daxfile-quickstart-" in e["path"]])


def copy_checkout(dst):
    """This checkout's files (tracked and new ones, as they are now) in
    @dst: what `git clone` of it gives, with the work in progress"""
    files = subprocess.run(["git", "-C", SRCDIR, "ls-files", "-z", "-co",
                            "--exclude-standard"], capture_output=True,
                           check=True).stdout.split(b"\0")
    for name in filter(None, files):
        src = os.path.join(SRCDIR.encode(), name)
        if not os.path.lexists(src):  # deleted, not committed yet
            continue
        out = os.path.join(dst.encode(), name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copy2(src, out, follow_symlinks=False)


def newcomer_env():
    """The environment of a person's shell: none of the variables meson's
    test environment sets (DAXFILE_BUILDDIR would make the copy's
    ./quickstart build into, and reconfigure, this build directory)"""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("DAXFILE_", "G_TEST_", "MESON_"))}


def timed_run(argv, cwd, timeout):
    """(status, output, the longest silence in s) of @argv"""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            errors="replace", env=newcomer_env())
    out, gap, last = [], 0.0, None
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        now = time.monotonic()
        if last is not None:
            gap = max(gap, now - last)
        last = now
        out.append(line)
        if now > deadline:
            proc.kill()
            out.append(f"(killed after {timeout} s)\n")
            break
    return proc.wait(), "".join(out), gap


def logs_of(out):
    m = re.search(r"^Logs: (/var/tmp/daxfile-quickstart-\S+)$", out, re.M)
    return m.group(1) if m else None


def check_left(tap, name, out, rc):
    logs = logs_of(out)
    left = ours_left(logs)
    tap.ok(logs and left == [], f"{name} leaves nothing behind but its logs",
           left if logs else out)
    if logs and rc == 0:
        shutil.rmtree(logs)


def newcomer(tap, checkout, run):
    """./quickstart in @checkout, as the README says"""
    name = f"./quickstart run {run} from {checkout}"
    rc, out, gap = timed_run(["./quickstart"], checkout, 1200)
    missing = [w for w in EMULATED if w not in out]
    tap.ok(rc == 0 and "Proven in" in out and not missing,
           f"{name} reaches the success summary",
           out if rc else f"missing {missing} in:\n{out}")
    tap.ok(gap <= PROGRESS_GAP, f"{name}: never silent for more than "
           f"{PROGRESS_GAP} s (longest: {gap:.1f} s)", out)
    check_left(tap, name, out, rc)
    tap.diag(out)


def as_nobody(tap, checkout):
    """The suites that run programs as an unprivileged user, from the copy
    (its build made by ./quickstart, the test seams added)"""
    build = os.path.join(checkout, "build")
    steps = [["meson", "configure", build, "-Dtest_seams=true"],
             ["meson", "compile", "-C", build],
             ["meson", "test", "-C", build, "--print-errorlogs"] + AS_NOBODY]
    for argv in steps:
        res = subprocess.run(argv, cwd=checkout, capture_output=True,
                             text=True, errors="replace",
                             env=newcomer_env())
        if res.returncode != 0:
            break
    tap.ok(res.returncode == 0, "from a copy in a mode-0700 directory: "
           + " ".join(AS_NOBODY) + " pass", res.stdout[-6000:] +
           res.stderr[-3000:])


def dev_mode(tap):
    """--dev beside another domain, with the daemon already running"""
    with lv.Libvirtd(), lv.LoopDir() as loop:
        xml = lv.domain_xml(BYSTANDER, "/nonexistent-kernel", "/nonexistent",
                            "", "/dev/null", "/dev/null")
        lv.define(xml, loop.tmp, BYSTANDER)
        before = lv.virsh("dumpxml", "--inactive", BYSTANDER).stdout
        try:
            proc = subprocess.run(
                ["/usr/bin/python3", os.path.join(SRCDIR, "tools",
                                                  "quickstart.py"),
                 "--build-dir", BUILDDIR, "--dev"], capture_output=True,
                text=True, timeout=900)
            out = proc.stdout + proc.stderr
            missing = [w for w in DEV if w not in proc.stdout]
            tap.ok(proc.returncode == 0 and not missing,
                   "./quickstart --dev reaches the success summary",
                   out if proc.returncode else f"missing {missing} in:\n{out}")
            check_left(tap, "./quickstart --dev", out, proc.returncode)
            tap.ok(lv.virsh("dumpxml", "--inactive", BYSTANDER).stdout ==
                   before, "the other domain is untouched")
        finally:
            lv.cleanup_domain(BYSTANDER)


# what the default mode proves, in its summary's words
EMULATED = ["on an emulated pmem host", "dax=always",
            "static mode engaged with mechanism 'immutable-guard'",
            "truncate EPERM", "fallocate EPERM", "rm EPERM",
            "daxfile-guest write --seed", "daxfile-guest verify --seed",
            "at each power-off the hook released the file"]
DEV = ["DEVELOPMENT MODE", "already running (reused)", "verify --seed"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1,
                    help="default-mode runs in a row")
    runs = ap.parse_args().runs
    tap = Tap()
    need_root(tap)
    tap.plan(3 * runs + 4)
    # the newcomer's environment has no $DAXFILE_CPU_SLOTS: the cores of
    # its emulated host are taken here, for all of its runs
    vm.hold_cpus(vm.emulated_host_cpus("6.1"))
    top = tempfile.mkdtemp(prefix="daxfile-newcomer.", dir="/tmp")
    try:
        checkout = os.path.join(top, "daxfile checkout \u00fc")
        copy_checkout(checkout)
        for i in range(1, runs + 1):
            newcomer(tap, checkout, i)
        as_nobody(tap, checkout)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    dev_mode(tap)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""When the quickstart fails, it says what failed: the step, the command
that failed (inside the emulated host or the guest too) and the last lines
of the console it ran in, on the terminal, with a non-zero exit and
nothing of its own left behind. Each failure mode provoked for real:

- QEMU missing (not on PATH): refused before anything starts;
- no space for the emulated host's NVDIMM (a 64 MiB tmpfs as
  DAXFILE_VM_TMPDIR);
- libvirtd refuses the guest (a domain of 0 vCPUs; --dev);
- a refused operation that should have been allowed (a drop-in trusting
  no owner of the file; --dev);
- the guest never comes up (a 2 s boot timeout; --dev);
- the checkout invisible in the emulated host: quickstart-l1.sh booted
  with a source directory that does not hold the checkout, and the
  quickstart's relay of such a failure (a recorded TAP stream).
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile

from daxtest import BUILDDIR, SRCDIR, Tap, need_root
import daxfile_vm as vm
import libvirt_env as lv

QUICKSTART = os.path.join(SRCDIR, "tools", "quickstart.py")
DROPIN = "/etc/daxfile/daxfile.conf.d/zz-test-quickstart-failures.conf"


def quickstart(*args, env=None):
    proc = subprocess.run(["/usr/bin/python3", QUICKSTART, "--build-dir",
                           BUILDDIR] + list(args), capture_output=True,
                          text=True, errors="replace", timeout=900,
                          env=dict(os.environ, **(env or {})))
    return proc.returncode, proc.stdout + proc.stderr


def reports(tap, name, rc, out, want, step=True, console=True):
    """ok when the run failed with every @want, a command and a console
    tail in its output"""
    missing = [w for w in want if w not in out]
    if step:
        missing += [w for w in ("failed:", "the command that failed: ")
                    if w not in out]
    if console and "| " not in out:
        missing.append("a console line ('  | ...')")
    tap.ok(rc != 0 and not missing, name,
           f"exit status {rc}; missing {missing} in:\n{out}")
    left = [n for d in ("/dev/shm", "/var/tmp") for n in os.listdir(d)
            if n.startswith("daxfile-quickstart-") and n.endswith("-nvdimm")]
    doms = [d for d in lv.virsh("list", "--all", "--name").stdout.split()
            if d.startswith("daxfile-quickstart-")]
    tap.ok(not left and not doms, f"{name}: nothing left behind",
           left + doms)


def no_qemu(tap):
    farm = tempfile.mkdtemp(prefix="daxfile-path.")
    try:
        for d in ("/usr/local/bin", "/usr/sbin", "/usr/bin"):
            for n in os.listdir(d):
                if not n.startswith("qemu-system") and \
                        not os.path.lexists(os.path.join(farm, n)):
                    os.symlink(os.path.join(d, n), os.path.join(farm, n))
        rc, out = quickstart(env={"PATH": farm})
    finally:
        shutil.rmtree(farm)
    tap.ok(rc == 2 and "quickstart: qemu-system-x86_64 is not installed; "
           "./quickstart installs it (package qemu-system-x86)" in out and
           len(out.splitlines()) == 1, "QEMU missing: one line naming the "
           "package, before anything starts", f"exit status {rc}:\n{out}")


def no_space(tap):
    small = tempfile.mkdtemp(prefix="daxfile-small.")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64M", "tmpfs",
                    small], check=True)
    try:
        rc, out = quickstart(env={"DAXFILE_VM_TMPDIR": small})
        leftover = os.listdir(small)
    finally:
        subprocess.run(["umount", small])
        os.rmdir(small)
    reports(tap, "no space for the NVDIMM: the step and the fix", rc, out,
            ["(boot the emulated pmem host", f"no space for the emulated "
             f"host's 1G NVDIMM in '{small}': No space left on device; free "
             "some space there (or set DAXFILE_VM_TMPDIR"], step=False,
            console=False)
    tap.ok(leftover == [], "no space: the partial NVDIMM file is removed",
           leftover)


def dev_failures(tap):
    rc, out = quickstart("--dev", "--guest-vcpus", "0")
    reports(tap, "libvirtd refuses the guest: virsh define, its output",
            rc, out, ["(define the guest, daxfile attach) failed: virsh "
                      "define: ", "the command that failed: virsh define "
                      "/var/tmp/daxfile-quickstart-",
                      "lines of virsh's output:"])
    os.makedirs(os.path.dirname(DROPIN), exist_ok=True)
    with open(DROPIN, "w") as f:
        f.write("# test-quickstart-failures: trust no owner of the file\n"
                "[hook]\ntrusted_owners=nobody\n")
    try:
        rc, out = quickstart("--dev")
    finally:
        os.unlink(DROPIN)
    reports(tap, "a refused operation: the step, the command, why", rc, out,
            ["trusted", "failed: ", "the command that failed: "])
    rc, out = quickstart("--dev", "--timeout", "2")
    reports(tap, "the guest never comes up: the timeout and its console",
            rc, out, ["(first boot: write through MAP_SYNC, power off) "
                      "failed: the guest did not finish in 2 s",
                      "the command that failed: the guest's script "
                      "quickstart.sh (write)", "of the guest's console ("])


def checkout_invisible(tap):
    """quickstart-l1.sh where the source directory holds no checkout: its
    first step fails, naming what is missing, the command and why"""
    empty = tempfile.mkdtemp(prefix="daxfile-nocheckout.", dir="/tmp")
    pmem = vm.Pmem.temporary_file("1G")
    serial = os.path.join(empty, "serial.log")
    try:
        # (one vCPU: this host fails at its first step, and its one CPU
        # slot comes sooner beside the other lane's guests)
        res = vm.build_image("6.1").boot(
            "quickstart-l1", pmems=[pmem], hostroot=True, smp=1,
            memory="2G", timeout=300, serial_log=serial, env={
                "DAXFILE_SRCDIR": empty, "DAXFILE_BUILDDIR": empty,
                "DXQ_ARGS": ""})
    finally:
        pmem.remove()
        shutil.rmtree(empty)
    tap_text = "\n".join(res.tap)
    want = ["not ok 1 - the checkout and the build shared from the real "
            "host", f"# '{empty}/tools/quickstart.py' is not there in the "
            "emulated host: the real host's share of that directory did not "
            "mount", f"# $ ls -ld '{empty}/tools'"]
    missing = [w for w in want if w not in tap_text]
    tap.ok(not missing and res.script_rc == 1, "the checkout invisible in "
           "the emulated host: its step fails, naming the file and the "
           "command", f"missing {missing}:\n{tap_text}\n{res.report(20)}")
    relay(tap, res)


def relay(tap, res):
    """The quickstart's relay of that boot: the step, the command and the
    emulated host's console, as the real host prints them"""
    import quickstart_emulated as qe
    import quickstart_steps as qs

    class Args:
        build_dir = BUILDDIR

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        steps = qs.Steps(Args(), 13)
        steps.boot_title = "boot the emulated pmem host"
        steps.booting = steps.begin(steps.boot_title)
        steps.result = res
        r = qe.Relay(steps)
        for line in res.tap:
            r(*vm.classify_tap(line), line)
        try:
            r.finish()
            err = None
        except qs.StepFailed as e:
            err = e
    shutil.rmtree(steps.logs, ignore_errors=True)
    lines = err.report() if err else []
    tap.ok(err and "(in it: the checkout and the build shared from the "
           "real host) failed: '" in str(err) and lines and lines[0]
           .startswith("the command that failed: ls -ld ") and
           f"the emulated host's console ({res.serial_log_path})" in
           "\n".join(lines), "the checkout invisible: the quickstart names "
           "the step, the command and the emulated host's console",
           f"{err}\n{lines}\n{printed.getvalue()}")


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(12)
    no_qemu(tap)
    no_space(tap)
    with lv.Libvirtd():
        dev_failures(tap)
    checkout_invisible(tap)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

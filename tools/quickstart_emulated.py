# SPDX-License-Identifier: GPL-2.0-or-later
"""The quickstart's default on a machine without pmem: boot an emulated
pmem host (like the chain suite's L1: tools/harness/guest/quickstart-l1.sh)
with this checkout and its build shared into it, and run the quickstart in
it (quickstart_here.OnThisHost with --inside), relaying its steps, its
progress and, when it fails, what failed."""

import errno
import json
import os
import secrets
import shutil
import subprocess
import traceback

import daxfile_vm as vm
import libvirt_env as lv
from quickstart_here import OnThisHost, guest_env, guest_image
from quickstart_steps import (FACT, FAIL, PROGRESS, STEP, TOP, Steps,
                              StepFailed)

# the emulated host's NVDIMM, and the file on it the guest gets
EMULATED_PMEM = "1G"
INSIDE_DIR = "/mnt/pmem"
# steps of the emulated host's script before the quickstart's own
L1_STEPS = 2
# what the emulated host's console says as it comes up
L1_MARKS = {"INIT": "its kernel is up, loading modules",
            "READY": "modules loaded, mounting its root (9p)",
            "HOSTROOT": "its root switched, mounting its NVDIMM"}


def no_space(e, what, where):
    """A StepFailed for ENOSPC, else None"""
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return StepFailed(f"no space for {what} in '{where}': "
                          f"{os.strerror(e.errno)}; free some space there"
                          " (or set DAXFILE_VM_TMPDIR to a directory with "
                          "room for the NVDIMM)")
    return None


def daxctl_kernel_note(flavour):
    """Say, before it starts, that the daxctl() kernel is built (minutes)"""
    series = vm.DAXCTL_SERIES[flavour]
    res = subprocess.run([str(vm.BUILD_KERNEL), "--print-hash", "--flavour",
                          series], capture_output=True, text=True)
    cache = os.environ.get("DAXFILE_KERNEL_CACHE",
                           os.path.join(vm.CACHE_DIR, "kernel"))
    if res.returncode == 0 and os.path.exists(
            os.path.join(cache, res.stdout.strip(), "bzImage")):
        return None
    return (f"building the daxctl() kernel ({series} series, "
            "kernel/build-kernel) first: about 15 min on 2 cores, once; "
            "then it is cached")


class EmulatedHost(Steps):
    """The default mode (see the module's doc)"""

    def __init__(self, args):
        super().__init__(args, 2 + L1_STEPS + OnThisHost.TITLES)
        self.result = None

    def images(self):
        if self.args.kernel.startswith("daxctl"):
            note = daxctl_kernel_note(self.args.kernel)
            if note:
                self.write(f"      {note}")
                self.status("building the daxctl() kernel")
        if self.args.kernel == "debian13":
            self.status("the Debian 13 root (made once with mmdebstrap: "
                        "about 2 min; then cached)")
        self.status("the emulated host's kernel and initramfs")
        host = vm.build_image(self.args.kernel)
        self.status("the guest's kernel and initramfs")
        guest = guest_image(self.args.kernel, [os.path.join(
            self.build, "guest-tools", "daxfile-guest")])
        self.guest_files = os.path.join(self.logs, "guest")
        os.makedirs(self.guest_files, mode=0o755)
        self.later("remove the guest's kernel and initramfs",
                   shutil.rmtree, self.guest_files, True)
        try:
            self.guest_boot_files(guest)
        except OSError as e:
            raise no_space(e, "the guest's boot files", self.guest_files) \
                or e
        self.host = host
        self.fact("host_kernel", "the daxctl() series of kernel/"
                  if self.args.kernel.startswith("daxctl") else
                  "Debian 13's" if self.args.kernel == "debian13" else
                  "Debian's")
        self.log(f"emulated host: {host.kernel.describe()}; guest: "
                 f"{guest.kernel.describe()}")

    def guest_boot_files(self, guest):
        shutil.copy2(guest.boot_kernel, os.path.join(self.guest_files,
                                                     "vmlinux"))
        script = vm.resolve_script(os.path.join(vm.GUEST_DIR,
                                                "quickstart.sh"))
        for phase in ("write", "verify"):
            guest.initrd(os.path.join(self.guest_files, f"initrd-{phase}"),
                         script, guest_env(phase, self.args))
            with open(os.path.join(self.guest_files, f"cmdline-{phase}"),
                      "w") as f:
                f.write(f"{vm.DEFAULT_APPEND} {lv.NESTED_APPEND} "
                        f"daxfile.script={script.name}\n")
        for name in os.listdir(self.guest_files):
            os.chmod(os.path.join(self.guest_files, name), 0o644)

    def nvdimm(self):
        where = vm.default_tmpdir()
        try:
            self.pmem = vm.Pmem.create(os.path.join(
                where, f"{self.tag}-nvdimm"), EMULATED_PMEM, temporary=True)
        except OSError as e:
            raise no_space(e, f"the emulated host's {EMULATED_PMEM} NVDIMM",
                           where) or e
        self.later("remove the emulated NVDIMM's backing file",
                   self.pmem.remove)

    def emulated_host(self):
        """Boot it; the step ends when the host's script speaks."""
        self.status("creating its NVDIMM's backing file")
        self.nvdimm()
        self.caps_cache = lv.caps_cache(self.args.kernel)
        inner = ["--dir", INSIDE_DIR, "--guest-files", self.guest_files,
                 "--caps-cache", self.caps_cache,
                 "--size", self.args.size, "--write-size",
                 self.args.write_size, "--seed", str(self.args.seed),
                 "--timeout", str(self.args.timeout), "--guest-memory",
                 str(self.args.guest_memory), "--guest-vcpus",
                 str(self.args.guest_vcpus)]
        # the checkout and the build: shared by name (vm.hostroot_shares)
        env = {"DXQ_ARGS": " ".join(inner), "DAXFILE_SRCDIR": TOP,
               "DAXFILE_BUILDDIR": self.build}
        self.status("its kernel booting")
        self.result = self.host.boot(
            "quickstart-l1", env=env, on_tap=self.relay,
            on_console=self.relay.console, hostroot=True,
            smp=vm.emulated_host_cpus(self.args.kernel),
            memory="2G", pmems=[self.pmem], timeout=self.args.timeout * 3,
            shares=[self.guest_files] + ([self.caps_cache] if os.path.isdir(
                self.caps_cache) else []),
            serial_log=os.path.join(self.logs, "emulated-host.serial.log"))

    def run(self):
        self.args.seed = self.args.seed or secrets.randbelow(1 << 31)
        try:
            self.step("kernels and initramfs (emulated pmem host and its "
                      f"guest: {self.args.kernel}; made once, then cached)",
                      self.images)
            self.boot_title = (f"boot the emulated pmem host (QEMU TCG, a "
                               f"{EMULATED_PMEM} NVDIMM)")
            self.booting = self.begin(self.boot_title)
            self.relay = Relay(self)
            try:
                self.emulated_host()
            except Exception as e:  # noqa: BLE001 - reported with the logs
                self.log(traceback.format_exc())
                if self.booting is not None:
                    self.end(self.boot_title, self.booting, e if isinstance(
                        e, StepFailed) else StepFailed(str(e)))
                raise StepFailed(f"the emulated host: {e}") from None
            self.relay.finish()
        finally:
            if not self.args.keep:
                self.cleanup()


class Relay:
    """The emulated host's TAP, printed as our own numbered steps"""

    def __init__(self, q):
        self.q = q
        self.title = None     # the step under way inside
        self.failed = None    # the failed step's title, or a bail-out
        self.failure = None   # the inner quickstart's StepFailed details
        self.notes = []       # the comments after a failed step

    def console(self, text):
        """A line of the emulated host's console: until its script speaks,
        say how far its boot has come"""
        mark = text.partition(vm.CONSOLE_MARK)[2].split()
        if mark and mark[0] in L1_MARKS and self.q.booting is not None:
            self.q.status(L1_MARKS[mark[0]])

    def __call__(self, kind, val, text):
        q = self.q
        if kind == "comment" and text.startswith(STEP):
            if q.booting is not None:  # its first word: the host is up
                q.end(q.boot_title, q.booting)
                q.booting = None
            self.title = text[len(STEP):]
            self.t0 = q.begin(f"in it: {self.title}")
        elif kind == "comment" and text.startswith(FACT):
            q.facts.update(json.loads(text[len(FACT):]))
        elif kind == "comment" and text.startswith(PROGRESS):
            q.status(text[len(PROGRESS):])
        elif kind == "comment" and text.startswith(FAIL):
            self.failure = StepFailed.from_details(
                json.loads(text[len(FAIL):]))
        elif kind == "comment" and text.startswith(lv.CAPS_LINE):
            lv.save_caps(text, q.caps_cache)
        elif kind == "comment":
            q.log(text)
            if self.title is None and self.failed:
                self.notes.append(text[1:].strip())
        elif kind == "test" and self.title:
            self.ended(val)
        elif kind == "bail":
            self.failed = self.failed or text

    def ended(self, val):
        q = self.q
        title, self.title = self.title, None
        if val.ok:
            q.end(f"in it: {title}", self.t0)
        else:
            q.current = None
            q.write(" FAILED" if q.open_line else "      FAILED")
            self.failed = f"step {q.n} (in it: {title}) failed"

    def finish(self):
        """after the emulated host's QEMU is gone"""
        q, res = self.q, self.q.result
        serial = ("the emulated host's console "
                  f"({res.serial_log_path})")
        console = [line for line in res.console][-20:]
        if q.booting is not None:
            q.end(q.boot_title, q.booting, StepFailed(
                "; ".join(res.problems) or "the emulated host never started "
                "the quickstart", "the emulated host (QEMU)", serial, console))
        if self.title:
            q.current = None
            q.write(" FAILED" if q.open_line else "      FAILED")
            self.failed = (f"step {q.n} (in it: {self.title}) did not end: "
                           + ("; ".join(res.problems) or "no result"))
        if not self.failed and res.problems:
            self.failed = "the emulated host: " + "; ".join(res.problems)
        if self.failed:
            raise self.failure_report(serial, console)
        if q.n != q.total:
            raise StepFailed(f"the emulated host ran {q.n - 2} of "
                             f"{q.total - 2} steps", "the emulated host's "
                             "script quickstart-l1.sh", serial, console)

    def failure_report(self, serial, console):
        """The inner quickstart's details when it sent them, else the
        emulated host's script's comments and console"""
        if self.failure:
            f = self.failure
            return StepFailed(f"{self.failed}: {f}", f.command,
                              f"{f.console_name} in the emulated host",
                              f.console)
        why = self.notes[0] if self.notes else None
        command = next((n[2:] for n in self.notes if n.startswith("$ ")),
                       "the emulated host's script quickstart-l1.sh")
        return StepFailed(self.failed + (f": {why}" if why else ""),
                          command, serial, console)

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daxfile's quickstart: provision a static file, boot a guest on it through
libvirt, show that the file's layout cannot change while the guest runs,
and prove that data written through MAP_SYNC in the guest survives a
power-off. Run it through ./quickstart (which installs and builds first).

Where it runs:
  (default)   on an emulated pmem host, when this machine has no pmem: a
              throwaway QEMU (TCG) guest with an emulated NVDIMM in fsdax
              mode and xfs mounted -o dax, whose userland is this machine's
              own root (read-only, over 9p); inside it libvirtd, the daxfile
              hook and QEMU run the guest on a static file, for real.
              --kernel picks its kernel: 6.1 or 6.12 (Debian's: the
              immutable guard) or daxctl (the kernel/ series: static mode
              in the kernel).
  --dir DIR   on this machine, in DIR on a DAX mount (real pmem).
  --dev       development mode on this machine: a throwaway loop-mounted
              xfs, the file verified-only (nothing enforced).
Everything made is removed at the end; the logs stay.
"""

import argparse
import errno
import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import time
import traceback

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tools", "harness"))
import libvirt_env as lv  # noqa: E402
import daxfile_vm as vm  # noqa: E402
from fsops import layout_changes  # noqa: E402

lv.QUIET = vm.QUIET = True
# the emulated host's NVDIMM, and the file on it the guest gets
EMULATED_PMEM = "1G"
INSIDE_DIR = "/mnt/pmem"
# what the guest's script needs (tools/harness/guest/quickstart.sh)
GUEST_TOOLS = ("/usr/sbin/mke2fs", "/usr/bin/ndctl")
STEP = "# quickstart-step "   # inside the emulated host: a step begins
FACT = "# quickstart-fact "   # ... a fact for the summary (JSON)


class StepFailed(Exception):
    pass


class Steps:
    """Numbered steps with their times, a log, and cleanups run in reverse.
    tap: report each step as TAP (inside the emulated host, for the
    quickstart on the real host to relay) instead of progress lines."""

    def __init__(self, args, total, tap=None):
        self.args = args
        self.build = os.path.abspath(args.build_dir)
        self.tag = f"daxfile-quickstart-{secrets.token_hex(3)}"
        self.logs = f"/var/tmp/{self.tag}-logs"
        os.makedirs(self.logs, mode=0o755)
        self.start = time.monotonic()
        self.n = 0
        self.total = total
        self.tap = tap
        self.facts = {}
        self.cleanups = []

    def log(self, text):
        with open(os.path.join(self.logs, "quickstart.log"), "a") as f:
            f.write(text.rstrip("\n") + "\n")

    def cmd(self, argv, what):
        self.log(f"$ {' '.join(argv)}")
        proc = subprocess.run(argv, capture_output=True, text=True,
                              errors="replace")
        self.log(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            last = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise StepFailed(f"{what}: {last[-1] if last else 'failed'}")
        return proc

    def daxfile(self, *args, what="daxfile"):
        return self.cmd([os.path.join(self.build, "src", "daxfilectl",
                                      "daxfile")] + list(args), what)

    def fact(self, key, value):
        self.facts[key] = value
        if self.tap:
            print(f"{FACT}{json.dumps({key: value})}", flush=True)

    def begin(self, title):
        self.n += 1
        self.log(f"== step {self.n}: {title}")
        if self.tap:
            print(f"{STEP}{title}", flush=True)
        else:
            print(f"[{self.n}/{self.total}] {title} ...", end="", flush=True)
        return time.monotonic()

    def end(self, title, t0, error=None):
        if self.tap:
            self.tap.ok(error is None, title, error)
        elif error:
            print(" FAILED", flush=True)
        else:
            print(f" done ({time.monotonic() - t0:.1f} s)", flush=True)
        if error:
            raise StepFailed(f"step {self.n} ({title}) failed: {error}")

    def step(self, title, func, *args):
        t0 = self.begin(title)
        try:
            result = func(*args)
        except StepFailed as e:
            self.end(title, t0, str(e))
        except Exception as e:  # noqa: BLE001 - reported with the logs
            self.log(traceback.format_exc())
            self.end(title, t0, str(e) or type(e).__name__)
        self.end(title, t0)
        return result

    def later(self, what, func, *args):
        self.cleanups.append((what, func, args))

    def cleanup(self):
        for what, func, args in reversed(self.cleanups):
            try:
                func(*args)
            except Exception as e:  # noqa: BLE001 - keep cleaning up
                print(f"  cleanup: {what} failed: {e}", file=sys.stderr)
                self.log(traceback.format_exc())


# ------------------------------------------------ what must be refused

# the layout changes the quickstart shows refused, by the names a user
# knows them by (fsops.layout_changes has them all)
SHOWN_CHANGES = {"truncate": "truncate", "fallocate": "fallocate",
                 "punch hole": "punch hole", "unlink": "rm", "rename": "mv"}


class OnThisHost(Steps):
    """The quickstart on the machine it runs on: --dir (a DAX mount), --dev
    (a loop-mounted xfs, verified-only), or --inside (the emulated host's
    side of the default mode: DIR is its -o dax mount, the guest's kernel
    and initramfs were made by the real host)."""

    TITLES = 9

    def __init__(self, args, tap=None):
        super().__init__(args, self.TITLES, tap)
        self.dev_mode = bool(args.dev)

    # --------------------------------------------------------------- steps
    def libvirtd(self):
        self.seeded_caps = {}
        if self.args.inside:
            lv.nested_host_conf()
            if self.args.caps_cache:
                self.seeded_caps = lv.seed_caps(self.args.caps_cache)
        self.daemon = lv.Libvirtd()
        self.daemon.__enter__()
        self.later("stop libvirtd", self.daemon.__exit__, None, None, None)
        if not self.daemon.ours:  # a daemon we start reads the hooks
            self.daemon.reload_hooks()
        self.fact("libvirtd", "started for this run" if self.daemon.ours
                  else "already running (reused)")

    def storage(self):
        if self.dev_mode:
            self.loop = lv.LoopDir(prefix=f"{self.tag}-")
            self.loop.__enter__()
            self.later("remove the throwaway filesystem", self.loop.__exit__)
            self.dir = self.loop.path
            return
        self.dir = os.path.abspath(self.args.dir)
        probe = os.path.join(self.dir, f".{self.tag}-probe")
        open(probe, "wb").close()
        try:
            st = json.loads(self.daxfile("status", "--json", probe).stdout)
        finally:
            os.unlink(probe)
        if not st[0]["dax"]:
            raise StepFailed(f"'{self.dir}' is not a DAX mount (statx "
                             "reports no DAX); mount it with -o dax, or run "
                             "without --dir on an emulated pmem host")
        self.fact("filesystem", mount_of(self.dir))

    def make_image(self):
        if self.args.inside:
            # made by the real host; QEMU (libvirt-qemu) reads them here
            for name in os.listdir(self.args.guest_files):
                shutil.copy(os.path.join(self.args.guest_files, name),
                            self.logs)
                os.chmod(os.path.join(self.logs, name), 0o644)
            return
        bins = [os.path.join(self.build, "guest-tools", "daxfile-guest")]
        if not os.path.exists(bins[0]):
            raise StepFailed("daxfile-guest was not built")
        self.image = lv.GuestImage(self.logs, bins, kernel=self.args.kernel)
        self.later("remove the guest's kernel and initramfs copies",
                   self.drop_boot_files)

    def drop_boot_files(self):
        """The logs stay; the 60-90 MB boot files QEMU used do not."""
        for name in os.listdir(self.logs):
            if name == "vmlinux" or name.startswith("initrd-"):
                os.unlink(os.path.join(self.logs, name))

    def hook(self):
        hook = lv.Hook(os.path.join(self.build, "libvirt-hooks",
                                    "daxfile-hook"), self.tag, [self.dir],
                       allow_non_dax=self.dev_mode)
        hook.install()
        self.later("remove the hook", hook.remove)

    def backing_file(self):
        self.file = os.path.join(self.dir, f"{self.tag}.img")
        extra = ["--allow-non-dax"] if self.dev_mode else []
        res = self.daxfile("create", self.file, "--size", self.args.size,
                           *extra, what="daxfile create")
        self.later("remove the backing file", os.unlink, self.file)
        self.fact("created", res.stderr.splitlines()[0])

    def guest(self):
        self.name = self.tag
        self.console = os.path.join(self.logs, "console.log")
        self.tapfile = os.path.join(self.logs, "tap.log")
        kernel, initrd, cmdline = self.files("write")
        xml = lv.domain_xml(self.name, kernel, initrd, cmdline, self.console,
                            self.tapfile, memory_mib=self.args.guest_memory,
                            vcpus=self.args.guest_vcpus,
                            loader=lv.nested_loader() if self.args.inside
                            else None)
        res = lv.define(xml, self.logs, self.name)
        if res.returncode != 0:
            raise StepFailed(f"virsh define: {res.stderr.strip()}")
        self.later("undefine the guest", lv.cleanup_domain, self.name)
        if self.args.inside and self.args.caps_cache:
            lv.export_caps(self.seeded_caps)  # probed by now: define needs it
        extra = ["--allow-non-dax"] if self.dev_mode else []
        self.daxfile("attach", self.name, self.file, *extra,
                     what="daxfile attach")

    def files(self, phase):
        """(kernel, initrd, cmdline) of the guest's @phase"""
        if self.args.inside:
            with open(os.path.join(self.logs, f"cmdline-{phase}")) as f:
                cmdline = f.read().strip()
            # the domain boots "initrd-guest": the phase's, copied over it
            initrd = os.path.join(self.logs, "initrd-guest")
            shutil.copy(os.path.join(self.logs, f"initrd-{phase}"), initrd)
            os.chmod(initrd, 0o644)
            return os.path.join(self.logs, "vmlinux"), initrd, cmdline
        return self.image.files("quickstart", tag="guest",
                                env=guest_env(phase, self.args))

    def start_guest(self):
        """virsh start of the first boot; with the file static, what the
        host's filesystem refuses while the guest runs"""
        self.fresh_logs("write")
        self.files("write")
        res = lv.virsh("start", self.name)
        if res.returncode != 0:
            raise StepFailed(f"virsh start: {res.stderr.strip()}")
        st = json.loads(self.daxfile("status", "--json", "--allow-non-dax",
                                     self.file).stdout)[0]["static"]
        self.fact("mechanism", st.get("mechanism"))
        self.fact("owner", st.get("owner"))
        if self.dev_mode:
            return
        if not st.get("enabled"):
            raise StepFailed(f"{self.file} is not static while its guest "
                             f"runs: {st}")
        self.fact("refused", self.refusals())

    def refusals(self):
        refused, done = {}, []
        before = os.stat(self.file)
        changes = layout_changes(self.file)
        for name, what in SHOWN_CHANGES.items():
            try:
                changes[name]()
                done.append(what)
            except OSError as e:
                refused[what] = errno.errorcode.get(e.errno, str(e.errno))
        if os.path.exists(self.file + ".moved"):  # mv went through: undo
            os.rename(self.file + ".moved", self.file)
        after = os.stat(self.file)
        if done or (after.st_size, after.st_blocks) != (before.st_size,
                                                        before.st_blocks):
            raise StepFailed(f"{self.file} is static but {', '.join(done)} "
                             "went through")
        return refused

    def boot(self, phase):
        """until the guest has run its checks and powered off"""
        t0 = time.monotonic()
        if phase != "write":
            self.fresh_logs(phase)
            self.files(phase)
            res = lv.virsh("start", self.name)
            if res.returncode != 0:
                raise StepFailed(f"virsh start: {res.stderr.strip()}")
        started = time.monotonic()
        if not lv.wait_shutoff(self.name, timeout=self.args.timeout):
            lv.virsh("destroy", self.name)
            raise StepFailed(f"the guest did not finish in "
                             f"{self.args.timeout} s (console: "
                             f"{self.console})")
        quiet_for = time.time() - os.stat(self.console).st_mtime
        oks, bad = lv.tap_results(self.tapfile)
        for path in (self.console, self.tapfile):
            os.replace(path, f"{path}.{phase}")
        self.last_console = f"{self.console}.{phase}"
        self.timeline(phase, started - t0, time.monotonic() - started,
                      quiet_for)
        want = 3
        if bad or len(oks) != want:
            raise StepFailed("in the guest: " + (bad[0] if bad else
                                                 f"{len(oks)}/{want} checks "
                                                 "ran"))
        self.fact(phase, [line.split(" - ", 1)[1] for line in oks])
        entries = json.loads(self.daxfile("list", "--json").stdout)
        if any(e["path"] == os.path.realpath(self.file) for e in entries):
            raise StepFailed("the hook did not release the file at shutdown")
        st = json.loads(self.daxfile("status", "--json", "--allow-non-dax",
                                     self.file).stdout)[0]["static"]
        if st.get("enabled"):
            raise StepFailed(f"{self.file} is still static after the guest "
                             f"powered off: {st}")

    def timeline(self, phase, start, run, quiet_for):
        """where the boot's time went, for the logs: virsh start, the
        guest's own clock at /init, its modules and its script's end, and
        until libvirt had it shut off"""
        marks = []
        with open(self.last_console, errors="replace") as f:
            for line in f:
                if line.startswith("DAXFILE-VM: ") and "uptime=" in line:
                    what, _, rest = line[12:].partition(" uptime=")
                    marks.append(f"{what.split()[0]} {rest.split()[0]} s")
        text = (f"{phase} boot: virsh start {start:.1f} s, running "
                f"{run:.1f} s; guest clock: {', '.join(marks)}; shut off "
                f"{quiet_for:.1f} s after its last console line")
        self.log(text)
        if self.tap:
            self.tap.diag(text)

    def fresh_logs(self, phase):
        for path in (self.console, self.tapfile):
            if os.path.exists(path):
                os.replace(path, f"{path}.{phase}-before")

    # ------------------------------------------------------------- the run
    def run(self):
        self.args.seed = self.args.seed or secrets.randbelow(1 << 31)
        self.fact("seed", self.args.seed)
        self.fact("kernel", platform.release())
        self.fact("write_size", self.args.write_size)
        try:
            self.step("backing storage", self.storage)
            self.step("libvirt hook", self.hook)
            self.step("libvirtd", self.libvirtd)
            self.step("guest kernel and initramfs", self.make_image)
            self.step(f"daxfile create ({self.args.size})", self.backing_file)
            self.step("define the guest, daxfile attach", self.guest)
            self.step("virsh start: the file static, layout changes refused"
                      if not self.dev_mode else "virsh start", self.start_guest)
            self.step("first boot: write through MAP_SYNC, power off",
                      self.boot, "write")
            self.step("second boot: verify", self.boot, "verify")
        except StepFailed:
            if self.tap:
                self.tap.diag(log_tail(os.path.join(self.logs,
                                                    "quickstart.log")))
                self.tap.diag(log_tail(getattr(self, "last_console", "")))
            raise
        finally:
            if not self.args.keep:
                self.cleanup()


def guest_env(phase, args):
    return {"DXQ_PHASE": phase, "DXQ_SEED": str(args.seed),
            "DXQ_SIZE": args.write_size}


def mounts():
    """(mount point, filesystem type, dax options) of every mount here,
    from /proc/self/mountinfo"""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            opts = fields[sep + 3].split(",") + fields[5].split(",")
            yield (fields[4].encode().decode("unicode_escape"),
                   fields[sep + 1], [o for o in opts if o.startswith("dax")])


def mount_of(path):
    """'xfs -o dax=always on /mnt/pmem' for the mount holding @path"""
    best = None
    dev = os.stat(path).st_dev
    for mnt, fstype, dax in mounts():
        try:
            if os.stat(mnt).st_dev != dev:
                continue
        except OSError:
            continue
        best = f"{fstype} -o {dax[0] if dax else 'no dax'} on {mnt}"
    return best


def log_tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return f"({path or 'no file'}: not there)"


def dax_mounts():
    """mount points of DAX filesystems on this machine"""
    return [mnt for mnt, _, dax in mounts() if {"dax", "dax=always"} & set(dax)]


class EmulatedHost(Steps):
    """The default on a machine without pmem: boot an emulated pmem host
    (like the chain suite's L1: tools/harness/guest/quickstart-l1.sh) and run the
    quickstart in it (OnThisHost with --inside), relaying its steps."""

    def __init__(self, args):
        super().__init__(args, 2 + 1 + OnThisHost.TITLES)
        self.result = None

    def images(self):
        host = vm.build_image(self.args.kernel)
        # The guest's kernel is the all-built-in daxctl() kernel: nested
        # under TCG Debian's modular kernel boots far slower. Its initrd
        # stays uncompressed (gunzip under nested TCG costs a minute).
        guest = vm.build_image("daxctl", compress=False, bins=[
            os.path.join(self.build, "guest-tools", "daxfile-guest")],
            tools=GUEST_TOOLS)
        self.guest_files = os.path.join(self.logs, "guest")
        os.makedirs(self.guest_files, mode=0o755)
        self.later("remove the guest's kernel and initramfs",
                   shutil.rmtree, self.guest_files, True)
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
        self.host = host
        self.fact("host_kernel", "the daxctl() series of kernel/"
                  if self.args.kernel == "daxctl" else "Debian's")
        self.log(f"emulated host: {host.kernel.describe()}; guest: "
                 f"{guest.kernel.describe()}")

    def emulated_host(self):
        """Boot it; the step ends when the host's script speaks."""
        self.pmem = vm.Pmem.create(os.path.join(
            vm.default_tmpdir(), f"{self.tag}-nvdimm"), EMULATED_PMEM,
            temporary=True)
        self.later("remove the emulated NVDIMM's backing file",
                   self.pmem.remove)
        self.caps_cache = lv.caps_cache(self.args.kernel)
        inner = ["--dir", INSIDE_DIR, "--guest-files", self.guest_files,
                 "--caps-cache", self.caps_cache,
                 "--size", self.args.size, "--write-size",
                 self.args.write_size, "--seed", str(self.args.seed),
                 "--timeout", str(self.args.timeout), "--guest-memory",
                 str(self.args.guest_memory), "--guest-vcpus",
                 str(self.args.guest_vcpus)]
        env = {"DXQ_ARGS": " ".join(inner),
               "DAXFILE_SRCDIR": TOP, "DAXFILE_BUILDDIR": self.build}
        self.result = self.host.boot(
            "quickstart-l1", env=env, on_tap=self.relay, hostroot=True,
            smp=2, memory="2G", pmems=[self.pmem],
            timeout=self.args.timeout * 3,
            serial_log=os.path.join(self.logs, "emulated-host.serial.log"))

    def run(self):
        self.args.seed = self.args.seed or secrets.randbelow(1 << 31)
        try:
            self.step("kernels and initramfs (emulated pmem host: "
                      f"{self.args.kernel}; guest: the daxctl() kernel; "
                      "built once, then cached)",
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
                    self.end(self.boot_title, self.booting, str(e))
                raise StepFailed(f"the emulated host: {e}") from None
            self.relay.finish()
        finally:
            if not self.args.keep:
                self.cleanup()


class Relay:
    """The emulated host's TAP, printed as our own numbered steps"""

    def __init__(self, q):
        self.q = q
        self.title = None   # the step under way inside
        self.failure = None
        self.why = None     # the first comment after a failed step

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
        elif kind == "comment" and text.startswith(lv.CAPS_LINE):
            lv.save_caps(text, q.caps_cache)
        elif kind == "comment":
            q.log(text)
            if self.failure and self.why is None:
                self.why = text[1:].strip()
        elif kind == "test" and self.title:
            title, self.title = self.title, None
            if val.ok:
                q.end(title, self.t0)
            else:
                self.failure = f"step {q.n} (in it: {title}) failed"
                print(" FAILED", flush=True)
        elif kind == "bail":
            self.failure = text

    def finish(self):
        """after the emulated host's QEMU is gone"""
        q, res = self.q, self.q.result
        if q.booting is not None:
            q.end(q.boot_title, q.booting, "; ".join(res.problems) or
                  "the emulated host never started the quickstart")
        if self.title:
            print(" FAILED", flush=True)
            self.failure = (f"step {q.n} (in it: {self.title}) did not end: "
                            + ("; ".join(res.problems) or "no result"))
        if not self.failure and res.problems:
            self.failure = "the emulated host: " + "; ".join(res.problems)
        if self.failure:
            raise StepFailed(self.failure + (f": {self.why}" if self.why
                                             else ""))
        if q.n != q.total:
            raise StepFailed(f"the emulated host ran {q.n - 2} of "
                             f"{q.total - 2} steps")


def summary(q, emulated):
    f = q.facts
    refused = f.get("refused") or {}
    if emulated:
        where = (f"on an emulated pmem host (QEMU TCG; Linux "
                 f"{f.get('kernel')}, {f.get('host_kernel')}; its NVDIMM "
                 f"in fsdax mode, {f.get('filesystem')})")
    elif q.dev_mode:
        where = ("on this machine in DEVELOPMENT MODE: no pmem, so the file "
                 "is verified-only (nothing enforced; durability relies on "
                 "the host page cache)")
    else:
        where = f"on this machine (Linux {f.get('kernel')}, " \
                f"{f.get('filesystem')})"
    lines = [f"Proven in {time.monotonic() - q.start:.0f} s, {where}:",
             "  - daxfile created the backing file fully written and 2 MiB "
             f"aligned:\n      {f.get('created')}",
             "  - libvirt started the guest with the file as an nvdimm; the "
             "daxfile hook validated it at prepare and made it static for "
             f"'{f.get('owner')}'"]
    if refused:
        lines.append(f"  - static mode engaged with mechanism "
                     f"'{f.get('mechanism')}': while the guest ran, every "
                     "layout change was refused ("
                     + ", ".join(f"{k} {v}" for k, v in refused.items())
                     + ") and the file kept its size and blocks")
    else:
        lines.append(f"    (mechanism '{f.get('mechanism')}': nothing "
                     "enforced)")
    lines += [f"  - in the guest: {'; '.join(f.get('write', [])[1:])}",
              "  - after a power-off and a second boot: "
              f"{'; '.join(f.get('verify', [])[1:])} ({f.get('write_size')} "
              f"with seed {f.get('seed')})",
              "  - at each power-off the hook released the file (libvirtd: "
              f"{f.get('libvirtd')})",
              f"Logs: {q.logs}"]
    print("\n" + "\n".join(lines))


def main():
    p = argparse.ArgumentParser(prog="quickstart", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--dir", help="a directory on a DAX mount (real "
                       "pmem) on this machine")
    where.add_argument("--dev", action="store_true", help="development "
                       "mode on this machine: a loop-mounted xfs, the file "
                       "verified-only")
    p.add_argument("--keep", action="store_true",
                   help="keep the guest, the file and the hook (with --dir "
                   "or --dev)")
    p.add_argument("--size", default=None, help="backing file size "
                   "(default 256M; 64M on the emulated host)")
    p.add_argument("--write-size", default=None,
                   help="how much the guest writes and verifies (default "
                   "64M; 4M on the emulated host)")
    p.add_argument("--kernel", default="6.1", help="the emulated host's "
                   "kernel: 6.1, 6.12 or daxctl; with --dir or --dev the "
                   "guest's: 6.1 or 6.12")
    p.add_argument("--timeout", type=int, default=240,
                   help="seconds per guest boot")
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--guest-memory", type=int, default=512,
                   help=argparse.SUPPRESS)
    p.add_argument("--guest-vcpus", type=int, default=2,
                   help=argparse.SUPPRESS)
    # inside the emulated host
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--guest-files", help=argparse.SUPPRESS)
    p.add_argument("--caps-cache", help=argparse.SUPPRESS)
    p.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    args = p.parse_args()
    if os.geteuid() != 0:
        print("quickstart: run it as root (it starts libvirtd and installs a "
              "libvirt hook)", file=sys.stderr)
        return 2
    emulated = not (args.dir or args.dev or args.inside)
    if emulated:
        if args.keep:
            print("quickstart: --keep needs --dir or --dev (the emulated "
                  "host goes away with everything in it)", file=sys.stderr)
            return 2
        # Under nested TCG every MiB the guest writes, and every MiB of
        # NVDIMM whose page structures its kernel sets up, costs seconds.
        args.size = args.size or "64M"
        args.write_size = args.write_size or "4M"
        args.guest_memory = 256
        args.guest_vcpus = 1
    args.size = args.size or "256M"
    args.write_size = args.write_size or "64M"
    if emulated:
        for mnt in dax_mounts():
            print(f"quickstart: this machine has a DAX mount at {mnt}; "
                  f"'./quickstart --dir DIR' on it uses real pmem",
                  file=sys.stderr)
        q = EmulatedHost(args)
    elif args.inside:
        from daxtap import Tap  # noqa: E402
        tap = Tap()
        tap.n = 1  # quickstart-l1.sh reported its set-up
        q = OnThisHost(args, tap)
    else:
        q = OnThisHost(args)
    try:
        q.run()
    except StepFailed as e:
        if args.inside:
            return q.tap.done()
        print(f"quickstart: {e}\nquickstart: logs are in {q.logs}",
              file=sys.stderr)
        return 1
    if args.inside:
        return q.tap.done()
    summary(q, emulated)
    if args.keep:
        print(f"Kept: domain '{q.tag}', file {q.file}, the hook "
              f"/etc/libvirt/hooks/qemu.d/{q.tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: GPL-2.0-or-later
"""The quickstart on the machine it runs on: --dir (a DAX mount), --dev (a
loop-mounted xfs, verified-only), or --inside (the emulated host's side of
the default mode: DIR is its -o dax mount, the guest's kernel and
initramfs were made by the real host)."""

import errno
import json
import os
import platform
import secrets
import shutil
import time

import daxfile_vm as vm
import libvirt_env as lv
from fsops import layout_changes
from quickstart_steps import Steps, StepFailed, tail_lines

# The guest's userland: the tools its script runs (tools/harness/guest/
# quickstart.sh) and the modules of a Debian kernel it loads; nested under
# TCG every MiB of initramfs costs about a second of its boot
GUEST_TOOLS = ("/usr/sbin/mke2fs", "/usr/bin/ndctl")
GUEST_MODULES = ("crc32c_generic", "ext4", "nfit", "nd_pmem")

# the layout changes the quickstart shows refused, by the names a user
# knows them by (fsops.layout_changes has them all)
SHOWN_CHANGES = {"truncate": "truncate", "fallocate": "fallocate",
                 "punch hole": "punch hole", "unlink": "rm", "rename": "mv"}


def guest_image(kernel, bins):
    """The guest's kernel and a slim initramfs for it"""
    return vm.build_image(kernel, compress=False, bins=bins,
                          tools=GUEST_TOOLS, modules=None
                          if kernel.startswith("daxctl") else GUEST_MODULES)


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


def dax_mounts():
    """mount points of DAX filesystems on this machine"""
    return [mnt for mnt, _, dax in mounts()
            if {"dax", "dax=always"} & set(dax)]


def guest_failure(tap_lines):
    """(the failed check, the command it ran) from a guest's TAP: dx_run
    says '# exit status N: CMD' right after its 'not ok'"""
    failed, command = None, None
    for line in tap_lines:
        if failed is None and line.startswith("not ok"):
            failed = line
        elif failed and command is None and line.startswith("# exit status"):
            command = line.split(": ", 1)[-1]
    return failed, command


class OnThisHost(Steps):
    """The quickstart's steps on this machine (see the module's doc)"""

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
        self.status("starting libvirtd (or finding the running one)")
        self.daemon = lv.Libvirtd()
        self.daemon.__enter__()
        self.later("stop libvirtd", self.daemon.__exit__, None, None, None)
        if not self.daemon.ours:  # a daemon we start reads the hooks
            self.daemon.reload_hooks()
        self.fact("libvirtd", "started for this run" if self.daemon.ours
                  else "already running (reused)")
        self.fact("stack", lv.stack())

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
        self.image = lv.GuestImage(self.logs, image=guest_image(
            self.args.kernel, bins))
        self.later("remove the guest's kernel and initramfs copies",
                   self.drop_boot_files)

    def drop_boot_files(self):
        """The logs stay; the boot files QEMU used do not."""
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
        path = os.path.join(self.logs, f"{self.name}.xml")
        res = lv.define(xml, self.logs, self.name)
        if res.returncode != 0:
            raise StepFailed(f"virsh define: {res.stderr.strip()}",
                             f"virsh define {path}", "virsh's output",
                             res.stderr.splitlines())
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

    def virsh_start(self):
        self.status(f"virsh start {self.name}")
        res = lv.virsh("start", self.name)
        if res.returncode != 0:
            log = f"/var/log/libvirt/qemu/{self.name}.log"
            raise StepFailed(f"virsh start: {res.stderr.strip()}",
                             f"virsh start {self.name}",
                             f"the domain's log ({log})", tail_lines(log))

    def start_guest(self):
        """virsh start of the first boot; with the file static, what the
        host's filesystem refuses while the guest runs"""
        self.fresh_logs("write")
        self.files("write")
        self.virsh_start()
        self.fact("confined", lv.lsm_label(lv.qemu_pid(self.name)))
        st = json.loads(self.daxfile("status", "--json", "--allow-non-dax",
                                     self.file).stdout)[0]["static"]
        self.fact("mechanism", st.get("mechanism"))
        self.fact("owner", st.get("owner"))
        if self.dev_mode:
            return
        if not st.get("enabled"):
            raise StepFailed(f"{self.file} is not static while its guest "
                             f"runs: {st}", f"daxfile status {self.file}")
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

    def guest_status(self):
        """What the guest is doing, from its console and its TAP"""
        marks = [line for line in tail_lines(self.console, 200)
                 if "DAXFILE-VM: " in line]
        checks = [line for line in tail_lines(self.tapfile)
                  if line.startswith(("ok", "not ok"))]
        if checks:
            return f"in the guest: {checks[-1]}"
        if marks:
            what = marks[-1].split("DAXFILE-VM: ", 1)[1].split()[0]
            return {"INIT": "guest kernel up, loading its modules",
                    "READY": "guest modules loaded, its script starting",
                    "END": "guest script done, powering off"}.get(
                        what, f"guest: {what}")
        return "guest kernel booting"

    def boot(self, phase):
        """until the guest has run its checks and powered off"""
        t0 = time.monotonic()
        if phase != "write":
            self.fresh_logs(phase)
            self.files(phase)
            self.virsh_start()
        self.status(self.guest_status)
        started = time.monotonic()
        if not lv.wait_shutoff(self.name, timeout=self.args.timeout):
            lv.virsh("destroy", self.name)
            raise StepFailed(f"the guest did not finish in "
                             f"{self.args.timeout} s",
                             f"the guest's script quickstart.sh ({phase})",
                             f"the guest's console ({self.console})",
                             tail_lines(self.console))
        self.status("the guest is off; checking what the hook released")
        quiet_for = time.time() - os.stat(self.console).st_mtime
        oks, bad = lv.tap_results(self.tapfile)
        tap = tail_lines(self.tapfile, 200)
        for path in (self.console, self.tapfile):
            os.replace(path, f"{path}.{phase}")
        self.last_console = f"{self.console}.{phase}"
        self.timeline(phase, started - t0, time.monotonic() - started,
                      quiet_for)
        want = 3
        if bad or len(oks) != want:
            failed, command = guest_failure(tap)
            raise StepFailed("in the guest: " + (failed or f"{len(oks)}/"
                                                 f"{want} checks ran"),
                             command, "the guest's console "
                             f"({self.last_console})",
                             tail_lines(self.last_console))
        self.fact(phase, [line.split(" - ", 1)[1] for line in oks])
        self.released()

    def released(self):
        entries = json.loads(self.daxfile("list", "--json").stdout)
        if any(e["path"] == os.path.realpath(self.file) for e in entries):
            raise StepFailed("the hook did not release the file at shutdown",
                             "daxfile list --json")
        st = json.loads(self.daxfile("status", "--json", "--allow-non-dax",
                                     self.file).stdout)[0]["static"]
        if st.get("enabled"):
            raise StepFailed(f"{self.file} is still static after the guest "
                             f"powered off: {st}", f"daxfile status "
                             f"{self.file}")

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
            self.step("virsh start" if self.dev_mode else
                      "virsh start: the file static, layout changes refused",
                      self.start_guest)
            self.step("first boot: write through MAP_SYNC, power off",
                      self.boot, "write")
            self.step("second boot: verify", self.boot, "verify")
        finally:
            if not self.args.keep:
                self.cleanup()

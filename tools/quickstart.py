#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daxfile's quickstart: provision a static file, boot a guest on it through
libvirt, prove that data written through MAP_SYNC in the guest survives a
power-off. Run it through ./quickstart (which installs and builds first).

With no options it works on this machine without pmem: the backing file
lives on a throwaway loop-mounted xfs (made for 2 MiB extents, like a real
pmem filesystem) and static mode runs in development mode (verified-only).
With --dir DIR on a DAX mount it uses real static mode.
"""

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
import traceback

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests", "libvirt"))
import libvirt_env as lv  # noqa: E402

lv.QUIET = True


class StepFailed(Exception):
    pass


class Quickstart:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build_dir)
        self.tag = f"daxfile-quickstart-{secrets.token_hex(3)}"
        self.logs = f"/var/tmp/{self.tag}-logs"
        os.makedirs(self.logs, mode=0o755)
        self.start = time.monotonic()
        self.n = 0
        self.total = 8
        self.facts = {}
        self.cleanups = []

    # ------------------------------------------------------------ plumbing
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

    def step(self, title, func, *args):
        self.n += 1
        t0 = time.monotonic()
        print(f"[{self.n}/{self.total}] {title} ...", end="", flush=True)
        self.log(f"== step {self.n}: {title}")
        try:
            result = func(*args)
        except StepFailed as e:
            print(" FAILED")
            raise StepFailed(f"step {self.n} ({title}) failed: {e}") from None
        except Exception as e:  # noqa: BLE001 - reported with the logs
            print(" FAILED")
            self.log(traceback.format_exc())
            raise StepFailed(f"step {self.n} ({title}) failed: {e}") from None
        print(f" done ({time.monotonic() - t0:.1f} s)")
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

    # --------------------------------------------------------------- steps
    def libvirtd(self):
        self.daemon = lv.Libvirtd()
        self.daemon.__enter__()
        self.later("stop libvirtd", self.daemon.__exit__, None, None, None)
        self.facts["libvirtd"] = ("started for this run" if self.daemon.ours
                                  else "already running (reused)")

    def storage(self):
        if self.args.dir:
            self.dir = os.path.abspath(self.args.dir)
            probe = os.path.join(self.dir, f".{self.tag}-probe")
            open(probe, "wb").close()
            try:
                st = json.loads(self.daxfile("status", "--json", probe).stdout)
            finally:
                os.unlink(probe)
            if not st[0]["dax"]:
                raise StepFailed(f"'{self.dir}' is not a DAX mount (statx "
                                 "reports no DAX); mount it with -o dax, or "
                                 "run without --dir for development mode")
            self.dev_mode = False
        else:
            self.loop = lv.LoopDir(prefix=f"{self.tag}-")
            self.loop.__enter__()
            self.later("remove the throwaway filesystem", self.loop.__exit__)
            self.dir = self.loop.path
            self.dev_mode = True

    def make_image(self):
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
        hook.install(self.daemon)
        self.later("remove the hook", hook.remove)

    def backing_file(self):
        self.file = os.path.join(self.dir, f"{self.tag}.img")
        extra = ["--allow-non-dax"] if self.dev_mode else []
        res = self.daxfile("create", self.file, "--size", self.args.size,
                           *extra, what="daxfile create")
        self.later("remove the backing file", os.unlink, self.file)
        self.facts["created"] = res.stderr.splitlines()[0]

    def guest(self):
        self.name = self.tag
        self.console = os.path.join(self.logs, "console.log")
        self.tap = os.path.join(self.logs, "tap.log")
        kernel, initrd, cmdline = self.files("write")
        xml = lv.domain_xml(self.name, kernel, initrd, cmdline, self.console,
                            self.tap)
        res = lv.define(xml, self.logs, self.name)
        if res.returncode != 0:
            raise StepFailed(f"virsh define: {res.stderr.strip()}")
        self.later("undefine the guest", lv.cleanup_domain, self.name)
        extra = ["--allow-non-dax"] if self.dev_mode else []
        self.daxfile("attach", self.name, self.file, *extra,
                     what="daxfile attach")

    def files(self, phase):
        return self.image.files("quickstart", tag="guest",
                                env={"DXQ_PHASE": phase,
                                     "DXQ_SEED": str(self.seed),
                                     "DXQ_SIZE": self.args.write_size})

    def boot(self, phase):
        for path in (self.console, self.tap):
            if os.path.exists(path):
                os.replace(path, f"{path}.{phase}-before")
        self.files(phase)
        res = lv.virsh("start", self.name)
        if res.returncode != 0:
            raise StepFailed(f"virsh start: {res.stderr.strip()}")
        if phase == "write":
            st = json.loads(self.daxfile("status", "--json",
                                         "--allow-non-dax",
                                         self.file).stdout)[0]["static"]
            self.facts["mechanism"] = st.get("mechanism")
            self.facts["owner"] = st.get("owner")
        if not lv.wait_shutoff(self.name, timeout=self.args.timeout):
            lv.virsh("destroy", self.name)
            raise StepFailed(f"the guest did not finish in "
                             f"{self.args.timeout} s (console: "
                             f"{self.console})")
        oks, bad = lv.tap_results(self.tap)
        for path in (self.console, self.tap):
            os.replace(path, f"{path}.{phase}")
        if bad or len(oks) != 4:
            raise StepFailed("in the guest: " + (bad[0] if bad else
                                                 f"{len(oks)}/4 checks ran"))
        self.facts[phase] = [line.split(" - ", 1)[1] for line in oks]
        entries = json.loads(self.daxfile("list", "--json").stdout)
        if any(e["path"] == os.path.realpath(self.file) for e in entries):
            raise StepFailed("the hook did not release the file at shutdown")

    # ------------------------------------------------------------- the run
    def run(self):
        self.seed = secrets.randbelow(1 << 31)
        try:
            self.step("libvirtd", self.libvirtd)
            self.step("backing storage", self.storage)
            self.step("guest kernel and initramfs", self.make_image)
            self.step("libvirt hook", self.hook)
            self.step(f"daxfile create ({self.args.size})", self.backing_file)
            self.step("define the guest, daxfile attach", self.guest)
            self.step("first boot: check, write through MAP_SYNC",
                      self.boot, "write")
            self.step("second boot: verify", self.boot, "verify")
        finally:
            if not self.args.keep:
                self.cleanup()
        self.summary()

    def summary(self):
        f = self.facts
        mode = ("DEVELOPMENT MODE: this host has no pmem, so the file is "
                "verified-only (nothing enforced; durability relies on the "
                "host page cache)" if self.dev_mode else
                f"static mode engaged with mechanism '{f.get('mechanism')}'")
        print(f"""
Proven in {time.monotonic() - self.start:.0f} s:
  - daxfile created the backing file fully written and 2 MiB aligned:
      {f.get('created')}
  - libvirt started the guest with the file as an nvdimm; the daxfile hook
    validated it at prepare and made it static for '{f.get('owner')}'
    ({mode})
  - in the guest: {'; '.join(f.get('write', [])[1:])}
  - after a power-off and a second boot: {'; '.join(f.get('verify', [])[1:])}
  - at each shutdown the hook released the file (libvirtd: {f.get('libvirtd')})
Logs: {self.logs}""")
        if self.args.keep:
            print(f"Kept: domain '{self.tag}', file {self.file}, the hook "
                  f"/etc/libvirt/hooks/qemu.d/{self.tag}")


def main():
    p = argparse.ArgumentParser(prog="quickstart", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", help="a directory on a DAX mount (real pmem); "
                   "default: a throwaway loop filesystem, development mode")
    p.add_argument("--keep", action="store_true",
                   help="keep the guest, the file and the hook")
    p.add_argument("--size", default="256M", help="backing file size")
    p.add_argument("--write-size", default="64M",
                   help="how much the guest writes and verifies")
    p.add_argument("--kernel", default="6.1", help="guest kernel: 6.1, 6.12")
    p.add_argument("--timeout", type=int, default=240,
                   help="seconds per guest boot")
    p.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    args = p.parse_args()
    if os.geteuid() != 0:
        print("quickstart: run it as root (it starts libvirtd and installs a "
              "libvirt hook)", file=sys.stderr)
        return 2
    q = Quickstart(args)
    try:
        q.run()
    except StepFailed as e:
        print(f"quickstart: {e}\nquickstart: logs are in {q.logs}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

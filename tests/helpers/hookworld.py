# SPDX-License-Identifier: GPL-2.0-or-later
"""The world the libvirt hook's golden cases run in (tests/hooks/
test-hook.py, tests/loopfs/test-hook-chroot.py): a scratch managed root,
its configuration, the registry, a QEMU stand-in, the committed pairs of
tests/data/hooks and their comparison.

Every case starts from a clean state: World.reset() clears the flags a
case may have left and removes the registry, and the case's own `given`
steps then build the state it needs. A failing case cannot leave a
reservation behind for the next ones.
"""

import contextlib
import difflib
import json
import os
import re
import shutil
import subprocess
from typing import NamedTuple, Optional

from daxtest import (NVDIMM_PATH, SRCDIR, QemuStandIn, build_path,
                     daxfile, is_immutable, sampled_wrapper,
                     strip_valgrind_notes)

DATA = os.path.join(SRCDIR, "tests", "data", "hooks")
HOOK = build_path("libvirt-hooks", "daxfile-hook")
CHROOT_RUN = os.path.join(SRCDIR, "tests", "helpers", "chroot-run.sh")


class Step(NamedTuple):
    """A hook operation a case needs done before it (on a fresh registry):
    @op @subop for domain @vm on the input @xml (None: the case's own)"""
    op: str
    subop: str = "begin"
    xml: Optional[str] = None
    vm: str = "vm1"


PREPARED = (Step("prepare"),)
STARTED = PREPARED + (Step("started"),)
STOPPED = STARTED + (Step("stopped", "end"),)


class Case(NamedTuple):
    """The hook runs @op @subop for domain @vm on the input @xml (default:
    @name), after the steps @given on a fresh registry; with @qemu
    (daxfile-consumer options; None: no QEMU at all) a stand-in for the
    domain's QEMU maps the files of @qemu_xml (default: the input) at
    started and reconnect. Afterwards the registry holds @registry (None:
    not looked at) and the first nvdimm file of the input is guarded
    (immutable, truncate refused) if and only if @frozen (None: not looked
    at). @env: (NAME, VALUE) pairs the hook runs with, in the given steps
    too."""
    name: str
    op: str = "prepare"
    subop: str = "begin"
    xml: Optional[str] = None
    vm: str = "vm1"
    qemu: Optional[tuple] = ()
    qemu_xml: Optional[str] = None
    registry: Optional[tuple] = ()
    frozen: Optional[bool] = None
    given: tuple = ()
    env: tuple = ()


class World:
    """The scratch directory @tmp (as this process sees it) with the
    managed root @tmp/pmem. With @chroot (the arguments of
    tests/helpers/chroot-run.sh before the command) the hook runs in a
    chroot and sees @tmp as @inner. @engaged: static mode really engages
    (tests/loopfs/test-hook-engaged). A golden file NAME.@variant.out
    (default: "engaged" when @engaged) is used instead of NAME.out where
    it exists."""

    def __init__(self, tmp, extra_env=None, engaged=False, chroot=(),
                 inner=None, variant=None):
        self.host_tmp = tmp
        self.tmp = inner or tmp
        self.extra_env = extra_env or {}
        self.engaged = engaged
        self.variant = variant or ("engaged" if engaged else None)
        self.chroot = tuple(chroot)
        self.root = os.path.join(self.tmp, "pmem")
        self.state = os.path.join(self.tmp, "state")
        os.mkdir(self.host(self.root))
        self.conf = os.path.join(self.tmp, "daxfile.conf")
        self.pid_dir = os.path.join(self.tmp, "qemu")
        self.pool_dir = os.path.join(self.tmp, "pools")
        # the placeholders of the inputs; the paths among them are put
        # back into the output (render)
        self.placeholders = {
            "@TMP@": self.tmp,                 # the scratch directory;
                                               # @TMP@/pmem the managed root
            "@RELTMP@": self.tmp.lstrip("/"),  # the same, relative to /
            "@PADDING@": "x" * (17 << 20),     # over the hook's 16 MiB limit
        }
        self.write_conf()

    def host(self, path):
        """@path, as the hook sees it, as this process sees it"""
        if self.tmp == self.host_tmp or not path.startswith(self.tmp):
            return path
        return self.host_tmp + path[len(self.tmp):]

    def input(self, name):
        """tests/data/hooks/@name.xml with its placeholders filled in; a
        file that starts with a byte order mark is UTF-16 and stays so"""
        with open(os.path.join(DATA, name + ".xml"), "rb") as f:
            data = f.read()
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")
        text = data.decode("utf-16" if utf16 else "utf-8")
        for key, value in self.placeholders.items():
            text = text.replace(key, value)
        return text.encode("utf-16") if utf16 else text

    def write_conf(self, extra=""):
        with open(self.host(self.conf), "w") as f:
            f.write(f"[hook]\nmanaged_roots={self.root}\nallow_non_dax=true\n"
                    f"trusted_owners=root;{os.getuid()}\n"
                    f"qemu_pid_dir={self.pid_dir}\n"
                    f"pool_state_dir={self.pool_dir}\n{extra}")

    def pool(self, name, kind, target):
        """libvirt's state of the active storage pool @name of type @kind
        with the target directory @target, as its storage driver writes
        it in pool_state_dir"""
        os.makedirs(self.host(self.pool_dir), exist_ok=True)
        with open(self.host(os.path.join(self.pool_dir, f"{name}.xml")),
                  "w") as f:
            f.write(f"<!--\nWARNING: THIS IS AN AUTO-GENERATED FILE.\n-->\n"
                    f"<poolstate>\n  <pool type='{kind}'>\n"
                    f"    <name>{name}</name>\n    <target>\n"
                    f"      <path>{target}</path>\n    </target>\n"
                    f"  </pool>\n</poolstate>\n")

    def env(self):
        return dict(self.extra_env, DAXFILE_CONF=self.conf,
                    DAXFILE_STATE_DIR=self.state)

    def path(self, name):
        return os.path.join(self.root, name)

    def create(self, name, size="8M"):
        res = daxfile("create", "--align", "4K", "--allow-non-dax",
                      self.host(self.path(name)), "--size", size,
                      env=self.extra_env)
        assert res.rc == 0, res
        return self.host(self.path(name))

    def reset(self):
        """A clean state: no flag a case set is left, and no registry"""
        if self.engaged:
            subprocess.run(["chattr", "-R", "-i", self.host(self.root)],
                           capture_output=True)
        shutil.rmtree(self.host(self.state), ignore_errors=True)

    def hook(self, xml, op="prepare", subop="begin", name="vm1", qemu=(),
             env=None, qemu_xml=None):
        """The hook as libvirtd runs it; at started and reconnect with a
        stand-in for the domain's QEMU mapping the files of @qemu_xml
        (default: @xml; @qemu: options of daxfile-consumer, or None for no
        QEMU at all)"""
        data = xml.encode() if isinstance(xml, str) else xml
        argv = sampled_wrapper() + [HOOK, name, op, subop, "-"]
        if self.chroot:
            argv = ["unshare", "--mount", "--propagation", "private",
                    CHROOT_RUN, *self.chroot] + argv
        with contextlib.ExitStack() as stack:
            if op in ("started", "reconnect") and qemu is not None:
                stack.enter_context(QemuStandIn(
                    self.host(self.pid_dir),
                    qemu_xml or data.decode(errors="replace"), name,
                    self.extra_env, qemu))
            return subprocess.run(argv, input=data, capture_output=True,
                                  env=dict(os.environ, **self.env(),
                                           **(env or {})))

    def registry(self):
        path = self.host(os.path.join(self.state, "lib", "registry.json"))
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [(e["owner"], e["state"], e["mechanism"])
                    for e in json.load(f)["entries"]]


def render(world, proc):
    text = (f"rc: {proc.returncode}\n--- stdout\n"
            f"{proc.stdout.decode(errors='replace')}--- stderr\n"
            f"{strip_valgrind_notes(proc.stderr.decode(errors='replace'))}")
    for key in ("@LOOPDEV@", "@TMP@", "@RELTMP@"):
        if key in world.placeholders:
            text = text.replace(world.placeholders[key], key)
    text = re.sub(r"QEMU \(pid \d+\)", "QEMU (pid @PID@)", text)
    text = re.sub(r" at 0x[0-9a-f]+,", " at @ADDR@,", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "@TIME@", text)


def golden(tap, world, name, proc, extra_ok=True, diag=""):
    got = render(world, proc)
    path = os.path.join(DATA, name + ".out")
    variant = os.path.join(DATA, f"{name}.{world.variant}.out")
    if world.variant and os.path.exists(variant):
        path = variant
    if os.environ.get("DAXFILE_TEST_REGENERATE") == "1":
        with open(path, "w") as f:
            f.write(got)
    try:
        with open(path) as f:
            want = f.read()
    except FileNotFoundError:
        want = "(missing golden file)\n"
    diff = "".join(difflib.unified_diff(want.splitlines(True),
                                        got.splitlines(True), "expected",
                                        "got"))
    tap.ok(got == want and extra_ok, f"hook: {name}",
           (diff or got) + str(diag))


def guarded(path):
    """The immutable flag is set and a truncate is refused (never tried on
    a file without the flag: it would succeed)"""
    if not is_immutable(path):
        return False
    try:
        os.truncate(path, 0)
        return False
    except PermissionError:
        return True


def run_given(w, case, env=None):
    """The steps @case needs before it, on a fresh registry: the output of
    the first that fails, or None"""
    w.reset()
    for step in case.given:
        xml = w.input(step.xml or case.xml or case.name)
        proc = w.hook(xml, step.op, step.subop, step.vm, env=env)
        if proc.returncode != 0:
            return (f"given step {step.op} {step.subop} of {step.vm} "
                    f"failed:\n{render(w, proc)}")
    return None


def check_case(tap, w, case, env=None, also=None):
    """Run @case from a clean state (in the environment @env besides the
    world's) and compare: its golden file, its registry and guard
    expectations and, when given, what the callable @also says
    afterwards."""
    env = dict(case.env, **(env or {}))
    failed = run_given(w, case, env)
    xml = w.input(case.xml or case.name)
    qemu_xml = w.input(case.qemu_xml) if case.qemu_xml else None
    proc = w.hook(xml, case.op, case.subop, case.vm, case.qemu, env, qemu_xml)
    registry = w.registry()
    ok = failed is None and (case.registry is None or
                             registry == list(case.registry))
    frozen = None
    if case.frozen is not None:
        frozen = guarded(w.host(NVDIMM_PATH.findall(xml)[0]))
        ok = ok and frozen == case.frozen
    if also is not None:
        ok = also() and ok
    golden(tap, w, case.name, proc, ok, (registry, frozen, failed or ""))
    return proc

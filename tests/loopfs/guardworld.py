# SPDX-License-Identifier: GPL-2.0-or-later
"""test-guard's world (tests/loopfs/test-guard.py): the engaged filesystem
and its managed root, daxfile and the hook run against its registry and
configuration, the QEMU stand-in, and what the tests look at (processes,
contents, layouts)."""


import contextlib
import fcntl
import glob
import hashlib
import json
import os
import signal
import subprocess
import time

from daxtest import WRAPPER, QemuStandIn, Tap, build_path, daxfile

M = 1 << 20


class PrefixTap(Tap):
    """Names carry the filesystem under test when there are several."""
    prefix = ""

    def ok(self, cond, name, diag=None):
        return super().ok(cond, self.prefix + name, diag)

    def skip(self, name, why):
        return super().skip(self.prefix + name, why)


tap = PrefixTap()


HOOK = build_path("libvirt-hooks", "daxfile-hook")
CONSUMER = build_path("tests", "helpers", "daxfile-consumer")
DAXFILE_COMMS = ("daxfile", "daxfile-hook")


def domain_xml(paths, name="vm1", size=8 * M):
    devs = "".join(
        f"<memory model='nvdimm' access='shared'><source><path>{p}</path>"
        "<alignsize unit='KiB'>2048</alignsize><pmem/></source><target>"
        f"<size unit='KiB'>{size >> 10}</size><node>0</node></target>"
        "</memory>" for p in paths)
    return f"<domain><name>{name}</name><devices>{devs}</devices></domain>"


# ----------------------------------------------------------- the world


class World:
    def __init__(self, efs, state):
        self.efs = efs
        self.state = state
        self.root = efs.path("managed")
        os.mkdir(self.root)
        self.conf = os.path.join(state, "daxfile.conf")
        self.pid_dir = os.path.join(state, "qemu")
        with open(self.conf, "w") as f:
            f.write(f"[hook]\nmanaged_roots={self.root}\n"
                    f"trusted_owners=root\nqemu_pid_dir={self.pid_dir}\n")
        self.env = dict(efs.env, DAXFILE_STATE_DIR=state,
                        DAXFILE_CONF=self.conf)
        # the mechanism that engages here: immutable-guard, or kernel on a
        # kernel with daxctl() (set by the probe in test-guard's run_all)
        self.mech = "immutable-guard"

    def prepared(self):
        """an entry's state after the prepare hook: the kernel mechanism
        makes the file static there already, the guard only reserves it"""
        return "engaged" if self.mech == "kernel" else "reserved"

    def path(self, name):
        return os.path.join(self.root, name)

    def selftest_cache(self):
        return glob.glob(os.path.join(self.state, "run", "selftest-*"))

    def forget_selftest(self):
        """enable recalls the self-test's answer for a filesystem"""
        for path in self.selftest_cache():
            os.unlink(path)

    def dx(self, *args, env=None, **kw):
        return daxfile(*args, env=dict(self.env, **(env or {})), **kw)

    def spawn(self, argv, env=None, stdin=subprocess.DEVNULL):
        return subprocess.Popen(argv, env=dict(os.environ, **self.env,
                                               **(env or {})),
                                stdin=stdin, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True,
                                errors="surrogateescape",
                                start_new_session=True)

    @staticmethod
    def hook_argv(op, subop, name="vm1", orphan=False):
        """The hook as libvirtd runs it. orphan: under a shell (the
        libvirtd stand-in) that will be gone before the hook"""
        argv = WRAPPER + [HOOK, name, op, subop, "-"]
        return ["sh", "-c", '"$0" "$@"; exit $?'] + argv if orphan else argv

    def hook(self, op, subop, xml, name="vm1", env=None, orphan=False):
        """Run the hook like libvirtd does. orphan: its parent (the
        libvirtd stand-in, a shell) is gone once it returns."""
        argv = self.hook_argv(op, subop, name, orphan)
        with self.qemu(op, xml, name):
            proc = subprocess.run(argv, input=xml.encode(),
                                  capture_output=True,
                                  env=dict(os.environ, **self.env,
                                           **(env or {})))
        proc.err = proc.stderr.decode(errors="replace")
        return proc

    def qemu(self, op, xml, name="vm1"):
        """At started, the domain's QEMU (a stand-in) maps its files"""
        if op not in ("started", "reconnect"):
            return contextlib.nullcontext()
        return QemuStandIn(self.pid_dir, xml, name, self.efs.env)

    def create(self, name, size=8 * M):
        path = self.path(name)
        res = self.dx("create", path, "--size", str(size))
        assert res.rc == 0, res
        return path

    def registry(self):
        path = os.path.join(self.state, "lib", "registry.json")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return json.load(f)["entries"]

    def entry(self, path):
        st = os.stat(path)
        for e in self.registry():
            if e["dev"] == st.st_dev and e["ino"] == st.st_ino:
                return e
        return None

    def busy_locks(self):
        busy = []
        run = os.path.join(self.state, "run")
        for lock in glob.glob(os.path.join(run, "locks", "*.lock")) + \
                glob.glob(os.path.join(run, "registry.lock")):
            with open(lock, "a") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(f, fcntl.LOCK_UN)
                except BlockingIOError:
                    busy.append(os.path.basename(lock))
        return busy


def consumer(world, path):
    """The stand-in for QEMU: maps the file (MAP_SYNC) and holds it."""
    return QemuStandIn(None, None, env=world.efs.env, options=("--sync",),
                       files=[path])


def _finished_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def children(ppid=None):
    """(pid, comm, state) of @ppid's children (default: this process's,
    orphans included: the test is a child subreaper)."""
    out = []
    for task in glob.glob(f"/proc/{ppid or os.getpid()}/task/*/children"):
        try:
            with open(task) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            continue
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            out.append((pid, comm, stat.rsplit(")", 1)[1].split()[0]))
    return out


def leftover_daxfile(timeout=3.0):
    """Live daxfile processes left behind (a killed parent's self-test
    child, say); zombies of ours are reaped."""
    end = time.monotonic() + timeout
    while True:
        live = []
        for pid, comm, state in children():
            if comm not in DAXFILE_COMMS:
                continue
            if state == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
            else:
                live.append((pid, comm))
        if not live or time.monotonic() > end:
            return live
        time.sleep(0.02)


def kill_tree_of(proc):
    """SIGKILL @proc (a shell running the hook, a session leader) and its
    children at once: the whole process group. Killing the children first
    and then the shell let a hook forked in between live on as an orphan,
    which then recorded this test (its new parent, the subreaper) as the
    holder of its reservation."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def content(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def layout(path):
    out = subprocess.run(["filefrag", "-v", "-b4096", path],
                         capture_output=True, text=True).stdout
    ext = [ln.split(":")[1:4] for ln in out.splitlines()
           if ln.split(":")[0].strip().isdigit()]
    return (os.stat(path).st_size, tuple(tuple(x.strip() for x in e)
                                         for e in ext))

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Static mode with the guard really engaged, attacked as an attacker would.

On the host: an xfs loop mount whose files tests/helpers/fake-dax.so makes
look like DAX files, so `enable` and the hook run the real self-test (it
passes on xfs) and set FS_IMMUTABLE_FL; every refusal is the kernel's own.
With --dir DIR (the vm suite, on real fsdax): nothing is faked, and the
mechanism is whatever the running kernel offers (immutable-guard, or kernel
on the daxctl() kernel).

- defects of issue #14, each with its regression test: a killed self-test
  holding the per-file lock, repair dropping an entry whose file it cannot
  find, a writer opening the file while enable engages, other spellings of
  a managed path, two nvdimms on one file, reservations of starts that
  never finished, run --file F --file F, the registry's temporary file;
  and since: a prepare whose libvirtd died while it ran;
- a randomized kill test: SIGKILL at random points of enable, disable,
  run, selftest and each hook phase; after each kill (and after repair):
  no process left holding a daxfile lock, immutable <=> a registry entry
  says so, no reservation without a live owner, contents byte-identical;
- a race test: foreign writers against enable and the hook's started: a
  file reported static never changes size or extents.
"""

import argparse
import contextlib
import ctypes
import fcntl
import glob
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
from daxtest import (DAXFILE, WRAPPER, EngagedFs, LoopFs,  # noqa: E402
                     QemuStandIn, Tap, build_path, daxfile, enforced,
                     fake_dax_env, finish_paused, need_root, one_line_error,
                     require_seams, tempdir, wait_state)

M = 1 << 20


class PrefixTap(Tap):
    """Names carry the filesystem under test when there are several."""
    prefix = ""

    def ok(self, cond, name, diag=None):
        return super().ok(cond, self.prefix + name, diag)

    def skip(self, name, why):
        return super().skip(self.prefix + name, why)


tap = PrefixTap()
# the mechanism that engages here: immutable-guard, or kernel on a kernel
# with daxctl() (set by the probe in run_all)
MECH = ["immutable-guard"]


def prepared():
    """an entry's state after the prepare hook: the kernel mechanism makes
    the file static there already, the guard only reserves it"""
    return "engaged" if MECH[0] == "kernel" else "reserved"


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


class Consumer:
    """The stand-in for QEMU: maps the file (MAP_SYNC) and holds it."""

    def __init__(self, world, path):
        self.proc = subprocess.Popen(
            [CONSUMER, path, "--sync"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, **world.efs.env))
        line = self.proc.stdout.readline()
        assert line.startswith("mapped"), line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("exit 0\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)


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


# ------------------------------------------------------------ defects


def t_selftest_child(w, kills):
    """#1: a killed self-test left its child holding the per-file lock."""
    res = w.dx("selftest", w.root, env={"DAXFILE_TEST_CRASH":
                                        "selftest-running"})
    left = leftover_daxfile()
    tap.ok(res.rc == -9 and not left,
           "selftest SIGKILLed while its child waits: the child does not "
           "outlive it", f"{res}\nleft: {left}")
    f = w.create("st.img")
    c = Consumer(w, f)
    try:
        # the guard's self-test, also on a kernel that offers daxctl()
        w.forget_selftest()
        # the consumer holds it open for writing: it must be named
        mine = ["--consumer", str(c.proc.pid)]
        res = w.dx("enable", f, "--mechanism", "immutable-guard", *mine,
                   env={"DAXFILE_TEST_CRASH": "selftest-running"})
        left = leftover_daxfile()
        busy = w.busy_locks()
        again = w.dx("enable", f, *mine)
        tap.ok(res.rc == -9 and not left and not busy and again.rc == 0,
               "enable SIGKILLed during its self-test: no lock held after, "
               "the next enable is not busy",
               f"{res}\nleft: {left}\nbusy: {busy}\n{again}")
        w.dx("disable", f)
        rng = random.Random(14)
        t0 = time.monotonic()
        w.dx("selftest", w.root)
        dur = time.monotonic() - t0
        bad = []
        for i in range(kills):
            p = w.spawn(WRAPPER + [DAXFILE, "selftest", w.root])
            time.sleep(rng.uniform(0, dur))
            p.kill()
            p.wait()
            left = leftover_daxfile()
            if left:
                bad.append((i, left))
                for pid, _ in left:
                    os.kill(pid, signal.SIGKILL)
        tap.ok(not bad, f"{kills} random SIGKILLs of selftest: never a child "
               "left", bad)
    finally:
        c.stop()


def traced(w, calls, argv, stdin=b""):
    """(exit status, lines of strace's log) of @argv run with the world's
    environment, tracing the system calls @calls"""
    with tempfile.NamedTemporaryFile(mode="r") as out:
        env = dict(os.environ, **w.env)
        if "ASAN_OPTIONS" in env:  # LeakSanitizer cannot run under ptrace
            env["ASAN_OPTIONS"] += ":detect_leaks=0"
        rc = subprocess.run(["strace", "-f", "-qq", "-o", out.name, "-e",
                             f"trace={calls}"] + argv, input=stdin, env=env,
                            capture_output=True).returncode
        return rc, out.read().splitlines()


def forks(w, args):
    """(exit status, processes the daxfile command forked), by strace"""
    rc, lines = traced(w, "clone,clone3,fork,vfork", [DAXFILE] + list(args))
    calls = [line for line in lines
             if re.search(r"\b(clone3?|v?fork)\(", line) and
             "CLONE_THREAD" not in line and "resumed" not in line]
    return rc, len(calls)


def t_selftest_cache(w):
    """Issue 17: the self-test's answer depends on the kernel and the
    filesystem, not on the file; enable recalls it for the rest of the boot
    (one fork less in the hook's started) but only from a file of its own
    that nobody else can have written."""
    if not shutil.which("strace"):
        tap.skip("enable recalls the self-test", "no strace here")
        return
    w.forget_selftest()
    f = w.create("cache.img")
    c = Consumer(w, f)
    # the guard, also on a kernel that offers daxctl()
    enable = ["enable", f, "--mechanism", "immutable-guard", "--consumer",
              str(c.proc.pid)]
    try:
        first = forks(w, enable)
        w.dx("disable", f)
        cache = w.selftest_cache()
        modes = [os.stat(p).st_mode & 0o777 for p in cache]
        second = forks(w, enable)
        w.dx("disable", f)
        tap.ok(first[0] == 0 and first[1] >= 1 and modes == [0o600] and
               second == (0, 0),
               "the second enable on a filesystem runs no self-test: it "
               "recalls the first one's answer (0600, in the run directory)",
               f"first {first}, second {second}, cache {cache} {modes}")
        for path in cache:
            os.chmod(path, 0o620)
        third = forks(w, enable)
        w.dx("disable", f)
        tap.ok(third[0] == 0 and third[1] >= 1,
               "a remembered answer others could have written is ignored",
               f"third {third}")
    finally:
        c.stop()


def registry_writes(w, op, subop, xml):
    """(exit status, renames onto registry.json) of one hook call, by
    strace: every registry write ends in one"""
    with w.qemu(op, xml):
        rc, lines = traced(w, "rename,renameat,renameat2",
                           [HOOK, "vm1", op, subop, "-"], xml.encode())
    writes = [line for line in lines
              if re.search(r'/registry\.json"(, 0)?\) += 0$', line)]
    return rc, len(writes)


def t_one_write_per_phase(w):
    """Issue 17: the hook reserves, engages and releases all of a domain's
    nvdimms in one registry write per phase, not one or two per device."""
    if not shutil.which("strace"):
        tap.skip("one registry write per phase", "no strace here")
        return
    files = [w.create(f"set{i}.img") for i in range(4)]
    xml = domain_xml(files)
    # at started the QEMU stand-in maps them all (and only it may)
    prep = registry_writes(w, "prepare", "begin", xml)
    reserved = [(w.entry(f) or {}).get("state") for f in files]
    start = registry_writes(w, "started", "begin", xml)
    engaged = [(w.entry(f) or {}).get("state") for f in files]
    static = [enforced(f) for f in files]
    rel = registry_writes(w, "release", "end", xml)
    # with the kernel mechanism prepare made them static, and started
    # only notes that the start is done
    tap.ok(prep == (0, 1) and start == (0, 1) and rel == (0, 1) and
           reserved == [prepared()] * 4 and engaged == ["engaged"] * 4 and
           all(static) and w.registry() == [] and
           not any(enforced(f) for f in files),
           "four nvdimms: prepare, started and release each write the "
           f"registry once, and all four are {prepared()}, static, released",
           f"(rc, writes) prepare {prep} started {start} release {rel}; "
           f"{reserved} {engaged} {static}")
    for f in files:
        os.unlink(f)


def t_repair_unresolvable(w, extra_fs):
    """#2: repair dropped entries whose path no longer opened, leaving the
    file immutable with no record."""
    pid = _finished_pid()
    d = w.path("d1")
    os.mkdir(d)
    f = w.create("d1/b.img")
    w.dx("enable", f, "--owner", f"pid:{pid}")
    os.rename(d, w.path("d2"))
    moved = w.path("d2/b.img")
    was = enforced(moved)
    res = w.dx("repair")
    tap.ok(was and res.rc == 0 and "released" in res.err and
           not enforced(moved) and w.registry() == [],
           "parent directory renamed: repair finds the inode by its file "
           "handle and releases it", res)
    long_path_case(w, pid)
    if extra_fs is None:
        return
    unmounted_case(w, extra_fs, pid)
    renumbered_case(w, extra_fs, pid)


def long_path_case(w, pid):
    base = os.open(w.root, os.O_RDONLY | os.O_DIRECTORY)
    fds = [base]
    name = "p" * 250
    try:
        for _ in range(18):           # 18 * 251 > PATH_MAX
            try:
                os.mkdir(name, dir_fd=fds[-1])
            except FileExistsError:
                pass
            fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY,
                               dir_fd=fds[-1]))
        deep = fds[-1]

        def there():
            os.fchdir(deep)
        env = dict(os.environ, **w.env)
        subprocess.run([DAXFILE, "create", "x.img", "--size", "8M"], env=env,
                       preexec_fn=there, check=True, capture_output=True)
        subprocess.run([DAXFILE, "enable", "x.img", "--owner", f"pid:{pid}"],
                       env=env, preexec_fn=there, check=True,
                       capture_output=True)
        fd = os.open("x.img", os.O_RDONLY, dir_fd=deep)
        was = flag_of_fd(fd)
        res = w.dx("repair")
        now = flag_of_fd(fd)
        os.close(fd)
        tap.ok(was and res.rc == 0 and not now and w.registry() == [],
               "a path over PATH_MAX: repair releases the file by its "
               "handle", res)
    finally:
        for fd in reversed(fds):
            os.close(fd)
        shutil.rmtree(os.path.join(w.root, name), ignore_errors=True)


def flag_of_fd(fd):
    import array
    buf = array.array("i", [0])
    fcntl.ioctl(fd, 0x80086601, buf, True)
    return bool(buf[0] & 0x10) or bool(kernel_static_fd(fd))


def kernel_static_fd(fd):
    from daxtest import kernel_static
    return kernel_static(f"/proc/self/fd/{fd}")


def unmounted_case(w, xfs, pid):
    """The filesystem is not mounted at repair time, then comes back
    (elsewhere, and on another loop device)."""
    f = os.path.join(xfs.mnt, "u.img")
    res = w.dx("create", f, "--size", "8M")
    w.dx("enable", f, "--owner", f"pid:{pid}")
    image = xfs.image
    subprocess.run(["umount", xfs.mnt], check=True)
    xfs.mounted = False
    res = w.dx("repair")
    kept = w.registry()
    lst = w.dx("list")
    tap.ok(res.rc == 1 and "mount its filesystem" in res.err and
           "--path" in res.err and len(kept) == 1 and "u.img" in lst.out,
           "its filesystem not mounted: repair keeps the entry and says how "
           "to finish", res)
    # another loop device: the device number changes, as across a reboot
    dummy = os.path.join(os.path.dirname(xfs.mnt), "dummy.img")
    with open(dummy, "wb") as fh:
        fh.truncate(M)
    hold = subprocess.run(["losetup", "-f", "--show", dummy],
                          capture_output=True, text=True, check=True)
    other = os.path.join(os.path.dirname(xfs.mnt), "mnt2")
    os.makedirs(other, exist_ok=True)
    subprocess.run(["mount", "-o", "loop", image, other], check=True)
    try:
        moved = os.path.join(other, "u.img")
        env = fake_dax_env(other)
        first = w.dx("repair", env=env)
        res = w.dx("repair", "--path", moved, env=env)
        tap.ok(first.rc in (0, 1) and res.rc == 0 and
               not enforced(moved) and w.registry() == [],
               "remounted from another device: 'repair --path' releases it",
               f"{first}\n{res}")
    finally:
        subprocess.run(["chattr", "-i", os.path.join(other, "u.img")],
                       capture_output=True)
        subprocess.run(["umount", other], capture_output=True)
        subprocess.run(["losetup", "-d", hold.stdout.strip()],
                       capture_output=True)


def renumbered_case(w, xfs, pid):
    """Found by the chain suite on 6.12: after a reboot the filesystem
    came back on another device number, and its old number now held
    another filesystem, where the file handle is stale. Repair said "the
    file no longer exists", dropped the entry and left the file immutable.
    The recorded path still leads to the inode (same number, same handle):
    repair must release it."""
    top = os.path.dirname(xfs.mnt)
    subprocess.run(["mount", "-o", "loop", xfs.image, xfs.mnt], check=True)
    xfs.mounted = True
    f = os.path.join(xfs.mnt, "r.img")
    w.dx("create", f, "--size", "8M", env=fake_dax_env(xfs.mnt))
    w.dx("enable", f, "--owner", f"pid:{pid}", env=fake_dax_env(xfs.mnt))
    was = enforced(f)
    loopdev = subprocess.run(["findmnt", "-no", "SOURCE", xfs.mnt],
                             capture_output=True, text=True,
                             check=True).stdout.strip()
    subprocess.run(["umount", xfs.mnt], check=True)
    xfs.mounted = False
    other_img = os.path.join(top, "other-ext4.img")
    other_mnt = os.path.join(top, "mnt3")
    os.makedirs(other_mnt, exist_ok=True)
    with open(other_img, "wb") as fh:
        fh.truncate(32 * M)
    subprocess.run(["mkfs.ext4", "-q", "-F", other_img], check=True)
    # the old device number now holds another filesystem (the loop device
    # is freed asynchronously after the umount)
    for _ in range(100):
        if subprocess.run(["losetup", loopdev, other_img],
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    else:
        tap.ok(False, f"{loopdev} taken by another image", "losetup failed")
        return
    try:
        subprocess.run(["mount", loopdev, other_mnt], check=True)
        subprocess.run(["mount", "-o", "loop", xfs.image, xfs.mnt],
                       check=True)
        xfs.mounted = True
        res = w.dx("repair", env=fake_dax_env(xfs.mnt))
        tap.ok(was and res.rc == 0 and "released" in res.err and
               not enforced(f) and w.registry() == [],
               "back on another device, its old number held by another "
               "filesystem: repair finds the file by its path and handle "
               "and releases it", res)
    finally:
        subprocess.run(["chattr", "-i", f], capture_output=True)
        subprocess.run(["umount", other_mnt], capture_output=True)
        subprocess.run(["losetup", "-d", loopdev], capture_output=True)


def t_writer_window(w):
    """#3: a writer that opened the file while enable ran kept a writable
    descriptor across the flag."""
    f = w.create("window.img")
    before = layout(f)
    p = w.spawn(WRAPPER + [DAXFILE, "enable", f],
                env={"DAXFILE_TEST_PAUSE": "enable-checked"})
    stopped = wait_state(p, True, 60)
    fd = os.open(f, os.O_RDWR)
    err = finish_paused(p)[1]
    truncated = False
    try:
        os.ftruncate(fd, 6 * M)
        truncated = True
    except OSError:
        pass
    os.close(fd)
    if MECH[0] == "kernel":
        # S_DAXFILE refuses layout changes through every descriptor
        tap.ok(stopped and p.returncode == 0 and not truncated and
               layout(f) == before and enforced(f),
               "kernel mechanism: a descriptor opened while enable engages "
               "cannot change the layout either", err)
        tap.ok(w.dx("disable", f).rc == 0, "released")
        os.unlink(f)
        return
    tap.ok(stopped and p.returncode == 1 and "rolled back" in err and
           len(err.splitlines()) == 1 and not enforced(f) and
           w.registry() == [],
           "a writer opening the file while enable engages: enable rolls "
           "back and says so in one line", err)
    tap.ok(truncated or layout(f) == before,
           "the writer's descriptor then works on a file that is not static",
           layout(f))
    os.unlink(f)


def t_aliases(w):
    """#4: another spelling of a managed path skipped the hook."""
    f = w.create("a.img")
    xml = domain_xml([f])
    ok1 = w.hook("prepare", "begin", xml).returncode == 0
    ok2 = w.hook("started", "begin", xml).returncode == 0
    tap.ok(ok1 and ok2 and enforced(f), "vm1 holds the file, enforced")
    base = os.path.basename(w.root)
    link = w.efs.path("outside-link.img")
    os.symlink(f, link)
    bind = os.path.join(w.state, "bind")
    os.mkdir(bind)
    subprocess.run(["mount", "--bind", w.root, bind], check=True)
    spellings = [
        ("'.'", os.path.join(w.root, ".", "a.img")),
        ("'..'", os.path.join(w.root, "..", base, "a.img")),
        ("'//'", "/" + f),
        ("relative", f.lstrip("/")),
        ("symlink outside the root", link),
        ("bind mount outside the root", os.path.join(bind, "a.img")),
    ]
    try:
        for what, spelling in spellings:
            before = w.registry()
            res = w.hook("prepare", "begin", domain_xml([spelling], "vm2"),
                         name="vm2")
            lines = res.err.splitlines()
            tap.ok(res.returncode == 1 and len(lines) == 1 and
                   "another spelling" in res.err and f"use '{f}'" in res.err
                   and w.registry() == before,
                   f"vm2 names vm1's file by {what}: refused, the plain "
                   "path named", res.err)
        w.hook("stopped", "end", xml)
        res = w.hook("prepare", "begin",
                     domain_xml([os.path.join(bind, "a.img")]))
        tap.ok(res.returncode == 1 and "another spelling" in res.err and
               w.registry() == [],
               "a free managed file by another spelling: refused too",
               res.err)
    finally:
        subprocess.run(["umount", bind], capture_output=True)
        os.unlink(link)


def t_two_nvdimms(w):
    """#7: one domain, two nvdimms on the same file."""
    f = w.create("twice.img")
    res = w.hook("prepare", "begin", domain_xml([f, f]))
    tap.ok(res.returncode == 1 and "is the same file as" in res.err and
           w.registry() == [],
           "two nvdimms of one domain on one file: refused at prepare",
           res.err)


def t_reservations(w):
    """#8: a reservation of a start that never happened was never
    repaired, and other domains were refused without a fix."""
    f = w.create("res.img")
    xml = domain_xml([f])
    res = w.hook("prepare", "begin", xml, orphan=True)
    ent = w.entry(f)
    other = w.hook("prepare", "begin", domain_xml([f], "vm2"), name="vm2")
    tap.ok(res.returncode == 0 and ent and ent["state"] == prepared() and
           other.returncode == 1 and "daxfile repair" in other.err,
           "a start that never finished: another domain is refused, with "
           "'daxfile repair' named", other.err)
    rep = w.dx("repair")
    tap.ok(rep.rc == 0 and "never finished" in rep.err and w.registry() == [],
           "repair releases the reservation whose start is gone", rep)
    w.hook("prepare", "begin", xml)
    rep = w.dx("repair")
    tap.ok(rep.rc == 0 and w.entry(f) and
           w.entry(f)["state"] == prepared(),
           "a reservation whose libvirtd still runs is left alone", rep)
    w.hook("release", "end", xml)


def t_reparented(w):
    """libvirtd died while its prepare hook ran: the hook, now a child
    of init or of a subreaper, recorded that as the holder of its
    reservation, which then never looked left over."""
    f = w.create("reparented.img")
    argv = w.hook_argv("prepare", "begin", orphan=True)
    shell = subprocess.Popen(argv, stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             env=dict(os.environ, **w.env,
                                      DAXFILE_TEST_PAUSE="prepare-reserving"))
    shell.stdin.write(domain_xml([f]).encode())
    shell.stdin.close()
    hook = stopped_child_of(shell.pid, timeout=60)
    shell.kill()   # libvirtd (a shell here) dies; the hook is ours now
    shell.wait()
    if hook:
        os.kill(hook, signal.SIGCONT)
        os.waitpid(hook, 0)
    e = w.entry(f)
    rep = w.dx("repair")
    tap.ok(hook and e and e["state"] == prepared() and
           e.get("holder_pid") in (None, shell.pid) and
           "never finished" in rep.err and w.registry() == [],
           "libvirtd gone while prepare ran: the reservation names it (not "
           "the hook's new parent) and repair releases it",
           f"hook {hook}, shell {shell.pid}, us {os.getpid()}: {e}\n{rep}")


def stopped_child_of(ppid, timeout):
    """the pid of a stopped (SIGSTOP: a pause point) child of @ppid"""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for pid, _, state in children(ppid):
            if state == "T":
                return pid
        time.sleep(0.05)
    return None


def t_small(w):
    """#10: run --file F --file F, the registry's temporary file, list."""
    f = w.create("run.img")
    marker = os.path.join(w.state, "ran")
    for second in (f, os.path.join(w.root, ".", "run.img")):
        res = w.dx("run", "--file", f, "--file", second, "--", "touch",
                   marker)
        tap.ok(one_line_error(res) and "same file" in res.err and
               not os.path.exists(marker) and w.registry() == [],
               "run with one file given twice: refused before the command "
               "starts", res)
    res = w.hook("prepare", "begin", domain_xml([f]),
                 env={"DAXFILE_TEST_CRASH": "registry-written"})
    tmp = os.path.join(w.state, "lib", "registry.json.tmp")
    left = os.path.exists(tmp)
    w.dx("list")
    tap.ok(res.returncode == -9 and left and not os.path.exists(tmp),
           "a save killed before its rename: the next registry use removes "
           "registry.json.tmp")
    odd = w.path("bad\udcff.img")
    w.dx("create", odd, "--size", "8M")
    w.dx("enable", odd)
    lst = w.dx("list")
    w.dx("disable", odd)
    tap.ok("bad\\xff.img" in lst.out and "\\x5c" not in lst.out,
           "list escapes a non-UTF-8 name once, as every command does", lst)


# --------------------------------------------------------- kill test

OPS = ["enable", "disable", "run", "selftest", "prepare", "started",
       "stopped"]


class KillTest:
    def __init__(self, w, path, seed):
        self.w = w
        self.f = path
        self.xml = domain_xml([path])
        self.rng = random.Random(seed)
        self.consumer = None
        self.digest = content(path)
        self.dur = {}
        self.deck = []

    def argv(self, op):
        if op == "enable":
            # the consumer, when there is one, keeps the file open for
            # writing: it must be named
            mine = ["--consumer", str(self.consumer.proc.pid)] \
                if self.consumer else []
            return WRAPPER + [DAXFILE, "enable", self.f, *mine]
        if op == "disable":
            return WRAPPER + [DAXFILE, "disable", self.f]
        if op == "selftest":
            return WRAPPER + [DAXFILE, "selftest", self.w.root]
        if op == "run":
            return WRAPPER + [DAXFILE, "run", "--file", self.f, "--",
                              CONSUMER, self.f, "--sync"]
        phase = {"prepare": ("prepare", "begin"),
                 "started": ("started", "begin"),
                 "stopped": ("stopped", "end")}[op]
        return ["sh", "-c", '"$0" "$@" <"$XML"; exit $?'] + WRAPPER + \
            [HOOK, "vm1", *phase, "-"]

    def spawn(self, op):
        self.standin = self.w.qemu(op, self.xml)
        self.standin.__enter__()
        xmlfile = os.path.join(self.w.state, "kill.xml")
        with open(xmlfile, "w") as f:
            f.write(self.xml)
        stdin = subprocess.PIPE if op == "run" else subprocess.DEVNULL
        return self.w.spawn(self.argv(op), env={"XML": xmlfile}, stdin=stdin)

    def measure(self):
        for op in OPS:
            t0 = time.monotonic()
            p = self.spawn(op)
            if op == "run":
                time.sleep(1.0)
                p.kill()
                p.wait()
                self.kill_run_consumers()
            else:
                p.wait(timeout=120)
            self.standin.__exit__(None, None, None)
            self.dur[op] = max(time.monotonic() - t0, 0.01)
            self.reset()

    def kill_run_consumers(self):
        mine = self.consumer.proc.pid if self.consumer else None
        for pid, comm, state in children():
            if comm == "daxfile-consumer" and pid != mine:
                os.kill(pid, signal.SIGKILL)
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass

    def reset(self):
        self.w.dx("repair")
        self.w.dx("disable", self.f)

    def toggle_consumer(self):
        if self.consumer:
            self.consumer.stop()
            self.consumer = None
        else:
            self.reset()    # a static file cannot be opened for writing
            self.consumer = Consumer(self.w, self.f)

    def entry_says_enforced(self, entry, states):
        return entry and entry["mechanism"] in ("immutable-guard", "kernel") \
            and entry["state"] in states

    def one(self, i):
        # a shuffled deck of the operations: each is killed early on, then
        # at random; one that finished before its kill goes back in
        if not self.deck:
            self.deck = self.rng.sample(OPS, len(OPS))
        op = self.deck.pop()
        p = self.spawn(op)
        time.sleep(self.rng.uniform(0, self.dur[op] * 1.1))
        killed = p.poll() is None
        if not killed:
            self.deck.append(op)
        if op in ("prepare", "started", "stopped"):
            kill_tree_of(p)
        else:
            p.kill()
        p.wait()
        self.standin.__exit__(None, None, None)
        problems = []
        left = leftover_daxfile()
        if left:
            problems.append(f"daxfile processes left: {left}")
        e = self.w.entry(self.f)
        if enforced(self.f) and not self.entry_says_enforced(
                e, ("engaging", "engaged", "releasing")):
            problems.append(f"enforced without a registry entry: {e}")
        if content(self.f) != self.digest:
            problems.append("contents changed")
        self.kill_run_consumers()
        rep = self.w.dx("repair")
        if rep.rc != 0:
            problems.append(f"repair failed: {rep}")
        busy = self.w.busy_locks()
        if busy:
            problems.append(f"locks still held: {busy}")
        e = self.w.entry(self.f)
        if enforced(self.f) != bool(self.entry_says_enforced(e,
                                                             ("engaged",))):
            problems.append(f"after repair, enforced={enforced(self.f)} "
                            f"but the entry is {e}")
        if e and (e["state"] == "reserved" or e.get("holder_start")) and \
                not self.consumer:
            problems.append(f"a reservation without a live owner: {e}")
        if self.rng.random() < 0.4:
            self.reset()
        if i % 25 == 24:
            self.toggle_consumer()
        return op, killed, problems


def t_kills(w, n):
    f = w.create("kill.img")
    kt = KillTest(w, f, 20261203)
    kt.measure()
    kt.toggle_consumer()
    kills = {op: 0 for op in OPS}
    bad = []
    i = 0
    try:
        # An attempt kills only when the operation is still running at its
        # random moment: on a loaded machine more of them miss (259 kills
        # in 4n attempts was seen), so the bound is generous; the loop
        # stops at n kills.
        while sum(kills.values()) < n and i < 12 * n:
            op, killed, problems = kt.one(i)
            kills[op] += killed
            if problems:
                bad.append((i, op, problems))
                kt.reset()
            i += 1
    finally:
        if kt.consumer:
            kt.consumer.stop()
        kt.reset()
    tap.ok(sum(kills.values()) >= n and not bad,
           f"{sum(kills.values())} SIGKILLs at random points of "
           f"{', '.join(OPS)}: no lock left held, enforced <=> a registry "
           "entry, no orphaned reservation, contents identical",
           f"kills per operation: {kills}\nfailures: {bad[:5]}")
    tap.ok(all(kills[op] > 0 for op in OPS),
           "every operation was killed at least once", kills)


# --------------------------------------------------------- race test


def t_races(w, rounds):
    f = w.create("race.img")
    original = layout(f)
    rng = random.Random(4711)
    t0 = time.monotonic()
    w.dx("enable", f)
    dur = time.monotonic() - t0
    w.dx("disable", f)
    stats = {"static": 0, "refused": 0, "truncated-while-normal": 0}
    bad = []
    for r in range(rounds):
        use_hook = r % 2 == 1
        xml = domain_xml([f])
        if use_hook and w.hook("prepare", "begin", xml).returncode != 0:
            bad.append((r, "prepare failed"))
            break
        results = []

        def racer(delay, seed):
            lr = random.Random(seed)
            time.sleep(delay)
            end = time.monotonic() + dur + 0.2
            while time.monotonic() < end:
                try:
                    fd = os.open(f, os.O_RDWR)
                except OSError:
                    time.sleep(0.001)
                    continue
                time.sleep(lr.uniform(0, dur / 2))
                try:
                    os.ftruncate(fd, 6 * M)
                    results.append("truncated")
                except OSError as e:
                    results.append(e.errno)
                os.close(fd)
                return
        threads = [threading.Thread(target=racer,
                                    args=(rng.uniform(0, dur), rng.random()))
                   for _ in range(3)]
        for t in threads:
            t.start()
        if use_hook:
            res = w.hook("started", "begin", xml)
            rc, err = res.returncode, res.err
        else:
            res = w.dx("enable", f)
            rc, err = res.rc, res.err
        at_success = layout(f) if rc == 0 else None
        for t in threads:
            t.join()
        if rc == 0:
            stats["static"] += 1
            now = layout(f)
            if now != at_success or not enforced(f):
                bad.append((r, "a static file changed", at_success, now))
            if use_hook:
                w.hook("stopped", "end", xml)
            else:
                w.dx("disable", f)
        else:
            stats["refused"] += 1
            if enforced(f) or w.entry(f) and \
                    w.entry(f)["state"] != "reserved":
                bad.append((r, "refused but left static", err))
            if use_hook:
                w.hook("release", "end", xml)
        if "truncated" in results:
            stats["truncated-while-normal"] += 1
        if layout(f) != original:
            os.unlink(f)
            w.create("race.img")
            original = layout(f)
    tap.ok(not bad and stats["static"] > 0,
           f"{rounds} rounds of foreign writers against enable and the "
           "hook's started: a file reported static never changed size or "
           "extents", f"{stats}\n{bad[:5]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", action="append", default=[], metavar="NAME=DIR",
                    help="a real DAX mount to work in (vm suite); repeat for "
                         "several filesystems")
    # DAXFILE_GUARD_SCALE (a fraction, default 1) scales the randomized
    # parts: .ci/sanitize runs them again under ASan, where every kill
    # costs several times as much and 300 more prove no more
    scale = float(os.environ.get("DAXFILE_GUARD_SCALE", "1"))
    ap.add_argument("--kills", type=int, default=round(300 * scale))
    ap.add_argument("--rounds", type=int, default=round(60 * scale))
    ap.add_argument("--selftest-kills", type=int, default=round(40 * scale))
    args = ap.parse_args()
    need_root(tap)
    require_seams(DAXFILE, HOOK)
    ctypes.CDLL(None).prctl(36, 1)   # PR_SET_CHILD_SUBREAPER
    if not args.dir:
        run_all(args, None)
    for spec in args.dir:
        name, _, d = spec.rpartition("=")
        tap.prefix = f"{name or d}: "
        run_all(args, d)
    return tap.done()


def run_all(args, directory):
    with tempdir() as state, EngagedFs(directory) as efs:
        w = World(efs, state)
        extra = None if directory else LoopFs("xfs", 1024)
        if extra:
            extra.__enter__()
            w.env["DAXFILE_FAKE_DAX_DEVS"] += "," + \
                fake_dax_env(extra.mnt)["DAXFILE_FAKE_DAX_DEVS"]
        try:
            probe = w.create("probe.img")
            res = w.dx("enable", probe)
            tap.ok(res.rc == 0 and ("immutable-guard" in res.err or
                                    "kernel" in res.err) and
                   enforced(probe),
                   "static mode really engages here", res)
            MECH[0] = "kernel" if "(kernel" in res.err else "immutable-guard"
            w.dx("disable", probe)
            for func, *a in ((t_selftest_child, args.selftest_kills),
                             (t_selftest_cache,),
                             (t_repair_unresolvable,
                              extra),
                             (t_writer_window,), (t_aliases,),
                             (t_two_nvdimms,), (t_one_write_per_phase,),
                             (t_reservations,),
                             (t_reparented,),
                             (t_small,), (t_kills, args.kills),
                             (t_races, args.rounds)):
                tap.subtest(func.__name__, func, w, *a)
        finally:
            if extra:
                extra.__exit__(None, None, None)


if __name__ == "__main__":
    sys.exit(main())

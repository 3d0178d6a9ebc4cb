# SPDX-License-Identifier: GPL-2.0-or-later
"""Small TAP test helper for daxfile's Python test drivers.

Every check is a named TAP result; a test driver never turns a failure into
a pass or a skip. Skips are only for what the environment truly lacks.
"""

import atexit
import contextlib
import fcntl
import functools
import hashlib
import itertools
import json
import os
import pwd
import re
import shutil
import signal
import stat
import struct
import subprocess
import tempfile
import time

# The TAP emitter and the filesystem helpers that bench/ and tools/ use too
# live in tools/harness (tests depend on tools, never the reverse; meson's
# test environment has both on PYTHONPATH)
from daxtap import Tap
from fsops import (FALLOC_FL_COLLAPSE_RANGE,
                   FALLOC_FL_INSERT_RANGE,
                   FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE,
                   FALLOC_FL_ZERO_RANGE, FICLONE, age_filesystem, fallocate,
                   fiemap_flags, layout_changes)

SRCDIR = os.environ.get(
    "DAXFILE_SRCDIR",
    os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
BUILDDIR = os.environ.get("DAXFILE_BUILDDIR", os.path.join(SRCDIR, "build"))

REEXPORTED = (Tap, FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE,
              FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE,
              FICLONE, age_filesystem, fallocate, fiemap_flags, layout_changes)


def build_path(*parts):
    return os.path.join(BUILDDIR, *parts)


# DAXFILE_WRAPPER="valgrind ..." runs every daxfile binary under it
WRAPPER = os.environ.get("DAXFILE_WRAPPER", "").split()
# ... or, where a test asks for sampled_wrapper(), one run in
# DAXFILE_WRAPPER_EVERY, from the DAXFILE_WRAPPER_FROM-th (0-based)
WRAPPER_EVERY = int(os.environ.get("DAXFILE_WRAPPER_EVERY", "1"))
WRAPPER_FROM = int(os.environ.get("DAXFILE_WRAPPER_FROM", "0"))
_wrapper_runs = itertools.count()


def sampled_wrapper():
    """WRAPPER for one run in DAXFILE_WRAPPER_EVERY, the same runs each
    time for the same DAXFILE_WRAPPER_FROM (.ci/sanitize: a third of the
    hook and daxfile runs of test-hook, test-static and test-host-helper
    under valgrind), else nothing"""
    return (WRAPPER if next(_wrapper_runs) % WRAPPER_EVERY ==
            WRAPPER_FROM % WRAPPER_EVERY else [])


DAXFILE = os.environ.get("DAXFILE_BIN",
                         build_path("src", "daxfilectl", "daxfile"))


VALGRIND_NOTE = re.compile(
    r"^(--\d+-- .*"
    r"|==\d+== Warning: noted but unhandled ioctl 0x[0-9a-f]+ with no "
    r"size/direction hints\."
    r"|==\d+==    This could cause spurious value errors to appear\."
    r"|==\d+==    See README_MISSING_SYSCALL_OR_IOCTL for guidance on "
    r"writing a proper wrapper\.)\n?", re.M)


def strip_valgrind_notes(text):
    """valgrind's own notes ("--PID-- WARNING: unhandled syscall", and the
    three lines it prints the first time it meets an ioctl it has no
    wrapper for, such as LOOP_GET_STATUS64) are not the program's output;
    its errors ("==PID==") are kept and also change the exit status
    (--error-exitcode)."""
    return VALGRIND_NOTE.sub("", text) if WRAPPER else text


class Result:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = strip_valgrind_notes(proc.stderr)

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return f"rc={self.rc}\nstdout:\n{self.out}\nstderr:\n{self.err}"


_reachable = {}


def reachable(path):
    """@path itself when any user can run it where it is, else a copy in a
    directory any user can enter (made once, removed at exit): a checkout
    in /root or any other mode-0700 directory keeps its build from the
    users the tests run programs as."""
    path = os.path.abspath(path)
    d = os.path.dirname(path)
    while d != "/" and os.stat(d).st_mode & stat.S_IXOTH:
        d = os.path.dirname(d)
    if d == "/" or not os.path.exists(path):
        return path
    if path not in _reachable:
        tmp = tempfile.mkdtemp(prefix="daxfile-test-bin.", dir="/var/tmp")
        os.chmod(tmp, 0o755)
        atexit.register(shutil.rmtree, tmp, True)
        _reachable[path] = os.path.join(tmp, os.path.basename(path))
        shutil.copy2(path, _reachable[path])
    return _reachable[path]


def run(argv, env=None, input=None, user=None, timeout=600):
    """Run a command, capture text output (undecodable bytes escaped).
    user: as that user, the program copied where it can reach it."""
    full_env = dict(os.environ)
    full_env.setdefault("LC_ALL", "C.UTF-8")
    if env:
        full_env.update(env)
    if user:
        uid = pwd.getpwnam(user).pw_uid
        gid = pwd.getpwnam(user).pw_gid
        argv = list(argv)
        i = len(WRAPPER) if argv[:len(WRAPPER)] == WRAPPER else 0
        argv[i] = reachable(argv[i])
        argv = ["setpriv", f"--reuid={uid}", f"--regid={gid}",
                "--clear-groups", "--"] + argv
    proc = subprocess.run(argv, env=full_env, input=input, capture_output=True,
                          timeout=timeout, errors="surrogateescape", text=True)
    return Result(proc)


def daxfile(*args, **kw):
    return run(sampled_wrapper() + [DAXFILE] + [str(a) for a in args], **kw)


def one_line_error(res):
    """An error is exactly one line on stderr, prefixed by the program."""
    lines = res.err.splitlines()
    return res.rc != 0 and len(lines) == 1 and lines[0].startswith("daxfile")


_content_hashes = {}


def _content_hash(path, st):
    """sha256 of a regular file, remembered while its identity and change
    time stay the same: every write, through write(2) or a mapping's fault,
    moves ctime, which userspace cannot set back."""
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _content_hashes:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _content_hashes[key] = h.hexdigest()
    return _content_hashes[key]


def tree_snapshot(root):
    """Content hash, mode, size and mtime of everything under root."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            entry = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
            if stat.S_ISREG(st.st_mode):
                try:
                    entry += (_content_hash(path, st),)
                except PermissionError:
                    entry += ("unreadable",)
            snap[os.path.relpath(path, root)] = entry
    return snap


class LoopFs:
    """A filesystem image in a temp dir, loop-mounted; always unmounted."""

    MKFS = {
        "ext4": ["mkfs.ext4", "-q", "-F", "-b", "4096",
                 "-E", "stride=512,stripe_width=512"],
        "ext4-default": ["mkfs.ext4", "-q", "-F", "-b", "4096"],
        "xfs": ["mkfs.xfs", "-q", "-f", "-m", "reflink=0", "-d", "su=2m,sw=1"],
        "xfs-reflink": ["mkfs.xfs", "-q", "-f", "-m", "reflink=1",
                        "-d", "su=2m,sw=1"],
        "xfs-default": ["mkfs.xfs", "-q", "-f", "-m", "reflink=0"],
    }

    def __init__(self, kind, size_mib=1536, workdir=None):
        self.kind = kind
        self.size = size_mib << 20
        self.tmp = tempfile.mkdtemp(prefix=f"daxfile-{kind}-", dir=workdir)
        self.image = os.path.join(self.tmp, "fs.img")
        self.mnt = os.path.join(self.tmp, "mnt")
        self.mounted = False

    def __enter__(self):
        try:
            os.mkdir(self.mnt)
            with open(self.image, "wb") as f:
                f.truncate(self.size)
            subprocess.run(self.MKFS[self.kind] + [self.image], check=True,
                           capture_output=True)
            subprocess.run(["mount", "-o", "loop", self.image, self.mnt],
                           check=True, capture_output=True)
            self.mounted = True
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def __exit__(self, *exc):
        if self.mounted:
            subprocess.run(["umount", self.mnt], capture_output=True)
            if os.path.ismount(self.mnt):
                subprocess.run(["umount", "-l", self.mnt], capture_output=True)
            self.mounted = False
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False


def proc_state(proc):
    if proc.poll() is not None:
        return None
    with open(f"/proc/{proc.pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_state(proc, stopped, timeout=10.0):
    """Wait until the process is stopped (SIGSTOP; or, with stopped=False,
    runs again); False when it exited or took over @timeout seconds."""
    for _ in range(int(timeout / 0.02)):
        state = proc_state(proc)
        if state is None:
            return False
        if (state == "T") == stopped:
            return True
        time.sleep(0.02)
    return False


def resume(proc):
    os.kill(proc.pid, signal.SIGCONT)
    return wait_state(proc, False)


def finish_paused(proc, timeout=120):
    """Let @proc (stopped at test pauses, DAXFILE_TEST_PAUSE) run to its
    end: continue it at every pause it reaches, also one the test stopped
    waiting for; its (stdout, stderr), or TimeoutExpired"""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if proc_state(proc) == "T":
            os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.05)
    return proc.communicate(timeout=max(1, deadline - time.monotonic()))


def need_root(tap):
    if os.geteuid() != 0:
        Tap.skip_all("needs root (loop devices, mount)")


# The test seams (src/common/daxfile-seam.h) are compiled in only with
# meson -Dtest_seams=true; meson tells the tests which way this build went
# in DAXFILE_TEST_SEAMS ("true" or "false").
SEAMS_OFF_REASON = "built with -Dtest_seams=false (no test seams)"


def has_seams(binary):
    """Whether @binary was built with the test seams: only then does it
    contain the name of the variable they read."""
    with open(binary, "rb") as f:
        return b"DAXFILE_TEST_CRASH" in f.read()


def seams_missing(*binaries):
    """The binaries among @binaries built without the test seams"""
    return [b for b in binaries if not has_seams(b)]


def seams_cases(tap, names, *binaries):
    """For the test cases named @names, which drive the seams of
    @binaries: TRUE to run them. Otherwise their results are given here:
    skipped in a build configured with -Dtest_seams=false, failed when a
    binary lacks the seams in any other build."""
    if os.environ.get("DAXFILE_TEST_SEAMS") == "false":
        for name in names:
            tap.skip(name, SEAMS_OFF_REASON)
        return False
    missing = seams_missing(*binaries)
    for name in names if missing else ():
        tap.ok(False, name, f"{', '.join(missing)}: built without the test "
               "seams; configure with meson -Dtest_seams=true (./run-tests "
               "does)")
    return not missing


def require_seams(*binaries):
    """A whole test that drives the seams (registered by meson only with
    -Dtest_seams=true) stops at once, loudly, on binaries without them."""
    missing = seams_missing(*binaries)
    if missing:
        Tap.bail_out(f"{', '.join(missing)}: built without the test seams "
                     "(DAXFILE_TEST_CRASH/PAUSE/NO_TMPFILE/MISPLACED) that "
                     "this test drives; configure with meson "
                     "-Dtest_seams=true (./run-tests does)")


FS_IOC_FIEMAP = 0xC020660B  # _IOWR('f', 11, struct fiemap)


@functools.cache
def scratch_base():
    """The temp dir (TMPDIR, else /tmp) when a file made there answers
    FS_IOC_FIEMAP, else /var/tmp: tmpfs (Debian 13's /tmp) does not, and
    daxfile reads the extents of the files the tests make"""
    base = tempfile.gettempdir()
    # struct fiemap: fm_start, fm_length (all), flags, mapped, count 0
    request = struct.pack("=QQIIII", 0, 2**64 - 1, 0, 0, 0, 0)
    try:
        with tempfile.TemporaryFile(dir=base) as f:
            fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, request)
    except OSError:
        return "/var/tmp"
    return base


@contextlib.contextmanager
def tempdir(prefix="daxfile-test-"):
    """A scratch directory (in scratch_base()), removed at the end"""
    d = tempfile.mkdtemp(prefix=prefix, dir=scratch_base())
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


class FakeDevdax:
    """A sysfs tree (DAXFILE_SYSFS_ROOT) in which the character device
    @node (/dev/null, 1:3, unless told) is the device-dax device dax0.0:
    @size bytes, @align pages, bound to @driver. daxfile opens the node,
    finds it a dax device there, and checks, reserves and wipes it by its
    device number (a wipe needs a node that maps: /dev/zero)."""

    PATH = "/dev/null"

    def __init__(self, tmp, size=64 << 20, align=2 << 20,
                 driver="device_dax", node=PATH):
        self.path = node
        self.root = os.path.join(tmp, "sys")
        dev = os.path.join(self.root, "devices", "platform", "dax0", "dax0.0")
        bus = os.path.join(self.root, "bus", "dax")
        rdev = os.stat(node).st_rdev
        os.makedirs(dev)
        os.makedirs(os.path.join(bus, "drivers", driver))
        os.makedirs(os.path.join(self.root, "dev", "char"))
        for attr, value in (("size", size), ("align", align)):
            with open(os.path.join(dev, attr), "w") as f:
                f.write(f"{value}\n")
        os.symlink(os.path.relpath(bus, dev), os.path.join(dev, "subsystem"))
        os.symlink(os.path.relpath(os.path.join(bus, "drivers", driver), dev),
                   os.path.join(dev, "driver"))
        os.symlink("../../devices/platform/dax0/dax0.0",
                   os.path.join(self.root, "dev", "char",
                                f"{os.major(rdev)}:{os.minor(rdev)}"))
        self.env = {"DAXFILE_SYSFS_ROOT": self.root}


FAKE_DAX = build_path("tests", "helpers", "fake-dax.so")
FS_IOC_GETFLAGS = 0x80086601
FS_IMMUTABLE_FL = 0x10


def dev_of(path):
    st = os.stat(path)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


_FAKE_SYNC_DIRS = {}


def fake_dax_env(mnt):
    """Environment that makes files under the mount @mnt look like DAX
    files to daxfile (tests/helpers/fake-dax.c): the immutable guard then
    engages for real on a page-cache xfs, and a mapping asked for with
    MAP_SYNC shows VM_SYNC in smaps as it would on DAX."""
    if mnt not in _FAKE_SYNC_DIRS:
        _FAKE_SYNC_DIRS[mnt] = tempfile.mkdtemp(prefix="daxfile-fake-sync-",
                                                dir="/dev/shm")
        # the test's own: gone when it ends, as its mounts are
        atexit.register(shutil.rmtree, _FAKE_SYNC_DIRS[mnt], True)
    return {"LD_PRELOAD": FAKE_DAX, "DAXFILE_FAKE_DAX_DEVS": dev_of(mnt),
            "DAXFILE_FAKE_DAX_SYNC": _FAKE_SYNC_DIRS[mnt]}


CONSUMER = build_path("tests", "helpers", "daxfile-consumer")
NVDIMM_PATH = re.compile(r"<memory model=.(?:nvdimm|virtio-pmem).*?<path>"
                         r"([^<]*)</path>", re.S)


class QemuStandIn:
    """What libvirt's QEMU is to the hook at started: one process mapping
    each nvdimm file of the domain XML as QEMU does (shared, MAP_SYNC, 2 MiB
    aligned; @options add daxfile-consumer's --private or --misalign, or
    --no-sync for a QEMU that maps without MAP_SYNC), named
    by NAME.pid in the hook's qemu_pid_dir @pid_dir. Files that do not
    exist are left out (the hook refuses them before it looks). With
    @files instead of a domain XML and no @pid_dir: any process that maps
    those files (MAP_SYNC, or as @options say) and holds them until
    stop(); --sync maps with MAP_SYNC alone, not aligned as QEMU does.
    The one stand-in of the Python tests (the guest's shell has its own,
    consumer_start in tests/vm/guest/static.sh, over the same program)."""

    def __init__(self, pid_dir, xml, name="vm1", env=None, options=(),
                 files=None):
        self.pidfile = os.path.join(pid_dir, f"{name}.pid") \
            if pid_dir else None
        self.proc = None
        if pid_dir:
            os.makedirs(pid_dir, mode=0o755, exist_ok=True)
        if files is None:
            files = [p for p in NVDIMM_PATH.findall(xml)
                     if os.path.isfile(p) and not os.path.islink(p)]
        if not files:
            return
        sync = [] if {"--no-sync", "--sync"} & set(options) else ["--pmem"]
        argv = [CONSUMER, files[0], *sync,
                *[o for o in options if o != "--no-sync"]]
        for f in files[1:]:
            argv += ["--also", f]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))
        line = self.proc.stdout.readline()
        assert line.startswith("mapped"), (argv, line)
        if self.pidfile:
            with open(self.pidfile, "w") as f:
                f.write(f"{self.proc.pid}\n")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def stop(self):
        with contextlib.suppress(FileNotFoundError, TypeError):
            os.unlink(self.pidfile)
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.write("exit 0\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)


def is_immutable(path):
    """FS_IMMUTABLE_FL of @path (without following a symlink)"""
    import array
    import fcntl
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        buf = array.array("i", [0])
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, buf, True)
        return bool(buf[0] & FS_IMMUTABLE_FL)
    finally:
        os.close(fd)


def kernel_static(path):
    """daxctl(DAXCTL_F_GET) on a kernel that advertises it, else None"""
    import ctypes
    try:
        with open("/sys/kernel/mm/daxfile/syscall_nr") as f:
            nr = int(f.read())
    except (OSError, ValueError):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.syscall(ctypes.c_long(nr), os.fsencode(path), 1, 0)
    return rc >= 0 and bool(rc & 4)


def enforced(path):
    """Is static mode in force on @path by any mechanism?"""
    return is_immutable(path) or bool(kernel_static(path))


class EngagedFs:
    """A filesystem where static mode really engages: by default an xfs
    loop mount (su=2m) whose files fake-dax.so makes look like DAX, so the
    guard's self-test passes for real and FS_IMMUTABLE_FL is set; or, with
    @directory, a real DAX mount (in the VM), where nothing is faked."""

    def __init__(self, directory=None, kind="xfs", size_mib=1536):
        self.directory = directory
        self.loop = None if directory else LoopFs(kind, size_mib)

    def __enter__(self):
        if self.loop:
            self.loop.__enter__()
            self.mnt = self.loop.mnt
            self.env = fake_dax_env(self.mnt)
        else:
            self.mnt = tempfile.mkdtemp(prefix="daxfile-engaged-",
                                        dir=self.directory)
            self.env = {}
        return self

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def __exit__(self, *exc):
        if self.loop:
            return self.loop.__exit__(*exc)
        subprocess.run(["chattr", "-R", "-i", self.mnt], capture_output=True)
        shutil.rmtree(self.mnt, ignore_errors=True)
        return False

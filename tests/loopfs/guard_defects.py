# SPDX-License-Identifier: GPL-2.0-or-later
"""test-guard's regression tests of the defects of issue #14, and since
(see test-guard.py)."""


import fcntl
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time

from daxtest import (DAXFILE, WRAPPER, enforced,
                     fake_dax_env, finish_paused, one_line_error, wait_state)
from guardworld import (HOOK, M, _finished_pid, consumer,
                        children, domain_xml, layout, leftover_daxfile, tap)

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
    c = consumer(w, f)
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
    c = consumer(w, f)
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
           reserved == [w.prepared()] * 4 and engaged == ["engaged"] * 4 and
           all(static) and w.registry() == [] and
           not any(enforced(f) for f in files),
           "four nvdimms: prepare, started and release each write the "
           f"registry once, and all four are {w.prepared()}, static, released",
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
    if w.mech == "kernel":
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
    tap.ok(res.returncode == 0 and ent and ent["state"] == w.prepared() and
           other.returncode == 1 and "daxfile repair" in other.err,
           "a start that never finished: another domain is refused, with "
           "'daxfile repair' named", other.err)
    rep = w.dx("repair")
    tap.ok(rep.rc == 0 and "never finished" in rep.err and w.registry() == [],
           "repair releases the reservation whose start is gone", rep)
    w.hook("prepare", "begin", xml)
    rep = w.dx("repair")
    tap.ok(rep.rc == 0 and w.entry(f) and
           w.entry(f)["state"] == w.prepared(),
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
    tap.ok(hook and e and e["state"] == w.prepared() and
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

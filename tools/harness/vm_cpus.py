# SPDX-License-Identifier: GPL-2.0-or-later
"""CPU slots: the emulated guests of tests that run at the same time never
ask for more vCPUs than the machine has cores.

TCG runs a guest's vCPUs as host threads; two tests whose guests wanted
three cores between two ran three times slower each. ./run-tests runs two
`meson test` lanes at once (the emulated pmem hosts, and everything else):
a test takes one slot per vCPU of its guests (at most one per core) before
its first boot and keeps them until it exits (its later boots, a crash's
reboot, a migration's second host, come back to cores of its own). Tests
that boot no guest (libvirtd's paused QEMUs, loop filesystems) take none.

$DAXFILE_CPU_SLOTS names the directory of the slot files (tests/meson.build
sets it for every test); unset, nothing is held, as for a person's
`daxfile-vm run`. The slots are flock(2)s, so a killed test's go with it.

    import vm_cpus
    vm_cpus.hold(2)     # blocks until two slots are this process's
"""

import fcntl
import os
import sys
import threading
import time

ENV = "DAXFILE_CPU_SLOTS"
POLL = 0.25          # s between tries while waiting
SAY_EVERY = 10       # s between "waiting" lines

_lock = threading.Lock()
_held = []           # fds of the slot files this process holds
_unavailable = False


def _say(msg):
    print(f"# cpu slots: {msg}", file=sys.stderr, flush=True)


def _slot_dir():
    global _unavailable
    d = os.environ.get(ENV)
    if not d or _unavailable:
        return None
    try:
        os.makedirs(d, mode=0o755, exist_ok=True)
    except OSError as e:
        _unavailable = True
        _say(f"{d}: {e.strerror}; guests run without CPU slots")
        return None
    return d


def _try_take(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def hold(n):
    """Hold at least @n slots (capped at the number of cores) from now until
    the process exits. A process that holds fewer gives them back and
    waits for @n at once (so two growing tests never hold one each and
    wait for each other's)."""
    cores = os.cpu_count() or 1
    n = max(1, min(n, cores))
    with _lock:
        if len(_held) >= n:
            return
        d = _slot_dir()
        if d is None:
            return
        while _held:
            os.close(_held.pop())
        # one waiter at a time takes slots (the turnstile), so a waiter
        # that has some never waits on one that has others
        turn = None
        t0 = time.monotonic()
        said = t0
        try:
            while True:
                if turn is None:
                    turn = _try_take(os.path.join(d, "turnstile"))
                for i in range(cores if turn is not None else 0):
                    if len(_held) == n:
                        break
                    fd = _try_take(os.path.join(d, f"slot{i}"))
                    if fd is not None:
                        _held.append(fd)
                if len(_held) == n:
                    break
                now = time.monotonic()
                if now - said >= SAY_EVERY:
                    said = now
                    _say(f"waiting for {n - len(_held)} of {n} "
                         f"({now - t0:.0f} s; other tests' guests have "
                         "the cores)")
                time.sleep(POLL)
        finally:
            if turn is not None:
                os.close(turn)
        waited = time.monotonic() - t0
        if waited >= 1:
            _say(f"{n} held after waiting {waited:.0f} s")


def held():
    """How many slots this process holds"""
    with _lock:
        return len(_held)

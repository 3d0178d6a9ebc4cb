# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared pieces of the VM harness: paths, cache, errors, logging, sizes.

Part of daxfile_vm (the module users import); see its docstring.
"""

import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

# tools/harness: guest-init.sh, guest-lib.sh and guest/ (the guest scripts
# of the harness's own users: idle, quickstart, quickstart-l1)
HARNESS_DIR = Path(__file__).resolve().parent
VM_DIR = HARNESS_DIR
SRC_ROOT = HARNESS_DIR.parent.parent
GUEST_DIR = HARNESS_DIR / 'guest'
# Where guest scripts are found by NAME, and whose *.sh every boot carries
# in /daxfile/tests/ (the first directory wins a name); the test suites add
# their own directory of guest scripts with add_guest_dir().
GUEST_DIRS = [GUEST_DIR]
CACHE_DIR = Path(os.environ.get('DAXFILE_VM_CACHE', '/var/cache/daxfile-test'))

GIB = 1 << 30
MIB = 1 << 20

# Kernel flavours: Debian meta package whose first linux-image-* dependency
# is the kernel to boot, or a prebuilt all-built-in image (no modules), or
# (debian13) the kernel installed in a Debian 13 root, whose userland a
# --hostroot boot of it gets instead of this machine's.
FLAVOURS = {
    '6.1': 'linux-image-amd64',
    '6.12': 'linux-image-6.12-amd64',
    'daxctl': None,
    'daxctl-6.12': None,
    'debian13': None,
}
# The Debian 13 root: .ci/debian13-root builds it once (mmdebstrap, from
# .ci/packages.debian13) and prints its path
DEBIAN13_ROOT = SRC_ROOT / '.ci' / 'debian13-root'
# CPUs of an emulated pmem host (a --hostroot boot that runs libvirtd and
# its guests). Debian 13's kernel on two TCG vCPUs took an "Oops: int3"
# in code the other vCPU was patching (text_poke_bp(): a static key at
# boot in sched_clock_cpu(), KVM's APIC keys under a guest) in 2 of 3
# chain runs, never in 20 idle boots: TCG let one vCPU run code the other
# had half patched. One vCPU has no other to race. The others had two
# until the CI's lanes (.ci/test-lanes) measured them: a host on two
# vCPUs kept 1.2-1.4 host cores busy (its guest runs on one), so it held
# two CPU slots (tools/harness/vm_cpus.py) and left a core idle beside it;
# on one vCPU it holds one, and Debian 13's quickstart ran faster on one.
EMULATED_HOST_CPUS = {}


def emulated_host_cpus(flavour):
    """How many vCPUs an emulated pmem host on kernel @flavour gets"""
    return EMULATED_HOST_CPUS.get(flavour, 1)


# The daxctl() kernels: --kernel-image, else $DAXFILE_VM_KERNEL_IMAGE, else
# whatever kernel/build-kernel prints (it caches by the hash of its inputs):
# 'daxctl' is the 6.1 series, 'daxctl-6.12' the 6.12 one.
BUILD_KERNEL = SRC_ROOT / 'kernel' / 'build-kernel'
DAXCTL_SERIES = {'daxctl': '6.1', 'daxctl-6.12': '6.12'}

# Modules loaded in the guest, in this order (their modules.dep closure is
# added in front of each). crc32c_generic/crc32c_intel satisfy the
# "softdep ext4/jbd2/libcrc32c pre: crc32c" entries that insmod ignores.
GUEST_MODULES = ['crc32c_generic', 'crc32c_intel', 'ext4', 'xfs',
                 'libnvdimm', 'nfit', 'nd_btt', 'nd_pmem', 'dax_pmem',
                 'device_dax', 'virtio_pci', 'virtio_pmem']
OPTIONAL_MODULES = {'crc32c_intel', 'nd_btt', 'virtio_pmem'}
# Loaded only for a --hostroot boot (the host's / over 9p, overlaid with a
# tmpfs): the modules.dep closure brings virtio, 9pnet, netfs, fscache in
# the order insmod needs. loop: a module in Debian 13's kernel (built in on
# 6.1), which a hostroot guest cannot modprobe (its /lib/modules is the
# initramfs's); the chain's migration destination mounts a copy with it.
HOSTROOT_MODULES = ['virtio_pci', 'virtio_blk', 'virtio_net', '9pnet_virtio',
                    '9p', 'overlay', 'kvm_amd', 'loop']
HOSTROOT_OPTIONAL = {'virtio_blk', 'virtio_net', 'kvm_amd', 'loop'}
# Loaded only for a boot with a CXL pmem device (daxfile.cxl=1; no udev
# loads them): the ACPI root (CEDT), the PCI memdev, its memory and pmem
# (nvdimm bridge) drivers; cxl_port is built in on Debian's 6.1 and 6.12
CXL_MODULES = ['cxl_acpi', 'cxl_pci', 'cxl_port', 'cxl_mem', 'cxl_pmem']
CXL_OPTIONAL = {'cxl_port'}

# Host programs copied into every base initramfs with their ldd closure.
# (guest path, host path, required)
GUEST_TOOLS = [
    ('/usr/sbin/mke2fs', '/usr/sbin/mke2fs', True),
    ('/usr/sbin/e2fsck', '/usr/sbin/e2fsck', True),
    ('/usr/sbin/tune2fs', '/usr/sbin/tune2fs', True),
    ('/usr/sbin/dumpe2fs', '/usr/sbin/dumpe2fs', True),
    ('/usr/sbin/debugfs', '/usr/sbin/debugfs', False),
    ('/usr/sbin/filefrag', '/usr/sbin/filefrag', True),
    ('/usr/bin/chattr', '/usr/bin/chattr', True),
    ('/usr/bin/lsattr', '/usr/bin/lsattr', True),
    ('/usr/sbin/mkfs.xfs', '/usr/sbin/mkfs.xfs', True),
    ('/usr/sbin/xfs_io', '/usr/sbin/xfs_io', True),
    ('/usr/sbin/xfs_db', '/usr/sbin/xfs_db', True),
    ('/usr/sbin/xfs_repair', '/usr/sbin/xfs_repair', False),
    ('/usr/bin/ndctl', '/usr/bin/ndctl', True),
    ('/usr/bin/daxctl', '/usr/bin/daxctl', True),
    ('/usr/bin/cxl', '/usr/bin/cxl', False),
    ('/usr/bin/strace', '/usr/bin/strace', False),
]
GUEST_TOOL_LINKS = {
    '/usr/sbin/mkfs.ext4': 'mke2fs',
    '/usr/sbin/mkfs.ext2': 'mke2fs',
    '/usr/sbin/fsck.ext4': 'e2fsck',
}
GUEST_ETC_FILES = [('/etc/mke2fs.conf', '/etc/mke2fs.conf')]

CONSOLE_MARK = 'DAXFILE-VM:'
# Console lines that mean the guest kernel is broken, whatever the TAP says.
KERNEL_ERROR_RE = re.compile(
    r'Kernel panic - not syncing|\bOops\b|\bBUG:|kernel BUG at|'
    r'WARNING: CPU: |general protection fault|Call Trace:|UBSAN:|KASAN:|'
    r'INFO: task .* blocked for more than')
PANIC_RE = re.compile(r'Kernel panic - not syncing')

SHARE_TAG = 'daxshare'


def hostroot_shares(env, extra=()):
    """The directories a --hostroot boot shares by name on top of the
    host's root: this checkout, the source and build directories @env
    names (DAXFILE_SRCDIR, DAXFILE_BUILDDIR), and @extra. The guest mounts
    each at its own path (guest-init.sh), so one that its view of the
    host's root hides or cannot show (under /tmp, /run, /dev/shm or
    /var/lib/libvirt, which it mounts afresh; on a filesystem the root's
    export does not cross; anywhere when the root is a Debian 13 root, not
    this machine's) is there all the same."""
    shares = []
    for path in [str(SRC_ROOT)] + [env.get(k) for k in ('DAXFILE_SRCDIR',
                                                        'DAXFILE_BUILDDIR')] \
            + [str(p) for p in extra]:
        if not path:
            continue
        path = os.path.abspath(path)
        if '\n' in path:
            raise VmError(f"cannot share {path!r} with the guest: its name "
                          "has a newline; move the checkout")
        if not os.path.isdir(path):
            raise VmError(f"cannot share '{path}' with the guest: not a "
                          "directory")
        if not any(path == s or path.startswith(s.rstrip('/') + '/')
                   for s in shares):
            shares.append(path)
    return shares


def hostroot_qemu(shares, userland=Path('/'), bus=None):
    """QEMU's arguments of a --hostroot boot: the host's root (or the
    kernel's own @userland, a Debian 13 root), and each of @shares
    (hostroot_shares()) as its own read-only 9p export (multidevs=remap:
    the many filesystems under one export keep distinct inodes). @bus:
    the PCI bus of the 9p devices (a CXL machine's 'pcie.0': -virtfs would
    put them on the CXL host bridge, which takes only bridges)"""
    exports = [(os.path.realpath(userland), 'hostroot')]
    exports += [(os.path.realpath(path), f'{SHARE_TAG}{i}')
                for i, path in enumerate(shares)]
    argv = []
    for i, (path, tag) in enumerate(exports):
        opts = (f'local,path={path.replace(",", ",,")},'
                'security_model=none,readonly=on,multidevs=remap')
        if bus is None:
            argv += ['-virtfs', f'{opts},mount_tag={tag}']
        else:
            argv += ['-fsdev', f'{opts},id=fs{i}',
                     '-device', f'virtio-9p-pci,fsdev=fs{i},'
                                f'mount_tag={tag},bus={bus}']
    return argv


DEFAULT_APPEND = ('console=ttyS0,115200 panic=-1 random.trust_cpu=on '
                  'mitigations=off')


class VmError(Exception):
    """A set-up problem of the harness (not a guest test failure)."""


class Terminated(Exception):
    """SIGTERM (e.g. meson's timeout) arrived; QEMU gets killed on the way
    out."""


def _sigterm(signum, frame):
    raise Terminated()


QUIET = False   # no progress notes (the quickstart prints its own)


def _log(msg):
    if not QUIET:
        print(f'daxfile-vm: {msg}', file=sys.stderr, flush=True)


def _run(argv, **kw):
    kw.setdefault('check', True)
    kw.setdefault('stdout', subprocess.PIPE)
    kw.setdefault('stderr', subprocess.PIPE)
    kw.setdefault('text', True)
    try:
        return subprocess.run(argv, **kw)
    except subprocess.CalledProcessError as e:
        err = (e.stderr or '').strip().splitlines()[-5:]
        raise VmError(f"'{' '.join(map(str, argv))}' failed with status "
                      f"{e.returncode}: {' / '.join(err)}") from None
    except FileNotFoundError:
        raise VmError(f"'{argv[0]}' not found; install it "
                      f"(see .ci/packages)") from None


class _Lock:
    """flock() on a file in the cache; serialises concurrent harnesses."""

    def __init__(self, name):
        (CACHE_DIR / 'locks').mkdir(parents=True, exist_ok=True)
        self.path = CACHE_DIR / 'locks' / f'{name}.lock'
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                          0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def _hash(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _file_key(path):
    st = os.stat(path)
    return [str(path), st.st_size, st.st_mtime_ns]


def add_guest_dir(path):
    """Search @path for guest scripts too, after the directories already
    there, and carry its *.sh in every boot archive."""
    p = Path(path).resolve()
    if p not in GUEST_DIRS:
        GUEST_DIRS.append(p)


def parse_size(text):
    """'1G', '512M', '128K', '4096' -> bytes."""
    m = re.fullmatch(r'\s*(\d+)\s*([KMGT]?)(i?B)?\s*', text, re.I)
    if not m:
        raise VmError(f"invalid size '{text}'; use e.g. 1G, 512M, 128K")
    shift = {'': 0, 'K': 10, 'M': 20, 'G': 30, 'T': 40}[m.group(2).upper()]
    return int(m.group(1)) << shift


class _Memo:
    """A small JSON memo in the cache for slow, deterministic look-ups
    (apt-cache, ldd), each keyed by the stat of what decides its answer."""

    def __init__(self, name):
        self.path = CACHE_DIR / f'{name}.json'
        try:
            self.data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def get(self, key, compute):
        k = _hash(key)
        if k not in self.data:
            self.data[k] = compute()
            CACHE_DIR.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f'.tmp{os.getpid()}')
            tmp.write_text(json.dumps(self.data))
            os.rename(tmp, self.path)
        return self.data[k]


# A cached file used within this long is never pruned: a run that is
# still using it (CI lanes, a second checkout's run) may be about to open
# it. Every cache hit refreshes the file's mtime.
PRUNE_IDLE = 6 * 3600


def _prune(dirpath, pattern, keep):
    """Remove what lies beyond the @keep newest of @pattern in @dirpath,
    but only what no one has used for PRUNE_IDLE seconds: counting alone
    removed a kernel another lane had been handed and was about to boot
    (CI, 6.1's chain and the libvirt suite: "could not open kernel
    file"). A concurrent run may prune the same files."""
    stamped = []
    for p in dirpath.glob(pattern):
        try:
            stamped.append((p.stat().st_mtime, p))
        except FileNotFoundError:
            pass
    stamped.sort(key=lambda t: t[0], reverse=True)
    idle_since = time.time() - PRUNE_IDLE
    for mtime, p in stamped[keep:]:
        if mtime >= idle_since:
            continue
        try:
            p.unlink()
        except OSError:
            pass

# SPDX-License-Identifier: GPL-2.0-or-later
"""Real-DAX VM harness: Debian kernels under QEMU TCG with emulated NVDIMMs.

The command-line front end is tests/vm/daxfile-vm; this module is what it
runs, and what host-side multi-boot scenarios import:

    import daxfile_vm as vm
    image = vm.build_image('6.1', bins=['build/src/daxfilectl/daxfile'])
    pmem = vm.Pmem.create('/var/tmp/x.img', '1G')      # kept between boots
    r = image.boot('tests/vm/guest/smoke.sh', pmems=[pmem])
    assert r.passed, r.report()
    r = image.boot('mine.sh', pmems=[pmem], kill_on=r'^CRASH-NOW$')
    assert r.killed_on_marker

Stdlib only. See tests/vm/README.md for the design and the measurements.
"""

import dataclasses
import fcntl
import gzip
import hashlib
import inspect
import json
import lzma
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VM_DIR = Path(__file__).resolve().parent
SRC_ROOT = VM_DIR.parent.parent
GUEST_DIR = VM_DIR / 'guest'
CACHE_DIR = Path(os.environ.get('DAXFILE_VM_CACHE', '/var/cache/daxfile-test'))

GIB = 1 << 30
MIB = 1 << 20

# Kernel flavours: Debian meta package whose first linux-image-* dependency
# is the kernel to boot, or a prebuilt all-built-in image (no modules).
FLAVOURS = {
    '6.1': 'linux-image-amd64',
    '6.12': 'linux-image-6.12-amd64',
    'daxctl': None,
    'daxctl-6.12': None,
}

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
# the order insmod needs.
HOSTROOT_MODULES = ['virtio_pci', 'virtio_blk', 'virtio_net', '9pnet_virtio',
                    '9p', 'overlay']
HOSTROOT_OPTIONAL = {'virtio_blk', 'virtio_net'}

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

# The host's root, read-only, for --hostroot boots (multidevs=remap: the
# host's many filesystems under one 9p export keep distinct inodes)
HOSTROOT_QEMU = ['-virtfs', 'local,path=/,mount_tag=hostroot,'
                 'security_model=none,readonly=on,multidevs=remap']

DEFAULT_APPEND = ('console=ttyS0,115200 panic=-1 random.trust_cpu=on '
                  'mitigations=off')


class VmError(Exception):
    """A set-up problem of the harness (not a guest test failure)."""


class Terminated(Exception):
    """SIGTERM (e.g. meson's timeout) arrived; QEMU gets killed on the way out."""


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


def parse_size(text):
    """'1G', '512M', '128K', '4096' -> bytes."""
    m = re.fullmatch(r'\s*(\d+)\s*([KMGT]?)(i?B)?\s*', text, re.I)
    if not m:
        raise VmError(f"invalid size '{text}'; use e.g. 1G, 512M, 128K")
    shift = {'': 0, 'K': 10, 'M': 20, 'G': 30, 'T': 40}[m.group(2).upper()]
    return int(m.group(1)) << shift


# --------------------------------------------------------------------------
# Kernels


@dataclasses.dataclass
class Kernel:
    flavour: str
    vmlinuz: Path
    kver: str            # '' for a built-in image (unknown until it boots)
    ident: str           # package_version, or image path + stat
    modroot: Path = None  # root with lib/modules/KVER, None if built in

    def describe(self):
        if self.modroot:
            return f'{self.kver} ({self.ident})'
        return f'built-in image {self.vmlinuz}'


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


def _apt_lists_key():
    d = Path('/var/lib/apt/lists')
    files = sorted(d.glob('*Packages*')) if d.is_dir() else []
    return [_file_key(f) for f in files] + [
        _file_key(f) for f in (Path('/etc/apt/preferences'),
                               Path('/etc/apt/sources.list')) if f.exists()]


def _apt_kernel_package(meta):
    """(package, candidate version) of the kernel meta package's first
    linux-image-* dependency; memoised until the apt lists change."""
    return tuple(_Memo('apt-memo').get(['apt', meta, _apt_lists_key()],
                                       lambda: _apt_kernel_package_now(meta)))


def _apt_kernel_package_now(meta):
    out = _run(['apt-cache', 'depends', meta]).stdout
    m = re.search(r'Depends:\s+(linux-image-[0-9]\S*)', out)
    if not m:
        raise VmError(f"'apt-cache depends {meta}' names no linux-image-* "
                      f"package; run apt-get update")
    pkg = m.group(1)
    pol = _run(['apt-cache', 'policy', pkg]).stdout
    m = re.search(r'Candidate:\s+(\S+)', pol)
    if not m or m.group(1) == '(none)':
        raise VmError(f"no candidate version of '{pkg}'; run apt-get update")
    return pkg, m.group(1)


def _modules_dir(root):
    for sub in ('lib/modules', 'usr/lib/modules'):
        d = root / sub
        if d.is_dir():
            kvers = sorted(p.name for p in d.iterdir() if p.is_dir())
            if len(kvers) == 1:
                return d, kvers[0]
    raise VmError(f"no single lib/modules/<version> in '{root}'")


def _fetch_debian_kernel(pkg, version):
    """apt-get download + dpkg -x + depmod -b into the cache (once)."""
    name = f'{pkg}_{version}'.replace(':', '%3a')
    final = CACHE_DIR / 'kernels' / name
    stamp = final / 'kernel.json'
    if stamp.exists():
        return json.loads(stamp.read_text()), final
    with _Lock(f'kernel-{name}'):
        if stamp.exists():
            return json.loads(stamp.read_text()), final
        _log(f'downloading {pkg} {version} (not installed, only extracted)')
        t0 = time.monotonic()
        (CACHE_DIR / 'kernels').mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix='.fetch-', dir=CACHE_DIR / 'kernels'))
        try:
            _run(['apt-get', 'download', '-q', '-o', 'APT::Sandbox::User=root',
                  f'{pkg}={version}'], cwd=work)
            debs = list(work.glob('*.deb'))
            if len(debs) != 1:
                raise VmError(f"apt-get download {pkg} left {len(debs)} .deb files")
            root = work / 'root'
            _run(['dpkg-deb', '-x', str(debs[0]), str(root)])
            debs[0].unlink()
            moddir, kver = _modules_dir(root)
            if moddir != root / 'lib' / 'modules':
                # depmod -b wants BASE/lib/modules.
                (root / 'lib').mkdir(exist_ok=True)
                (root / 'lib' / 'modules').symlink_to(moddir)
            _run(['depmod', '-b', str(root), kver])
            vmlinuz = root / 'boot' / f'vmlinuz-{kver}'
            if not vmlinuz.exists():
                raise VmError(f"'{pkg}' has no boot/vmlinuz-{kver}")
            meta = {'package': pkg, 'version': version, 'kver': kver,
                    'vmlinuz': f'root/boot/vmlinuz-{kver}'}
            (work / 'kernel.json').write_text(json.dumps(meta, indent=1) + '\n')
            os.chmod(work, 0o755)
            if final.exists():
                shutil.rmtree(final)
            os.rename(work, final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        _log(f'{pkg} ready in {time.monotonic() - t0:.1f} s')
        _prune_kernels(pkg)
    return meta, final


def _prune_kernels(pkg, keep=2):
    """Keep the newest `keep` extracted kernels of pkg's series (about
    250 MiB each)."""
    series = re.match(r'linux-image-\d+\.\d+', pkg).group(0)
    for meta, d in _cached_debian_kernels(series + '.')[keep:]:
        _log(f'removing old kernel {meta["package"]} {meta["version"]}')
        shutil.rmtree(d, ignore_errors=True)


def _cached_debian_kernels(prefix):
    found = []
    for stamp in (CACHE_DIR / 'kernels').glob('*/kernel.json'):
        meta = json.loads(stamp.read_text())
        if meta['package'].startswith(prefix):
            found.append((stamp.stat().st_mtime, meta, stamp.parent))
    return [f[1:] for f in sorted(found, reverse=True, key=lambda x: x[0])]


def get_kernel(flavour, kernel_image=None):
    """Resolve a flavour ('6.1', '6.12', 'daxctl', 'daxctl-6.12') to a
    Kernel, fetching it into the cache when needed. kernel_image forces a
    built-in image."""
    series = DAXCTL_SERIES.get(flavour)
    if kernel_image is None and flavour == 'daxctl':
        kernel_image = os.environ.get('DAXFILE_VM_KERNEL_IMAGE')
    if kernel_image is None and series:
        if not BUILD_KERNEL.exists():
            raise VmError(f"no {flavour} kernel: '{BUILD_KERNEL}' does not "
                          f"exist; pass --kernel-image")
        # Prints the cached bzImage at once, or builds it (minutes) first.
        _log(f'running {BUILD_KERNEL.relative_to(SRC_ROOT)} for the '
             f'{flavour} kernel')
        out = _run([str(BUILD_KERNEL), '--quiet', '--flavour', series],
                   stderr=None).stdout.split()
        if not out:
            raise VmError(f"'{BUILD_KERNEL}' printed no bzImage path")
        kernel_image = out[-1]
    if kernel_image is not None:
        img = Path(kernel_image).resolve()
        if not img.is_file():
            raise VmError(f"kernel image '{kernel_image}' does not exist")
        return Kernel(flavour, img, '', _hash(_file_key(img))[:16])
    if flavour not in FLAVOURS:
        raise VmError(f"unknown kernel flavour '{flavour}'; use one of "
                      + ', '.join(FLAVOURS))
    meta_pkg = FLAVOURS[flavour]
    try:
        pkg, version = _apt_kernel_package(meta_pkg)
        meta, d = _fetch_debian_kernel(pkg, version)
    except VmError as e:
        # Offline fallback: the newest cached kernel of this flavour.
        prefix = 'linux-image-6.12' if flavour == '6.12' else 'linux-image-6.1.'
        cached = _cached_debian_kernels(prefix)
        if not cached:
            raise
        meta, d = cached[0]
        _log(f'warning: {e}; using cached {meta["package"]} {meta["version"]}')
    _modules_dir(d / 'root')
    return Kernel(flavour, d / meta['vmlinuz'], meta['kver'],
                  f'{meta["package"]}_{meta["version"]}', d / 'root')


def _has_pvh_note(elf):
    """True if an ELF64 vmlinux has the Xen PHYS32_ENTRY note QEMU's
    -kernel needs to boot it directly (PVH)."""
    import struct
    if elf[:5] != b'\x7fELF\x02':
        return False
    phoff, = struct.unpack_from('<Q', elf, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', elf, 0x36)
    for i in range(phnum):
        ptype, = struct.unpack_from('<I', elf, phoff + i * phentsize)
        if ptype != 4:          # PT_NOTE
            continue
        off, = struct.unpack_from('<Q', elf, phoff + i * phentsize + 8)
        size, = struct.unpack_from('<Q', elf, phoff + i * phentsize + 0x20)
        pos = off
        while pos + 12 <= off + size:
            namesz, descsz, ntype = struct.unpack_from('<III', elf, pos)
            name = elf[pos + 12:pos + 12 + namesz]
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
            if name == b'Xen\0' and ntype == 18:
                return True
    return False


def pvh_vmlinux(vmlinuz):
    """The uncompressed vmlinux inside a bzImage, if it can boot through
    PVH, cached; else None. Booting it skips the in-guest decompression,
    which under TCG costs 3 s (6.1, xz) or 1.3 s (6.12, zstd) per boot."""
    import struct
    st = os.stat(vmlinuz)
    out = CACHE_DIR / 'pvh' / (_hash(_file_key(vmlinuz))[:20] + '.vmlinux')
    none = out.with_suffix('.none')
    if out.exists():
        return out
    if none.exists():
        return None
    data = Path(vmlinuz).read_bytes()
    elf = b''
    if data[0x202:0x206] == b'HdrS' and len(data) == st.st_size:
        setup_sects = data[0x1f1] or 4
        poff, plen = struct.unpack_from('<II', data, 0x248)
        start = (setup_sects + 1) * 512 + poff
        payload = data[start:start + plen]
        try:
            if payload[:6] == b'\xfd7zXZ\x00':
                elf = lzma.LZMADecompressor().decompress(payload)
            elif payload[:3] == b'\x1f\x8b\x08':
                elf = gzip.GzipFile(fileobj=__import__('io').BytesIO(payload)).read()
            elif payload[:4] == b'\x28\xb5\x2f\xfd' and shutil.which('zstd'):
                # The kernel appends the 4-byte size after the zstd frame.
                elf = subprocess.run(['zstd', '-dcq'], input=payload[:-4],
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL).stdout
        except (lzma.LZMAError, OSError, EOFError):
            elf = b''
    out.parent.mkdir(parents=True, exist_ok=True)
    if not _has_pvh_note(elf):
        none.write_text('')
        return None
    tmp = out.with_suffix(f'.tmp{os.getpid()}')
    tmp.write_bytes(elf)
    os.rename(tmp, out)
    _prune(out.parent, '*.vmlinux', 6)
    return out


# --------------------------------------------------------------------------
# Modules


def _mod_name(path):
    base = os.path.basename(path)
    base = re.sub(r'\.ko(\.(xz|gz|zst))?$', '', base)
    return base.replace('-', '_')


def module_load_list(kernel, wanted=GUEST_MODULES, optional=OPTIONAL_MODULES):
    """Paths (relative to lib/modules/KVER) in insmod order: the modules.dep
    closure of every wanted module that is not built in."""
    mdir = kernel.modroot / 'lib' / 'modules' / kernel.kver
    deps = {}
    by_name = {}
    for line in (mdir / 'modules.dep').read_text().splitlines():
        mod, _, rest = line.partition(':')
        deps[mod] = rest.split()
        by_name[_mod_name(mod)] = mod
    builtin = set()
    bfile = mdir / 'modules.builtin'
    if bfile.exists():
        builtin = {_mod_name(x) for x in bfile.read_text().split()}
    order = []

    def visit(mod, stack):
        if mod in order:
            return
        if mod in stack:
            raise VmError(f'module dependency loop at {mod}')
        for d in reversed(deps[mod]):
            visit(d, stack + [mod])
        order.append(mod)

    for name in wanted:
        if name in by_name:
            visit(by_name[name], [])
        elif name not in builtin and name not in optional:
            raise VmError(f"kernel {kernel.kver} has no module '{name}' "
                          f"and it is not built in")
    return order


# --------------------------------------------------------------------------
# ldd closure


def _guest_path(host_path):
    """Debian 12 is merged-/usr: map /lib, /lib64, /bin, /sbin into /usr."""
    p = os.path.normpath(host_path)
    for top in ('/lib64', '/lib', '/bin', '/sbin'):
        if p == top or p.startswith(top + '/'):
            return '/usr' + p
    return p


def ldd_closure(paths):
    """{guest path: host path} of the shared libraries the ELF files need.
    Memoised per binary until it or /etc/ld.so.cache changes."""
    memo = _Memo('ldd-memo')
    ldcache = _file_key('/etc/ld.so.cache') if os.path.exists('/etc/ld.so.cache') else None
    libs = {}
    for path in paths:
        got = memo.get(['ldd', _file_key(path), ldcache],
                       lambda: _ldd_closure_now([path]))
        if not all(os.path.exists(h) for h in got.values()):
            got = _ldd_closure_now([path])
        libs.update(got)
    return libs


def _ldd_closure_now(paths):
    libs = {}
    for path in paths:
        r = subprocess.run(['ldd', str(path)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, check=False)
        if r.returncode != 0:
            if 'not a dynamic executable' in r.stdout:
                continue
            raise VmError(f"ldd '{path}' failed: {r.stdout.strip()}")
        for line in r.stdout.splitlines():
            line = line.strip()
            if 'not found' in line:
                raise VmError(f"'{path}' needs a library that is missing: {line}")
            m = re.match(r'\S+ => (/\S+)', line) or re.match(r'(/\S+) \(', line)
            if m:
                libs[_guest_path(m.group(1))] = os.path.realpath(m.group(1))
    return libs


# --------------------------------------------------------------------------
# newc cpio


class Cpio:
    """A newc archive assembled in memory (file data streamed from disk).
    Later entries for the same path replace earlier ones."""

    def __init__(self):
        self.entries = {}

    def _parents(self, path):
        parts = path.strip('/').split('/')[:-1]
        for i in range(1, len(parts) + 1):
            p = '/'.join(parts[:i])
            if p not in self.entries:
                self.entries[p] = ('dir', 0o40755, None)

    def add_dir(self, path, mode=0o755):
        path = path.strip('/')
        self._parents(path)
        self.entries[path] = ('dir', 0o40000 | mode, None)

    def add_file(self, path, src=None, data=None, mode=None):
        path = path.strip('/')
        self._parents(path)
        if mode is None:
            mode = os.stat(src).st_mode & 0o7777 if src else 0o644
        self.entries[path] = ('file', 0o100000 | mode,
                              str(src) if src else (data if isinstance(data, bytes)
                                                    else data.encode()))

    def add_symlink(self, path, target):
        path = path.strip('/')
        self._parents(path)
        self.entries[path] = ('link', 0o120777, target.encode())

    def add_node(self, path, mode, major, minor):
        path = path.strip('/')
        self._parents(path)
        self.entries[path] = ('node', mode, (major, minor))

    @staticmethod
    def _hdr(out, ino, mode, nlink, size, rdev, name):
        nb = name.encode() + b'\0'
        fields = [ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev[0], rdev[1],
                  len(nb), 0]
        h = b'070701' + b''.join(b'%08X' % f for f in fields) + nb
        out.write(h + b'\0' * (-len(h) % 4))

    def write(self, out):
        ino = 1
        for path in sorted(self.entries):
            kind, mode, payload = self.entries[path]
            ino += 1
            if kind == 'file' and isinstance(payload, str):
                size = os.path.getsize(payload)
                self._hdr(out, ino, mode, 1, size, (0, 0), path)
                with open(payload, 'rb') as f:
                    shutil.copyfileobj(f, out, 1 << 20)
                out.write(b'\0' * (-size % 4))
            elif kind in ('file', 'link'):
                self._hdr(out, ino, mode, 1, len(payload), (0, 0), path)
                out.write(payload + b'\0' * (-len(payload) % 4))
            elif kind == 'node':
                self._hdr(out, ino, mode, 1, 0, payload, path)
            else:
                self._hdr(out, ino, mode, 2, 0, (0, 0), path)
        self._hdr(out, 0, 0, 1, 0, (0, 0), 'TRAILER!!!')

    def save(self, path, compress):
        tmp = f'{path}.tmp{os.getpid()}'
        with open(tmp, 'wb') as raw:
            if compress:
                with gzip.GzipFile(fileobj=raw, mode='wb', compresslevel=6,
                                   mtime=0) as gz:
                    self.write(gz)
            else:
                self.write(raw)
            # Pad so that the next concatenated archive starts aligned.
            raw.write(b'\0' * (-raw.tell() % 512))
        os.rename(tmp, path)


# --------------------------------------------------------------------------
# Initramfs pieces


def _busybox_applets():
    out = _run(['busybox', '--list-full']).stdout.split()
    return ['/' + a for a in out if a and a != 'linuxrc']


def _base_inputs(kernel, tools=None):
    """Everything the base archive is made of, with stat keys for caching.
    tools: only these of GUEST_TOOLS (guest paths); None: all of them."""
    busybox = shutil.which('busybox') or '/bin/busybox'
    files = {'/usr/bin/busybox': os.path.realpath(busybox)}
    for gpath, hpath, required in GUEST_TOOLS:
        if tools is not None and gpath not in tools:
            continue
        if os.path.exists(hpath):
            files[gpath] = os.path.realpath(hpath)
        elif required:
            raise VmError(f"'{hpath}' is missing; install its package "
                          f"(see .ci/packages)")
    files.update(ldd_closure([files[g] for g, _, _ in GUEST_TOOLS if g in files]))
    for gpath, hpath in GUEST_ETC_FILES:
        if os.path.exists(hpath):
            files[gpath] = hpath
    modules = module_load_list(kernel) if kernel.modroot else []
    hostroot = [m for m in module_load_list(kernel, HOSTROOT_MODULES,
                                            HOSTROOT_OPTIONAL)
                if m not in modules] if kernel.modroot else []
    return files, modules, hostroot


def _populate_base(cpio, kernel, files, modules, hostroot=()):
    for d in ('dev', 'proc', 'sys', 'tmp', 'run', 'mnt', 'root', 'etc',
              'var/tmp', 'usr/bin', 'usr/sbin', 'usr/lib/x86_64-linux-gnu',
              'usr/lib64', 'daxfile/bin', 'daxfile/tests', 'daxfile/lib'):
        cpio.add_dir(d, 0o1777 if d in ('tmp', 'var/tmp') else 0o755)
    for top in ('bin', 'sbin', 'lib', 'lib64'):
        cpio.add_symlink(top, f'usr/{top}')
    cpio.add_node('dev/console', 0o20600, 5, 1)
    cpio.add_node('dev/null', 0o20666, 1, 3)
    for applet in _busybox_applets():
        g = _guest_path(applet)
        if g != '/usr/bin/busybox':
            cpio.add_symlink(g, '/usr/bin/busybox')
    for gpath, hpath in sorted(files.items()):
        cpio.add_file(gpath, src=hpath)
    for link, target in GUEST_TOOL_LINKS.items():
        cpio.add_symlink(link, target)
    cpio.add_file('etc/passwd', data='root:x:0:0:root:/root:/bin/sh\n')
    cpio.add_file('etc/group', data='root:x:0:\n')
    cpio.add_symlink('etc/mtab', '/proc/mounts')
    load = []
    if modules:
        src = kernel.modroot / 'lib' / 'modules' / kernel.kver
        dst = f'usr/lib/modules/{kernel.kver}'
        with tempfile.TemporaryDirectory(prefix='daxfile-vm-mods.') as tmp:
            # Decompress (busybox insmod reads neither .xz nor .zst) into a
            # staging tree and run depmod on it, so modules.dep matches.
            stage = Path(tmp) / 'lib' / 'modules' / kernel.kver
            for mod in list(modules) + list(hostroot):
                plain = re.sub(r'\.(xz|gz|zst)$', '', mod)
                out = stage / plain
                out.parent.mkdir(parents=True, exist_ok=True)
                if mod.endswith('.xz'):
                    out.write_bytes(lzma.decompress((src / mod).read_bytes()))
                elif mod.endswith('.gz'):
                    out.write_bytes(gzip.decompress((src / mod).read_bytes()))
                elif mod.endswith('.zst'):
                    _run(['zstd', '-q', '-d', '-o', str(out), str(src / mod)])
                else:
                    shutil.copyfile(src / mod, out)
                load.append(plain)
            for f in ('modules.order', 'modules.builtin',
                      'modules.builtin.modinfo'):
                if (src / f).exists():
                    shutil.copyfile(src / f, stage / f)
            _run(['depmod', '-b', tmp, kernel.kver])
            for p in sorted(stage.rglob('*')):
                if p.is_file():
                    cpio.add_file(f'{dst}/{p.relative_to(stage)}',
                                  data=p.read_bytes(), mode=0o644)
    cpio.add_file('etc/daxfile-vm/modules.load', data=''.join(
        f'{m}\n' for m in load[:len(modules)]))
    cpio.add_file('etc/daxfile-vm/modules.hostroot', data=''.join(
        f'{m}\n' for m in load[len(modules):]))
    cpio.add_file('etc/daxfile-vm/kernel', data=f'{kernel.kver}\n')


def _prune(dirpath, pattern, keep):
    """Keep the @keep newest; a concurrent run may prune the same files."""
    stamped = []
    for p in dirpath.glob(pattern):
        try:
            stamped.append((p.stat().st_mtime, p))
        except FileNotFoundError:
            pass
    items = [p for _, p in sorted(stamped, key=lambda t: t[0], reverse=True)]
    for p in items[keep:]:
        try:
            p.unlink()
        except OSError:
            pass


def build_base(kernel, inputs, compress=True, slim=False):
    """The cached base archive: busybox, modules, tools and their libraries
    (@inputs: what _base_inputs(kernel) returned). Keyed by a hash of every
    input (file stats, kernel, the recipe's code)."""
    files, modules, hostroot = inputs
    key = _hash({
        'recipe': inspect.getsource(_populate_base),
        # A built-in kernel's base does not depend on the kernel at all.
        'kernel': kernel.ident if kernel.modroot else 'built-in',
        'kver': kernel.kver, 'modules': modules, 'hostroot': hostroot,
        'files': sorted([g] + _file_key(h) for g, h in files.items()),
        'applets': _busybox_applets(), 'compress': compress,
    })[:20]
    bdir = CACHE_DIR / 'base'
    bdir.mkdir(parents=True, exist_ok=True)
    prefix = f'slim-{kernel.flavour}' if slim else kernel.flavour
    name = f'{prefix}-{key}.cpio' + ('.gz' if compress else '')
    path = bdir / name
    if path.exists():
        os.utime(path)
        return path
    with _Lock(f'base-{key}'):
        if path.exists():
            return path
        t0 = time.monotonic()
        cpio = Cpio()
        _populate_base(cpio, kernel, files, modules, hostroot)
        cpio.save(path, compress)
        _log(f'built base initramfs {path.name} '
             f'({path.stat().st_size / MIB:.1f} MiB, {len(modules)} modules) '
             f'in {time.monotonic() - t0:.1f} s')
    _prune(bdir, f'{prefix}-*.cpio*', 4)
    return path


def build_bins(bins, compress=True, base=None):
    """The archive with /daxfile/bin/* and their libraries (cached by stat).
    base: the base archive's files (guest path: host path); a library the
    base already holds is left out (the guest unpacks it only once: 12 of
    a daxfile-guest closure's 15 MiB, seconds of every nested boot)."""
    if not bins:
        return None
    files = {}
    for b in bins:
        b = Path(b).resolve()
        if not b.is_file():
            raise VmError(f"--bin '{b}' does not exist; build it first")
        name = b.name
        if f'/daxfile/bin/{name}' in files:
            raise VmError(f"two --bin files are named '{name}'")
        files[f'/daxfile/bin/{name}'] = str(b)
    files.update({g: h for g, h in ldd_closure(list(files.values())).items()
                  if (base or {}).get(g) != h})
    key = _hash({'files': sorted([g] + _file_key(h) for g, h in files.items()),
                 'compress': compress, 'v': 1})[:20]
    odir = CACHE_DIR / 'overlay'
    odir.mkdir(parents=True, exist_ok=True)
    path = odir / (f'bins-{key}.cpio' + ('.gz' if compress else ''))
    if path.exists():
        os.utime(path)
        return path
    with _Lock(f'bins-{key}'):
        if not path.exists():
            cpio = Cpio()
            for g, h in sorted(files.items()):
                cpio.add_file(g, src=h)
            cpio.save(path, compress)
    _prune(odir, 'bins-*', 8)
    return path


def _boot_cpio(script, env):
    """Per-boot archive: /init, guest-lib, guest scripts, env file."""
    cpio = Cpio()
    cpio.add_file('init', src=VM_DIR / 'guest-init.sh', mode=0o755)
    cpio.add_file('daxfile/lib/guest-lib.sh', src=VM_DIR / 'guest-lib.sh',
                  mode=0o644)
    for s in sorted(GUEST_DIR.glob('*.sh')):
        cpio.add_file(f'daxfile/tests/{s.name}', src=s, mode=0o755)
    if script is not None:
        cpio.add_file(f'daxfile/tests/{script.name}', src=script, mode=0o755)
    lines = [f'export {k}={shlex.quote(v)}\n' for k, v in env.items()]
    cpio.add_file('daxfile/env', data=''.join(lines))
    return cpio


# --------------------------------------------------------------------------
# Backing files


@dataclasses.dataclass
class Pmem:
    """One emulated NVDIMM: a host backing file, optionally with a label
    area (label_size bytes, QEMU keeps it at the end of the file); model
    'virtio-pmem' gives the guest a virtio-pmem-pci device instead."""
    path: Path
    size: int
    label_size: int = 0
    temporary: bool = False
    model: str = 'nvdimm'

    @classmethod
    def create(cls, path, size='1G', label_size=0, prefill=True,
               temporary=False):
        """Create (or reuse, if it exists with that size) a backing file.
        prefill writes zeros so the host page cache is populated: a sparse
        file makes the guest's first touches several times slower."""
        path = Path(path)
        nbytes = parse_size(size) if isinstance(size, str) else int(size)
        if nbytes <= 0 or nbytes % (2 * MIB):
            raise VmError(f"pmem size {nbytes} is not a multiple of 2 MiB")
        if path.exists():
            have = path.stat().st_size
            if have != nbytes:
                raise VmError(f"'{path}' is {have} bytes, not {nbytes}; "
                              f"remove it or give its size")
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         0o600)
            try:
                if prefill:
                    zero = bytes(16 * MIB)
                    left = nbytes
                    while left:
                        left -= os.write(fd, zero[:min(left, len(zero))])
                else:
                    os.ftruncate(fd, nbytes)
            except BaseException:
                os.unlink(path)
                raise
            finally:
                os.close(fd)
        ls = parse_size(label_size) if isinstance(label_size, str) else label_size
        return cls(path.resolve(), nbytes, ls, temporary)

    @classmethod
    def parse(cls, spec):
        """--pmem FILE[,size=S][,label=L][,model=M]: FILE is created
        (prefilled) if missing and then kept; an empty FILE
        (',size=2G,label=128K') is a temporary file, removed by remove().
        M: nvdimm (default) or virtio-pmem (no label)."""
        parts = spec.split(',')
        opts = {}
        for p in parts[1:]:
            k, eq, v = p.partition('=')
            if not eq or k not in ('size', 'label', 'model'):
                raise VmError(f"invalid --pmem option '{p}'; use size=, "
                              f"label= or model=")
            opts[k] = v
        model = opts.get('model', 'nvdimm')
        if model not in ('nvdimm', 'virtio-pmem') or \
                (model == 'virtio-pmem' and 'label' in opts):
            raise VmError(f"invalid --pmem model '{model}': nvdimm, or "
                          f"virtio-pmem without a label")
        if not parts[0]:
            pmem = cls.temporary_file(opts.get('size', '1G'),
                                      opts.get('label', 0))
        else:
            path = Path(parts[0])
            size = opts.get('size')
            if size is None:
                size = path.stat().st_size if path.exists() else '1G'
            pmem = cls.create(path, size, opts.get('label', 0))
        pmem.model = model
        return pmem

    @classmethod
    def temporary_file(cls, size='1G', label_size=0):
        fd, p = tempfile.mkstemp(prefix='daxfile-vm-pmem.', dir=default_tmpdir())
        os.close(fd)
        os.unlink(p)
        return cls.create(p, size, label_size, temporary=True)

    def remove(self):
        if self.temporary:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass


def parse_pmems(specs):
    """--pmem values -> [Pmem]; ['none'] -> []."""
    if specs == ['none']:
        return []
    if 'none' in specs:
        raise VmError("--pmem none cannot be combined with other --pmem")
    pmems = []
    try:
        for spec in specs:
            pmems.append(Pmem.parse(spec))
    except BaseException:
        for p in pmems:
            p.remove()
        raise
    return pmems


def default_tmpdir():
    env = os.environ.get('DAXFILE_VM_TMPDIR')
    if env:
        return env
    # tmpfs: a prefilled 1 GiB backing file costs memory, not disk writes.
    try:
        st = os.statvfs('/dev/shm')
        if os.access('/dev/shm', os.W_OK) and st.f_bavail * st.f_frsize > 4 * GIB:
            return '/dev/shm'
    except OSError:
        pass
    return '/var/tmp'


# --------------------------------------------------------------------------
# TAP


@dataclasses.dataclass
class TapTest:
    ok: bool
    number: int
    name: str
    directive: str   # '', 'SKIP', 'TODO'
    line: str

    @property
    def failed(self):
        return not self.ok and self.directive != 'TODO'


TAP_TEST_RE = re.compile(r'(not )?ok\b\s*(\d+)?\s*(?:-\s*)?([^#]*?)\s*'
                         r'(?:#\s*(SKIP|TODO)\S*\b.*)?$', re.I)
TAP_PLAN_RE = re.compile(r'1\.\.(\d+)\s*(?:#\s*(.*))?$')


def classify_tap(line):
    """('test', TapTest) | ('plan', (n, comment)) | ('bail', msg) |
    ('comment', line) | ('other', line)"""
    if line.startswith('#') or not line.strip() or line.startswith('TAP version'):
        return 'comment', line
    m = TAP_TEST_RE.match(line)
    if m and (line.startswith('ok') or line.startswith('not ok')):
        d = (m.group(4) or '').upper()
        return 'test', TapTest(m.group(1) is None, int(m.group(2) or 0),
                               m.group(3), d, line)
    m = TAP_PLAN_RE.match(line)
    if m:
        return 'plan', (int(m.group(1)), m.group(2) or '')
    if line.startswith('Bail out!'):
        return 'bail', line
    return 'other', line


# --------------------------------------------------------------------------
# Boot


@dataclasses.dataclass
class BootResult:
    tests: list = dataclasses.field(default_factory=list)   # [TapTest]
    plan: tuple = None                # (n, comment) from the guest
    bailed_out: str = None
    log: list = dataclasses.field(default_factory=list)     # merged, timestamped
    console: list = dataclasses.field(default_factory=list)
    tap: list = dataclasses.field(default_factory=list)
    qemu_rc: int = None
    end_seen: bool = False
    script_rc: int = None
    panic: bool = False
    kernel_errors: list = dataclasses.field(default_factory=list)
    guest_errors: list = dataclasses.field(default_factory=list)
    timed_out: bool = False
    cancelled: bool = False    # killed by boot()'s cancel event
    killed_on_marker: str = None
    init_time: float = None    # host seconds from QEMU start to /init
    ready_time: float = None   # ... to modules loaded
    duration: float = None     # QEMU start to exit
    setup_time: float = None   # boot() call to QEMU start (initrd, pmem files)
    serial_log_path: str = None
    allow_kernel_errors: bool = False

    @property
    def problems(self):
        """Reasons this boot is not a clean pass, apart from `not ok`."""
        p = []
        if self.timed_out:
            p.append(f'timed out after {self.duration:.0f} s; QEMU was killed')
        if self.cancelled:
            p.append(f'cancelled after {self.duration:.0f} s; QEMU was killed')
        if self.panic:
            p.append('guest kernel panic')
        if self.kernel_errors and not self.allow_kernel_errors:
            p.append(f'{len(self.kernel_errors)} kernel error line(s), first: '
                     f'{self.kernel_errors[0].strip()}')
        p.extend(self.guest_errors)
        if self.bailed_out:
            p.append(f'guest bailed out: {self.bailed_out}')
        if self.killed_on_marker:
            return p
        if not self.end_seen and not (self.timed_out or self.cancelled):
            p.append(f'QEMU exited (status {self.qemu_rc}) before the guest '
                     f'printed its END marker')
        if self.end_seen and self.script_rc != 0:
            p.append(f'guest script exited with status {self.script_rc}')
        if self.qemu_rc not in (0, None) and not (self.timed_out or
                                                  self.cancelled):
            p.append(f'QEMU exited with status {self.qemu_rc}')
        if self.plan is None:
            p.append('guest printed no TAP plan')
        elif self.plan[0] != len(self.tests):
            p.append(f'guest planned {self.plan[0]} tests, reported '
                     f'{len(self.tests)}')
        return p

    @property
    def failed_tests(self):
        return [t for t in self.tests if t.failed]

    @property
    def passed(self):
        return not self.problems and not self.failed_tests

    def tail(self, n=60):
        return self.log[-n:]

    def report(self, n=60):
        out = [f'problem: {p}' for p in self.problems]
        out += [f'failed: {t.line}' for t in self.failed_tests]
        out += ['serial tail:'] + self.tail(n)
        return '\n'.join(out)


@dataclasses.dataclass
class Image:
    kernel: Kernel
    base: Path
    bins: Path = None
    boot_kernel: Path = None   # what -kernel gets: PVH vmlinux or bzImage

    def initrd(self, path, script=None, env=None):
        """Write the initrd for one boot: base + bins + per-boot archive."""
        boot = _boot_cpio(Path(script) if script else None, env or {})
        with open(path, 'wb') as out:
            for piece in (self.base, self.bins):
                if piece:
                    with open(piece, 'rb') as f:
                        shutil.copyfileobj(f, out, 4 << 20)
            boot.write(out)
        return Path(path)

    def boot(self, script, pmems=None, env=None, append='', timeout=600,
             kill_on=None, smp=1, memory=None, on_tap=None, on_console=None,
             serial_log=None, allow_kernel_errors=False, modules=True,
             extra_qemu=(), hostroot=False, cancel=None):
        """Boot once and run the guest script (a path, or a NAME of
        tests/vm/guest/NAME.sh). pmems: list of Pmem; None = one temporary
        prefilled 1 GiB file; [] = no NVDIMM. kill_on: regex; SIGKILL QEMU
        as soon as a guest line (console or TAP) matches it. modules=False
        skips the insmods (no ext4/xfs/nvdimm on modular kernels; saves
        about 2 s). hostroot: the guest's userland is the host's own root,
        read-only over 9p under a tmpfs overlay (switch_root), so python3,
        the build tree and the host's tools are there; the script runs
        with the host's /bin/sh. cancel: a threading.Event that kills QEMU
        when set (a boot run beside another, from another thread). Returns
        a BootResult."""
        t0 = time.monotonic()
        script = resolve_script(script)
        env = dict(env or {})
        tmp_pmem = None
        rundir = Path(tempfile.mkdtemp(prefix='daxfile-vm.'))
        try:
            if pmems is None:
                tmp_pmem = Pmem.temporary_file('1G')
                pmems = [tmp_pmem]
            if hostroot:
                for k in ('DAXFILE_SRCDIR', 'DAXFILE_BUILDDIR'):
                    if k in os.environ:
                        env.setdefault(k, os.environ[k])
            initrd = self.initrd(rundir / 'initrd', script, env)
            cmdline = (f'{DEFAULT_APPEND} daxfile.script={script.name}'
                       f'{"" if modules else " daxfile.modules=0"}'
                       f'{" daxfile.hostroot=1" if hostroot else ""} {append}')
            memory = memory or ('2G' if hostroot else '1G')
            argv = qemu_argv(self.boot_kernel, initrd, cmdline, pmems,
                             rundir, smp, memory) + list(extra_qemu)
            if hostroot:
                argv += HOSTROOT_QEMU
            setup = time.monotonic() - t0
            res = _run_qemu(argv, rundir, timeout, kill_on, on_tap,
                            on_console, serial_log, allow_kernel_errors,
                            cancel)
            res.setup_time = setup
            return res
        finally:
            if tmp_pmem:
                tmp_pmem.remove()
            shutil.rmtree(rundir, ignore_errors=True)


def resolve_script(script):
    p = Path(script)
    if not p.suffix and not p.exists():
        p = GUEST_DIR / f'{script}.sh'
    if not p.is_file():
        raise VmError(f"guest script '{script}' does not exist")
    return p.resolve()


def build_image(kernel='6.1', bins=(), kernel_image=None, compress=True,
                pvh=None, tools=None):
    """Resolve/fetch the kernel and build (or reuse) the cached archives.
    pvh: boot the uncompressed vmlinux through PVH when the kernel allows
    it (default; DAXFILE_VM_BOOT=bzimage or pvh=False boots the bzImage).
    tools: a slim image with only these GUEST_TOOLS (guest paths), for a
    guest nested under TCG, where every MiB of initramfs costs about a
    second of its boot."""
    k = kernel if isinstance(kernel, Kernel) else get_kernel(kernel, kernel_image)
    if pvh is None:
        pvh = os.environ.get('DAXFILE_VM_BOOT', 'pvh') != 'bzimage'
    boot_kernel = (pvh_vmlinux(k.vmlinuz) if pvh else None) or k.vmlinuz
    # The bins archive stays uncompressed: it is rebuilt whenever a project
    # binary changes, and gzip of a libvirt-linked closure (65 MiB) costs
    # about 4 s on the host while the guest unpacks it no faster.
    inputs = _base_inputs(k, tools)
    return Image(k, build_base(k, inputs, compress, tools is not None),
                 build_bins(list(bins), False, inputs[0]), boot_kernel)


def qemu_argv(vmlinuz, initrd, cmdline, pmems, rundir, smp=1, memory='1G'):
    mem = parse_size(memory)
    argv = ['qemu-system-x86_64', '-nodefaults', '-no-user-config',
            '-accel', 'tcg,thread=multi', '-cpu', 'max', '-smp', str(smp),
            '-display', 'none', '-vga', 'none', '-no-reboot',
            '-kernel', str(vmlinuz), '-initrd', str(initrd),
            '-append', cmdline]
    if pmems:
        total = sum(-(-p.size // GIB) * GIB for p in pmems)
        argv += ['-machine', 'pc,nvdimm=on',
                 '-m', f'{mem // MIB}M,slots={max(4, len(pmems) + 1)},'
                       f'maxmem={(mem + total + GIB) // MIB}M']
        for i, p in enumerate(pmems):
            argv += ['-object', f'memory-backend-file,id=mem{i},share=on,'
                                f'mem-path={p.path},size={p.size},align=2M']
            if p.model == 'virtio-pmem':
                argv += ['-device', f'virtio-pmem-pci,memdev=mem{i},id=nv{i}']
            else:
                argv += ['-device', f'nvdimm,memdev=mem{i},id=nv{i}'
                                    + (f',label-size={p.label_size}'
                                       if p.label_size else '')]
    else:
        argv += ['-machine', 'pc', '-m', f'{mem // MIB}M']
    # ttyS0: kernel console and harness messages; ttyS1: the script's TAP.
    for name in ('con', 'tap'):
        fifo_base = rundir / name
        for suffix in ('.in', '.out'):
            os.mkfifo(f'{fifo_base}{suffix}', 0o600)
        argv += ['-chardev', f'pipe,id={name},path={fifo_base}',
                 '-device', f'isa-serial,chardev={name}']
    return argv


class _Stream:
    def __init__(self, name, fd):
        self.name, self.fd, self.buf = name, fd, b''


def _run_qemu(argv, rundir, timeout, kill_on, on_tap, on_console,
              serial_log, allow_kernel_errors, cancel=None):
    res = BootResult(allow_kernel_errors=allow_kernel_errors)
    kill_re = re.compile(kill_on) if kill_on else None
    streams = []
    sel = selectors.DefaultSelector()
    for name in ('con', 'tap'):
        # O_RDWR: opening never blocks and we never see a spurious EOF; the
        # end of the run is QEMU's exit, after which the fifo is drained.
        fd = os.open(rundir / f'{name}.out', os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        streams.append(_Stream(name, fd))
    logf = open(serial_log, 'w') if serial_log else None
    res.serial_log_path = str(serial_log) if serial_log else None
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    os.set_blocking(proc.stdout.fileno(), False)
    streams.append(_Stream('qemu', proc.stdout.fileno()))
    for s in streams:
        sel.register(s.fd, selectors.EVENT_READ, s)

    def line_in(stream, text, now):
        stamp = f'[{now:8.3f} {stream}] {text}'
        res.log.append(stamp)
        if logf:
            logf.write(stamp + '\n')
            logf.flush()
        if stream == 'tap':
            res.tap.append(text)
            kind, val = classify_tap(text)
            if kind == 'test':
                res.tests.append(val)
            elif kind == 'plan':
                if res.plan is None:
                    res.plan = val
                else:
                    res.guest_errors.append(f'second TAP plan: {text}')
            elif kind == 'bail':
                res.bailed_out = text
            if on_tap:
                on_tap(kind, val, text)
        else:
            if stream == 'con':
                res.console.append(text)
            if PANIC_RE.search(text):
                res.panic = True
            # "  | " lines replay a dx_run command's output (e.g. dmesg):
            # the kernel's own lines were already seen as they happened.
            if KERNEL_ERROR_RE.search(text) and not text.startswith('  | '):
                res.kernel_errors.append(text)
            i = text.find(CONSOLE_MARK)
            if i >= 0:
                words = text[i + len(CONSOLE_MARK):].split()
                if words[:1] == ['INIT'] and res.init_time is None:
                    res.init_time = now
                elif words[:1] == ['READY'] and res.ready_time is None:
                    res.ready_time = now
                elif words[:1] == ['END']:
                    res.end_seen = True
                    m = re.search(r'rc=(\d+)', text)
                    res.script_rc = int(m.group(1)) if m else None
                elif words[:1] == ['ERROR']:
                    res.guest_errors.append(text[i:].strip())
            if on_console:
                on_console(text)
        if kill_re and not res.killed_on_marker and kill_re.search(text):
            res.killed_on_marker = text
            proc.kill()

    def pump(s, final=False):
        while True:
            try:
                chunk = os.read(s.fd, 65536)
            except BlockingIOError:
                chunk = b''
            if not chunk:
                break
            s.buf += chunk
            *lines, s.buf = s.buf.split(b'\n')
            now = time.monotonic() - t0
            for raw in lines:
                line_in(s.name, raw.decode('utf-8', 'replace').rstrip('\r'), now)
        if final and s.buf:
            line_in(s.name, s.buf.decode('utf-8', 'replace').rstrip('\r'),
                    time.monotonic() - t0)
            s.buf = b''

    try:
        while proc.poll() is None:
            left = t0 + timeout - time.monotonic()
            if left <= 0:
                res.timed_out = True
                proc.kill()
                break
            if cancel is not None and cancel.is_set():
                res.cancelled = True
                proc.kill()
                break
            for key, _ in sel.select(min(left, 0.5)):
                pump(key.data)
        proc.wait()
        for s in streams:
            pump(s, final=True)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sel.close()
        for s in streams[:2]:
            os.close(s.fd)
        proc.stdout.close()
        if logf:
            logf.close()
    res.qemu_rc = proc.returncode
    res.duration = time.monotonic() - t0
    return res


# --------------------------------------------------------------------------
# Command line


def _tap():
    """daxtest.Tap, the one TAP emitter of the Python tests"""
    helpers = str(VM_DIR.parent / 'helpers')
    if helpers not in sys.path:
        sys.path.insert(0, helpers)
    import daxtest
    return daxtest.Tap()


def _relay_run(args):
    """`run`: relay the guest TAP, add one harness test point, exit 0 iff
    everything passed."""
    tap = _tap()

    def relay(line):
        # the guest's own TAP line, as it came
        print(line, flush=True)

    t0 = time.monotonic()
    image = build_image(args.kernel, args.bin, args.kernel_image,
                        compress=not args.no_compress,
                        pvh=False if args.bzimage else None)
    t_image = time.monotonic() - t0
    script = resolve_script(args.script)
    tap.diag(f'daxfile-vm: kernel {image.kernel.describe()}, script '
             f'{script.name}, booting '
             f'{"bzImage" if image.boot_kernel == image.kernel.vmlinuz else "PVH vmlinux"}')
    pmems = None if not args.pmem else parse_pmems(args.pmem)
    env = {}
    for kv in args.env:
        k, eq, v = kv.partition('=')
        if not eq or not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', k):
            raise VmError(f"invalid --env '{kv}'; use NAME=VALUE")
        env[k] = v

    relayed = []

    def on_tap(kind, val, text):
        if kind == 'test':
            relayed.append(val)
        if kind in ('test', 'comment', 'bail'):
            relay(text)
        elif kind == 'plan':
            tap.diag(f'daxfile-vm: guest plan {text}')
        else:
            tap.diag(f'guest stdout: {text}')

    def on_console(text):
        if args.verbose:
            print(text, file=sys.stderr, flush=True)

    try:
        res = image.boot(script, pmems=pmems, env=env,
                         append=' '.join(args.append), timeout=args.timeout,
                         on_tap=on_tap, on_console=on_console,
                         serial_log=args.serial_log, smp=args.smp,
                         memory=args.memory, modules=not args.no_modules,
                         allow_kernel_errors=args.allow_kernel_errors,
                         hostroot=args.hostroot)
    except Terminated:
        tap.n = len(relayed)  # our result follows the guest's
        tap.ok(False, f'daxfile-vm: {script.stem} on {args.kernel}: '
               f'terminated by SIGTERM (timeout?); QEMU was killed')
        tap.done()
        return 143
    finally:
        for p in pmems or []:
            p.remove()
    tap.diag(f'daxfile-vm: image {t_image:.1f} s, boot set-up '
             f'{res.setup_time:.1f} s; from QEMU start: /init '
             + (f'{res.init_time:.1f} s' if res.init_time is not None
                else 'never')
             + (f', modules loaded {res.ready_time:.1f} s' if res.ready_time
                else '')
             + f', QEMU exit {res.duration:.1f} s')
    problems = res.problems
    tap.n = len(res.tests)  # our result follows the guest's
    name = f'daxfile-vm: {script.stem} on {args.kernel}: guest ran to completion'
    if res.plan and res.plan[0] == 0 and not res.tests and not problems:
        tap.skip(name, res.plan[1])
    else:
        tap.ok(not problems, name)
    for p in problems:
        tap.diag(p)
    if problems or res.failed_tests:
        tap.diag(f'daxfile-vm: FAILED: {len(res.failed_tests)} failed guest '
                 f'test(s), {len(problems)} harness problem(s); serial tail:')
        for line in res.tail(args.tail):
            tap.diag(f'  {line}')
        if args.serial_log:
            tap.diag(f'daxfile-vm: full serial log: {args.serial_log}')
        # Also on stderr: meson --print-errorlogs shows stderr, while the
        # TAP on stdout only lands in meson-logs/testlog.txt.
        print(f'daxfile-vm: {script.stem} on {args.kernel} FAILED\n'
              + res.report(args.tail)
              + (f'\nfull serial log: {args.serial_log}' if args.serial_log else ''),
              file=sys.stderr, flush=True)
    tap.done()
    return 0 if res.passed else 1


def _image_cmd(args):
    image = build_image(args.kernel, args.bin, args.kernel_image,
                        compress=not args.no_compress,
                        pvh=False if args.bzimage else None)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
    else:
        key = _hash([str(image.base), str(image.bins)])[:16]
        out = CACHE_DIR / 'images' / key
        out.mkdir(parents=True, exist_ok=True)
        _prune(CACHE_DIR / 'images', '*/initrd', 10)
    initrd = image.initrd(out / 'initrd', args.script and resolve_script(args.script))
    kname = 'vmlinuz' if image.boot_kernel == image.kernel.vmlinuz else 'vmlinux'
    shutil.copyfile(image.boot_kernel, out / kname)
    append = DEFAULT_APPEND + (f' daxfile.script={resolve_script(args.script).name}'
                               if args.script else '')
    print(json.dumps({
        'flavour': args.kernel, 'kernel': str(out / kname),
        'kernel_version': image.kernel.kver,
        'kernel_format': ('bzImage' if image.boot_kernel == image.kernel.vmlinuz
                          else 'vmlinux (PVH)'),
        'kernel_source': image.kernel.ident if image.kernel.modroot
        else str(image.kernel.vmlinuz),
        'initrd': str(initrd), 'base': str(image.base),
        'bins': str(image.bins) if image.bins else None,
        'append': append,
        'serial': 'ttyS0 = console, ttyS1 = guest script TAP',
    }, indent=2))
    return 0


def _shell_cmd(args):
    """Interactive boot (console on this terminal), for debugging."""
    image = build_image(args.kernel, args.bin, args.kernel_image,
                        compress=not args.no_compress,
                        pvh=False if args.bzimage else None)
    rundir = Path(tempfile.mkdtemp(prefix='daxfile-vm.'))
    pmems = None
    try:
        pmems = parse_pmems(args.pmem or [''])
        initrd = image.initrd(rundir / 'initrd', None, {})
        argv = qemu_argv(image.boot_kernel, initrd,
                         f'{DEFAULT_APPEND} {" ".join(args.append)}'
                         + (' daxfile.hostroot=1' if args.hostroot else ''),
                         pmems, rundir, args.smp,
                         args.memory or ('2G' if args.hostroot else '1G'))
        if args.hostroot:
            argv += HOSTROOT_QEMU
        # Console on stdio instead of the fifo; TAP channel to a null sink.
        i = argv.index('pipe,id=con,path=' + str(rundir / 'con'))
        argv[i] = 'stdio,id=con,signal=off'
        i = argv.index('pipe,id=tap,path=' + str(rundir / 'tap'))
        argv[i] = 'null,id=tap'
        print('daxfile-vm: guest shell; "poweroff -f" or Ctrl-A X to leave',
              file=sys.stderr)
        return subprocess.call(argv)
    finally:
        for p in pmems or []:
            p.remove()
        shutil.rmtree(rundir, ignore_errors=True)


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(
        prog='daxfile-vm',
        description='Boot Debian kernels under QEMU TCG with emulated NVDIMMs '
                    'and run daxfile guest tests (see tests/vm/README.md).')
    sub = ap.add_subparsers(dest='cmd', required=True)

    def common(p):
        p.add_argument('--kernel', default='6.1',
                       help='kernel flavour: 6.1, 6.12 or daxctl (default 6.1)')
        p.add_argument('--kernel-image', metavar='PATH',
                       help='boot this all-built-in bzImage (no modules)')
        p.add_argument('--bin', action='append', default=[], metavar='PATH',
                       help='copy into /daxfile/bin with its libraries')
        p.add_argument('--no-compress', action='store_true',
                       help='uncompressed base archive (bigger, boots no faster)')
        p.add_argument('--bzimage', action='store_true',
                       help='boot the compressed bzImage, not the PVH vmlinux')

    def boot_opts(p):
        p.add_argument('--pmem', action='append', default=[],
                       metavar='FILE[,size=S][,label=L][,model=M]',
                       help="NVDIMM backing file, created prefilled if missing; "
                            "'none' for no NVDIMM (default: a temporary 1G file)")
        p.add_argument('--append', action='append', default=[], metavar='ARGS',
                       help='extra kernel command line')
        p.add_argument('--smp', type=int, default=1,
                       help='guest CPUs (default 1: under TCG on 2 host cores '
                            'one vCPU boots and runs faster, see README)')
        p.add_argument('--memory', default=None,
                       help='guest RAM (default 1G, 2G with --hostroot)')
        p.add_argument('--hostroot', action='store_true',
                       help="the host's root as the guest's userland (9p, "
                            "read-only, tmpfs overlay)")

    p = sub.add_parser('image', help='build the kernel and initrd, print paths as JSON')
    common(p)
    p.add_argument('--out', metavar='DIR', help='write vmlinuz and initrd here')
    p.add_argument('--script', help='guest script the initrd runs by default')
    p.set_defaults(func=_image_cmd)

    p = sub.add_parser('run', help='boot once, run a guest script, relay its TAP')
    common(p)
    boot_opts(p)
    p.add_argument('--script', required=True,
                   help='tests/vm/guest/NAME.sh (a path or NAME)')
    p.add_argument('--env', action='append', default=[], metavar='K=V',
                   help='exported in the guest before the script runs')
    p.add_argument('--timeout', type=float, default=600,
                   help='hard limit in seconds for the whole boot (default 600)')
    p.add_argument('--serial-log', metavar='FILE',
                   help='write the timestamped serial log here')
    p.add_argument('--tail', type=int, default=60,
                   help='serial lines printed on failure (default 60)')
    p.add_argument('--no-modules', action='store_true',
                   help='skip the insmods (for scripts needing no NVDIMM/ext4/xfs)')
    p.add_argument('--allow-kernel-errors', action='store_true',
                   help='do not fail on Oops/BUG/WARNING console lines')
    p.add_argument('-v', '--verbose', action='store_true',
                   help='copy the guest console to stderr as it arrives')
    p.set_defaults(func=_relay_run)

    p = sub.add_parser('shell', help='interactive guest shell on this terminal')
    common(p)
    boot_opts(p)
    p.set_defaults(func=_shell_cmd)

    args = ap.parse_args(argv)
    # meson's timeout sends SIGTERM: turn it into an exception so that QEMU
    # is killed and temporary files are removed.
    signal.signal(signal.SIGTERM, _sigterm)
    try:
        return args.func(args)
    except Terminated:
        print('daxfile-vm: terminated by SIGTERM', file=sys.stderr)
        return 143
    except VmError as e:
        print(f'daxfile-vm: {e}', file=sys.stderr)
        if args.cmd == 'run':
            tap = _tap()
            tap.ok(False, f'daxfile-vm: set-up failed: {e}')
            tap.done()
        return 1

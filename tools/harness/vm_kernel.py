# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernels of the VM harness: Debian packages, the kernel/ build, PVH vmlinux.

Part of daxfile_vm (the module users import); see its docstring.
"""

import dataclasses
import fcntl
import gzip
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from vm_base import (BUILD_KERNEL, CACHE_DIR, DAXCTL_SERIES, DEBIAN13_ROOT,
                     FLAVOURS, SRC_ROOT, VmError, _Lock, _Memo, _file_key,
                     _hash, _log, _prune, _run)

# --------------------------------------------------------------------------
# Kernels


@dataclasses.dataclass
class Kernel:
    flavour: str
    vmlinuz: Path
    kver: str            # '' for a built-in image (unknown until it boots)
    ident: str           # package_version, or image path + stat
    modroot: Path = None  # root with lib/modules/KVER, None if built in
    # what a --hostroot boot of it runs on: this machine's root, or the
    # Debian 13 root the kernel came from
    userland: Path = Path('/')

    def describe(self):
        if self.modroot:
            return f'{self.kver} ({self.ident})'
        return f'built-in image {self.vmlinuz}'


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
        work = Path(tempfile.mkdtemp(prefix='.fetch-',
                                     dir=CACHE_DIR / 'kernels'))
        try:
            _run(['apt-get', 'download', '-q', '-o', 'APT::Sandbox::User=root',
                  f'{pkg}={version}'], cwd=work)
            debs = list(work.glob('*.deb'))
            if len(debs) != 1:
                raise VmError(f"apt-get download {pkg} left {len(debs)} "
                              ".deb files")
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
            (work / 'kernel.json').write_text(json.dumps(meta, indent=1)
                                              + '\n')
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


# the roots in use by this process: held (a shared flock of <hash>.use,
# as .ci/debian13-root asks) so that its prune leaves them alone
_held_roots = {}


def debian13_root():
    """The Debian 13 root (.ci/debian13-root builds it once, minutes, and
    prints its path), held for this process so that no prune removes it"""
    _log('the Debian 13 root (.ci/debian13-root)')
    res = subprocess.run([str(DEBIAN13_ROOT), '--quiet'],
                         stdout=subprocess.PIPE, text=True)
    root = Path(res.stdout.strip() or '/nonexistent')
    if res.returncode != 0 or not root.is_dir():
        raise VmError(f"'{DEBIAN13_ROOT}' failed (exit status "
                      f"{res.returncode}); its errors are above")
    use = root.parent.with_suffix('.use')
    if root not in _held_roots:
        fd = os.open(use, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _held_roots[root] = fd
    return root


def debian13_kernel():
    """The kernel installed in the Debian 13 root (debian13_root()), with
    that root as its modules' and its --hostroot boots' userland"""
    root = debian13_root()
    moddir, kver = _modules_dir(root)
    vmlinuz = root / 'boot' / f'vmlinuz-{kver}'
    if not vmlinuz.is_file():
        raise VmError(f"the Debian 13 root '{root}' has modules for {kver} "
                      f"but no boot/vmlinuz-{kver}; is linux-image-amd64 "
                      "in .ci/packages.debian13?")
    return Kernel('debian13', vmlinuz, kver,
                  f'debian13-{root.parent.name}_{kver}', root, root)


def get_kernel(flavour, kernel_image=None):
    """Resolve a flavour ('6.1', '6.12', 'daxctl', 'daxctl-6.12',
    'debian13') to a Kernel, fetching it into the cache when needed.
    kernel_image forces a built-in image."""
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
    if flavour == 'debian13':
        return debian13_kernel()
    if flavour not in FLAVOURS:
        raise VmError(f"unknown kernel flavour '{flavour}'; use one of "
                      + ', '.join(FLAVOURS))
    meta_pkg = FLAVOURS[flavour]
    try:
        pkg, version = _apt_kernel_package(meta_pkg)
        meta, d = _fetch_debian_kernel(pkg, version)
    except VmError as e:
        # Offline fallback: the newest cached kernel of this flavour.
        prefix = ('linux-image-6.12' if flavour == '6.12'
                  else 'linux-image-6.1.')
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
    try:
        os.utime(out)           # in use: see _prune
        return out
    except FileNotFoundError:
        pass
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
                elf = gzip.GzipFile(fileobj=io.BytesIO(payload)).read()
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

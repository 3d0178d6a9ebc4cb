# SPDX-License-Identifier: GPL-2.0-or-later
"""Initramfs of the VM harness: guest modules, library closures, the cpio
archives (base, bins, per boot).

Part of daxfile_vm (the module users import); see its docstring.
"""

import gzip
import inspect
import lzma
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from vm_base import (CACHE_DIR, CXL_MODULES, CXL_OPTIONAL, GUEST_DIRS,
                     GUEST_ETC_FILES, GUEST_MODULES, GUEST_TOOLS,
                     GUEST_TOOL_LINKS, HARNESS_DIR, HOSTROOT_MODULES,
                     HOSTROOT_OPTIONAL, MIB, OPTIONAL_MODULES, VmError,
                     _Lock, _Memo, _file_key, _hash, _log, _prune, _run)

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
    ldcache = (_file_key('/etc/ld.so.cache')
               if os.path.exists('/etc/ld.so.cache') else None)
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
                raise VmError(f"'{path}' needs a library that is missing: "
                              f"{line}")
            m = (re.match(r'\S+ => (/\S+)', line) or
                 re.match(r'(/\S+) \(', line))
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
        if not src and not isinstance(data, bytes):
            data = data.encode()
        self.entries[path] = ('file', 0o100000 | mode,
                              str(src) if src else data)

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


def _base_inputs(kernel, tools=None, modules=None):
    """Everything the base archive is made of, with stat keys for caching.
    tools: only these of GUEST_TOOLS (guest paths); None: all of them.
    modules: only these modules (and what they need), loaded in this
    order, and none for a --hostroot or CXL boot; None: GUEST_MODULES, and
    the hostroot and CXL ones (loaded by those boots only)."""
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
    files.update(ldd_closure([files[g] for g, _, _ in GUEST_TOOLS
                              if g in files]))
    for gpath, hpath in GUEST_ETC_FILES:
        if os.path.exists(hpath):
            files[gpath] = hpath
    if not kernel.modroot:
        return files, [], {}
    if modules is not None:
        return files, module_load_list(kernel, modules), {}
    modules = module_load_list(kernel)
    extras, seen = {}, set(modules)
    for name, wanted, optional in (
            ('hostroot', HOSTROOT_MODULES, HOSTROOT_OPTIONAL),
            ('cxl', CXL_MODULES, CXL_OPTIONAL)):
        extras[name] = [m for m in module_load_list(kernel, wanted, optional)
                        if m not in seen]
        seen.update(extras[name])
    return files, modules, extras


def _populate_base(cpio, kernel, files, modules, extras=None):
    """The base archive's files; @extras: {NAME: modules} that guest-init.sh
    loads only for some boots, listed in /etc/daxfile-vm/modules.NAME
    (hostroot: a --hostroot boot; cxl: a boot with a CXL device)"""
    extras = extras or {}
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
            for mod in list(modules) + [m for v in extras.values()
                                        for m in v]:
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
    done = len(modules)
    for name in ('hostroot', 'cxl'):
        mods = load[done:done + len(extras.get(name, []))]
        done += len(mods)
        cpio.add_file(f'etc/daxfile-vm/modules.{name}',
                      data=''.join(f'{m}\n' for m in mods))
    cpio.add_file('etc/daxfile-vm/kernel', data=f'{kernel.kver}\n')


def build_base(kernel, inputs, compress=True, slim=False):
    """The cached base archive: busybox, modules, tools and their libraries
    (@inputs: what _base_inputs(kernel) returned). Keyed by a hash of every
    input (file stats, kernel, the recipe's code)."""
    files, modules, extras = inputs
    key = _hash({
        'recipe': inspect.getsource(_populate_base),
        # A built-in kernel's base does not depend on the kernel at all.
        'kernel': kernel.ident if kernel.modroot else 'built-in',
        'kver': kernel.kver, 'modules': modules, 'extras': extras,
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
        _populate_base(cpio, kernel, files, modules, extras)
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


def _boot_cpio(script, env, shares=()):
    """Per-boot archive: /init, guest-lib, guest scripts, env file, and
    /daxfile/shares/N naming where the host's share daxshareN goes."""
    cpio = Cpio()
    for i, path in enumerate(shares):
        cpio.add_file(f'daxfile/shares/{i}', data=path.encode())
    cpio.add_file('init', src=HARNESS_DIR / 'guest-init.sh', mode=0o755)
    cpio.add_file('daxfile/lib/guest-lib.sh', src=HARNESS_DIR / 'guest-lib.sh',
                  mode=0o644)
    scripts = {}
    for d in GUEST_DIRS:
        for s in d.glob('*.sh'):
            scripts.setdefault(s.name, s)
    for name in sorted(scripts):
        cpio.add_file(f'daxfile/tests/{name}', src=scripts[name], mode=0o755)
    if script is not None:
        cpio.add_file(f'daxfile/tests/{script.name}', src=script, mode=0o755)
    lines = [f'export {k}={shlex.quote(v)}\n' for k, v in env.items()]
    cpio.add_file('daxfile/env', data=''.join(lines))
    return cpio

# SPDX-License-Identifier: GPL-2.0-or-later
"""Booting in the VM harness: QEMU command line, the boot loop with its
serial/TAP relay, BootResult, Image.

Part of daxfile_vm (the module users import); see its docstring.
"""

import dataclasses
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import vm_cpus
from vm_base import (CONSOLE_MARK, DEFAULT_APPEND, GIB, GUEST_DIRS,
                     KERNEL_ERROR_RE, MIB, PANIC_RE, VmError, hostroot_qemu,
                     hostroot_shares, parse_size)
from vm_kernel import Kernel, debian13_root, get_kernel, pvh_vmlinux
from vm_image import _base_inputs, _boot_cpio, build_base, build_bins
from vm_pmem import Pmem

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
    if (line.startswith('#') or not line.strip() or
            line.startswith('TAP version')):
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
    # merged, timestamped
    log: list = dataclasses.field(default_factory=list)
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

    def initrd(self, path, script=None, env=None, shares=()):
        """Write the initrd for one boot: base + bins + per-boot archive
        (shares: the host directories of a --hostroot boot)."""
        boot = _boot_cpio(Path(script) if script else None, env or {},
                          shares)
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
             extra_qemu=(), hostroot=False, cancel=None, shares=()):
        """Boot once and run the guest script (a path, or a NAME of
        NAME.sh in GUEST_DIRS). pmems: list of Pmem; None = one temporary
        prefilled 1 GiB file; [] = no NVDIMM. kill_on: regex; SIGKILL QEMU
        as soon as a guest line (console or TAP) matches it. modules=False
        skips the insmods (no ext4/xfs/nvdimm on modular kernels; saves
        about 2 s). hostroot: the guest's userland is the host's own root,
        read-only over 9p under a tmpfs overlay (switch_root), so python3,
        the build tree and the host's tools are there; the script runs
        with the host's /bin/sh (a 'debian13' kernel's: that root's, with
        AppArmor); shares: more host directories it gets at their own
        paths, read-only (see hostroot_shares()). cancel: a
        threading.Event that kills QEMU when set (a boot run beside
        another, from another thread). Returns a BootResult."""
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
            shares = hostroot_shares(env, shares) if hostroot else []
            initrd = self.initrd(rundir / 'initrd', script, env, shares)
            root_append, root_qemu = (
                hostroot_args(self.kernel, shares,
                              'pcie.0' if is_cxl(pmems) else None)
                if hostroot else ('', []))
            cmdline = (f'{DEFAULT_APPEND} daxfile.script={script.name}'
                       f'{"" if modules else " daxfile.modules=0"}'
                       f'{" daxfile.cxl=1" if is_cxl(pmems) else ""}'
                       f'{root_append} {append}')
            memory = memory or ('2G' if hostroot else '1G')
            argv = qemu_argv(self.boot_kernel, initrd, cmdline, pmems,
                             rundir, smp, memory) + list(extra_qemu)
            argv += root_qemu
            setup = time.monotonic() - t0
            # the cores its vCPUs run on, beside other tests' guests (the
            # wait is not the boot's: its timeout starts after it)
            vm_cpus.hold(smp)
            res = _QemuRun(argv, rundir, RunSpec(
                timeout, kill_on, on_tap, on_console, serial_log,
                allow_kernel_errors, cancel)).run()
            res.setup_time = setup
            return res
        finally:
            if tmp_pmem:
                tmp_pmem.remove()
            shutil.rmtree(rundir, ignore_errors=True)


def hostroot_args(kernel, shares, bus=None):
    """(kernel command line words, QEMU arguments) of a --hostroot boot of
    @kernel: its userland over 9p, @shares (on PCI bus @bus, see
    hostroot_qemu()); on a userland with AppArmor (the Debian 13 root)
    daxfile.apparmor=1 has guest-init.sh load its profiles as Debian's
    apparmor.service does"""
    words = ' daxfile.hostroot=1'
    if kernel.userland != Path('/') and \
            (kernel.userland / 'usr/sbin/apparmor_parser').exists():
        words += ' daxfile.apparmor=1'
    return words, hostroot_qemu(shares, kernel.userland, bus)


def guest_script(name):
    """NAME.sh in the first of GUEST_DIRS that has it (else in the first)"""
    for d in GUEST_DIRS:
        p = d / f'{name}.sh'
        if p.exists():
            return p
    return GUEST_DIRS[0] / f'{name}.sh'


def resolve_script(script):
    p = Path(script)
    if not p.suffix and not p.exists():
        p = guest_script(script)
    if not p.is_file():
        raise VmError(f"guest script '{script}' does not exist")
    return p.resolve()


def build_image(kernel='6.1', bins=(), kernel_image=None, compress=True,
                pvh=None, tools=None, modules=None):
    """Resolve/fetch the kernel and build (or reuse) the cached archives.
    pvh: boot the uncompressed vmlinux through PVH when the kernel allows
    it (default; DAXFILE_VM_BOOT=bzimage or pvh=False boots the bzImage).
    tools: a slim image with only these GUEST_TOOLS (guest paths), for a
    guest nested under TCG, where every MiB of initramfs costs about a
    second of its boot. modules: a slim image's modules (see
    _base_inputs()), for the same reason."""
    k = (kernel if isinstance(kernel, Kernel)
         else get_kernel(kernel, kernel_image))
    if pvh is None:
        pvh = os.environ.get('DAXFILE_VM_BOOT', 'pvh') != 'bzimage'
    boot_kernel = (pvh_vmlinux(k.vmlinuz) if pvh else None) or k.vmlinuz
    # The bins archive stays uncompressed: it is rebuilt whenever a project
    # binary changes, and gzip of a libvirt-linked closure (65 MiB) costs
    # about 4 s on the host while the guest unpacks it no faster.
    inputs = _base_inputs(k, tools, modules)
    slim = tools is not None or modules is not None
    return Image(k, build_base(k, inputs, compress, slim),
                 build_bins(list(bins), False, inputs[0]), boot_kernel)


def qemu_argv(vmlinuz, initrd, cmdline, pmems, rundir, smp=1, memory='1G'):
    """QEMU's command line of one boot: Debian 12's QEMU, or Debian 13's
    (qemu_command()) for a CXL device; the machine and pmem devices
    (pmem_argv()); two serial ports through fifos in @rundir"""
    argv = qemu_command(pmems) + [
        '-nodefaults', '-no-user-config',
        '-accel', 'tcg,thread=multi', '-cpu', 'max', '-smp', str(smp),
        '-display', 'none', '-vga', 'none', '-no-reboot',
        '-kernel', str(vmlinuz), '-initrd', str(initrd),
        '-append', cmdline]
    argv += pmem_argv(pmems, parse_size(memory))
    # ttyS0: kernel console and harness messages; ttyS1: the script's TAP.
    for name in ('con', 'tap'):
        fifo_base = rundir / name
        for suffix in ('.in', '.out'):
            os.mkfifo(f'{fifo_base}{suffix}', 0o600)
        argv += ['-chardev', f'pipe,id={name},path={fifo_base}',
                 '-device', f'isa-serial,chardev={name}']
    return argv


def is_cxl(pmems):
    """True if @pmems are CXL devices (then they are all CXL)"""
    models = {p.model for p in pmems or []}
    if 'cxl' in models and (len(models) > 1 or len(pmems) > 1):
        raise VmError("a CXL pmem device is the boot's only pmem device")
    return models == {'cxl'}


def qemu_command(pmems):
    """The QEMU to run: this machine's, or for a CXL device Debian 13's
    QEMU 10 (Debian 12's 7.2 creates the region but its data path is dead:
    reads give zeros, writes never reach the backing file), run from the
    Debian 13 root (.ci/debian13-root) through that root's own loader and
    libraries; nothing of it is installed here"""
    if not is_cxl(pmems):
        return ['qemu-system-x86_64']
    root = debian13_root()
    lib = root / 'usr/lib/x86_64-linux-gnu'
    return ['env', f'QEMU_MODULE_DIR={lib / "qemu"}',
            str(root / 'usr/lib64/ld-linux-x86-64.so.2'),
            '--library-path', str(lib),
            str(root / 'usr/bin/qemu-system-x86_64'),
            '-L', str(root / 'usr/share/qemu'),
            '-L', str(root / 'usr/share/seabios')]


def pmem_argv(pmems, mem):
    """The machine, its memory and the pmem devices: NVDIMMs and
    virtio-pmem on 'pc', a CXL device on 'q35,cxl=on' (cxl_argv())"""
    if not pmems:
        return ['-machine', 'pc', '-m', f'{mem // MIB}M']
    if is_cxl(pmems):
        return cxl_argv(pmems[0], mem)
    total = sum(-(-p.size // GIB) * GIB for p in pmems)
    argv = ['-machine', 'pc,nvdimm=on',
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
    return argv


def cxl_argv(pmem, mem):
    """One CXL type-3 persistent memory device (QEMU's
    docs/system/devices/cxl.rst): a CXL host bridge (pxb-cxl) on pcie.0,
    one root port, the device with its backing file and its LSA file, and
    a fixed memory window of 4 GiB (a multiple of 256 MiB) over the host
    bridge, where the guest's `cxl create-region` maps it"""
    window = max(4 * GIB, -(-pmem.size // GIB) * GIB)
    return [
        '-machine', 'q35,cxl=on',
        '-m', f'{mem // MIB}M,slots=4,maxmem={(mem + window) // MIB}M',
        '-object', f'memory-backend-file,id=cxl-mem0,share=on,'
                   f'mem-path={pmem.path},size={pmem.size}',
        '-object', f'memory-backend-file,id=cxl-lsa0,share=on,'
                   f'mem-path={pmem.lsa_path},size={pmem.label_size}',
        '-device', 'pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1',
        '-device', 'cxl-rp,port=0,bus=cxl.1,id=cxl-rp0,chassis=0,slot=2',
        '-device', 'cxl-type3,bus=cxl-rp0,persistent-memdev=cxl-mem0,'
                   'lsa=cxl-lsa0,id=cxl-pmem0',
        '-M', f'cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size={window // MIB}M']


class _Stream:
    def __init__(self, name, fd):
        self.name, self.fd, self.buf = name, fd, b''


@dataclasses.dataclass
class RunSpec:
    """How one QEMU run is watched (Image.boot's arguments)"""
    timeout: float
    kill_on: str = None         # a regex: SIGKILL QEMU at a matching line
    on_tap: object = None       # callable(kind, val, text) per TAP line
    on_console: object = None   # callable(text) per console line
    serial_log: str = None      # every line, timestamped, to this file
    allow_kernel_errors: bool = False
    cancel: object = None       # a threading.Event that kills QEMU


class _QemuRun:
    """One QEMU process and its three outputs (console, TAP, QEMU's own),
    read into a BootResult as they come"""

    def __init__(self, argv, rundir, spec):
        self.argv, self.rundir, self.spec = argv, rundir, spec
        self.res = BootResult(allow_kernel_errors=spec.allow_kernel_errors)
        self.kill_re = re.compile(spec.kill_on) if spec.kill_on else None
        self.streams = []
        self.logf = None
        self.proc = None
        self.t0 = None

    def line_in(self, stream, text, now):
        res = self.res
        stamp = f'[{now:8.3f} {stream}] {text}'
        res.log.append(stamp)
        if self.logf:
            self.logf.write(stamp + '\n')
            self.logf.flush()
        if stream == 'tap':
            self._tap_line(text)
        else:
            self._console_line(stream, text, now)
        if (self.kill_re and not res.killed_on_marker and
                self.kill_re.search(text)):
            res.killed_on_marker = text
            self.proc.kill()

    def _tap_line(self, text):
        res = self.res
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
        if self.spec.on_tap:
            self.spec.on_tap(kind, val, text)

    def _console_line(self, stream, text, now):
        res = self.res
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
            self._marker(text, text[i + len(CONSOLE_MARK):].split(), i, now)
        if self.spec.on_console:
            self.spec.on_console(text)

    def _marker(self, text, words, i, now):
        res = self.res
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

    def pump(self, s, final=False):
        while True:
            try:
                chunk = os.read(s.fd, 65536)
            except BlockingIOError:
                chunk = b''
            if not chunk:
                break
            s.buf += chunk
            *lines, s.buf = s.buf.split(b'\n')
            now = time.monotonic() - self.t0
            for raw in lines:
                text = raw.decode('utf-8', 'replace').rstrip('\r')
                self.line_in(s.name, text, now)
        if final and s.buf:
            self.line_in(s.name, s.buf.decode('utf-8', 'replace').rstrip('\r'),
                         time.monotonic() - self.t0)
            s.buf = b''

    def _open(self, sel):
        for name in ('con', 'tap'):
            # O_RDWR: opening never blocks and we never see a spurious EOF;
            # the end of the run is QEMU's exit, after which the fifo is
            # drained.
            fd = os.open(self.rundir / f'{name}.out',
                         os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            self.streams.append(_Stream(name, fd))
        if self.spec.serial_log:
            self.logf = open(self.spec.serial_log, 'w')
            self.res.serial_log_path = str(self.spec.serial_log)
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.streams.append(_Stream('qemu', self.proc.stdout.fileno()))
        for s in self.streams:
            sel.register(s.fd, selectors.EVENT_READ, s)

    def _wait(self, sel):
        res, proc, spec = self.res, self.proc, self.spec
        while proc.poll() is None:
            left = self.t0 + spec.timeout - time.monotonic()
            if left <= 0:
                res.timed_out = True
                proc.kill()
                break
            if spec.cancel is not None and spec.cancel.is_set():
                res.cancelled = True
                proc.kill()
                break
            for key, _ in sel.select(min(left, 0.5)):
                self.pump(key.data)
        proc.wait()
        for s in self.streams:
            self.pump(s, final=True)

    def run(self):
        sel = selectors.DefaultSelector()
        try:
            self._open(sel)
            self._wait(sel)
        finally:
            if self.proc and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            sel.close()
            for s in self.streams[:2]:
                os.close(s.fd)
            if self.proc:
                self.proc.stdout.close()
            if self.logf:
                self.logf.close()
        self.res.qemu_rc = self.proc.returncode
        self.res.duration = time.monotonic() - self.t0
        return self.res

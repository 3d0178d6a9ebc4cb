# SPDX-License-Identifier: GPL-2.0-or-later
"""The daxfile-vm command line (run, image, shell).

Part of daxfile_vm (the module users import); see its docstring.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vm_base import (CACHE_DIR, DEFAULT_APPEND, Terminated, VmError, _hash,
                     _prune, _sigterm, hostroot_shares)
from vm_pmem import parse_pmems
from vm_boot import (build_image, hostroot_args, is_cxl, qemu_argv,
                     resolve_script)

# --------------------------------------------------------------------------
# Command line


def _tap():
    """daxtap.Tap (daxtest.Tap in the tests), the one Python TAP emitter"""
    import daxtap
    return daxtap.Tap()


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
    booted = ('bzImage' if image.boot_kernel == image.kernel.vmlinuz
              else 'PVH vmlinux')
    tap.diag(f'daxfile-vm: kernel {image.kernel.describe()}, script '
             f'{script.name}, booting {booted}')
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
                         hostroot=args.hostroot, shares=args.share)
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
    name = (f'daxfile-vm: {script.stem} on {args.kernel}: guest ran to '
            'completion')
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
        where = (f'\nfull serial log: {args.serial_log}'
                 if args.serial_log else '')
        print(f'daxfile-vm: {script.stem} on {args.kernel} FAILED\n'
              + res.report(args.tail) + where, file=sys.stderr, flush=True)
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
    script = args.script and resolve_script(args.script)
    initrd = image.initrd(out / 'initrd', script)
    bz = image.boot_kernel == image.kernel.vmlinuz
    kname = 'vmlinuz' if bz else 'vmlinux'
    shutil.copyfile(image.boot_kernel, out / kname)
    append = DEFAULT_APPEND + (f' daxfile.script={script.name}'
                               if script else '')
    print(json.dumps({
        'flavour': args.kernel, 'kernel': str(out / kname),
        'kernel_version': image.kernel.kver,
        'kernel_format': 'bzImage' if bz else 'vmlinux (PVH)',
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
        shares = (hostroot_shares(os.environ, args.share) if args.hostroot
                  else [])
        cxl = is_cxl(pmems)
        root_append, root_qemu = (
            hostroot_args(image.kernel, shares, 'pcie.0' if cxl else None)
            if args.hostroot else ('', []))
        initrd = image.initrd(rundir / 'initrd', None, {}, shares)
        argv = qemu_argv(image.boot_kernel, initrd,
                         f'{DEFAULT_APPEND} {" ".join(args.append)}'
                         + (' daxfile.cxl=1' if cxl else '') + root_append,
                         pmems, rundir, args.smp,
                         args.memory or ('2G' if args.hostroot else '1G'))
        argv += root_qemu
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
        description='Boot Debian kernels under QEMU TCG with emulated '
                    'NVDIMMs and run daxfile guest tests (see '
                    'tools/harness/README.md).')
    sub = ap.add_subparsers(dest='cmd', required=True)

    def common(p):
        p.add_argument('--kernel', default='6.1',
                       help='kernel flavour: 6.1, 6.12 or daxctl (default '
                            '6.1)')
        p.add_argument('--kernel-image', metavar='PATH',
                       help='boot this all-built-in bzImage (no modules)')
        p.add_argument('--bin', action='append', default=[], metavar='PATH',
                       help='copy into /daxfile/bin with its libraries')
        p.add_argument('--no-compress', action='store_true',
                       help='uncompressed base archive (bigger, boots no '
                            'faster)')
        p.add_argument('--bzimage', action='store_true',
                       help='boot the compressed bzImage, not the PVH vmlinux')

    def boot_opts(p):
        p.add_argument('--pmem', action='append', default=[],
                       metavar='FILE[,size=S][,label=L][,model=M]',
                       help="NVDIMM backing file, created prefilled if "
                            "missing; 'none' for no NVDIMM (default: a "
                            "temporary 1G file); model=virtio-pmem, or "
                            "model=cxl: a CXL type-3 persistent device "
                            "(Debian 13's QEMU, FILE.lsa its label area)")
        p.add_argument('--append', action='append', default=[], metavar='ARGS',
                       help='extra kernel command line')
        p.add_argument('--smp', type=int, default=1,
                       help='guest CPUs (default 1: under TCG on 2 host cores '
                            'one vCPU boots and runs faster, see README)')
        p.add_argument('--memory', default=None,
                       help='guest RAM (default 1G, 2G with --hostroot)')
        p.add_argument('--hostroot', action='store_true',
                       help="the host's root as the guest's userland (9p, "
                            "read-only, tmpfs overlay; --kernel debian13: "
                            "the Debian 13 root)")
        p.add_argument('--share', action='append', default=[],
                       metavar='DIR', help='with --hostroot: a host '
                       'directory the guest gets at its own path too '
                       '(read-only, tmpfs overlay)')

    p = sub.add_parser('image', help='build the kernel and initrd, print '
                       'paths as JSON')
    common(p)
    p.add_argument('--out', metavar='DIR',
                   help='write vmlinuz and initrd here')
    p.add_argument('--script', help='guest script the initrd runs by default')
    p.set_defaults(func=_image_cmd)

    p = sub.add_parser('run', help='boot once, run a guest script, relay '
                       'its TAP')
    common(p)
    boot_opts(p)
    p.add_argument('--script', required=True,
                   help='a path, or NAME: NAME.sh in the guest script '
                        'directories (GUEST_DIRS: the harness\'s guest/ and '
                        'those its caller adds)')
    p.add_argument('--env', action='append', default=[], metavar='K=V',
                   help='exported in the guest before the script runs')
    p.add_argument('--timeout', type=float, default=600,
                   help='hard limit in seconds for the whole boot '
                        '(default 600)')
    p.add_argument('--serial-log', metavar='FILE',
                   help='write the timestamped serial log here')
    p.add_argument('--tail', type=int, default=60,
                   help='serial lines printed on failure (default 60)')
    p.add_argument('--no-modules', action='store_true',
                   help='skip the insmods (for scripts needing no '
                        'NVDIMM/ext4/xfs)')
    p.add_argument('--allow-kernel-errors', action='store_true',
                   help='do not fail on Oops/BUG/WARNING console lines')
    p.add_argument('-v', '--verbose', action='store_true',
                   help='copy the guest console to stderr as it arrives')
    p.set_defaults(func=_relay_run)

    p = sub.add_parser('shell',
                       help='interactive guest shell on this terminal')
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

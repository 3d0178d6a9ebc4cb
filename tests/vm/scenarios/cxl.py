#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""cxl: daxfile on an emulated CXL type-3 persistent memory device (issue
40): xfs and ext4 mounted -o dax on an fsdax namespace of a CXL region,
the static-mode checks of the NVDIMM tests on each, and a crash on each:
stores through the MAP_SYNC mapping of a static file, a SIGKILL of QEMU,
and the next boot finding the file still static and the data intact.

Only Debian 13's QEMU 10 gives a CXL device a working data path (Debian
12's 7.2 creates the region, then reads zeros and writes nothing), so the
boots run it from the Debian 13 root (.ci/debian13-root) through that
root's loader; the guest is Debian 12's 6.1 with -cpu max (6.12 wants
hypervisor=off to commit a region). Three boots on one device, the guest
script tests/vm/guest/cxl.sh:
  1. the xfs suite, then the crash file: SIGKILL
  2. xfs after the crash; the ext4 suite, then the crash file: SIGKILL
  3. ext4 after the crash; then the region in devdax mode: its medium,
     and the hook's device-dax validation (issue 40 part 4)
Each suite also checks that status and list name the medium (issue 40
part 3) and that daxfile-guest check recognises the CXL region. Every
guest check is relayed as a test point of its own.

Usage: cxl.py [--kernel 6.1] --bin daxfile --bin daxfile-consumer
              --bin daxfile-layout-ops --bin daxfile-guest
              --bin daxfile-hook [--log-dir DIR]
Prints TAP. Needs root, like the other VM tests (tests/vm/README.md).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import daxfile_vm as vm
import daxtest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))

vm.add_guest_dir(os.path.join(HERE, '..', 'guest'))

SCRIPT = 'cxl'
KILL = r'^# DAXFILE-CXL-KILL-POINT$'
# (filesystem verified after the previous boot's crash, suite run here,
# devdax checks after them)
BOOTS = ((None, 'xfs', None), ('xfs', 'ext4', None), ('ext4', None, '1'))
# xfs wants a 64 MiB log for su=2m: 512 MiB is too small
SIZE = '1G'


def qemu_version(tap, pmem):
    """The QEMU a CXL boot runs is Debian 13's 10.x"""
    argv = vm.qemu_command([pmem]) + ['--version']
    res = subprocess.run(argv, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    first = (res.stdout.splitlines() or [''])[0]
    return tap.ok(res.returncode == 0 and 'version 10.' in first,
                  f'a CXL boot runs Debian 13\'s QEMU 10: {first}',
                  res.stdout)


def boot(tap, image, pmem, n, steps, args):
    """One boot: its guest checks as test points, then whether the boot
    ended as it must (at the kill point after a suite, cleanly without)"""
    verify, suite, devdax = steps
    env = {k: v for k, v in (('CXL_VERIFY', verify), ('CXL_SUITE', suite),
                             ('CXL_DEVDAX', devdax)) if v}
    log = (os.path.join(args.log_dir, f'vm-cxl.{n}.serial.log')
           if args.log_dir else None)
    r = image.boot(SCRIPT, pmems=[pmem], env=env, timeout=args.timeout,
                   serial_log=log, kill_on=KILL if suite else None)
    for line in r.tap:
        kind, val = vm.classify_tap(line)
        if kind == 'test':
            tap.ok(not val.failed, f'boot {n}: {val.name}', val.line)
        elif kind == 'comment' and line.startswith('#'):
            tap.diag(f'  guest: {line[1:].strip()}')
    if suite:
        return tap.ok(r.killed_on_marker is not None and r.qemu_rc == -9 and
                      not r.failed_tests and not r.problems,
                      f'boot {n}: QEMU SIGKILLed at the kill point',
                      r.report(40))
    return tap.ok(r.passed, f'boot {n}: ran to completion', r.report(40))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kernel', default='6.1')
    ap.add_argument('--bin', action='append', required=True,
                    help='daxfile and the test helpers for the guest')
    ap.add_argument('--timeout', type=float, default=300,
                    help='per boot, seconds')
    ap.add_argument('--log-dir', help='write each boot\'s serial log here')
    args = ap.parse_args()
    tap = daxtest.Tap()
    if os.geteuid() != 0:
        tap.skip_all('needs root (QEMU, like every VM test)')
    try:
        image = vm.build_image(args.kernel, args.bin)
    except vm.VmError as e:
        tap.ok(False, f'build the {args.kernel} image', str(e))
        return tap.done()
    tap.diag(f'kernel {image.kernel.describe()}')
    with tempfile.TemporaryDirectory(prefix='daxfile-cxl.',
                                     dir=vm.default_tmpdir()) as d:
        pmem = vm.Pmem.create(os.path.join(d, 'cxl.img'), SIZE, model='cxl')
        if qemu_version(tap, pmem):
            for n, steps in enumerate(BOOTS, 1):
                if not boot(tap, image, pmem, n, steps, args):
                    break
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())

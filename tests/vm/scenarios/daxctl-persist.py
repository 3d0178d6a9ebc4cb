#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daxctl-persist: on the daxctl() kernel, what a guest stores through a
plain shared mapping of a static file (no MAP_SYNC, no msync, no fsync) is
in the file after QEMU is SIGKILLed, on ext4 and on xfs.

A static file's write faults are served from its frozen block map and
start no journal handle or transaction (kernel/README.md, "Fault path"),
so there is no metadata to lose: the boot after the SIGKILL mounts the
filesystem (its log replays) and finds every byte. One NVDIMM, two boots
per filesystem: write (killed at "# DAXCTL-KILL-POINT"), verify.

Usage: daxctl-persist.py [--kernel daxctl|daxctl-6.12]
                         --bin build/kernel/daxctl-test [--kernel-image P]
Prints TAP. Needs root, like the other VM tests (tests/vm/README.md).
"""

import argparse
import os
import sys
import tempfile

import daxfile_vm as vm
import daxtest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))

vm.add_guest_dir(os.path.join(HERE, '..', 'guest'))

SCRIPT = 'daxctl-persist'
KILL = r'^# DAXCTL-KILL-POINT$'
FILESYSTEMS = ('ext4', 'xfs')


def boot(tap, image, pm, fs, step, seed, args):
    log = None
    if args.log_dir:
        log = os.path.join(args.log_dir,
                           f'vm-{args.kernel}-persist.{fs}-{step}.serial.log')
    kill = step == 'write'
    r = image.boot(SCRIPT, pmems=[pm], timeout=args.timeout, serial_log=log,
                   env={'STEP': step, 'FS': fs, 'SEED': str(seed)},
                   kill_on=KILL if kill else None)
    for line in r.tap:
        if line.startswith('#'):
            tap.diag(f'  guest: {line[1:].strip()}')
    if kill:
        tap.ok(r.killed_on_marker is not None and r.qemu_rc == -9 and
               not r.failed_tests and not r.kernel_errors,
               f'{fs}: seed {seed} stored through a mapping of a static '
               f'file, then SIGKILL of QEMU', r.report(40))
    else:
        tap.ok(r.passed, f'{fs}: after the SIGKILL the file holds seed '
               f'{seed}', r.report(40))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kernel', default='daxctl',
                    help='daxctl (the 6.1 series) or daxctl-6.12')
    ap.add_argument('--bin', action='append', required=True,
                    help='daxctl-test (and anything else for the guest)')
    ap.add_argument('--kernel-image', help='the daxctl() bzImage (default: '
                    'what kernel/build-kernel prints)')
    ap.add_argument('--timeout', type=float, default=300,
                    help='per boot, seconds')
    ap.add_argument('--log-dir', help='write each boot\'s serial log here')
    args = ap.parse_args()
    tap = daxtest.Tap()
    if os.geteuid() != 0:
        tap.skip_all('needs root (QEMU, like every VM test)')
    tap.plan(2 * len(FILESYSTEMS))
    try:
        image = vm.build_image(args.kernel, args.bin,
                               kernel_image=args.kernel_image)
    except vm.VmError as e:
        tap.ok(False, f'build the {args.kernel} image', str(e))
        return tap.done()
    tap.diag(f'kernel {image.kernel.describe()}')
    with tempfile.TemporaryDirectory(prefix='daxfile-daxctl-persist.',
                                     dir=vm.default_tmpdir()) as d:
        pm = vm.Pmem.create(os.path.join(d, 'pmem.img'), '1G')
        for i, fs in enumerate(FILESYSTEMS):
            seed = 61 + i
            boot(tap, image, pm, fs, 'write', seed, args)
            boot(tap, image, pm, fs, 'verify', seed, args)
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())

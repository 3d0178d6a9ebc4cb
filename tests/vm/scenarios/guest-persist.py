#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""guest-persist: data written by `daxfile-guest write` survives a power
off, a flipped byte in the host backing file is named by `verify`, data
flushed before a SIGKILL of QEMU is in the host file, and a writer killed
before its commit record is reported as an interrupted write. fsdax (ext4,
FIEMAP) and device-dax, each on its own backing file.

Where does guest file offset X live in the host backing file? The guest
answers with `daxfile-guest locate`: FIEMAP gives the offset on /dev/pmemN;
libndctl gives the physical address where the fsdax (pfn) or device-dax
data starts and where the region starts; for a QEMU NVDIMM the region is
the backing file from offset 0 (a label area sits at the end), so the
region offset is the file offset. The host checks that claim before using
it: the 16 bytes the guest reads at X must be the 16 bytes at that file
offset. Then it flips one byte there between boots and expects verify to
name exactly offset X.

Usage: guest-persist.py [--kernel 6.1] --bin build/guest-tools/daxfile-guest
Prints TAP. Needs root, like the other VM tests (tests/vm/README.md).
"""

import argparse
import os
import re
import sys
import tempfile

import daxfile_vm as vm
import daxtest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))

vm.add_guest_dir(os.path.join(HERE, '..', 'guest'))

SCRIPT = 'guest-persist'
KILL = r'^# DAXFILE-GUEST-KILL-POINT$'
FSDAX_OFFSET = 0x9a5064   # inside a later 2 MiB chunk of the 16 MiB file
DEVDAX_OFFSET = 0x7b3021


class Scenario:
    def __init__(self, tap, image, timeout, log_dir=None, kernel=''):
        self.tap = tap
        self.image = image
        self.timeout = timeout
        self.log_dir = log_dir
        self.kernel = kernel
        self.boots = 0

    def boot(self, pmem, name, kill=False, **env):
        env = {k.upper(): str(v) for k, v in env.items()}
        self.boots += 1
        log = None
        if self.log_dir:
            log = os.path.join(self.log_dir, f'vm-{self.kernel}-guest-persist.'
                               f'{self.boots:02d}-{env["STEP"]}.serial.log')
        r = self.image.boot(SCRIPT, pmems=[pmem], env=env,
                            timeout=self.timeout, serial_log=log,
                            kill_on=KILL if kill else None)
        for line in r.tap:
            if line.startswith('#'):
                self.tap.diag(f'  guest: {line[1:].strip()}')
        if kill:
            good = (r.killed_on_marker is not None and r.qemu_rc == -9 and
                    not r.failed_tests and not r.kernel_errors)
            self.tap.ok(good, f'{name} (QEMU SIGKILLed at the kill point)',
                        r.report(40))
        else:
            self.tap.ok(r.passed, name, r.report(40))
        return r

    def located(self, r, what):
        """(region, region_offset, bytes) the guest reported."""
        region = off = data = None
        for line in r.tap:
            m = re.match(r'# locate region=(\S+) region_offset=(\d+)$', line)
            if m:
                region, off = m.group(1), int(m.group(2))
            m = re.match(r'# bytes ([0-9a-f]{32})$', line)
            if m:
                data = bytes.fromhex(m.group(1))
        self.tap.ok(region is not None, f'{what}: the guest located the '
                    f'offset ({region} offset {off})')
        return region, off, data


def read_at(path, off, n):
    with open(path, 'rb') as f:
        f.seek(off)
        return f.read(n)


def flip(path, off):
    with open(path, 'r+b') as f:
        f.seek(off)
        b = f.read(1)[0]
        f.seek(off)
        f.write(bytes([b ^ 0x01]))
    return b


def unflip(path, off, b):
    with open(path, 'r+b') as f:
        f.seek(off)
        f.write(bytes([b]))


def fsdax(s, pm):
    tap = s.tap
    r = s.boot(pm, 'fsdax: mkfs, write seed 42, verify, locate',
               step='fsdax-write', seed=42, offset=FSDAX_OFFSET)
    region, off, data = s.located(r, 'fsdax')
    if off is None:
        return
    host = read_at(pm.path, off, 16)
    tap.ok(data is not None and host == data,
           f'fsdax: the host file holds at 0x{off:x} the 16 bytes the guest '
           f'reads at offset 0x{FSDAX_OFFSET:x}',
           f'guest: {data.hex() if data else None}\nhost:  {host.hex()}')
    s.boot(pm, 'fsdax: power off and boot again: verify passes',
           step='fsdax-verify', seed=42, offset=FSDAX_OFFSET, want='ok')
    old = flip(pm.path, off)
    s.boot(pm, f'fsdax: host flipped the byte at 0x{off:x}: verify fails '
               f'naming offset 0x{FSDAX_OFFSET:x}',
           step='fsdax-verify', seed=42, offset=FSDAX_OFFSET, want='corrupt')
    unflip(pm.path, off, old)
    s.boot(pm, 'fsdax: write seed 43, then SIGKILL of QEMU', kill=True,
           step='fsdax-kill', seed=43, offset=FSDAX_OFFSET)
    s.boot(pm, 'fsdax: after the SIGKILL: verify seed 43 passes',
           step='fsdax-verify', seed=43, offset=FSDAX_OFFSET, want='ok')
    s.boot(pm, 'fsdax: writer killed before its commit, then SIGKILL of '
               'QEMU', kill=True,
           step='fsdax-interrupt', seed=44, offset=FSDAX_OFFSET)
    s.boot(pm, 'fsdax: after that: verify reports an interrupted write',
           step='fsdax-verify', seed=44, offset=FSDAX_OFFSET,
           want='interrupted')


def devdax(s, pm):
    r = s.boot(pm, 'devdax: write seed 7, verify, locate',
               step='devdax-write', seed=7, offset=DEVDAX_OFFSET)
    region, off, _ = s.located(r, 'devdax')
    if off is None:
        return
    s.boot(pm, 'devdax: power off and boot again: verify passes',
           step='devdax-verify', seed=7, offset=DEVDAX_OFFSET, want='ok')
    flip(pm.path, off)
    s.boot(pm, f'devdax: host flipped the byte at 0x{off:x}: verify fails '
               f'naming offset 0x{DEVDAX_OFFSET:x}',
           step='devdax-verify', seed=7, offset=DEVDAX_OFFSET, want='corrupt')


# every Scenario.boot and located() is one test point
PLAN = 13


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kernel', default='6.1')
    ap.add_argument('--bin', action='append', required=True,
                    help='daxfile-guest (and anything else for the guest)')
    ap.add_argument('--timeout', type=float, default=300,
                    help='per boot, seconds')
    ap.add_argument('--log-dir', help='write each boot\'s serial log here')
    args = ap.parse_args()
    tap = daxtest.Tap()
    if os.geteuid() != 0:
        tap.skip_all('needs root (QEMU, like every VM test)')
    # the interrupted write (DAXFILE_TEST_CRASH) needs the test seams
    daxtest.require_seams(*[b for b in args.bin
                            if os.path.basename(b) == 'daxfile-guest'])
    tap.plan(PLAN)
    try:
        image = vm.build_image(args.kernel, args.bin)
    except vm.VmError as e:
        tap.ok(False, f'build the {args.kernel} image', str(e))
        return tap.done()
    tap.diag(f'kernel {image.kernel.describe()}')
    s = Scenario(tap, image, args.timeout, args.log_dir, args.kernel)
    with tempfile.TemporaryDirectory(prefix='daxfile-guest-persist.',
                                     dir=vm.default_tmpdir()) as d:
        tap.subtest('fsdax', fsdax, s, vm.Pmem.create(
            os.path.join(d, 'fsdax.img'), '1G'))
        tap.subtest('devdax', devdax, s, vm.Pmem.create(
            os.path.join(d, 'devdax.img'), '1G'))
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())

# SPDX-License-Identifier: GPL-2.0-or-later
"""Real-DAX VM harness: Debian kernels under QEMU TCG with emulated NVDIMMs.

The command-line front end is the vm suite's daxfile-vm; this module is
what it runs, and what host-side multi-boot scenarios, the libvirt harness
(libvirt_env), bench/ and tools/quickstart.py import:

    import daxfile_vm as vm
    image = vm.build_image('6.1', bins=['build/src/daxfilectl/daxfile'])
    pmem = vm.Pmem.create('/var/tmp/x.img', '1G')      # kept between boots
    r = image.boot('smoke', pmems=[pmem])    # NAME.sh in GUEST_DIRS
    assert r.passed, r.report()
    r = image.boot('mine.sh', pmems=[pmem], kill_on=r'^CRASH-NOW$')
    assert r.killed_on_marker

Stdlib only. See README.md here for the design and the measurements.

The harness is split along its seams (vm_base: paths, cache, errors,
logging; vm_kernel: kernels; vm_image: initramfs archives; vm_pmem:
backing files; vm_boot: QEMU, the boot loop, TAP; vm_cli: the daxfile-vm
command line); this module re-exports what its users call (__all__), and
an assignment to one of those names here (`vm.QUIET = True`) reaches the
module that reads it.
"""

import sys
import types

import vm_base
import vm_boot
import vm_cli
import vm_cpus
import vm_image
import vm_kernel
import vm_pmem
from vm_base import (BUILD_KERNEL, CACHE_DIR, CONSOLE_MARK, DAXCTL_SERIES,
                     DEFAULT_APPEND, FLAVOURS, GUEST_DIR, GUEST_DIRS, QUIET,
                     VmError, add_guest_dir, emulated_host_cpus,
                     hostroot_shares)
from vm_boot import (build_image, classify_tap, guest_script, qemu_command,
                     resolve_script)
from vm_cli import main
from vm_pmem import Pmem, default_tmpdir

hold_cpus = vm_cpus.hold

__all__ = ["BUILD_KERNEL", "CACHE_DIR", "CONSOLE_MARK", "DAXCTL_SERIES",
           "DEFAULT_APPEND", "FLAVOURS", "GUEST_DIR", "GUEST_DIRS", "QUIET",
           "VmError", "add_guest_dir", "emulated_host_cpus",
           "hostroot_shares", "build_image",
           "classify_tap", "guest_script", "qemu_command", "resolve_script",
           "main", "Pmem",
           "default_tmpdir", "hold_cpus"]

_MODULES = (vm_base, vm_kernel, vm_image, vm_pmem, vm_boot, vm_cli)


class _Facade(types.ModuleType):
    def __setattr__(self, name, value):
        for m in _MODULES:
            if name in vars(m):
                setattr(m, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Facade

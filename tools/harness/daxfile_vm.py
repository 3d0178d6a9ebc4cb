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

The harness is split along its seams; this module re-exports every name of
them (vm_base: paths, cache, errors, logging; vm_kernel: kernels; vm_image:
initramfs archives; vm_pmem: backing files; vm_boot: QEMU, the boot loop,
TAP; vm_cli: the daxfile-vm command line), and an assignment to one of those
names here (`vm.QUIET = True`) reaches the module that reads it.
"""

import sys
import types

import vm_base
import vm_boot
import vm_cli
import vm_image
import vm_kernel
import vm_pmem

_MODULES = (vm_base, vm_kernel, vm_image, vm_pmem, vm_boot, vm_cli)

for _m in _MODULES:
    for _name, _value in vars(_m).items():
        if not (_name.startswith('__')
                or isinstance(_value, types.ModuleType)):
            globals()[_name] = _value
del _m, _name, _value


class _Facade(types.ModuleType):
    def __setattr__(self, name, value):
        for m in _MODULES:
            if name in vars(m):
                setattr(m, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Facade

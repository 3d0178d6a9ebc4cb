# SPDX-License-Identifier: GPL-2.0-or-later
"""Pmem backing files of the VM harness (Pmem): NVDIMMs, virtio-pmem and
CXL type-3 persistent memory devices.

Part of daxfile_vm (the module users import); see its docstring.
"""

import dataclasses
import os
import tempfile
from pathlib import Path

from vm_base import (GIB, MIB, VmError, parse_size)

# --------------------------------------------------------------------------
# Backing files


# Pmem models: an NVDIMM (label area inside the backing file), a
# virtio-pmem-pci device, a CXL type-3 persistent memory device (its label
# storage area, the LSA, is a file of its own; QEMU 10 requires one)
MODELS = ('nvdimm', 'virtio-pmem', 'cxl')
CXL_LSA_SIZE = MIB


@dataclasses.dataclass
class Pmem:
    """One emulated pmem device: a host backing file, optionally with a
    label area (label_size bytes; QEMU keeps an NVDIMM's at the end of the
    file, a CXL device's in lsa_path); model 'virtio-pmem' gives the guest
    a virtio-pmem-pci device instead, 'cxl' a CXL type-3 device whose LSA
    is always there (label_size, default 1 MiB)."""
    path: Path
    size: int
    label_size: int = 0
    temporary: bool = False
    model: str = 'nvdimm'

    @classmethod
    def create(cls, path, size='1G', label_size=0, prefill=True,
               temporary=False, model='nvdimm'):
        """Create (or reuse, if it exists with that size) a backing file,
        and a CXL device's LSA file (lsa_path) beside it.
        prefill writes zeros so the host page cache is populated: a sparse
        file makes the guest's first touches several times slower."""
        path = Path(path)
        nbytes = parse_size(size) if isinstance(size, str) else int(size)
        if nbytes <= 0 or nbytes % (2 * MIB):
            raise VmError(f"pmem size {nbytes} is not a multiple of 2 MiB")
        ls = (parse_size(label_size) if isinstance(label_size, str)
              else label_size)
        if model == 'cxl':
            ls = ls or CXL_LSA_SIZE
        pmem = cls(path.resolve(), nbytes, ls, temporary, model)
        _backing_file(path, nbytes, prefill)
        if model == 'cxl':
            try:
                _backing_file(pmem.lsa_path, ls, False)
            except BaseException:
                pmem.remove()
                raise
        return pmem

    @property
    def lsa_path(self):
        """A CXL device's label storage area: FILE.lsa beside FILE"""
        return self.path.with_name(self.path.name + '.lsa')

    @classmethod
    def parse(cls, spec):
        """--pmem FILE[,size=S][,label=L][,model=M]: FILE is created
        (prefilled) if missing and then kept; an empty FILE
        (',size=2G,label=128K') is a temporary file, removed by remove().
        M: nvdimm (default), virtio-pmem (no label) or cxl (L: the LSA
        size, default 1M, in FILE.lsa)."""
        parts = spec.split(',')
        opts = {}
        for p in parts[1:]:
            k, eq, v = p.partition('=')
            if not eq or k not in ('size', 'label', 'model'):
                raise VmError(f"invalid --pmem option '{p}'; use size=, "
                              f"label= or model=")
            opts[k] = v
        model = opts.get('model', 'nvdimm')
        if model not in MODELS or \
                (model == 'virtio-pmem' and 'label' in opts):
            raise VmError(f"invalid --pmem model '{model}': nvdimm, cxl, "
                          f"or virtio-pmem without a label")
        if not parts[0]:
            return cls.temporary_file(opts.get('size', '1G'),
                                      opts.get('label', 0), model)
        path = Path(parts[0])
        size = opts.get('size')
        if size is None:
            size = path.stat().st_size if path.exists() else '1G'
        return cls.create(path, size, opts.get('label', 0), model=model)

    @classmethod
    def temporary_file(cls, size='1G', label_size=0, model='nvdimm'):
        fd, p = tempfile.mkstemp(prefix='daxfile-vm-pmem.',
                                 dir=default_tmpdir())
        os.close(fd)
        os.unlink(p)
        return cls.create(p, size, label_size, temporary=True, model=model)

    def remove(self):
        """Remove a temporary backing file (and its LSA file)"""
        if not self.temporary:
            return
        for p in (self.path, self.lsa_path):
            try:
                p.unlink()
            except FileNotFoundError:
                pass


def _backing_file(path, nbytes, prefill):
    """Create @path of @nbytes (zero-filled with @prefill, else sparse),
    or check that an existing one has that size"""
    if path.exists():
        have = path.stat().st_size
        if have != nbytes:
            raise VmError(f"'{path}' is {have} bytes, not {nbytes}; "
                          f"remove it or give its size")
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                 os.O_CLOEXEC, 0o600)
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
        if (os.access('/dev/shm', os.W_OK) and
                st.f_bavail * st.f_frsize > 4 * GIB):
            return '/dev/shm'
    except OSError:
        pass
    return '/var/tmp'

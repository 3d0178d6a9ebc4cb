# SPDX-License-Identifier: GPL-2.0-or-later
"""Filesystem operations shared by the tests (daxtest re-exports them),
bench/ and tools/quickstart.py: extents through filefrag, ageing a
filesystem, and every way to change a file's layout (what a static file
must refuse)."""

import os
import random
import subprocess


def fiemap_flags(path):
    """(logical, physical, length, flags) per extent, via filefrag -v."""
    out = subprocess.run(["filefrag", "-v", "-b4096", path],
                         capture_output=True, text=True, check=True).stdout
    extents = []
    for line in out.splitlines():
        parts = line.split(":")
        if len(parts) < 4 or not parts[0].strip().isdigit():
            continue
        logical = int(parts[1].split("..")[0])
        physical = int(parts[2].split("..")[0])
        length = int(parts[3].strip())
        last = parts[-1].strip()
        flags = last if len(parts) > 4 and not last.isdigit() else ""
        extents.append((logical * 4096, physical * 4096, length * 4096, flags))
    return extents


def age_filesystem(root, seed, keep_free):
    """Age the filesystem mounted on @root as long use does: fill it (in
    @root/junk) with files of 4 KiB to 3.5 MiB until @keep_free bytes are
    left, then delete a random half of them. Its free space is then in runs
    of every length at every offset. Also bench/bench_aged.py's."""
    rng = random.Random(seed)
    junk = os.path.join(root, "junk")
    os.mkdir(junk)
    files = []
    while True:
        st = os.statvfs(root)
        if st.f_bavail * st.f_frsize < keep_free:
            break
        size = rng.choice([rng.randint(1, 64), rng.randint(256, 900)]) * 4096
        path = os.path.join(junk, str(len(files)))
        with open(path, "wb") as f:
            f.write(b"\xa5" * size)
        files.append(path)
    rng.shuffle(files)
    for path in files[:len(files) // 2]:
        os.unlink(path)
    os.sync()


FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_ZERO_RANGE = 0x08, 0x10
FALLOC_FL_INSERT_RANGE = 0x20
FICLONE = 0x40049409


def fallocate(path, mode, off, length):
    """fallocate(2) on @path; OSError with the errno when it fails"""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        if libc.fallocate(fd, mode, ctypes.c_long(off),
                          ctypes.c_long(length)) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
    finally:
        os.close(fd)


def _append(path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


def _ficlone(path):
    """clone another file's blocks over @path"""
    import fcntl
    src = path + ".src"
    with open(src, "wb") as f:
        f.write(b"x" * 4096)
    try:
        fd = os.open(path, os.O_RDWR)
        try:
            with open(src, "rb") as f:
                fcntl.ioctl(fd, FICLONE, f.fileno())
        finally:
            os.close(fd)
    finally:
        os.unlink(src)


def layout_changes(path):
    """Every way to change @path's size or block map, or its name, that a
    static file must refuse: {what: callable}. A rename goes to
    PATH.moved, a link to PATH.link (for the caller to undo)."""
    size = os.path.getsize(path)
    M2 = 2 << 20
    return {
        "truncate": lambda: os.truncate(path, size - M2),
        "extend": lambda: os.truncate(path, size + M2),
        "open O_TRUNC": lambda: os.close(os.open(path,
                                                 os.O_WRONLY | os.O_TRUNC)),
        "append": lambda: _append(path),
        "fallocate": lambda: fallocate(path, 0, size, M2),
        "fallocate keep-size": lambda: fallocate(path, FALLOC_FL_KEEP_SIZE,
                                                 size, M2),
        "punch hole": lambda: fallocate(path, FALLOC_FL_PUNCH_HOLE |
                                        FALLOC_FL_KEEP_SIZE, 0, M2),
        "zero range": lambda: fallocate(path, FALLOC_FL_ZERO_RANGE, 0, M2),
        "collapse range": lambda: fallocate(path, FALLOC_FL_COLLAPSE_RANGE,
                                            0, M2),
        "insert range": lambda: fallocate(path, FALLOC_FL_INSERT_RANGE, 0,
                                          M2),
        "rename": lambda: os.rename(path, path + ".moved"),
        "unlink": lambda: os.unlink(path),
        "link": lambda: os.link(path, path + ".link"),
        "FICLONE": lambda: _ficlone(path),
    }

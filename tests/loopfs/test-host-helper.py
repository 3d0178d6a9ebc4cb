#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daxfile create/check/status on real ext4 and xfs (loop devices, as root).

What the extent walk says is cross-checked with filefrag, an independent
reader of the same FIEMAP data.
"""

import os
import re
import stat
import subprocess
import sys

from daxtest import (DAXFILE, WRAPPER, LoopFs, Tap, age_filesystem,
                     daxfile, fiemap_flags, finish_paused, need_root,
                     one_line_error,
                     require_seams, resume, tempdir, tree_snapshot,
                     wait_state)

M = 1 << 20
G = 1 << 30
tap = Tap()


def check_json(path, *extra):
    res = daxfile("check", "--json", *extra, path)
    return res, (res.json()[0] if res.out.strip() else None)


def test_sparse(fs):
    path = fs.path("sparse.img")
    with open(path, "wb") as f:
        f.truncate(64 * M)
    res, rep = check_json(path, "--allow-non-dax")
    tap.is_(res.rc, 1, f"{fs.kind}: check on a sparse file exits 1")
    tap.is_(rep and rep["problems"],
            [{"offset": 0, "length": 64 * M, "reason": "hole"}],
            f"{fs.kind}: sparse file is one hole")


def test_fallocated(fs):
    path = fs.path("falloc.img")
    subprocess.run(["fallocate", "-l", "64M", path], check=True)
    res, rep = check_json(path)
    tap.is_(res.rc, 1, f"{fs.kind}: check --json on a fallocated file exits 1")
    reasons = {(p["reason"], p["offset"], p["length"])
               for p in (rep["problems"] if rep else [])}
    tap.ok(("unwritten", 0, 64 * M) in reasons,
           f"{fs.kind}: fallocated file is unwritten at offset 0, 64 MiB",
           res)
    tap.ok(("not_dax", 0, 64 * M) in reasons,
           f"{fs.kind}: a loop mount is reported as not DAX", res)
    unwritten = all("unwritten" in e[3] for e in fiemap_flags(path))
    tap.ok(unwritten, f"{fs.kind}: filefrag agrees the extents are unwritten")


def unfit_extents(extents):
    """the extents (fiemap_flags) that are unwritten or not 2 MiB aligned"""
    return [e for e in extents
            if "unwritten" in e[3] or e[1] % (2 * M) or e[2] % (2 * M)]


def test_create(fs, size):
    path = fs.path("vm.img")
    res = daxfile("create", path, "--size", f"{size // M}M")
    tap.is_(res.rc, 0, f"{fs.kind}: create {size // M} MiB succeeds")
    tap.ok("every extent written and 2 MiB aligned" in res.err,
           f"{fs.kind}: create reports every extent written and aligned", res)
    tap.is_(os.stat(path).st_size, size, f"{fs.kind}: created file size")
    res, rep = check_json(path, "--allow-non-dax")
    tap.ok(res.rc == 0 and rep["static_ready"] and rep["problems"] == [],
           f"{fs.kind}: check finds no problem in the created file", res)
    extents = fiemap_flags(path)
    bad = unfit_extents(extents)
    tap.ok(extents and not bad,
           f"{fs.kind}: filefrag: {len(extents)} extents, all written and "
           "2 MiB aligned", bad)
    status = daxfile("status", "--json", path)
    st = status.json()[0] if status.rc == 0 else {}
    tap.ok(st.get("fs_type") == fs.kind.split("-")[0] and
           st.get("dax") is False and st.get("map_sync") is False and
           st.get("geometry", {}).get("aligned") is True and
           st.get("extents") == len(extents),
           f"{fs.kind}: status --json describes fs, DAX, MAP_SYNC, geometry",
           status)


def used_bytes(fs):
    st = os.statvfs(fs.path())
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def test_allocate_again(fs):
    """A misplaced allocation (injected: DAXFILE_TEST_MISPLACED=N says the
    first N allocations put page 0 misaligned, as a fragmented ext4 does) is
    held while create allocates again; only its misplaced page stays
    allocated meanwhile, and nothing is left once create is done."""
    path = fs.path("again.img")
    before = used_bytes(fs)
    res = daxfile("create", path, "--size", "64M",
                  env={"DAXFILE_TEST_MISPLACED": "1"})
    tap.ok(res.rc == 0 and "allocated 2 times" in res.err,
           f"{fs.kind}: a misplaced first allocation: create allocates again "
           "and says so", res)
    res, rep = check_json(path, "--allow-non-dax")
    grown = used_bytes(fs) - before
    tap.ok(res.rc == 0 and rep["problems"] == [] and
           64 * M <= grown < 66 * M,
           f"{fs.kind}: the file is fit and the held blocks were given back "
           f"(used +{grown // 1024} KiB)", res)
    os.unlink(path)
    res = daxfile("create", path, "--size", "64M",
                  env={"DAXFILE_TEST_MISPLACED": "9"})
    tap.ok(res.rc == 0 and "allocated 3 times" in res.err,
           f"{fs.kind}: at most 3 allocations; the last is verified as it is",
           res)
    os.unlink(path)
    # named temporaries (as without O_TMPFILE) make the held file visible:
    # stop at the second allocation and look
    before = used_bytes(fs)
    env = dict(os.environ, DAXFILE_TEST_MISPLACED="1",
               DAXFILE_TEST_NO_TMPFILE="1",
               DAXFILE_TEST_PAUSE="create-allocated")
    proc = subprocess.Popen(WRAPPER + [DAXFILE, "create", path, "--size",
                                       "64M"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = {}
    try:
        # each allocation of 64 MiB under valgrind or ASan: seconds
        if wait_state(proc, True, 60) and resume(proc):
            if wait_state(proc, True, 60):
                seen = {n: os.stat(fs.path(n)).st_blocks * 512
                        for n in os.listdir(fs.path()) if n.startswith(".")}
                seen["(used)"] = used_bytes(fs) - before
        finish_paused(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    held = sorted(v for n, v in seen.items() if n.endswith(".1.tmp"))
    tap.ok(held == [2 * M] and
           sorted(v for n, v in seen.items() if n.endswith(".2.tmp")) ==
           [64 * M] and seen.get("(used)", G) < 67 * M,
           f"{fs.kind}: while allocating again only the misplaced 2 MiB of "
           "the first allocation stay held", seen)
    names = os.listdir(fs.path())
    tap.ok(proc.returncode == 0 and "again.img" in names and
           not [n for n in names if "daxfile-" in n],
           f"{fs.kind}: afterwards only the created file is there", names)
    os.unlink(path)


def test_default_geometry(fs):
    path = fs.path("vm.img")
    status = daxfile("status", "--json", fs.path("."))
    tap.ok(status.rc == 1 and "is a directory" in status.err,
           f"{fs.kind}: status refuses a directory", status)
    with open(path, "wb"):
        pass
    st = daxfile("status", "--json", path).json()[0]
    tap.ok(st["geometry"]["aligned"] is False and
           st["geometry"]["fix"].startswith("mkfs."),
           f"{fs.kind}: default mkfs geometry is reported with the mkfs fix",
           st["geometry"])
    os.unlink(path)
    before = tree_snapshot(fs.mnt)
    res = daxfile("create", path, "--size", "64M")
    if res.rc == 0:
        # mballoc can be lucky on ext4; then the layout must really be aligned
        bad = [e for e in fiemap_flags(path) if e[1] % (2 * M)]
        tap.ok(not bad,
               f"{fs.kind}: create succeeded only with aligned extents", bad)
    else:
        tap.ok(one_line_error(res) and "nothing was created" in res.err and
               "mkfs." in res.err and tree_snapshot(fs.mnt) == before,
               f"{fs.kind}: create on misaligned geometry fails cleanly "
               "with the mkfs fix", res)


def test_reflink(fs):
    src = fs.path("src.img")
    dst = fs.path("clone.img")
    tap.is_(daxfile("create", src, "--size", "64M").rc, 0,
            f"{fs.kind}: create the reflink source")
    subprocess.run(["cp", "--reflink=always", src, dst], check=True)
    for path in (src, dst):
        res, rep = check_json(path, "--allow-non-dax")
        tap.ok(res.rc == 1 and rep["problems"] ==
               [{"offset": 0, "length": 64 * M, "reason": "shared"}],
               f"{fs.kind}: {os.path.basename(path)} is shared after "
               "cp --reflink", res)


def test_tmpfs():
    with tempdir() as d:
        mnt = os.path.join(d, "tmpfs")
        os.mkdir(mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs",
                        mnt], check=True)
        try:
            path = os.path.join(mnt, "f.img")
            with open(path, "wb") as f:
                f.truncate(4 * M)
            for verb in ("check", "status"):
                res = daxfile(verb, path)
                tap.ok(one_line_error(res) and "not supported here" in res.err,
                       f"tmpfs: {verb} says static mode is not supported "
                       "here", res)
            before = tree_snapshot(mnt)
            res = daxfile("create", os.path.join(mnt, "new.img"),
                          "--size", "4M")
            tap.ok(one_line_error(res) and "not supported here" in res.err and
                   tree_snapshot(mnt) == before,
                   "tmpfs: create refuses and leaves nothing", res)
        finally:
            subprocess.run(["umount", mnt], check=True)


def bad_input_cases(fs):
    d = fs.path("bad")
    os.mkdir(d)
    reg = os.path.join(d, "file.img")
    with open(reg, "wb") as f:
        f.write(b"x" * 4096)
    os.chmod(reg, 0o600)
    os.symlink("file.img", os.path.join(d, "link.img"))
    os.symlink("missing.img", os.path.join(d, "dangling.img"))
    os.mkfifo(os.path.join(d, "fifo"))
    os.mknod(os.path.join(d, "null"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.mkdir(os.path.join(d, "dir"))
    j = lambda n: os.path.join(d, n)  # noqa: E731
    return [
        ("missing path", ["check", j("nope.img")],
         "No such file or directory"),
        ("directory", ["check", j("dir")], "is a directory"),
        ("symlink", ["check", j("link.img")], "is a symbolic link"),
        ("fifo", ["status", j("fifo")], "is a FIFO"),
        ("device node", ["check", j("null")], "is a character device"),
        ("create on an existing file", ["create", reg, "--size", "2M"],
         "already exists"),
        ("create on a dangling symlink", ["create", j("dangling.img"),
                                          "--size", "2M"], "already exists"),
        ("create size 0", ["create", j("n0.img"), "--size", "0"],
         "must be greater than zero"),
        ("create negative size", ["create", j("n1.img"), "--size", "-2M"],
         "expected a positive number"),
        ("create size not a multiple of align",
         ["create", j("n2.img"), "--size", "3M"], "not a multiple"),
        ("create larger than free space",
         ["create", j("n3.img"), "--size", "64G"], "Not enough space"),
        ("align not a power of two",
         ["create", j("n4.img"), "--size", "6M", "--align", "3M"],
         "not a power of two"),
        ("align below page size", ["check", "--align", "1K", reg],
         "smaller than the page size"),
        ("create in a missing directory",
         ["create", j("nodir/x.img"), "--size", "2M"], "No such file"),
        ("create on a directory", ["create", j("dir"), "--size", "2M"],
         "already exists"),
        ("unreadable file (as nobody)", ["check", reg], "Permission denied"),
    ]


def test_bad_inputs(fs):
    for name, argv, want in bad_input_cases(fs):
        before = tree_snapshot(fs.mnt)
        user = "nobody" if "nobody" in name else None
        res = daxfile(*argv, user=user)
        named = any(a in res.err for a in argv if "/" in a)
        tap.ok(res.rc != 0 and one_line_error(res) and want in res.err and
               (named or res.rc == 2) and tree_snapshot(fs.mnt) == before,
               f"bad input: {name}", res)
    res = daxfile("check", "--follow-symlinks", "--allow-non-dax",
                  fs.path("bad", "link.img"))
    tap.ok("is a symbolic link" not in res.err and "file.img" not in res.err,
           "--follow-symlinks checks the target instead", res)


def test_aged(fs):
    """#17: on an aged filesystem create collapses misaligned and split
    ranges out of the file instead of giving up, and refuses only when the
    aligned free space is truly short, saying how much there is"""
    age_filesystem(fs.path(), 17, 150 * M)
    made, collapsed, refusal = [], 0, None
    for i in range(8):
        path = fs.path(f"vm{i}.img")
        res = daxfile("create", path, "--size", "128M")
        if res.rc != 0:
            refusal = (path, res)
            break
        made.append(path)
        collapsed += "collapsed out of it" in res.err
    unfit = []
    for path in made:
        res, rep = check_json(path, "--allow-non-dax")
        bad = unfit_extents(fiemap_flags(path))
        if res.rc != 0 or rep["problems"] or bad:
            unfit.append((path, res, bad))
    tap.ok(made and not unfit, f"{fs.kind}: aged: {len(made)} files of "
           "128 MiB created, each written and 2 MiB aligned (check and "
           "filefrag agree)", unfit)
    if fs.kind == "ext4":
        # ext4 hands out stripe-sized runs at misaligned offsets here
        tap.ok(collapsed > 0, f"{fs.kind}: aged: {collapsed} of them had "
               "misplaced ranges collapsed out of them")
    # refused for want of space at all, or of aligned space: then saying
    # how much there is (it can be more than asked: xfs does not always
    # place a file in the aligned free space it has, seen in CI: "only 150
    # MiB in aligned 2 MiB pages for the 128 MiB asked")
    m = refusal and re.search(r"has only (\d+) MiB in aligned 2 MiB pages "
                              r"for the 128 MiB asked|(Not enough space)",
                              refusal[1].err)
    tap.ok(refusal and m and
           one_line_error(refusal[1]) and not os.path.exists(refusal[0]) and
           not [n for n in os.listdir(fs.path()) if n.startswith(".")],
           f"{fs.kind}: aged: the create that cannot fit is refused, saying "
           "how much (aligned) space there is, and leaves nothing behind",
           refusal and refusal[1])


class MountedFs:
    """An existing mount (real fsdax in the VM): --aged=KIND=DIR"""

    def __init__(self, spec):
        self.kind, _, self.mnt = spec.partition("=")

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)


def main():
    need_root(tap)
    aged = [a.split("=", 1)[1] for a in sys.argv[1:]
            if a.startswith("--aged=")]
    if aged:
        # only the aged-filesystem test, on filesystems mounted by the
        # caller (tests/vm/guest/aged.sh: xfs and ext4 on real fsdax)
        for spec in aged:
            fs = MountedFs(spec)
            tap.subtest(f"{fs.kind} aged", test_aged, fs)
        return tap.done()
    require_seams(DAXFILE)
    tap.plan(63 + 2 * 2 + 1)
    for kind in ("ext4", "xfs"):
        with LoopFs(kind) as fs:
            tap.subtest(f"{kind} sparse", test_sparse, fs)
            tap.subtest(f"{kind} fallocated", test_fallocated, fs)
            tap.subtest(f"{kind} create", test_create, fs, 1 * G)
            tap.subtest(f"{kind} allocate again", test_allocate_again, fs)
        with LoopFs(kind, size_mib=1024) as fs:
            tap.subtest(f"{kind} aged", test_aged, fs)
    for kind in ("ext4-default", "xfs-default"):
        with LoopFs(kind, size_mib=512) as fs:
            tap.subtest(f"{kind} geometry", test_default_geometry, fs)
    with LoopFs("xfs-reflink", size_mib=1024) as fs:
        tap.subtest("reflink", test_reflink, fs)
    tap.subtest("tmpfs", test_tmpfs)
    with LoopFs("ext4", size_mib=256) as fs:
        tap.subtest("bad inputs", test_bad_inputs, fs)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Static mode with the guard really engaged, attacked as an attacker would.

On the host: an xfs loop mount whose files tests/helpers/fake-dax.so makes
look like DAX files, so `enable` and the hook run the real self-test (it
passes on xfs) and set FS_IMMUTABLE_FL; every refusal is the kernel's own.
With --dir DIR (the vm suite, on real fsdax): nothing is faked, and the
mechanism is whatever the running kernel offers (immutable-guard, or kernel
on the daxctl() kernel).

- defects of issue #14, each with its regression test: a killed self-test
  holding the per-file lock, repair dropping an entry whose file it cannot
  find, a writer opening the file while enable engages, other spellings of
  a managed path, two nvdimms on one file, reservations of starts that
  never finished, run --file F --file F, the registry's temporary file;
  and since: a prepare whose libvirtd died while it ran;
- a randomized kill test: SIGKILL at random points of enable, disable,
  run, selftest and each hook phase; after each kill (and after repair):
  no process left holding a daxfile lock, immutable <=> a registry entry
  says so, no reservation without a live owner, contents byte-identical;
- a race test: foreign writers against enable and the hook's started: a
  file reported static never changes size or extents.
"""


import argparse
import contextlib
import ctypes
import os
import sys

from daxtest import (DAXFILE, EngagedFs, LoopFs, enforced,
                     fake_dax_env, need_root, require_seams, tempdir)
from guard_attacks import t_kills, t_races
from guard_defects import (t_aliases, t_one_write_per_phase,
                           t_reparented, t_repair_unresolvable,
                           t_reservations, t_selftest_cache,
                           t_selftest_child, t_small, t_two_nvdimms,
                           t_writer_window)
from guardworld import HOOK, World, tap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", action="append", default=[], metavar="NAME=DIR",
                    help="a real DAX mount to work in (vm suite); repeat for "
                         "several filesystems")
    # DAXFILE_GUARD_SCALE (a fraction, default 1) scales the randomized
    # parts: .ci/sanitize runs them again under ASan, where every kill
    # costs several times as much and 300 more prove no more
    scale = float(os.environ.get("DAXFILE_GUARD_SCALE", "1"))
    ap.add_argument("--kills", type=int, default=round(300 * scale))
    ap.add_argument("--rounds", type=int, default=round(60 * scale))
    ap.add_argument("--selftest-kills", type=int, default=round(40 * scale))
    args = ap.parse_args()
    need_root(tap)
    require_seams(DAXFILE, HOOK)
    ctypes.CDLL(None).prctl(36, 1)   # PR_SET_CHILD_SUBREAPER
    if not args.dir:
        run_all(args, None)
    for spec in args.dir:
        name, _, d = spec.rpartition("=")
        tap.prefix = f"{name or d}: "
        run_all(args, d)
    return tap.done()


def run_all(args, directory):
    with contextlib.ExitStack() as stack:
        state = stack.enter_context(tempdir())
        efs = stack.enter_context(EngagedFs(directory))
        w = World(efs, state)
        extra = (None if directory else
                 stack.enter_context(LoopFs("xfs", 1024)))
        if extra:
            w.env["DAXFILE_FAKE_DAX_DEVS"] += "," + \
                fake_dax_env(extra.mnt)["DAXFILE_FAKE_DAX_DEVS"]
        probe = w.create("probe.img")
        res = w.dx("enable", probe)
        tap.ok(res.rc == 0 and ("immutable-guard" in res.err or
                                "kernel" in res.err) and
               enforced(probe),
               "static mode really engages here", res)
        w.mech = "kernel" if "(kernel" in res.err else "immutable-guard"
        w.dx("disable", probe)
        for func, *a in ((t_selftest_child, args.selftest_kills),
                         (t_selftest_cache,),
                         (t_repair_unresolvable,
                          extra),
                         (t_writer_window,), (t_aliases,),
                         (t_two_nvdimms,), (t_one_write_per_phase,),
                         (t_reservations,),
                         (t_reparented,),
                         (t_small,), (t_kills, args.kills),
                         (t_races, args.rounds)):
            tap.subtest(func.__name__, func, w, *a)


if __name__ == "__main__":
    sys.exit(main())

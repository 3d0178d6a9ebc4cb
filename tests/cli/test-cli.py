#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Golden tests of the daxfile command line: exit code, stdout and stderr.

Runs unprivileged in a scratch directory holding a few odd files, so the
paths in the messages are stable. DAXFILE_TEST_REGENERATE=1 rewrites the
golden files in tests/data/cli/ (review them before committing).
"""

import difflib
import json
import os
import sys

from daxtest import SRCDIR, Tap, daxfile, tempdir

GOLDEN = os.path.join(SRCDIR, "tests", "data", "cli")

CASES = [
    ("no-args", []),
    ("help", ["--help"]),
    ("version", ["--version"]),
    ("unknown-command", ["frobnicate"]),
    ("unknown-command-close", ["stauts"]),
    ("unknown-command-prefix", ["wip"]),
    ("create-help", ["create", "--help"]),
    ("check-help", ["check", "--help"]),
    ("status-help", ["status", "--help"]),
    ("create-version", ["create", "--version"]),
    ("create-missing-path", ["create", "--size", "2M"]),
    ("create-missing-size", ["create", "new.img"]),
    ("create-two-paths", ["create", "a.img", "b.img", "--size", "2M"]),
    ("create-size-garbage", ["create", "new.img", "--size", "abc"]),
    ("create-size-zero", ["create", "new.img", "--size", "0"]),
    ("create-size-mb", ["create", "new.img", "--size", "2MB"]),
    ("create-size-overflow", ["create", "new.img", "--size", "99999999T"]),
    ("create-size-unaligned", ["create", "new.img", "--size", "3M"]),
    ("create-size-unaligned-max", ["create", "new.img", "--size",
                                   "9223372036854775807"]),
    ("create-align-3m",
     ["create", "new.img", "--size", "6M", "--align", "3M"]),
    ("create-align-1k",
     ["create", "new.img", "--size", "6M", "--align", "1K"]),
    ("create-exists", ["create", "regular.img", "--size", "2M"]),
    ("create-dot", ["create", ".", "--size", "2M"]),
    ("create-trailing-slash", ["create", "newdir/", "--size", "2M"]),
    ("check-missing-path", ["check"]),
    ("check-unknown-option", ["check", "--frob", "regular.img"]),
    ("check-missing", ["check", "missing.img"]),
    ("check-directory", ["check", "dir"]),
    ("check-fifo", ["check", "fifo"]),
    ("check-devnull", ["check", "/dev/null"]),
    ("check-symlink", ["check", "link.img"]),
    ("check-odd-name", ["check", "odd\nname.img"]),
    ("status-missing", ["status", "--json", "missing.img"]),
    ("status-two-errors", ["status", "missing.img", "dir"]),
    ("watch-argument", ["watch", "frob"]),
    # a configuration that manages nothing: nothing to watch, exit 78
    ("watch-nothing", ["watch"], {"DAXFILE_CONF": "nothing.conf"}),
    # a registry (populate_registry) as left by an earlier boot, a dead
    # consumer and an interrupted enable: repair's text and --json
    # the same registry listed: each column as wide as its widest cell
    ("list", ["list"], {"DAXFILE_STATE_DIR": "state-list"}),
    ("repair", ["repair"], {"DAXFILE_STATE_DIR": "state-text"}),
    ("repair-json", ["repair", "--json"], {"DAXFILE_STATE_DIR": "state-json"}),
]

# pid_max is at most 2^22: this pid is never alive
DEAD_PID = 1 << 30


def registry_entry(path, state, mechanism, owner, boot_id, pid=0,
                   path_b64=None):
    e = {"path": path, "dev": 2049, "ino": 1000 + len(path), "state": state,
         "mechanism": mechanism, "owner": owner, "owner_uuid": None,
         "pid": pid, "align": 2097152, "fingerprint": None,
         "since": "2024-01-02T03:04:05Z", "boot_id": boot_id,
         "flag_set": mechanism == "immutable-guard", "handle": None,
         "fsid": None}
    if path_b64:
        e["path_b64"] = path_b64
    return e


def populate_registry(state):
    """A registry repair acts on without touching a file: every entry but
    the last two needs no inode, the files of those two do not exist."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    old = "00000000-0000-0000-0000-000000000000"
    entries = [
        registry_entry("/srv/old.img", "engaged", "verified-only",
                       "domain:vm1", old),
        # "/srv/caf\xe9.img": not UTF-8, named escaped once
        registry_entry("/srv/caf\\xe9.img", "engaged", "verified-only",
                       "domain:vm2", old, path_b64="L3Nydi9jYWbpLmltZw=="),
        registry_entry("/srv/run.img", "engaged", "verified-only",
                       f"pid:{DEAD_PID}", boot, pid=DEAD_PID),
        registry_entry("/srv/manual.img", "engaged", "verified-only",
                       "manual", boot),
        registry_entry("/srv/gone-kernel.img", "engaged", "kernel",
                       "domain:vm3", old),
        registry_entry("/srv/gone-guard.img", "engaging", "immutable-guard",
                       "domain:vm4", boot),
    ]
    lib = os.path.join(state, "lib")
    os.makedirs(lib)
    with open(os.path.join(lib, "registry.json"), "w") as f:
        json.dump({"version": 1, "entries": entries}, f, indent=2)


def render(res):
    return f"rc: {res.rc}\n--- stdout\n{res.out}--- stderr\n{res.err}"


def populate(d):
    with open(os.path.join(d, "regular.img"), "wb") as f:
        f.write(b"\0" * 4096)
    os.mkdir(os.path.join(d, "dir"))
    os.mkfifo(os.path.join(d, "fifo"))
    os.symlink("regular.img", os.path.join(d, "link.img"))
    with open(os.path.join(d, "hook.conf"), "w") as f:
        f.write("[hook]\nmanaged_roots=/var/lib/libvirt/pmem\n")
    with open(os.path.join(d, "nothing.conf"), "w") as f:
        f.write("[hook]\n")
    for state in ("state-text", "state-json", "state-list"):
        populate_registry(os.path.join(d, state))


def main():
    tap = Tap()
    tap.plan(len(CASES))
    regen = os.environ.get("DAXFILE_TEST_REGENERATE") == "1"
    with tempdir() as d:
        populate(d)
        os.chdir(d)
        for name, argv, *env in CASES:
            got = render(daxfile(*argv, env=env[0] if env else None))
            path = os.path.join(GOLDEN, name + ".out")
            if regen:
                with open(path, "w", errors="surrogateescape") as f:
                    f.write(got)
            try:
                with open(path, errors="surrogateescape") as f:
                    want = f.read()
            except FileNotFoundError:
                want = f"(missing golden file {path})\n"
            diff = "".join(difflib.unified_diff(
                want.splitlines(True), got.splitlines(True), "expected",
                "got"))
            tap.ok(got == want, f"daxfile {' '.join(argv)}".strip(), diff)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

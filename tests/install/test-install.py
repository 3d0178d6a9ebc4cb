#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`meson install --destdir` into a scratch directory, unprivileged: the
installed files, their modes and the hook symlink must match the golden
list tests/data/install/files.txt.

The golden list is independent of the prefix: paths are written with
${prefix}, ${bindir}, ${libexecdir}, ${mandir}, ${sysconfdir}, ${hookdir},
${bashcompletiondir} and ${systemdunitdir}, which this build's values
replace. A line
"[TAG,...] ..." is expected only when the build has every TAG (given with
--tag): "docs" (scdoc found), "guest" (daxfile-guest is built).

Each line is "MODE PATH" for a file, "MODE PATH/" for an empty directory
and "PATH -> TARGET" for a symbolic link. DAXFILE_TEST_REGENERATE=1
rewrites the list from what was installed (review it before committing).

usage: test-install.py --var NAME=VALUE... [--tag TAG...]
"""

import argparse
import configparser
import difflib
import os
import shutil
import stat
import subprocess
import sys

from daxtest import BUILDDIR, SRCDIR, Tap, tempdir

GOLDEN = os.path.join(SRCDIR, "tests", "data", "install", "files.txt")
HEADER = """\
# Files `meson install` puts in DESTDIR (tests/install/test-install.py).
# "MODE PATH" file, "MODE PATH/" empty directory, "PATH -> TARGET" symlink;
# "[TAG,...] " only with those build features (docs: scdoc, guest:
# daxfile-guest is built).
"""


def meson_command():
    meson = shutil.which("meson")
    return [meson] if meson else [sys.executable, "-m", "mesonbuild.mesonmain"]


def installed(destdir):
    """The lines describing what is under @destdir, sorted."""
    lines = []
    for root, dirs, files in os.walk(destdir):
        for name in sorted(dirs + files):
            path = os.path.join(root, name)
            rel = "/" + os.path.relpath(path, destdir)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                lines.append(f"{rel} -> {os.readlink(path)}")
            elif stat.S_ISDIR(st.st_mode):
                if not os.listdir(path):
                    lines.append(f"{stat.S_IMODE(st.st_mode):04o} {rel}/")
            else:
                lines.append(f"{stat.S_IMODE(st.st_mode):04o} {rel}")
    return sorted(lines, key=path_of)


def path_of(line):
    """The path a line is about (sort key)"""
    return line.split(" -> ")[0] if " -> " in line else line.split(" ", 1)[1]


def substitute(line, variables):
    for name, value in variables.items():
        line = line.replace("${" + name + "}", value)
    return line


def expected(variables, tags):
    """(tag or None, line with placeholders, line with values) of GOLDEN"""
    out = []
    with open(GOLDEN, encoding="utf-8") as f:
        for raw in f.read().splitlines():
            if not raw.strip() or raw.startswith("#"):
                continue
            tag = None
            if raw.startswith("["):
                tag, raw = raw[1:].split("] ", 1)
            out.append((tag, raw, substitute(raw, variables)))
    return out


def regenerate(lines, variables, old):
    """Write GOLDEN from @lines, values turned back into placeholders
    (longest value first), keeping the tags of lines it had."""
    tags = {raw: tag for tag, raw, _ in old}
    order = sorted(variables.items(), key=lambda kv: -len(kv[1]))
    text = [HEADER]
    for line in lines:
        for name, value in order:
            line = line.replace(value + "/", "${" + name + "}/")
        tag = tags.get(line)
        text.append(f"[{tag}] {line}\n" if tag else f"{line}\n")
    with open(GOLDEN, "w", encoding="utf-8") as f:
        f.writelines(text)


def check_list(tap, destdir, variables, tags):
    got = installed(destdir)
    old = expected(variables, tags)
    want = sorted((value for tag, _, value in old
                   if tag is None or set(tag.split(",")) <= tags),
                  key=path_of)
    if os.environ.get("DAXFILE_TEST_REGENERATE"):
        regenerate(got, variables, old)
        tap.diag(f"regenerated {GOLDEN}")
        want = got
    diff = "\n".join(difflib.unified_diff(want, got, "expected", "installed",
                                          lineterm=""))
    tap.ok(got == want, "installed files match tests/data/install/files.txt",
           diff)


def check_hook(tap, destdir, variables):
    link = os.path.join(destdir + variables["hookdir"], "daxfile")
    target = os.readlink(link) if os.path.islink(link) else ""
    want = variables["libexecdir"] + "/daxfile/daxfile-hook"
    tap.is_(target, want, "the hook in hookdir is a symlink to libexecdir")
    real = destdir + target
    tap.ok(os.path.isfile(real) and os.access(real, os.X_OK),
           "the hook symlink's target is installed and executable", real)


def check_conf(tap, destdir, variables):
    path = destdir + variables["sysconfdir"] + "/daxfile/daxfile.conf"
    kf = configparser.ConfigParser(interpolation=None)
    try:
        kf.read(path, encoding="utf-8")
        roots = kf.get("hook", "managed_roots", fallback=None)
        others = sorted(set(kf["hook"]) - {"managed_roots"})
    except (configparser.Error, KeyError) as e:
        roots, others = None, [str(e)]
    tap.is_(roots, "", "the default daxfile.conf manages no directory")
    tap.is_(others, [], "the default daxfile.conf sets nothing else")


def check_tmpfiles(tap, destdir, variables):
    path = destdir + variables["prefix"] + "/lib/tmpfiles.d/daxfile.conf"
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.split() for line in f
                     if line.strip() and not line.startswith("#")]
    except OSError as e:
        lines = [str(e)]
    tap.is_(lines, [["d", "/run/daxfile", "0700", "root", "root", "-"]],
            "tmpfiles.d makes /run/daxfile with mode 0700")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--var", action="append", default=[])
    parser.add_argument("--tag", action="append", default=[])
    args = parser.parse_args()
    variables = dict(v.split("=", 1) for v in args.var)
    tags = set(args.tag)

    tap = Tap()
    with tempdir() as tmp:
        destdir = os.path.join(tmp, "dest")
        proc = subprocess.run(
            meson_command() + ["install", "-C", BUILDDIR, "--no-rebuild",
                               "--destdir", destdir],
            capture_output=True, text=True, errors="replace", timeout=300)
        if tap.ok(proc.returncode == 0, "meson install --destdir",
                  proc.stdout + proc.stderr):
            check_list(tap, destdir, variables, tags)
            check_hook(tap, destdir, variables)
            check_conf(tap, destdir, variables)
            check_tmpfiles(tap, destdir, variables)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

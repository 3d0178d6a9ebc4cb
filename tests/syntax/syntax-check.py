#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""syntax-check: rules over the source tree that review would otherwise
have to remember (libvirt's `make syntax-check`, build-aux/syntax-check.mk).
One TAP result per rule; a failure lists every file that breaks it.

  test-seams   no C source names a test-seam variable (DAXFILE_TEST_CRASH,
               _PAUSE, _NO_TMPFILE, _MISPLACED) outside the seam module,
               src/common/daxfile-seam.[ch]: the rest of the code calls
               its functions, which release builds make no-ops
  file-length  no C or Python source file under src/ libvirt-hooks/
               guest-tools/ bench/ tools/ is over 800 lines
  binary-length
               no C source of a binary is over 200 lines: the .c files
               right in src/daxfilectl/ libvirt-hooks/ guest-tools/ bench/
               (not guest-tools/lib/ or tests/), since binaries parse
               arguments, call the library and print (issue 18)
  escape       daxfile_escape() is called only where names are shown or
               where a name enters without a file. A file is opened as a
               DaxfileFile (src/common/daxfile-file.h), which computes its
               display name once; every operation on it takes the handle
               and names it by f->display. The allowed C files
               (ESCAPE_ALLOWED), with why:
                 display: the definition (daxfile-escape.c); the handle
                   (daxfile-file.c: its display, and the failures before a
                   handle exists); the CLIs, which print (src/daxfilectl/,
                   the guest's output module daxguest-checks-output.c);
                   the JSON view (daxfile-host-json.c) and the registry's
                   on-disk format (daxfile-registry-format.c)
                 a name that enters with no file, shown once there: sizes
                   as typed (daxfile-size.c), configuration keys
                   (daxfile-conf.c), the components of a trusted lookup
                   (daxfile-trust.c), the domain XML's names and the
                   entries the hook reports (daxfile-domxml.c,
                   daxfile-hook.c, daxfile-hook-refs.c), storage pool and
                   volume names (daxfile-pool.c), domain names and QEMU pid
                   files
                   (daxfile-virt.c, daxfile-attest.c), a file not created
                   yet (daxfile-create.c), registry owners (daxfile-wipe.c),
                  a device's settings checked before any file is opened
                  (daxfile-attach.c; domain-xml --no-check has none),
                   the guest's target and bench models, which keep the
                   display they make (daxguest-target.c, daxguest-bench.c)
  proc-fd      a C string "/proc/self/fd/..." is in four files only: the one
               readlink (daxfile_fd_target(), daxfile-fd.c), the reopen
               through it (daxfile-file.c), create's linkat() of an
               O_TMPFILE (daxfile-create.c) and daxctl(), which names the
               file by it (daxfile-kernel.c)
  clang-format every C source and header follows .clang-format as
               clang-format 14 (Debian 12's, .ci/packages) lays it out:
               a changed file is checked like every other, so a change
               cannot bring in code the formatter would rewrite; other
               clang-format versions lay out some constructs differently,
               so without version 14 the rule is skipped, not guessed

The files are git's (tracked, and untracked but not ignored) when the
source tree is a git work tree, else every file but build directories.

Usage: syntax-check.py [SRCDIR]   (default: $DAXFILE_SRCDIR, else the
tree this file is in)
"""

import os
import re
import subprocess
import sys

from daxtest import Tap

SEAM_NAMES = re.compile(r"DAXFILE_TEST_(CRASH|PAUSE|NO_TMPFILE|MISPLACED)")
SEAM_MODULE = {"src/common/daxfile-seam.c", "src/common/daxfile-seam.h"}
PRODUCT_DIRS = ("src/", "libvirt-hooks/", "guest-tools/", "bench/", "tools/")
LENGTH_DIRS = PRODUCT_DIRS + ("tests/",)
MAX_LINES = 800
BINARY_DIRS = ("src/daxfilectl", "libvirt-hooks", "guest-tools", "bench")
MAX_BINARY_LINES = 200
ESCAPE_CALL = re.compile(r"\bdaxfile_escape\s*\(")
ESCAPE_ALLOWED = re.compile(r"""^(
    src/common/daxfile-(escape|file|size)\.c
  | src/daxfilectl/[^/]+\.c
  | src/host/daxfile-(host-json|registry-format)\.c
  | src/host/daxfile-(conf|trust|domxml|hook|hook-refs|pool|attest|attach
                      |create|wipe)\.c
  | src/virt/daxfile-virt\.c
  | guest-tools/lib/daxguest-(checks-output|target|bench)\.c
)$""", re.X)
PROC_FD = '"/proc/self/fd/'
PROC_FD_ALLOWED = {"src/common/daxfile-fd.c", "src/common/daxfile-file.c",
                   "src/host/daxfile-create.c", "src/host/daxfile-kernel.c"}


def source_files(srcdir):
    """Paths relative to @srcdir, sorted"""
    if os.path.exists(os.path.join(srcdir, ".git")):
        out = subprocess.run(["git", "-C", srcdir, "ls-files", "-z", "-c",
                              "-o", "--exclude-standard"],
                             capture_output=True, check=True).stdout
        return sorted({p for p in out.decode().split("\0")
                       if p and os.path.isfile(os.path.join(srcdir, p))})
    files = []
    for root, dirs, names in os.walk(srcdir):
        # build directories (meson's or the kernel's), git, caches
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__") and
                   not os.path.exists(os.path.join(root, d, "meson-private"))
                   and os.path.relpath(os.path.join(root, d), srcdir)
                   != os.path.join("kernel", "obj")]
        files += [os.path.relpath(os.path.join(root, n), srcdir)
                  for n in names]
    return sorted(files)


def is_c(path):
    return path.endswith((".c", ".h"))


def is_script(srcdir, path, suffix, interpreter):
    """@path ends in @suffix, or has no suffix and a #! line that
    @interpreter (a bytes regex) matches"""
    if path.endswith(suffix):
        return True
    if "." in os.path.basename(path):
        return False
    try:
        with open(os.path.join(srcdir, path), "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return (first.startswith(b"#!") and
            re.search(interpreter, first) is not None)


def is_python(srcdir, path):
    return is_script(srcdir, path, ".py", rb"python")


def read(srcdir, path):
    with open(os.path.join(srcdir, path), encoding="utf-8",
              errors="surrogateescape") as f:
        return f.read()


def rule_test_seams(srcdir, files):
    bad = []
    for path in files:
        if not is_c(path) or path in SEAM_MODULE:
            continue
        for n, line in enumerate(read(srcdir, path).splitlines(), 1):
            if SEAM_NAMES.search(line):
                bad.append(f"{path}:{n}: {line.strip()}")
    return bad, ("test-seam variables are read only in "
                 "src/common/daxfile-seam.[ch]; call its functions")


def rule_file_length(srcdir, files):
    bad = []
    for path in files:
        if not path.startswith(LENGTH_DIRS):
            continue
        if not (is_c(path) or is_python(srcdir, path)):
            continue
        n = len(read(srcdir, path).splitlines())
        if n > MAX_LINES:
            bad.append(f"{path}: {n} lines")
    return bad, (f"split files over {MAX_LINES} lines along their seams")


def rule_binary_length(srcdir, files):
    bad = []
    for path in files:
        if (os.path.dirname(path) not in BINARY_DIRS or
                not path.endswith(".c")):
            continue
        n = len(read(srcdir, path).splitlines())
        if n > MAX_BINARY_LINES:
            bad.append(f"{path}: {n} lines")
    return bad, ("move the logic into the library (GError, no printing) "
                 "and keep parsing, one call and printing, or split the "
                 "file by verb")


def c_files(files):
    """The C sources (.c) of the product, not the tests"""
    return [p for p in files
            if p.endswith(".c") and p.startswith(PRODUCT_DIRS)]


def rule_escape(srcdir, files):
    bad = []
    for path in c_files(files):
        if ESCAPE_ALLOWED.match(path):
            continue
        for n, line in enumerate(read(srcdir, path).splitlines(), 1):
            if ESCAPE_CALL.search(line):
                bad.append(f"{path}:{n}: {line.strip()}")
    return bad, ("open a DaxfileFile and use its display; a name that "
                 "enters without a file is shown where it enters (see the "
                 "allow-list in syntax-check.py)")


def rule_proc_fd(srcdir, files):
    bad = []
    for path in c_files(files):
        if path in PROC_FD_ALLOWED:
            continue
        for n, line in enumerate(read(srcdir, path).splitlines(), 1):
            if PROC_FD in line:
                bad.append(f"{path}:{n}: {line.strip()}")
    return bad, ("read what an fd is with daxfile_fd_target() "
                 "(src/common/daxfile-fd.h)")


# a line that ends a string literal and a line that starts one: a message
# split in two, which nobody finds by grepping for what it printed. A
# literal ending in \n is a line of a longer text (a usage), and stays.
SPLIT_END = re.compile(r'"\s*$')
SPLIT_START = re.compile(r'\s*"')
TEXT_LINE_END = re.compile(r'\\n"\s*$')


def rule_split_literal(srcdir, files):
    bad = []
    for path in files:
        if not is_c(path):
            continue
        lines = read(srcdir, path).splitlines()
        for n, (line, nxt) in enumerate(zip(lines, lines[1:]), 1):
            if (SPLIT_END.search(line) and SPLIT_START.match(nxt) and
                    not TEXT_LINE_END.search(line) and
                    not line.lstrip().startswith(("#", "*", "/*", "//"))):
                bad.append(f"{path}:{n}: {line.strip()}")
    return bad, ("join the pieces into one literal on one line, however "
                 "long (.clang-format has BreakStringLiterals: false)")


# A message's fix comes after "; fix: " (DEVELOPERS.md): a literal of the
# product with "; <imperative> " is a fix written another way. The guest's
# checks keep theirs in a field of its own ("hint", printed after "; ").
STRING_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
BARE_FIX = re.compile(r"; (use|run|pass|give|recreate|put|make|try|swapoff|"
                      r"rename|move|clear|drop|remove|set|add|start|stop|"
                      r"choose|install|mount|unmount|load|wait|free|define|"
                      r"enable|disable|create|delete|edit|reboot|restart) ")
FIX_FIELD_FILES = ("guest-tools/lib/daxguest-checks.c",
                   "guest-tools/lib/daxguest-checks-pmem.c")


def rule_fix_hint(srcdir, files):
    bad = []
    for path in c_files(files):
        if path in FIX_FIELD_FILES or "/tests/" in path:
            continue
        for n, line in enumerate(read(srcdir, path).splitlines(), 1):
            for lit in STRING_LITERAL.findall(line):
                if BARE_FIX.search(lit):
                    bad.append(f"{path}:{n}: {lit}")
    return bad, "write the fix as '; fix: <what to do>'"


# static mode's states have one writer (daxfile-static-priv.h)
REGISTRY_WRITE = re.compile(r"\bdaxfile_registry_(put|remove)\(|"
                            r"(->|\.)state = DAXFILE_STATE_")
REGISTRY_WRITERS = ("src/host/daxfile-static-machine.c",
                    "src/host/daxfile-registry.c",
                    "src/host/daxfile-registry-format.c")


def rule_registry_writes(srcdir, files):
    bad = []
    for path in c_files(files):
        if path in REGISTRY_WRITERS:
            continue
        for n, line in enumerate(read(srcdir, path).splitlines(), 1):
            if REGISTRY_WRITE.search(line):
                bad.append(f"{path}:{n}: {line.strip()}")
    return bad, ("change a registry entry's state through "
                 "daxfile_static_transition() or _transition_state() "
                 "(daxfile-static-machine.c)")


# A module of src/ is a .c/.h pair, with its -priv, -json and -format
# parts;
# the CLI's folders are one module each (src/cli, src/daxfilectl)
INCLUDE = re.compile(r'^#include "([^"]+)\.h"')
FOLDER_MODULES = ("src/cli", "src/daxfilectl")


def rule_include_cycles(srcdir, files):
    ours = [p for p in files if p.startswith("src/") and is_c(p)]
    folder = {os.path.basename(p)[:-2]: os.path.dirname(p) for p in ours}

    def module(stem):
        if folder.get(stem) in FOLDER_MODULES:
            return folder[stem]
        return re.sub(r"-(priv|json|format)$", "", stem)

    deps = {}
    for path in ours:
        m = module(os.path.basename(path)[:-2])
        for line in read(srcdir, path).splitlines():
            inc = INCLUDE.match(line)
            if inc and inc.group(1) in folder and module(inc.group(1)) != m:
                deps.setdefault(m, set()).add(module(inc.group(1)))
    bad, state = [], {}

    def walk(m, stack):
        state[m] = "open"
        stack.append(m)
        for d in sorted(deps.get(m, ())):
            if state.get(d) == "open":
                bad.append(" -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                walk(d, stack)
        stack.pop()
        state[m] = "done"

    for m in sorted(deps):
        if m not in state:
            walk(m, [])
    return bad, ("a module includes what is below it only; move what both "
                 "need into a module below both")


CLANG_FORMAT_VERSION = "14"


def clang_format():
    """The clang-format 14 binary, or None"""
    for name in (f"clang-format-{CLANG_FORMAT_VERSION}", "clang-format"):
        try:
            out = subprocess.run([name, "--version"], capture_output=True,
                                 text=True).stdout
        except OSError:
            continue
        if re.search(rf"version {CLANG_FORMAT_VERSION}\.", out):
            return name
    return None


def rule_clang_format(srcdir, files):
    """None as the list: skipped (no clang-format 14)"""
    binary = clang_format()
    if not binary:
        return None, (f"clang-format {CLANG_FORMAT_VERSION} is not "
                      f"installed (apt-get install clang-format-"
                      f"{CLANG_FORMAT_VERSION})")
    paths = [os.path.join(srcdir, p) for p in files if is_c(p)]
    out = subprocess.run([binary, "--dry-run", "--Werror", "--style=file"]
                         + paths, capture_output=True, text=True)
    bad = sorted({os.path.relpath(line.split(":", 1)[0], srcdir)
                  for line in out.stderr.splitlines()
                  if ": error: " in line})
    if out.returncode != 0 and not bad:
        bad = [f"{binary} failed: {out.stderr.strip()}"]
    return bad, f"run {binary} -i on them; it reads .clang-format"


def rule_python_style(srcdir, files):
    """None as the list: skipped (no flake8)"""
    paths = [os.path.join(srcdir, p) for p in files
             if is_python(srcdir, p)]
    try:
        out = subprocess.run(["/usr/bin/python3", "-m", "flake8",
                              "--max-line-length=79"] + paths,
                             capture_output=True, text=True)
    except OSError as e:
        return None, f"cannot run flake8: {e}"
    if out.returncode != 0 and "No module named flake8" in out.stderr:
        return None, ("flake8 is not installed (apt-get install "
                      "python3-flake8; ruff is packaged in neither Debian 12 "
                      "nor 13)")
    bad = [os.path.relpath(line, srcdir) for line in out.stdout.splitlines()]
    if out.returncode != 0 and not bad:
        bad = [f"flake8 failed: {out.stderr.strip()}"]
    return bad, ("write the Python as PEP 8 and pyflakes say (79 columns, "
                 "as the C's 80)")


def is_shell(srcdir, path):
    return is_script(srcdir, path, ".sh", rb"\b(ba)?sh\b")


def rule_shell_style(srcdir, files):
    """None as the list: skipped (no shellcheck)"""
    paths = [os.path.join(srcdir, p) for p in files if is_shell(srcdir, p)]
    try:
        out = subprocess.run(["shellcheck", "-f", "gcc"] + paths,
                             capture_output=True, text=True, cwd=srcdir)
    except OSError:
        return None, ("shellcheck is not installed (apt-get install "
                      "shellcheck)")
    bad = [os.path.relpath(line, srcdir) if line.startswith("/") else line
           for line in out.stdout.splitlines()]
    if out.returncode != 0 and not bad:
        bad = [f"shellcheck failed: {out.stderr.strip()}"]
    return bad, ("quote what is one word; where a list is meant to split, "
                 "say so in a '# shellcheck disable=SC2086 # why' (the "
                 "tree's .shellcheckrc says what is off and why)")


RULES = [
    ("test-seams", "no test-seam variable named in C outside the seam module",
     rule_test_seams),
    ("file-length", f"no C or Python source file over {MAX_LINES} lines "
     "under " + " ".join(LENGTH_DIRS), rule_file_length),
    ("binary-length", f"no C source of a binary over {MAX_BINARY_LINES} "
     "lines in " + " ".join(d + "/" for d in BINARY_DIRS),
     rule_binary_length),
    ("escape", "daxfile_escape() called only in display modules and where "
     "a name enters without a file", rule_escape),
    ("proc-fd", "/proc/self/fd/ spelt only in the readlink, the reopens "
     "and daxctl()", rule_proc_fd),
    ("split-literal", "no string literal split across lines, but the "
     "lines of a text (each ending in \\n)", rule_split_literal),
    ("fix-hint", "a message's fix written one way: after '; fix: '",
     rule_fix_hint),
    ("registry-writes", "static mode's registry states written by its "
     "transition functions alone", rule_registry_writes),
    ("include-cycles", "no two modules of src/ include each other, "
     "directly or around a circle", rule_include_cycles),
    ("python-style", "every Python file clean under flake8 (pycodestyle "
     "and pyflakes)", rule_python_style),
    ("shell-style", "every shell script clean under shellcheck",
     rule_shell_style),
    ("clang-format", "every C file laid out as .clang-format says",
     rule_clang_format),
]


def main():
    srcdir = (sys.argv[1] if len(sys.argv) > 1 else
              os.environ.get("DAXFILE_SRCDIR") or
              os.path.dirname(os.path.dirname(os.path.dirname(
                  os.path.abspath(__file__)))))
    files = source_files(srcdir)
    tap = Tap()
    tap.plan(len(RULES))
    tap.diag(f"{len(files)} files under {srcdir}")
    for name, what, rule in RULES:
        bad, fix = rule(srcdir, files)
        if bad is None:
            tap.skip(f"{name}: {what}", fix)
            continue
        tap.ok(not bad, f"{name}: {what}",
               "\n".join([f"  {line}" for line in bad] + [f"  ({fix})"]))
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

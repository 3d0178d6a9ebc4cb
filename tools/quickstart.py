#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daxfile's quickstart: provision a static file, boot a guest on it through
libvirt, show that the file's layout cannot change while the guest runs,
and prove that data written through MAP_SYNC in the guest survives a
power-off. Run it through ./quickstart (which installs and builds first).

Where it runs:
  (default)   on an emulated pmem host, when this machine has no pmem: a
              throwaway QEMU (TCG) guest with an emulated NVDIMM in fsdax
              mode and xfs mounted -o dax, whose userland is this machine's
              own root (read-only, over 9p); inside it libvirtd, the daxfile
              hook and QEMU run the guest on a static file, for real.
              --kernel picks its kernel: 6.1 or 6.12 (Debian's: the
              immutable guard) or daxctl (the kernel/ series: static mode
              in the kernel). --debian 13: the emulated host is Debian 13
              instead (a root .ci/debian13-root builds once with
              mmdebstrap from Debian's packages, about 2 min, then
              cached): its kernel 6.12, libvirt 11, QEMU 10, AppArmor on.
  --dir DIR   on this machine, in DIR on a DAX mount (real pmem).
  --dev       development mode on this machine: a throwaway loop-mounted
              xfs, the file verified-only (nothing enforced).
Everything made is removed at the end; the logs stay.
"""

import argparse
import os
import shutil
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tools", "harness"))
import libvirt_env as lv  # noqa: E402
import daxfile_vm as vm  # noqa: E402
from quickstart_emulated import EmulatedHost  # noqa: E402
from quickstart_here import OnThisHost, dax_mounts  # noqa: E402
from quickstart_steps import StepFailed  # noqa: E402

lv.QUIET = vm.QUIET = True


def stack_text(f):
    """"Debian GNU/Linux 13 (trixie), libvirt 11.3.0, QEMU 10.0.13,
    AppArmor: QEMU confined as libvirt-UUID (enforce)" from the facts"""
    st = f.get("stack") or {}
    text = (f"{st.get('os')}, libvirt {st.get('libvirt')}, QEMU "
            f"{st.get('qemu')}")
    lsm = [m for m in st.get("security", []) if m not in ("dac", "none")]
    if lsm:
        text += (f", {'/'.join(lsm)}: QEMU "
                 + (f"confined as {f['confined']}" if f.get("confined")
                    else "NOT confined"))
    return text


def summary(q, emulated):
    f = q.facts
    refused = f.get("refused") or {}
    if emulated:
        where = (f"on an emulated pmem host (QEMU TCG; {stack_text(f)}; "
                 f"Linux {f.get('kernel')}, {f.get('host_kernel')}; its "
                 f"NVDIMM in fsdax mode, {f.get('filesystem')})")
    elif q.dev_mode:
        where = ("on this machine in DEVELOPMENT MODE: no pmem, so the file "
                 "is verified-only (nothing enforced; durability relies on "
                 "the host page cache)")
    else:
        where = f"on this machine (Linux {f.get('kernel')}, " \
                f"{f.get('filesystem')})"
    lines = [f"Proven in {time.monotonic() - q.start:.0f} s, {where}:",
             "  - daxfile created the backing file fully written and 2 MiB "
             f"aligned:\n      {f.get('created')}",
             "  - libvirt started the guest with the file as an nvdimm; the "
             "daxfile hook validated it at prepare and made it static for "
             f"'{f.get('owner')}'"]
    if refused:
        lines.append(f"  - static mode engaged with mechanism "
                     f"'{f.get('mechanism')}': while the guest ran, every "
                     "layout change was refused ("
                     + ", ".join(f"{k} {v}" for k, v in refused.items())
                     + ") and the file kept its size and blocks")
    else:
        lines.append(f"    (mechanism '{f.get('mechanism')}': nothing "
                     "enforced)")
    lines += [f"  - in the guest: {'; '.join(f.get('write', [])[1:])}",
              "  - after a power-off and a second boot: "
              f"{'; '.join(f.get('verify', [])[1:])} ({f.get('write_size')} "
              f"with seed {f.get('seed')})",
              "  - at each power-off the hook released the file (libvirtd: "
              f"{f.get('libvirtd')})",
              f"Logs: {q.logs}"]
    print("\n" + "\n".join(lines))


def parse_args():
    p = argparse.ArgumentParser(prog="quickstart", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--dir", help="a directory on a DAX mount (real "
                       "pmem) on this machine")
    where.add_argument("--dev", action="store_true", help="development "
                       "mode on this machine: a loop-mounted xfs, the file "
                       "verified-only")
    p.add_argument("--keep", action="store_true",
                   help="keep the guest, the file and the hook (with --dir "
                   "or --dev)")
    p.add_argument("--size", default=None, help="backing file size "
                   "(default 256M; 64M on the emulated host)")
    p.add_argument("--write-size", default=None,
                   help="how much the guest writes and verifies (default "
                   "64M; 4M on the emulated host)")
    p.add_argument("--kernel", help="the kernel of the "
                   "emulated host and of its guest: 6.1 (default) or 6.12 "
                   "(Debian's) or daxctl (kernel/'s series, built first: "
                   "about 15 min); with --dir or --dev the guest's: 6.1 or "
                   "6.12")
    p.add_argument("--debian", choices=("12", "13"), default="12",
                   help="the emulated host's Debian: 12 (this machine's "
                   "own root, default) or 13 (its own kernel, libvirt 11, "
                   "QEMU 10 and AppArmor)")
    p.add_argument("--timeout", type=int, default=240,
                   help="seconds per guest boot")
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--guest-memory", type=int, default=512,
                   help=argparse.SUPPRESS)
    p.add_argument("--guest-vcpus", type=int, default=2,
                   help=argparse.SUPPRESS)
    # when ./quickstart began (its install and build count too)
    p.add_argument("--started", type=float, help=argparse.SUPPRESS)
    # inside the emulated host
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--guest-files", help=argparse.SUPPRESS)
    p.add_argument("--caps-cache", help=argparse.SUPPRESS)
    p.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    return p.parse_args()


def preflight(args):
    """A one-line reason the quickstart cannot run here, or None"""
    if os.geteuid() != 0:
        return ("run it as root (it starts libvirtd and installs a libvirt "
                "hook)")
    if args.debian == "13":
        if args.dir or args.dev:
            return ("--debian 13 is the emulated host's; with --dir or "
                    "--dev the quickstart runs on this machine's own stack")
        if args.kernel not in (None, "debian13"):
            return ("--debian 13 boots Debian 13's own kernel; drop "
                    f"--kernel {args.kernel}")
        args.kernel = "debian13"
    args.kernel = args.kernel or "6.1"
    if args.kernel not in vm.FLAVOURS:
        return (f"unknown --kernel '{args.kernel}'; use 6.1, 6.12 or "
                "daxctl")
    if not shutil.which("qemu-system-x86_64"):
        return ("qemu-system-x86_64 is not installed; ./quickstart installs "
                "it (package qemu-system-x86)")
    if not os.path.exists(os.path.join(args.build_dir, "src", "daxfilectl",
                                       "daxfile")):
        return (f"'{args.build_dir}' holds no build of daxfile; run "
                "./quickstart, which builds it")
    if args.keep and not (args.dir or args.dev or args.inside):
        return ("--keep needs --dir or --dev (the emulated host goes away "
                "with everything in it)")
    return None


def sizes(args, emulated):
    if emulated:
        # Under nested TCG every MiB the guest writes, and every MiB of
        # NVDIMM whose page structures its kernel sets up, costs seconds.
        args.size = args.size or "64M"
        args.write_size = args.write_size or "4M"
        args.guest_memory = 256
        args.guest_vcpus = 1
    args.size = args.size or "256M"
    args.write_size = args.write_size or "64M"


def failed(q, e):
    print(f"quickstart: {e}", file=sys.stderr)
    for line in e.report():
        print(f"quickstart: {line}" if not line.startswith("  | ")
              else line, file=sys.stderr)
    print(f"quickstart: logs are in {q.logs}", file=sys.stderr)
    return 1


def main():
    args = parse_args()
    why = preflight(args)
    if why:
        print(f"quickstart: {why}", file=sys.stderr)
        return 2
    emulated = not (args.dir or args.dev or args.inside)
    sizes(args, emulated)
    if emulated:
        for mnt in dax_mounts():
            print(f"quickstart: this machine has a DAX mount at {mnt}; "
                  f"'./quickstart --dir DIR' on it uses real pmem",
                  file=sys.stderr)
        q = EmulatedHost(args)
    elif args.inside:
        from daxtap import Tap  # noqa: E402
        from quickstart_emulated import L1_STEPS  # noqa: E402
        tap = Tap()
        tap.n = L1_STEPS  # quickstart-l1.sh reported its set-up
        q = OnThisHost(args, tap)
    else:
        q = OnThisHost(args)
    if args.started:
        q.start -= time.time() - args.started
    try:
        q.run()
    except StepFailed as e:
        if args.inside:
            return q.tap.done()
        return failed(q, e)
    if args.inside:
        return q.tap.done()
    summary(q, emulated)
    if args.keep:
        print(f"Kept: domain '{q.tag}', file {q.file}, the hook "
              f"/etc/libvirt/hooks/qemu.d/{q.tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

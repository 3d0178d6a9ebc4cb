#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The bad-input matrix: one table of bad inputs across the CLI, the libvirt
hook and `daxfile attach`. Each must exit non-zero with exactly one line on
stderr that names the thing (file, domain) and the cause, and leave the
files, the registry and the domain definition byte-identical.
"""

import os
import stat
import subprocess
import sys

from daxtest import (WRAPPER, Tap, build_path, daxfile,
                     need_root, strip_valgrind_notes, tree_snapshot)
import libvirt_env as lv

HERE = os.path.dirname(os.path.abspath(__file__))

lv.daxfile_vm.add_guest_dir(os.path.join(HERE, "..", "vm", "guest"))

HOOK = build_path("libvirt-hooks", "daxfile-hook")
REGISTRY = "/var/lib/daxfile/registry.json"
DOM = f"daxfile-bad-{os.getpid()}"
DOM_NOACPI = f"daxfile-bad-noacpi-{os.getpid()}"
DOM_DISK = f"daxfile-bad-disk-{os.getpid()}"


def registry_bytes():
    try:
        with open(REGISTRY, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def definition(name):
    return lv.virsh("dumpxml", "--inactive", name).stdout


def nvdimm(path, access=" access='shared'", pmem="<pmem/>",
           align="<alignsize unit='KiB'>2048</alignsize>", size=65536,
           label=""):
    return (f"<memory model='nvdimm'{access}><source><path>{path}</path>"
            f"{align}{pmem}</source><target><size unit='KiB'>{size}</size>"
            f"<node>0</node>{label}</target></memory>")


def domain(devices, doctype=""):
    return (f"{doctype}<domain type='qemu'><name>{DOM}</name>"
            "<memory unit='MiB'>256</memory>"
            "<os><type arch='x86_64' machine='pc'>hvm</type></os>"
            "<maxMemory slots='4' unit='MiB'>4096</maxMemory>"
            "<features><acpi/></features><cpu><numa><cell id='0' cpus='0' "
            "memory='256' unit='MiB'/></numa></cpu>"
            f"<devices>{devices}</devices></domain>")


def setup_files(d):
    j = lambda n: os.path.join(d, n)  # noqa: E731
    for name in ("good.img", "held.img", "linked.img"):
        assert daxfile("create", j(name), "--size", "64M",
                       "--allow-non-dax").rc == 0
    subprocess.run(["fallocate", "-l", "64M", j("falloc.img")], check=True)
    with open(j("sparse.img"), "wb") as f:
        f.truncate(64 << 20)
    os.symlink("good.img", j("link.img"))
    os.symlink("gone.img", j("dangling.img"))
    os.mkfifo(j("fifo"))
    os.mknod(j("null"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.mkdir(j("dir"))
    os.link(j("linked.img"), j("linked2.img"))
    with open(j("unreadable.img"), "wb") as f:
        f.write(b"\0" * 4096)
    os.chmod(j("unreadable.img"), 0o600)
    with open(j("odd\nname \udcff.img"), "wb") as f:
        f.truncate(4096)
    return j


def cli_cases(j):
    odd = j("odd\nname \udcff.img")
    return [
        ("create on an existing file", ["create", j("good.img"), "--size",
                                        "2M"], "already exists"),
        ("create on a dangling symlink", ["create", j("dangling.img"),
                                          "--size", "2M"], "already exists"),
        ("create size 0", ["create", j("n.img"), "--size", "0"],
         "greater than zero"),
        ("create size garbage", ["create", j("n.img"), "--size", "lots"],
         "expected a positive number"),
        ("create size overflow", ["create", j("n.img"), "--size", "16777216T"],
         "too large"),
        ("create size 2MB (ambiguous unit)", ["create", j("n.img"), "--size",
                                              "2MB"], "unknown unit 'MB'"),
        ("create size not a multiple of align", ["create", j("n.img"),
                                                 "--size", "3M"],
         "not a multiple"),
        ("create larger than the free space", ["create", j("n.img"),
                                               "--size", "1T"],
         "Not enough space"),
        ("create with align 3M", ["create", j("n.img"), "--size", "6M",
                                  "--align", "3M"], "not a power of two"),
        ("check with align 1K", ["check", "--align", "1K", j("good.img")],
         "smaller than the page size"),
        ("check a missing file", ["check", j("nope.img")], "No such file"),
        ("check a directory", ["check", j("dir")], "is a directory"),
        ("check a FIFO", ["check", j("fifo")], "is a FIFO"),
        ("check a device node", ["check", j("null")], "character device"),
        ("check a symlink", ["check", j("link.img")], "symbolic link"),
        ("status an unreadable file (as nobody)", ["status",
                                                   j("unreadable.img")],
         "Permission denied"),
        ("enable an odd name (newline, non-UTF-8)",
         ["enable", "--allow-non-dax", odd], "hole"),
        ("enable an unprovisioned file", ["enable", "--allow-non-dax",
                                          j("falloc.img")], "unwritten"),
        ("enable a sparse file", ["enable", "--allow-non-dax",
                                  j("sparse.img")], "hole"),
        ("enable without DAX or --allow-non-dax", ["enable", j("good.img")],
         "DAX is not in effect"),
        ("enable a file static for another owner",
         ["enable", "--allow-non-dax", "--owner", "someone", j("held.img")],
         "static for 'holder'"),
        ("enable with an unknown mechanism", ["enable", "--mechanism", "magic",
                                              j("good.img")],
         "unknown --mechanism"),
        ("disable a file that is not static", ["disable", j("good.img")],
         "is not static"),
        ("disable for the wrong owner", ["disable", "--owner", "someone",
                                         j("held.img")],
         "static for 'holder'"),
        ("run without --file", ["run", "--", "true"], "missing --file"),
        ("run without a command", ["run", "--file", j("good.img")],
         "missing '-- COMMAND'"),
        ("selftest on a file", ["selftest", j("good.img")], "Not a directory"),
        ("domain-xml with a tiny label", ["domain-xml", j("good.img"),
                                          "--allow-non-dax",
                                          "--label-size", "64K"],
         "below QEMU's minimum"),
        # what attach refuses, domain-xml does not print
        ("domain-xml with a size not the file's", [
            "domain-xml", j("good.img"), "--allow-non-dax", "--size", "32M"],
         "the device size must equal the file's size"),
        ("domain-xml with align 1G on a 64M file", [
            "domain-xml", j("good.img"), "--allow-non-dax", "--align", "1G"],
         "not a multiple of the alignment"),
        ("domain-xml without DAX", ["domain-xml", j("good.img")],
         "DAX is not in effect"),
        ("domain-xml of a missing file", ["domain-xml", j("nope.img"),
                                          "--size", "8M"],
         "give --no-check and --size"),
        ("domain-xml --no-check of a missing file without --size", [
            "domain-xml", "--no-check", j("nope.img")], "give --size"),
        ("an unknown command", ["frobnicate"], "unknown command"),
        ("an unknown option", ["check", "--frob", j("good.img")],
         "Unknown option"),
    ]


def hook_cases(j):
    n = lambda **kw: domain(nvdimm(j("good.img"), **kw))  # noqa: E731
    return [
        ("hook: access private", n(access=" access='private'"),
         "access is 'private'"),
        ("hook: no <pmem/>", n(pmem=""), "no <pmem/>"),
        ("hook: no <alignsize>", n(align=""), "no <alignsize>"),
        ("hook: size differs from the file", n(size=131072),
         "refuses a mismatch"),
        ("hook: label below 128 KiB",
         n(label="<label><size unit='KiB'>64</size></label>"),
         "below QEMU's minimum"),
        ("hook: unprovisioned file", domain(nvdimm(j("falloc.img"))),
         "unwritten"),
        ("hook: symlink", domain(nvdimm(j("link.img"))), "symbolic link"),
        ("hook: '..' out of the root", domain(nvdimm(j("../escape.img"))),
         "leads outside the managed root"),
        ("hook: hard link", domain(nvdimm(j("linked.img"))), "hard links"),
        ("hook: a file static for another owner",
         domain(nvdimm(j("held.img"))), "static for 'holder'"),
        ("hook: DOCTYPE with entities",
         domain(nvdimm(j("good.img")),
                "<!DOCTYPE d [<!ENTITY a 'aaaa'>]>"), "DOCTYPE"),
        ("hook: malformed XML", "<domain><name>x", "Cannot parse"),
    ]


def attach_cases(j):
    return [
        ("attach: unknown domain", ["attach", "no-such-domain-here",
                                    j("good.img"), "--allow-non-dax"],
         "no-such-domain-here"),
        ("attach: missing file", ["attach", DOM, j("nope.img"),
                                  "--allow-non-dax"], "No such file"),
        ("attach: --size differs from the file",
         ["attach", DOM, j("good.img"), "--size", "128M", "--allow-non-dax"],
         "not 128 MiB"),
        ("attach: label below 128 KiB",
         ["attach", DOM, j("good.img"), "--label-size", "64K",
          "--allow-non-dax"], "below QEMU's minimum"),
        ("attach: unprovisioned file", ["attach", DOM, j("falloc.img"),
                                        "--allow-non-dax"], "unwritten"),
        ("attach: domain without ACPI", ["attach", DOM_NOACPI, j("good.img"),
                                         "--allow-non-dax"],
         "no <features><acpi/>"),
        ("attach: --create on an existing file",
         ["attach", DOM, j("good.img"), "--create", "--size", "64M",
          "--allow-non-dax"], "already exists"),
        ("attach: --create without --size", ["attach", DOM, j("x.img"),
                                             "--create"], "needs --size"),
        ("attach: a file the domain names as a disk",
         ["attach", DOM_DISK, j("good.img"), "--allow-non-dax"],
         "already used by domain"),
    ]


def attach_twice(tap, loop, j):
    """The same file by another path (a bind mount): two NVDIMMs over one
    storage, refused."""
    first = daxfile("attach", DOM, j("good.img"), "--allow-non-dax")
    bind = os.path.join(loop.tmp, "bind")
    os.makedirs(bind, exist_ok=True)
    subprocess.run(["mount", "--bind", loop.path, bind], check=True)
    try:
        before = snapshot(loop)
        again = os.path.join(bind, "good.img")
        res = daxfile("attach", DOM, again, "--allow-non-dax")
        check(tap, "attach: a file the domain has, by another path", res,
              "over one storage", [again], first.rc == 0 and
              snapshot(loop) == before)
    finally:
        subprocess.run(["umount", bind], capture_output=True)
        daxfile("detach", DOM, j("good.img"))


def snapshot(loop):
    return (tree_snapshot(loop.path), registry_bytes(), definition(DOM),
            definition(DOM_NOACPI), definition(DOM_DISK))


def check(tap, name, res, want, named, same):
    """non-zero, one line, the thing and the cause named, nothing changed"""
    lines = res.err.splitlines()
    tap.ok(res.rc not in (0, None) and len(lines) == 1 and want in lines[0]
           and any(n in lines[0] for n in named) and same,
           f"bad input: {name}",
           f"rc={res.rc} unchanged={same}\nstderr: {res.err}")


def domain_xml_checked(tap, j):
    """The other side of the domain-xml cases above: the file passes what
    attach checks, and the XML is printed; --no-check says it did not
    look at the file"""
    res = daxfile("domain-xml", "--allow-non-dax", j("good.img"))
    plain = daxfile("domain-xml", "--no-check", "--size", "8M",
                    j("later.img"))
    tap.ok(res.rc == 0 and f"<path>{j('good.img')}</path>" in res.out and
           '<size unit="KiB">65536</size>' in res.out and not res.err and
           plain.rc == 0 and "not checked (--no-check)" in plain.err and
           '<size unit="KiB">8192</size>' in plain.out,
           "domain-xml prints the XML of a file that passes attach's checks; "
           "with --no-check, of a file not made yet, and says it did not "
           "check", (res.out, res.err, plain.out, plain.err))


def run_hook(xml, op="prepare"):
    proc = subprocess.run(WRAPPER + [HOOK, DOM, op, "begin", "-"],
                          input=xml.encode("utf-8", "surrogateescape"),
                          capture_output=True)

    class R:
        rc = proc.returncode
        err = strip_valgrind_notes(proc.stderr.decode(errors="replace"))
    return R


def define_domains(loop):
    xml = domain("")
    res = lv.define(xml, loop.tmp, DOM)
    assert res.returncode == 0, res.stderr
    noacpi = xml.replace(DOM, DOM_NOACPI).replace(
        "<features><acpi/></features>", "")
    res = lv.define(noacpi, loop.tmp, DOM_NOACPI)
    assert res.returncode == 0, res.stderr
    disk = domain("<disk type='file' device='disk'><driver name='qemu' "
                  f"type='raw'/><source file='{loop.path}/good.img'/>"
                  "<target dev='vda' bus='virtio'/></disk>")
    res = lv.define(disk.replace(DOM, DOM_DISK), loop.tmp, DOM_DISK)
    assert res.returncode == 0, res.stderr


def main():
    tap = Tap()
    need_root(tap)
    with lv.Libvirtd() as daemon, lv.LoopDir() as loop:
        j = setup_files(loop.path)
        cli, hook, attach = cli_cases(j), hook_cases(j), attach_cases(j)
        tap.plan(len(cli) + len(hook) + len(attach) + 3)
        hookinst = lv.Hook(HOOK, f"bad-{os.getpid()}", [loop.path])
        try:
            hookinst.install(daemon)
            define_domains(loop)
            assert daxfile("enable", "--allow-non-dax", "--owner", "holder",
                           j("held.img")).rc == 0
            for name, argv, want in cli:
                before = snapshot(loop)
                user = "nobody" if "nobody" in name else None
                res = daxfile(*argv, user=user)
                named = [a.encode("utf-8", "surrogateescape")
                         .decode("utf-8", "replace")
                         for a in argv if "/" in a]
                check(tap, name, res, want, named + ["\\x0a", "daxfile"],
                      snapshot(loop) == before)
            for name, xml, want in hook:
                before = snapshot(loop)
                res = run_hook(xml)
                check(tap, name, res, want, [f"domain '{DOM}'", "domain XML"],
                      snapshot(loop) == before)
            for name, argv, want in attach:
                before = snapshot(loop)
                res = daxfile(*argv)
                check(tap, name, res, want, argv[1:3] + ["daxfile attach:"],
                      snapshot(loop) == before)
            attach_twice(tap, loop, j)
            domain_xml_checked(tap, j)
            daxfile("disable", j("held.img"))
            mine = [e for e in daxfile("list", "--json").json()
                    if e["path"].startswith(loop.path)]
            tap.ok(mine == [], "the registry holds nothing of this test "
                   "afterwards", mine)
        finally:
            lv.cleanup_domain(DOM)
            lv.cleanup_domain(DOM_NOACPI)
            lv.cleanup_domain(DOM_DISK)
            hookinst.remove()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

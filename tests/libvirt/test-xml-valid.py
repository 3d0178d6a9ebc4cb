#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Every domain XML the project keeps or writes is one libvirt takes: the
domains under tests/data and examples/, the hook tests' input template,
the domains the hook's golden files say it prints (migrate/restore
rewrites), the test guests' domain (libvirt_env.domain_xml) and the device
'daxfile domain-xml' prints, put into the example domain. Each passes
virt-xml-validate (libvirt's schema) and `virsh define` on a real libvirtd
(the QEMU driver's own checks: an <os><type>, a <node> for each nvdimm of
a domain with several NUMA cells, ...), and is undefined again.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile

from daxtest import SRCDIR, Tap, daxfile, need_root
import libvirt_env as lv

HERE = os.path.dirname(os.path.abspath(__file__))

lv.daxfile_vm.add_guest_dir(os.path.join(HERE, "..", "vm", "guest"))

DATA = os.path.join(SRCDIR, "tests", "data")
PREFIX = f"daxfile-xmlvalid-{os.getpid()}"


def read(path):
    with open(path) as f:
        return f.read()


def kept():
    """{what: XML} for the domains kept in the tree"""
    out = {}
    hooks = os.path.join(DATA, "hooks")
    for path in sorted(glob.glob(os.path.join(DATA, "**", "*.xml"),
                                 recursive=True) +
                       glob.glob(os.path.join(SRCDIR, "examples", "*.xml"))):
        # the hook's inputs are mostly domains it must refuse; the two it
        # accepts as they are stand for them below
        if path.startswith(hooks + os.sep):
            continue
        text = read(path)
        if re.search(r"<domain[\s>]", text):
            out[os.path.relpath(path, SRCDIR)] = text
    for name in ("prepare-ok.xml", "prepare-virtio-pmem-ok.xml"):
        # the test's directory, in a hook input
        out[f"tests/data/hooks/{name} (the hook's input)"] = \
            read(os.path.join(hooks, name)).replace("@TMP@",
                                                    "/tmp/daxfile-test")
    for path in sorted(glob.glob(os.path.join(hooks, "*.out"))):
        m = re.search(r"^--- stdout\n(.*?)^--- stderr", read(path),
                      re.S | re.M)
        if m and "<domain" in m.group(1):
            # the test's directory, in a golden file
            out[os.path.relpath(path, SRCDIR) + " (the hook's output)"] = \
                m.group(1).replace("@TMP@", "/tmp/daxfile-test")
    return out


def written():
    """{what: XML} for the domains daxfile and its tests write"""
    out = {"libvirt_env.domain_xml() (the test guests)":
           lv.domain_xml("g", "/boot/vmlinux", "/boot/initrd", "quiet",
                         "/tmp/console", "/tmp/tap", loader=lv.QBOOT)}
    res = daxfile("domain-xml", "--no-check", "--size", "1G",
                  "--label-size", "128K", "/mnt/pmem/guest1.img")
    example = read(os.path.join(SRCDIR, "examples", "domain-nvdimm.xml"))
    out["daxfile domain-xml, in examples/domain-nvdimm.xml"] = re.sub(
        r"<memory model='nvdimm'.*?</memory>", lambda m: res.out, example,
        flags=re.S) if res.rc == 0 else f"daxfile domain-xml failed: {res}"
    res = daxfile("domain-xml", "--no-check", "--size", "1G", "--model",
                  "virtio-pmem", "/mnt/pmem/guest1.img")
    out["daxfile domain-xml --model virtio-pmem, in "
        "examples/domain-nvdimm.xml"] = re.sub(
        r"<memory model='nvdimm'.*?</memory>", lambda m: res.out, example,
        flags=re.S) if res.rc == 0 else f"daxfile domain-xml failed: {res}"
    return out


def validate(xml):
    with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
        f.write(xml)
        f.flush()
        proc = subprocess.run(["virt-xml-validate", f.name, "domain"],
                              capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout + proc.stderr


def for_define(xml, name, kvm):
    """@xml under our own name, without the uuid and id it was kept with;
    type kvm on a host whose libvirt offers no KVM: qemu (said so)"""
    xml = re.sub(r"<name>.*?</name>", f"<name>{name}</name>", xml, count=1)
    xml = re.sub(r"\s*<uuid>.*?</uuid>", "", xml, count=1)
    xml = re.sub(r"(<domain[^>]*?)\s+id=['\"]\d+['\"]", r"\1", xml, count=1)
    if not kvm and re.search(r"<domain type=['\"]kvm['\"]", xml):
        return re.sub(r"type=['\"]kvm['\"]", "type='qemu'", xml, count=1), \
            " (as type qemu: this host's libvirt offers no KVM)"
    return xml, ""


def define(tap, what, xml, n, kvm):
    name = f"{PREFIX}-{n}"
    xml, note = for_define(xml, name, kvm)
    with tempfile.TemporaryDirectory() as d:
        res = lv.define(xml, d, name)
    ok = res.returncode == 0
    if ok:
        lv.cleanup_domain(name)
    tap.ok(ok and lv.state(name) is None,
           f"virsh define takes {what}{note}", res.stderr)


def main():
    tap = Tap()
    need_root(tap)
    domains = {**kept(), **written()}
    tap.plan(2 * len(domains))
    for what, xml in domains.items():
        ok, out = validate(xml)
        tap.ok(ok, f"virt-xml-validate: {what}", out)
    with lv.Libvirtd():
        caps = lv.virsh("capabilities").stdout
        kvm = "<domain type='kvm'" in caps or '<domain type="kvm"' in caps
        for n, (what, xml) in enumerate(domains.items()):
            define(tap, what, xml, n, kvm)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

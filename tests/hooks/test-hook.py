#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The libvirt hook's decisions, without libvirtd: domain XML in, exit code,
stdout and stderr out, compared with golden files in tests/data/hooks/.

Backing files live in a scratch managed root and are made with
`daxfile create --align 4K` (any filesystem gives 4 KiB-aligned extents, so
this runs without root and without pmem; allow_non_dax=true, as on a
development host). 2 MiB alignment on real filesystems is covered by the
loopfs and vm suites. DAXFILE_TEST_REGENERATE=1 rewrites the golden files.
"""

import contextlib
import difflib
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
from daxtest import (SRCDIR, WRAPPER, EngagedFs, QemuStandIn, Tap,  # noqa
                     build_path, daxfile, is_immutable, need_root,
                     strip_valgrind_notes, tempdir)

DATA = os.path.join(SRCDIR, "tests", "data", "hooks")
# --engaged: the managed root is on an xfs loop mount that fake-dax.so makes
# look like DAX, so started really sets the immutable flag (root only)
ENGAGED = "--engaged" in sys.argv[1:]
MECH = "immutable-guard" if ENGAGED else "verified-only"
HOOK = build_path("libvirt-hooks", "daxfile-hook")
M = 1 << 20
UUID1 = "11111111-2222-3333-4444-555555555555"


def template(name):
    with open(os.path.join(DATA, name)) as f:
        return f.read()


def device(name, path, **edit):
    """tests/data/hooks/@name with @path, each key of @edit replaced"""
    xml = template(name).replace("@PATH@", path)
    for old, new in edit.items():
        assert old in xml, old
        xml = xml.replace(old, new)
    return xml


def nvdimm(path, **edit):
    return device("nvdimm.xml.in", path, **edit)


def virtio_pmem(path, **edit):
    return device("virtio-pmem.xml.in", path, **edit)


def domain(devices, name="vm1", uuid=UUID1):
    return (template("domain.xml.in").replace("@NAME@", name)
            .replace("@UUID@", uuid).replace("@DEVICES@", devices))


class World:
    def __init__(self, tmp, extra_env=None):
        self.tmp = tmp
        self.extra_env = extra_env or {}
        self.root = os.path.join(tmp, "pmem")
        self.state = os.path.join(tmp, "state")
        os.mkdir(self.root)
        self.conf = os.path.join(tmp, "daxfile.conf")
        self.pid_dir = os.path.join(tmp, "qemu")
        self.write_conf()

    def write_conf(self, extra=""):
        with open(self.conf, "w") as f:
            f.write(f"[hook]\nmanaged_roots={self.root}\nallow_non_dax=true\n"
                    f"trusted_owners=root;{os.getuid()}\n"
                    f"qemu_pid_dir={self.pid_dir}\n{extra}")

    def env(self):
        return dict(self.extra_env, DAXFILE_CONF=self.conf,
                    DAXFILE_STATE_DIR=self.state)

    def path(self, name):
        return os.path.join(self.root, name)

    def create(self, name, size="8M"):
        res = daxfile("create", "--align", "4K", "--allow-non-dax",
                      self.path(name), "--size", size, env=self.extra_env)
        assert res.rc == 0, res
        return self.path(name)

    def hook(self, xml, op="prepare", subop="begin", name="vm1", qemu=(),
             env=None):
        """The hook as libvirtd runs it; at started and reconnect with a
        stand-in for the domain's QEMU mapping its files (@qemu: options
        of daxfile-consumer, or None for no QEMU at all)"""
        data = xml.encode() if isinstance(xml, str) else xml
        with contextlib.ExitStack() as stack:
            if op in ("started", "reconnect") and qemu is not None:
                stack.enter_context(QemuStandIn(
                    self.pid_dir, data.decode(errors="replace"), name,
                    self.extra_env, qemu))
            return subprocess.run(WRAPPER + [HOOK, name, op, subop, "-"],
                                  input=data, capture_output=True,
                                  env=dict(os.environ, **self.env(),
                                           **(env or {})))

    def registry(self):
        path = os.path.join(self.state, "lib", "registry.json")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [(e["owner"], e["state"], e["mechanism"])
                    for e in json.load(f)["entries"]]


def render(world, proc):
    text = (f"rc: {proc.returncode}\n--- stdout\n"
            f"{proc.stdout.decode(errors='replace')}--- stderr\n"
            f"{strip_valgrind_notes(proc.stderr.decode(errors='replace'))}")
    text = text.replace(world.tmp, "@TMP@").replace(world.tmp.lstrip("/"),
                                                     "@RELTMP@")
    text = re.sub(r"QEMU \(pid \d+\)", "QEMU (pid @PID@)", text)
    text = re.sub(r" at 0x[0-9a-f]+,", " at @ADDR@,", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "@TIME@", text)


def golden(tap, world, name, proc, extra_ok=True, diag=""):
    got = render(world, proc)
    path = os.path.join(DATA, name + ".out")
    if ENGAGED and os.path.exists(os.path.join(DATA, name + ".engaged.out")):
        path = os.path.join(DATA, name + ".engaged.out")
    if os.environ.get("DAXFILE_TEST_REGENERATE") == "1":
        with open(path, "w") as f:
            f.write(got)
    try:
        with open(path) as f:
            want = f.read()
    except FileNotFoundError:
        want = "(missing golden file)\n"
    diff = "".join(difflib.unified_diff(want.splitlines(True),
                                        got.splitlines(True), "expected",
                                        "got"))
    tap.ok(got == want and extra_ok, f"hook: {name}", (diff or got) + str(diag))


def guarded(path):
    """The immutable flag is set and a truncate is refused (never tried on
    a file without the flag: it would succeed)"""
    if not is_immutable(path):
        return False
    try:
        os.truncate(path, 0)
        return False
    except PermissionError:
        return True


def lifecycle(tap, w):
    f = w.create("vm1.img")
    xml = domain(nvdimm(f))
    golden(tap, w, "prepare-ok", w.hook(xml),
           w.registry() == [("domain:vm1", "reserved", "none")], w.registry())
    golden(tap, w, "started-ok", w.hook(xml, "started"),
           w.registry() == [("domain:vm1", "engaged", MECH)] and
           guarded(f) == ENGAGED, (w.registry(), guarded(f)))
    golden(tap, w, "reconnect-ok", w.hook(xml, "reconnect"),
           w.registry() == [("domain:vm1", "engaged", MECH)])
    golden(tap, w, "prepare-other-owner",
           w.hook(domain(nvdimm(f), name="vm2"), name="vm2"),
           w.registry() == [("domain:vm1", "engaged", MECH)])
    golden(tap, w, "stopped-ok", w.hook(xml, "stopped", "end"),
           w.registry() == [] and not guarded(f))
    golden(tap, w, "release-again", w.hook(xml, "release", "end"),
           w.registry() == [])


def attestation(tap, w):
    """At started the hook looks at what the domain's QEMU really mapped
    and refuses the start, before anything is engaged, when it is not
    what the guarantee needs."""
    f = w.create("attest.img")
    other = w.create("attest-other.img")
    xml = domain(nvdimm(f))
    huge = domain(nvdimm(f, **{"<alignsize unit='KiB'>4</alignsize>":
                                "<alignsize unit='KiB'>2048</alignsize>"}))
    cases = [("started-no-qemu", xml, None),
             ("started-qemu-private", xml, ("--private",)),
             ("started-qemu-misaligned", huge, ("--misalign",)),
             ("started-qemu-no-map-sync", xml, ("--no-sync",))]
    for name, text, qemu in cases:
        w.hook(text)
        proc = w.hook(text, "started", qemu=qemu)
        want = [("domain:vm1", "reserved", "none")]
        if name == "started-qemu-no-map-sync" and not ENGAGED:
            want = [("domain:vm1", "engaged", MECH)]  # not DAX: no MAP_SYNC
        golden(tap, w, name, proc, w.registry() == want and not guarded(f),
               w.registry())
        w.hook(text, "release", "end")
    w.hook(xml)
    with QemuStandIn(w.pid_dir, domain(nvdimm(other)), "vm1",
                     w.extra_env):
        proc = w.hook(xml, "started", qemu=None)
    golden(tap, w, "started-qemu-maps-another-file", proc,
           w.registry() == [("domain:vm1", "reserved", "none")],
           w.registry())
    w.hook(xml, "release", "end")
    w.hook(xml)
    with QemuStandIn(w.pid_dir, xml, "vm1", w.extra_env) as qemu:
        started = w.hook(xml, "started", qemu=None)
        res = daxfile("status", "--json", "--allow-non-dax", f,
                      env=dict(w.extra_env, **w.env()))
        q = res.json()[0]["static"].get("qemu") if res.rc == 0 else None
        m = (q or {}).get("mapping") or {}
        tap.ok(started.returncode == 0 and q and q["attested"] and
               q["pid"] == qemu.proc.pid and m["shared"] and
               m["sync"] == ENGAGED and m["end"] - m["start"] == 8 * M and
               m["start"] % (2 * M) == 0,
               "status of a file a running domain holds: its QEMU's mapping, "
               "attested as at started", (started.stderr, res))
        text = daxfile("status", "--allow-non-dax", f,
                       env=dict(w.extra_env, **w.env()))
    res = daxfile("status", "--json", "--allow-non-dax", f,
                  env=dict(w.extra_env, **w.env()))
    q = res.json()[0]["static"].get("qemu") if res.rc == 0 else None
    tap.ok(f"qemu:         pid {qemu.proc.pid} maps 8 MiB of it, shared, "
           in text.out and q and not q["attested"] and
           "no running QEMU for domain 'vm1'" in q["problem"],
           "status once that QEMU is gone: not attested, and why",
           (text, res))
    w.hook(xml, "release", "end")
    os.unlink(f)
    os.unlink(other)


def virtio_pmem_device(tap, w):
    """A virtio-pmem device is validated, reserved and made static as an
    nvdimm is; QEMU maps it without MAP_SYNC and only page-aligned (the
    guest's flush request is served with fsync()), which the attestation
    accepts for it, on DAX too, while it refuses it for an nvdimm."""
    f = w.create("vp.img")
    xml = domain(virtio_pmem(f))
    golden(tap, w, "prepare-virtio-pmem-ok", w.hook(xml),
           w.registry() == [("domain:vm1", "reserved", "none")], w.registry())
    golden(tap, w, "started-virtio-pmem-ok",
           w.hook(xml, "started", qemu=("--no-sync", "--misalign")),
           w.registry() == [("domain:vm1", "engaged", MECH)] and
           guarded(f) == ENGAGED, (w.registry(), guarded(f)))
    with QemuStandIn(w.pid_dir, xml, "vm1", w.extra_env,
                     ("--no-sync", "--misalign")) as qemu:
        res = daxfile("status", "--json", "--allow-non-dax", f,
                      env=dict(w.extra_env, **w.env()))
        st = res.json()[0]["static"] if res.rc == 0 else {}
        q = st.get("qemu") or {}
        text = daxfile("status", "--allow-non-dax", f,
                       env=dict(w.extra_env, **w.env()))
        why = "(virtio-pmem: durable at the guest's flush)" if ENGAGED \
            else "(not DAX)"
        tap.ok(st.get("device") == "virtio-pmem" and q.get("attested") and
               q.get("pid") == qemu.proc.pid and
               q.get("map_sync_required") is False and
               not q["mapping"]["sync"] and
               f"shared, without MAP_SYNC {why}" in text.out,
               "status of a virtio-pmem file: its QEMU's mapping attested "
               "without MAP_SYNC", (res, text))
    golden(tap, w, "stopped-virtio-pmem-ok", w.hook(xml, "stopped", "end"),
           w.registry() == [] and not guarded(f))
    golden(tap, w, "prepare-virtio-pmem-private",
           w.hook(domain(virtio_pmem(f, **{" access='shared'": ""}))),
           w.registry() == [])
    golden(tap, w, "prepare-virtio-pmem-no-size",
           w.hook(domain(virtio_pmem(f, **{
               "<size unit='KiB'>8192</size>": ""}))),
           w.registry() == [])
    os.unlink(f)


class FakeDevdax:
    """A sysfs tree (DAXFILE_SYSFS_ROOT) in which the character device
    /dev/null (1:3) is the device-dax device dax0.0: @size bytes, @align
    pages, bound to @driver. The hook opens /dev/null, finds it a dax
    device there, and checks and reserves it by its device number."""

    PATH = "/dev/null"

    def __init__(self, tmp, size=64 * M, align=2 * M, driver="device_dax"):
        self.root = os.path.join(tmp, "sys")
        dev = os.path.join(self.root, "devices", "platform", "dax0", "dax0.0")
        bus = os.path.join(self.root, "bus", "dax")
        os.makedirs(dev)
        os.makedirs(os.path.join(bus, "drivers", driver))
        os.makedirs(os.path.join(self.root, "dev", "char"))
        for attr, value in (("size", size), ("align", align)):
            with open(os.path.join(dev, attr), "w") as f:
                f.write(f"{value}\n")
        os.symlink(os.path.relpath(bus, dev), os.path.join(dev, "subsystem"))
        os.symlink(os.path.relpath(os.path.join(bus, "drivers", driver), dev),
                   os.path.join(dev, "driver"))
        os.symlink("../../devices/platform/dax0/dax0.0",
                   os.path.join(self.root, "dev", "char", "1:3"))
        self.env = {"DAXFILE_SYSFS_ROOT": self.root}


def devdax_nvdimm(**edit):
    return nvdimm(FakeDevdax.PATH, **{
        "<alignsize unit='KiB'>4</alignsize>":
            "<alignsize unit='KiB'>2048</alignsize>",
        "<size unit='KiB'>8192</size>": "<size unit='KiB'>65536</size>",
        **edit})


def device_dax(tap, w):
    """With device_dax=true the hook validates and reserves an nvdimm
    backed by a device-dax device instead of freezing a file: bound to
    device_dax, <alignsize> its page size, <size> its size; one domain at
    a time; released at stop, and by repair when no QEMU maps it."""
    tmp = os.path.join(w.tmp, "devdax")
    os.mkdir(tmp)
    try:
        ok = FakeDevdax(tmp)
        kmem = FakeDevdax(os.path.join(tmp, "kmem"), driver="kmem")
        xml = domain(devdax_nvdimm())
        golden(tap, w, "prepare-devdax-off", w.hook(xml, env=ok.env),
               w.registry() == [], w.registry())
        w.write_conf("device_dax=true\n")
        golden(tap, w, "prepare-devdax-ok", w.hook(xml, env=ok.env),
               w.registry() == [("domain:vm1", "reserved", "none")],
               w.registry())
        golden(tap, w, "prepare-devdax-other-domain",
               w.hook(domain(devdax_nvdimm(), name="vm2"), name="vm2",
                      env=ok.env),
               w.registry() == [("domain:vm1", "reserved", "none")],
               w.registry())
        golden(tap, w, "started-devdax-ok",
               w.hook(xml, "started", qemu=None, env=ok.env),
               w.registry() == [("domain:vm1", "engaged", "device-dax")],
               w.registry())
        lst = daxfile("list", "--json", env=dict(w.extra_env, **w.env()))
        e = (lst.json() or [{}])[0] if lst.rc == 0 else {}
        tap.ok(e.get("path") == FakeDevdax.PATH and
               e.get("mechanism") == "device-dax" and
               e.get("owner") == "domain:vm1",
               "daxfile list shows the device-dax device beside files", lst)
        wipe = daxfile("wipe", FakeDevdax.PATH,
                       env=dict(w.extra_env, **w.env(), **ok.env))
        tap.ok(wipe.rc == 1 and len(wipe.err.splitlines()) == 1 and
               "is engaged for 'domain:vm1'" in wipe.err,
               "daxfile wipe of a device-dax device a domain holds: refused",
               wipe)
        golden(tap, w, "stopped-devdax-ok",
               w.hook(xml, "stopped", "end", env=ok.env), w.registry() == [],
               w.registry())
        w.hook(xml, env=ok.env)
        w.hook(xml, "started", qemu=None, env=ok.env)
        rep = daxfile("repair", env=dict(w.extra_env, **w.env()))
        tap.ok(rep.rc == 0 and w.registry() == [] and
               "no process maps it any more" in rep.out + rep.err,
               "repair releases a device-dax device no QEMU maps any more",
               (rep, w.registry()))
        for name, dev, env in (
                ("kmem", devdax_nvdimm(), kmem.env),
                ("align-mismatch", devdax_nvdimm(**{
                    "<alignsize unit='KiB'>2048</alignsize>":
                    "<alignsize unit='KiB'>4</alignsize>"}), ok.env),
                ("size-mismatch", nvdimm(FakeDevdax.PATH, **{
                    "<alignsize unit='KiB'>4</alignsize>":
                    "<alignsize unit='KiB'>2048</alignsize>"}), ok.env)):
            golden(tap, w, f"prepare-devdax-{name}",
                   w.hook(domain(dev), env=env), w.registry() == [],
                   w.registry())
        link = os.path.join(tmp, "dax-link")
        os.symlink(FakeDevdax.PATH, link)
        golden(tap, w, "prepare-devdax-symlink",
               w.hook(domain(devdax_nvdimm()).replace(
                   f"<path>{FakeDevdax.PATH}</path>", f"<path>{link}</path>"),
                   env=ok.env),
               w.registry() == [], w.registry())
        w.write_conf()
    finally:
        shutil.rmtree(tmp)


def misconfigurations(w):
    """(name, xml) pairs; every one must be refused at prepare."""
    good = w.create("good.img")
    falloc = w.path("falloc.img")
    subprocess.run(["fallocate", "-l", "8M", falloc], check=True)
    sparse = w.path("sparse.img")
    with open(sparse, "wb") as f:
        f.truncate(8 * M)
    small = w.create("small.img", "4M")
    os.symlink(good, w.path("link.img"))
    hard = w.create("hard.img")
    os.link(hard, w.path("hard2.img"))
    outside = os.path.join(w.tmp, "outside.img")
    shutil.copyfile(good, outside)
    nv = lambda path=good, **kw: nvdimm(path, **kw)  # noqa: E731
    return [
        ("access-missing", nv(**{" access='shared'": ""})),
        ("access-private", nv(**{"access='shared'": "access='private'"})),
        ("no-pmem", nv(**{"<pmem/>": ""})),
        ("no-alignsize", nv(**{"<alignsize unit='KiB'>4</alignsize>": ""})),
        ("alignsize-not-power-of-two",
         nv(**{"<alignsize unit='KiB'>4</alignsize>":
               "<alignsize unit='KiB'>3000</alignsize>"})),
        ("no-size", nv(**{"<size unit='KiB'>8192</size>": ""})),
        ("size-mismatch", nv(small)),
        ("label-too-small", nv(**{"</node>": "</node><label><size unit='KiB'>"
                                  "64</size></label>"})),
        ("label-fills-device", nv(**{"</node>": "</node><label><size "
                                     "unit='KiB'>8192</size></label>"})),
        ("missing-file", nv(w.path("nope.img"))),
        ("unprovisioned", nv(falloc)),
        ("sparse", nv(sparse)),
        ("symlink", nv(w.path("link.img"))),
        ("dotdot-escape", nv(w.root + "/../outside.img")),
        ("hard-link", nv(hard)),
    ]


def refusals(tap, w):
    for name, dev in misconfigurations(w):
        golden(tap, w, f"prepare-{name}", w.hook(domain(dev)),
               w.registry() == [], w.registry())


def untrusted_owner(tap, w):
    f = w.create("foreign.img")
    try:
        os.chown(f, 12345, 12345)
    except PermissionError:
        tap.skip("hook: prepare-untrusted-owner", "chown needs root")
        return
    golden(tap, w, "prepare-untrusted-owner", w.hook(domain(nvdimm(f))),
           w.registry() == [])


def ignored(tap, w):
    f = w.create("ro.img")
    ro = nvdimm(f).replace("</node>", "</node><readonly/>")
    golden(tap, w, "prepare-readonly-ignored", w.hook(domain(ro)),
           w.registry() == [])
    golden(tap, w, "prepare-unmanaged-ignored",
           w.hook(domain(nvdimm("/var/lib/elsewhere/x.img"))),
           w.registry() == [])
    golden(tap, w, "prepare-no-nvdimm", w.hook(domain("")))
    golden(tap, w, "unknown-op", w.hook("not even xml", "frobnicate", "begin"))


def hostile(tap, w):
    f = w.create("hostile.img")
    golden(tap, w, "prepare-malformed", w.hook("<domain><name>x</name>"))
    bomb = ('<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
            '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>\n'
            + domain(nvdimm(f)).replace("<name>vm1</name>", "<name>&c;</name>"))
    golden(tap, w, "prepare-entity-bomb", w.hook(bomb))
    ext = ('<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY x SYSTEM '
           '"file:///etc/shadow">]>\n'
           + domain(nvdimm(f)).replace("<name>vm1</name>", "<name>&x;</name>"))
    golden(tap, w, "prepare-external-entity", w.hook(ext))
    huge = domain(nvdimm(f)).replace("<devices>",
                                     "<devices><!--" + "x" * (17 << 20) + "-->")
    golden(tap, w, "prepare-huge-xml", w.hook(huge))


def migrate(tap, w):
    f = w.create("mig.img")
    golden(tap, w, "migrate-no-rewrite", w.hook(domain(nvdimm(f)), "migrate"))
    dest = os.path.join(w.root, "dest")
    os.mkdir(dest)
    w.write_conf(f"create_missing=true\npath_map={w.root}/src={dest}\n")
    src_xml = domain(nvdimm(os.path.join(w.root, "src", "vm9.img")))
    proc = w.hook(src_xml, "migrate")
    made = os.path.join(dest, "vm9.img")
    golden(tap, w, "migrate-rewrite-create", proc,
           os.path.exists(made) and os.path.getsize(made) == 8 * M and
           daxfile("check", "--align", "4K", "--allow-non-dax", made).rc == 0)
    golden(tap, w, "restore-rewrite-existing", w.hook(src_xml, "restore"))
    w.write_conf("create_missing=false\n")
    golden(tap, w, "migrate-missing-no-create",
           w.hook(domain(nvdimm(w.path("absent.img"))), "migrate"))
    w.write_conf()


def bad_configs(tap, w):
    """Whatever the hook cannot understand in its configuration refuses
    the operation (fail closed), naming the file."""
    f = w.create("conf.img")
    xml = domain(nvdimm(f))
    valid = f"[hook]\nmanaged_roots={w.root}\nallow_non_dax=true\n"
    cases = [
        ("nul-bytes", b"\0" * 512),
        ("non-utf8-root", (f"[hook]\nmanaged_roots={w.root};/mnt/\xff\n"
                           "allow_non_dax=true\n").encode("latin-1")),
        ("non-utf8-owner", (valid + "trusted_owners=root;\xff\n")
         .encode("latin-1")),
        ("unknown-owner", (valid + "trusted_owners=nosuchuser\n").encode()),
        ("unknown-key", (valid.replace("managed_roots", "managed_root"))
         .encode()),
    ]
    for name, data in cases:
        with open(w.conf, "wb") as fh:
            fh.write(data)
        golden(tap, w, f"config-{name}", w.hook(xml), w.registry() == [])
    w.write_conf()


def spellings(tap, w):
    f = w.create("spelt.img")
    golden(tap, w, "prepare-dot-spelling",
           w.hook(domain(nvdimm(w.root + "/./spelt.img"))),
           w.registry() == [])
    golden(tap, w, "prepare-relative-spelling",
           w.hook(domain(nvdimm(f.lstrip("/")))), w.registry() == [])
    golden(tap, w, "prepare-two-nvdimms-one-file",
           w.hook(domain(nvdimm(f) + nvdimm(f).replace("'nvdimm0'",
                                                       "'nvdimm1'"))),
           w.registry() == [])
    golden(tap, w, "prepare-empty-stdin", w.hook(b""))
    utf16 = ('<?xml version="1.0" encoding="UTF-16"?>\n<!DOCTYPE d [<!ENTITY'
             ' a "aaaa">]>\n' + domain(nvdimm(f))).encode("utf-16")
    golden(tap, w, "prepare-utf16-doctype", w.hook(utf16),
           w.registry() == [])
    dest = os.path.join(w.root, "fromslash")
    os.mkdir(dest)
    w.write_conf(f"create_missing=true\npath_map=/={dest}\n")
    proc = w.hook(domain(nvdimm("/vm7.img")), "migrate")
    golden(tap, w, "migrate-map-from-slash", proc,
           os.path.exists(os.path.join(dest, "vm7.img")))
    w.write_conf()


UUID2 = "22222222-3333-4444-5555-666666666666"


def disk(path, target="vdb"):
    return (f"<disk type='file' device='disk'><driver name='qemu' "
            f"type='raw'/><source file='{path}'/><target dev='{target}' "
            "bus='virtio'/></disk>")


def in_os(xml, element):
    return xml.replace("</os>", f"{element}</os>")


def other_elements(tap, w):
    """A managed nvdimm's file, also named by another element of the same
    domain (by any spelling), is refused at prepare: QEMU would open it a
    second time outside the backend static mode reasons about."""
    f = w.create("shared.img")
    link = os.path.join(w.tmp, "outside-link.img")
    os.symlink(f, link)
    dev = nvdimm(f)
    plain = domain(dev)
    other = domain(dev + "\n    " + "@E@")
    cases = [
        ("disk-file", other.replace("@E@", disk(f))),
        ("disk-symlink-spelling", other.replace("@E@", disk(link))),
        ("disk-relative-spelling", other.replace("@E@", disk(f.lstrip("/")))),
        ("disk-backing-store", other.replace("@E@", (
            f"<disk type='file'><source file='{w.tmp}/nothing.qcow2'/>"
            f"<backingStore type='file'><format type='raw'/><source "
            f"file='{f}'/></backingStore><target dev='vdc'/></disk>"))),
        ("filesystem", other.replace("@E@", (
            f"<filesystem type='file' accessmode='passthrough'><source "
            f"file='{f}'/><target dir='data'/></filesystem>"))),
        ("serial-file", other.replace("@E@", (
            f"<serial type='file'><source path='{f}'/><target port='0'/>"
            "</serial>"))),
        ("console-log", other.replace("@E@", (
            f"<console type='pty'><log file='{f}' append='on'/><target "
            "type='serial' port='0'/></console>"))),
        ("channel", other.replace("@E@", (
            f"<channel type='unix'><source mode='bind' path='{f}'/><target "
            "type='virtio' name='org.example.0'/></channel>"))),
        ("tpm-device", other.replace("@E@", (
            f"<tpm model='tpm-tis'><backend type='passthrough'><device "
            f"path='{f}'/></backend></tpm>"))),
        ("virtio-pmem", other.replace("@E@", (
            f"<memory model='virtio-pmem' access='shared'><source><path>{f}"
            "</path></source><target><size unit='KiB'>8192</size></target>"
            "</memory>"))),
        ("os-kernel", in_os(plain, f"<kernel>{f}</kernel>")),
        ("os-initrd", in_os(plain, f"<initrd>{link}</initrd>")),
        ("os-dtb", in_os(plain, f"<dtb>{f}</dtb>")),
        ("os-loader", in_os(plain, f"<loader readonly='yes' type='pflash'>"
                            f"{f}</loader>")),
        ("os-nvram", in_os(plain, f"<nvram>{f}</nvram>")),
        ("qemu-commandline", plain.replace("</domain>", (
            "<qemu:commandline xmlns:qemu='http://libvirt.org/schemas/domain/"
            "qemu/1.0'><qemu:arg value='-drive'/><qemu:arg value='if=none,"
            f"id=x,file={link},format=raw'/></qemu:commandline></domain>"))),
    ]
    for name, xml in cases:
        golden(tap, w, f"prepare-also-{name}", w.hook(xml),
               w.registry() == [], w.registry())
    if os.geteuid() != 0:
        tap.skip("hook: prepare-also-loop-device", "losetup needs root")
        return
    loopdev = subprocess.run(["losetup", "-r", "-f", "--show", f],
                             capture_output=True, text=True)
    if loopdev.returncode != 0:
        tap.skip("hook: prepare-also-loop-device", "no loop device: "
                 + loopdev.stderr.strip())
        return
    dev_path = loopdev.stdout.strip()
    try:
        xml = other.replace("@E@", (
            f"<disk type='block' device='disk'><source dev='{dev_path}'/>"
            "<target dev='vdd'/></disk>"))
        proc = w.hook(xml)
        proc.stderr = proc.stderr.replace(dev_path.encode(), b"@LOOPDEV@")
        golden(tap, w, "prepare-also-loop-device", proc, w.registry() == [],
               w.registry())
    finally:
        subprocess.run(["losetup", "-d", dev_path])


def other_domains(tap, w):
    """A file that the registry holds for one domain is refused to any
    other domain that names it in any element, by any spelling."""
    f = w.create("held.img")
    link = os.path.join(w.tmp, "held-link.img")
    os.symlink(f, link)
    vm1 = domain(nvdimm(f))
    assert w.hook(vm1).returncode == 0
    assert w.hook(vm1, "started").returncode == 0
    held = w.registry()
    golden(tap, w, "prepare-other-domain-disk",
           w.hook(domain(disk(f), name="vm2", uuid=UUID2), name="vm2"),
           w.registry() == held, w.registry())
    golden(tap, w, "prepare-other-domain-symlink",
           w.hook(in_os(domain("", name="vm2", uuid=UUID2),
                        f"<kernel>{link}</kernel>"), name="vm2"),
           w.registry() == held, w.registry())
    assert w.hook(vm1, "stopped", "end").returncode == 0
    golden(tap, w, "prepare-other-domain-after-release",
           w.hook(domain(disk(f), name="vm2", uuid=UUID2), name="vm2"),
           w.registry() == [], w.registry())


def untrusted_configs(tap, w):
    """The root hook obeys only configuration that only root can change:
    the file, its drop-ins, and every directory on their way."""
    xml = domain(nvdimm(w.create("trust.img")))
    good = w.conf
    root = os.geteuid() == 0

    def case(name, conf, setup, needs_root=False, accepted=False,
             write=True):
        if needs_root and not root:
            tap.skip(f"hook: config-{name}", "chown needs root")
            return
        w.conf = conf
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        if write:
            w.write_conf()
        setup()
        proc = w.hook(xml)
        golden(tap, w, f"config-{name}", proc,
               w.registry() == ([("domain:vm1", "reserved", "none")]
                                if accepted else []), w.registry())
        if accepted:
            w.hook(xml, "release", "end")
        w.conf = good
        os.chmod(good, 0o644)
        if root:
            os.chown(good, 0, 0)

    case("world-writable", good, lambda: os.chmod(good, 0o666))
    case("group-writable", good, lambda: os.chmod(good, 0o664))
    opened = os.path.join(w.tmp, "open", "daxfile.conf")
    case("dir-world-writable", opened,
         lambda: os.chmod(os.path.dirname(opened), 0o777))
    sticky = os.path.join(w.tmp, "sticky", "daxfile.conf")
    case("dir-sticky-accepted", sticky,
         lambda: os.chmod(os.path.dirname(sticky), 0o1777), accepted=True)
    case("foreign-owner", good, lambda: os.chown(good, 12345, 12345),
         needs_root=True)
    foreign = os.path.join(w.tmp, "foreign", "daxfile.conf")
    case("dir-foreign-owner", foreign,
         lambda: os.chown(os.path.dirname(foreign), 12345, 12345),
         needs_root=True)
    slink = os.path.join(w.tmp, "sticky", "link.conf")

    def foreign_link():
        os.symlink(good, slink)
        os.lchown(slink, 12345, 12345)
    case("symlink-foreign-owner", slink, foreign_link, needs_root=True,
         write=False)
    dropin = good + ".d"

    def writable_dropin():
        os.makedirs(dropin, exist_ok=True)
        with open(os.path.join(dropin, "extra.conf"), "w") as fh:
            fh.write("[hook]\nmanaged_roots=/srv/other\n")
        os.chmod(os.path.join(dropin, "extra.conf"), 0o646)
    case("dropin-world-writable", good, writable_dropin)

    def writable_dropin_dir():
        os.chmod(os.path.join(dropin, "extra.conf"), 0o644)
        os.chmod(dropin, 0o775)
    case("dropin-dir-group-writable", good, writable_dropin_dir)
    shutil.rmtree(dropin)
    w.write_conf()


def no_roots(tap, w):
    with open(w.conf, "w") as f:
        f.write("[hook]\n")
    golden(tap, w, "no-managed-roots", w.hook("garbage"))
    with open(w.conf, "w") as f:
        f.write("[hook]\nmanaged_roots=relative/dir\n")
    golden(tap, w, "bad-config", w.hook(domain("")))
    w.write_conf()


def main():
    tap = Tap()
    if ENGAGED:
        need_root(tap)
    tap.plan(47 + 17 + 3 + 9 + 7 + 6 + 12)
    with contextlib.ExitStack() as stack:
        if ENGAGED:
            efs = stack.enter_context(EngagedFs())
            w = World(efs.mnt, efs.env)
        else:
            w = World(stack.enter_context(tempdir()))
        for func in (lifecycle, attestation, virtio_pmem_device, device_dax,
                     refusals, untrusted_owner, ignored, hostile,
                     migrate, bad_configs, spellings, other_elements,
                     other_domains, untrusted_configs, no_roots):
            tap.subtest(func.__name__, func, tap, w)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

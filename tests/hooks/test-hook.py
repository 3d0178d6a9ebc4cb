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
from daxtest import (SRCDIR, WRAPPER, EngagedFs, Tap, build_path,  # noqa
                     daxfile, is_immutable, need_root, strip_valgrind_notes,
                     tempdir)

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


def nvdimm(path, **edit):
    xml = template("nvdimm.xml.in").replace("@PATH@", path)
    for old, new in edit.items():
        assert old in xml, old
        xml = xml.replace(old, new)
    return xml


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
        self.write_conf()

    def write_conf(self, extra=""):
        with open(self.conf, "w") as f:
            f.write(f"[hook]\nmanaged_roots={self.root}\nallow_non_dax=true\n"
                    f"trusted_owners=root;{os.getuid()}\n{extra}")

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

    def hook(self, xml, op="prepare", subop="begin", name="vm1"):
        if isinstance(xml, str):
            xml = xml.encode()
        proc = subprocess.run(WRAPPER + [HOOK, name, op, subop, "-"], input=xml,
                              capture_output=True, env=dict(os.environ,
                                                            **self.env()))
        return proc

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
    tap.plan(47)
    with contextlib.ExitStack() as stack:
        if ENGAGED:
            efs = stack.enter_context(EngagedFs())
            w = World(efs.mnt, efs.env)
        else:
            w = World(stack.enter_context(tempdir()))
        for func in (lifecycle, refusals, untrusted_owner, ignored, hostile,
                     migrate, bad_configs, spellings, no_roots):
            tap.subtest(func.__name__, func, tap, w)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

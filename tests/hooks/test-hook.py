#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The libvirt hook's decisions, without libvirtd: committed input/output
pairs in tests/data/hooks/, as libvirt's tests/qemuxmlconfdata.

Each golden case is a row of CASES: the hook runs the row's operation on
tests/data/hooks/<xml>.xml (the case's own name unless the row names the
input of another case: a domain taken through several operations or
configurations keeps the input of its first case) and its exit status,
stdout and stderr are compared with tests/data/hooks/<name>.out
(<name>.engaged.out with --engaged, where that exists). The functions below
set up the world each case runs in: backing files, configuration, a QEMU
stand-in. Every case starts from a clean state, a fresh registry, and the
steps a row names as `given` build the state it needs (a reservation, a
running domain), so one failing case leaves nothing behind for the next
(tests/helpers/hookworld.py). Inputs name runtime paths by the
placeholders World.input() fills in, the only place that does.

Backing files live in a scratch managed root and are made with
`daxfile create --align 4K` (any filesystem gives 4 KiB-aligned extents, so
this runs without root and without pmem; allow_non_dax=true, as on a
development host). 2 MiB alignment on real filesystems is covered by the
loopfs and vm suites. DAXFILE_TEST_REGENERATE=1 rewrites the golden files.
"""

import contextlib
import os
import shutil
import subprocess
import sys

from daxtest import (EngagedFs, FakeDevdax, QemuStandIn, Tap,
                     daxfile, need_root, tempdir)
from hookworld import (PREPARED, STARTED, STOPPED, Case, Step,
                       World, check_case, guarded, render)

# --engaged: the managed root is on an xfs loop mount that fake-dax.so makes
# look like DAX, so started really sets the immutable flag (root only)
ENGAGED = "--engaged" in sys.argv[1:]
MECH = "immutable-guard" if ENGAGED else "verified-only"
M = 1 << 20

RESERVED = (("domain:vm1", "reserved", "none"),)
HELD = (("domain:vm1", "engaged", MECH),)
# vm1 running, on the file of prepare-ok / of prepare-other-domain-vm1
VM1_STARTED = tuple(step._replace(xml="prepare-ok") for step in STARTED)
VM1_HELD = tuple(step._replace(xml="prepare-other-domain-vm1")
                 for step in STARTED)


def refused(*names):
    """prepare refuses each: nothing is registered"""
    return [Case(name) for name in names]


def unchecked(*names):
    """prepare, the registry not looked at"""
    return [Case(name, registry=None) for name in names]


CASES = {
    "lifecycle": [
        Case("prepare-ok", registry=RESERVED),
        Case("started-ok", "started", xml="prepare-ok", registry=HELD,
             frozen=ENGAGED, given=PREPARED),
        Case("reconnect-ok", "reconnect", xml="prepare-ok", registry=HELD,
             given=STARTED),
        Case("prepare-other-owner", vm="vm2", registry=HELD,
             given=VM1_STARTED),
        Case("stopped-ok", "stopped", "end", xml="prepare-ok", frozen=False,
             given=STARTED),
        Case("release-again", "release", "end", xml="prepare-ok",
             given=STOPPED),
    ],
    # libvirt allows a name that starts with '.': its pid file is found
    "dot_name": [
        Case("started-dot-name", "started", vm=".vm1",
             registry=(("domain:.vm1", "engaged", MECH),), frozen=ENGAGED,
             given=(Step("prepare", vm=".vm1"),)),
    ],
    "attestation": [
        Case("started-no-qemu", "started", qemu=None, registry=RESERVED,
             frozen=False, given=PREPARED),
        Case("started-qemu-private", "started", xml="started-no-qemu",
             qemu=("--private",), registry=RESERVED, frozen=False,
             given=PREPARED),
        Case("started-qemu-misaligned", "started", qemu=("--misalign",),
             registry=RESERVED, frozen=False, given=PREPARED),
        # not DAX: no MAP_SYNC to ask for, so none missing
        Case("started-qemu-no-map-sync", "started", xml="started-no-qemu",
             qemu=("--no-sync",), registry=RESERVED if ENGAGED else HELD,
             frozen=False, given=PREPARED),
        Case("started-qemu-maps-another-file", "started",
             xml="started-no-qemu",
             qemu_xml="started-qemu-maps-another-file.qemu",
             registry=RESERVED, given=PREPARED),
        # on a kernel without STATX_ATTR_DAX, a file that takes MAP_SYNC is
        # DAX for the attestation as for enable (fake-dax.so plays it)
        Case("started-qemu-no-map-sync-no-statx-dax", "started",
             xml="started-no-qemu", qemu=("--no-sync",),
             registry=RESERVED if ENGAGED else HELD, frozen=False,
             given=PREPARED, env=(("DAXFILE_FAKE_DAX_NO_STATX", "1"),)),
        # its own mapping, and a second one of the same file
        Case("started-qemu-maps-twice", "started", xml="started-no-qemu",
             qemu_xml="started-qemu-maps-twice.qemu", registry=RESERVED,
             frozen=False, given=PREPARED),
    ],
    "virtio_pmem_device": [
        Case("prepare-virtio-pmem-ok", registry=RESERVED),
        Case("started-virtio-pmem-ok", "started", xml="prepare-virtio-pmem-ok",
             qemu=("--no-sync", "--misalign"), registry=HELD,
             frozen=ENGAGED, given=PREPARED),
        Case("stopped-virtio-pmem-ok", "stopped", "end",
             xml="prepare-virtio-pmem-ok", frozen=False, given=STARTED),
        *refused("prepare-virtio-pmem-private", "prepare-virtio-pmem-no-size"),
    ],
    "device_dax": [
        Case("prepare-devdax-off"),
        Case("prepare-devdax-ok", xml="prepare-devdax-off", registry=RESERVED),
        Case("prepare-devdax-other-domain", vm="vm2", registry=RESERVED,
             given=(Step("prepare", xml="prepare-devdax-off"),)),
        # another domain's qemu:arg naming the device by its node
        Case("prepare-devdax-qemu-arg-other-domain", vm="vm2",
             registry=RESERVED,
             given=(Step("prepare", xml="prepare-devdax-off"),)),
        Case("started-devdax-ok", "started", xml="prepare-devdax-off",
             qemu=None, registry=(("domain:vm1", "engaged", "device-dax"),),
             given=PREPARED),
        Case("stopped-devdax-ok", "stopped", "end", xml="prepare-devdax-off",
             given=STARTED),
        Case("prepare-devdax-kmem", xml="prepare-devdax-off"),
        *refused("prepare-devdax-align-mismatch",
                 "prepare-devdax-size-mismatch", "prepare-devdax-symlink"),
    ],
    "refusals": refused(
        "prepare-access-missing", "prepare-access-private", "prepare-no-pmem",
        "prepare-no-alignsize", "prepare-alignsize-not-power-of-two",
        "prepare-no-size", "prepare-size-mismatch", "prepare-label-too-small",
        "prepare-label-fills-device", "prepare-missing-file",
        "prepare-unprovisioned", "prepare-sparse", "prepare-symlink",
        "prepare-dotdot-escape", "prepare-hard-link"),
    "untrusted_owner": refused("prepare-untrusted-owner"),
    # a read-only device is held, attested and made static as any other
    "read_only": [
        Case("prepare-readonly-reserved", registry=RESERVED),
        Case("started-readonly-ok", "started",
             xml="prepare-readonly-reserved", registry=HELD, frozen=ENGAGED,
             given=PREPARED),
    ],
    "ignored": [
        *refused("prepare-unmanaged-ignored"),
        Case("prepare-no-nvdimm", registry=None),
        Case("unknown-op", "frobnicate", registry=None),
    ],
    "hostile": unchecked("prepare-malformed", "prepare-entity-bomb",
                         "prepare-external-entity", "prepare-huge-xml"),
    "migrate": [
        Case("migrate-no-rewrite", "migrate", registry=None),
        Case("migrate-rewrite-create", "migrate", registry=None),
        Case("restore-rewrite-existing", "restore",
             xml="migrate-rewrite-create", registry=None),
        Case("migrate-missing-no-create", "migrate", registry=None),
    ],
    "bad_configs": [
        Case("config-nul-bytes"),
        *[Case(f"config-{name}", xml="config-nul-bytes") for name in (
            "non-utf8-root", "non-utf8-owner", "unknown-owner",
            "unknown-key")],
    ],
    "spellings": [
        *refused("prepare-dot-spelling", "prepare-relative-spelling",
                 "prepare-two-nvdimms-one-file"),
        Case("prepare-empty-stdin", registry=None),
        *refused("prepare-utf16-doctype"),
        Case("migrate-map-from-slash", "migrate", registry=None),
    ],
    "other_elements": refused(*[f"prepare-also-{name}" for name in (
        "disk-file", "disk-symlink-spelling", "disk-relative-spelling",
        "disk-backing-store", "filesystem", "serial-file", "console-log",
        "channel", "tpm-device", "virtio-pmem", "os-kernel", "os-initrd",
        "os-dtb", "os-loader", "os-nvram", "qemu-commandline",
        "qemu-json-blockdev", "qemu-json-object", "qemu-relative",
        "loop-device")]),
    # <disk type='volume'>: placed through libvirt's state of the pool
    # (the hook cannot ask libvirt), refused where it cannot be placed
    "volumes": [
        *refused("prepare-also-volume-disk", "prepare-volume-pool-inactive",
                 "prepare-volume-pool-iscsi"),
        Case("prepare-volume-elsewhere", registry=RESERVED),
    ],
    "other_domains": [
        Case("prepare-other-domain-disk", vm="vm2", registry=HELD,
             given=VM1_HELD),
        Case("prepare-other-domain-symlink", vm="vm2", registry=HELD,
             given=VM1_HELD),
        Case("prepare-other-domain-readonly", vm="vm2", registry=HELD,
             given=VM1_HELD),
        Case("prepare-other-domain-after-release", vm="vm2",
             xml="prepare-other-domain-disk",
             given=VM1_HELD + (Step("stopped", "end",
                                    "prepare-other-domain-vm1"),)),
    ],
    "untrusted_configs": [
        Case("config-world-writable"),
        *[Case(f"config-{name}", xml="config-world-writable") for name in (
            "group-writable", "dir-world-writable", "foreign-owner",
            "dir-foreign-owner", "symlink-foreign-owner",
            "dropin-world-writable", "dropin-dir-group-writable")],
        Case("config-dir-sticky-accepted", xml="config-world-writable",
             registry=RESERVED),
    ],
    "no_roots": [
        Case("no-managed-roots", registry=None),
        Case("bad-config", xml="prepare-no-nvdimm", registry=None),
    ],
}
CASE = {case.name: case for cases in CASES.values() for case in cases}


def check(tap, w, name, env=None, also=None):
    """The case @name from a clean state (hookworld.check_case())"""
    return check_case(tap, w, CASE[name], env, also)


def check_all(tap, w, scenario):
    for case in CASES[scenario]:
        check(tap, w, case.name)


def lifecycle(tap, w):
    w.create("vm1.img")
    check_all(tap, w, "lifecycle")
    # a case that fails may leave a reservation behind (here vm2's, of
    # vm1's file); the next case starts without it all the same
    stray = w.hook(w.input("prepare-other-owner"), name="vm2")
    tap.ok(stray.returncode == 0 and
           w.registry() == [("domain:vm2", "reserved", "none")],
           "isolation: a reservation left behind by another case", stray)
    check(tap, w, "prepare-ok")


def dot_name(tap, w):
    w.create("dot.img")
    check_all(tap, w, "dot_name")


def attestation(tap, w):
    """At started the hook looks at what the domain's QEMU really mapped
    and refuses the start, before anything is engaged, when it is not
    what the guarantee needs."""
    f = w.create("attest.img")
    other = w.create("attest-other.img")
    check_all(tap, w, "attestation")
    xml = w.input("started-no-qemu")
    w.reset()
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


# libvirt 10 and later (Debian 13's 11.3) give /run/libvirt/qemu to the
# QEMU user; a uid that is neither root nor the test's plays it
QEMU_UID = 64055
PID_DIR_CHECKS = 4


def pid_dir_not_roots(tap, w):
    """A pid directory that another user owns, as libvirt 11 makes it:
    the pid file is accepted when root wrote it and it names the domain's
    own QEMU (-name guest=NAME); one renamed there from another domain, or
    written by that user, or in a directory others may write, is not."""
    f = w.create("attest.img")  # the file of started-no-qemu.xml
    xml = w.input("started-no-qemu")
    name = ("-name", "guest=vm1,debug-threads=on")
    os.makedirs(w.pid_dir, mode=0o755, exist_ok=True)
    try:
        os.chown(w.pid_dir, QEMU_UID, QEMU_UID)
    except PermissionError:
        for _ in range(PID_DIR_CHECKS):
            tap.skip("hook: a pid directory another user owns",
                     "chown needs root")
        return
    try:
        w.reset()
        w.hook(xml)
        with QemuStandIn(w.pid_dir, xml, "vm1", w.extra_env, name):
            res = w.hook(xml, "started", qemu=None)
        tap.ok(res.returncode == 0 and w.registry() == list(HELD),
               "started with the pid directory owned by the QEMU user (uid "
               f"{QEMU_UID}): the pid file names vm1's QEMU, engaged",
               render(w, res))
        w.hook(xml, "stopped", "end")
        w.hook(xml, "release", "end")

        def refused(options, what, why, prepare=None):
            w.reset()
            w.hook(xml)
            with QemuStandIn(w.pid_dir, xml, "vm1", w.extra_env,
                             options) as qemu:
                if prepare:
                    prepare(qemu)
                res = w.hook(xml, "started", qemu=None)
            err = res.stderr.decode(errors="replace")
            tap.ok(res.returncode != 0 and why in err and
                   w.registry() == list(RESERVED) and not guarded(f),
                   f"started refused: {what}", render(w, res))
            w.hook(xml, "release", "end")

        refused(("-name", "guest=vm2,debug-threads=on"),
                "vm1.pid names another domain's QEMU (a file renamed there)",
                "which is not domain 'vm1''s QEMU (its -name is 'vm2')")
        refused(name, "vm1.pid written by the QEMU user",
                "vm1.pid' is not owned by root",
                lambda q: os.chown(q.pidfile, QEMU_UID, QEMU_UID))
        os.chmod(w.pid_dir, 0o775)
        refused(name, "the pid directory writable by its group",
                "which is writable by group or others")
    finally:
        os.chmod(w.pid_dir, 0o755)
        os.chown(w.pid_dir, 0, 0)
        os.unlink(f)


def virtio_pmem_device(tap, w):
    """A virtio-pmem device is validated, reserved and made static as an
    nvdimm is; QEMU maps it without MAP_SYNC and only page-aligned (the
    guest's flush request is served with fsync()), which the attestation
    accepts for it, on DAX too, while it refuses it for an nvdimm."""
    f = w.create("vp.img")
    xml = w.input("prepare-virtio-pmem-ok")
    check(tap, w, "prepare-virtio-pmem-ok")
    check(tap, w, "started-virtio-pmem-ok")
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
    for name in ("stopped-virtio-pmem-ok", "prepare-virtio-pmem-private",
                 "prepare-virtio-pmem-no-size"):
        check(tap, w, name)
    os.unlink(f)


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
        xml = w.input("prepare-devdax-off")
        check(tap, w, "prepare-devdax-off", ok.env)
        w.write_conf("device_dax=true\n")
        for name in ("prepare-devdax-ok", "prepare-devdax-other-domain",
                     "prepare-devdax-qemu-arg-other-domain",
                     "started-devdax-ok"):
            check(tap, w, name, ok.env)
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
        check(tap, w, "stopped-devdax-ok", ok.env)
        w.hook(xml, env=ok.env)
        w.hook(xml, "started", qemu=None, env=ok.env)
        rep = daxfile("repair", env=dict(w.extra_env, **w.env()))
        tap.ok(rep.rc == 0 and w.registry() == [] and
               "no process maps it any more" in rep.out + rep.err,
               "repair releases a device-dax device no QEMU maps any more",
               (rep, w.registry()))
        check(tap, w, "prepare-devdax-kmem", kmem.env)
        os.symlink(FakeDevdax.PATH, os.path.join(tmp, "dax-link"))
        for name in ("prepare-devdax-align-mismatch",
                     "prepare-devdax-size-mismatch",
                     "prepare-devdax-symlink"):
            check(tap, w, name, ok.env)
        w.write_conf()
    finally:
        shutil.rmtree(tmp)


def refusals(tap, w):
    """Every misconfiguration is refused at prepare."""
    good = w.create("good.img")
    falloc = w.path("falloc.img")
    subprocess.run(["fallocate", "-l", "8M", falloc], check=True)
    sparse = w.path("sparse.img")
    with open(sparse, "wb") as f:
        f.truncate(8 * M)
    w.create("small.img", "4M")
    os.symlink(good, w.path("link.img"))
    hard = w.create("hard.img")
    os.link(hard, w.path("hard2.img"))
    shutil.copyfile(good, os.path.join(w.tmp, "outside.img"))
    check_all(tap, w, "refusals")


def untrusted_owner(tap, w):
    f = w.create("foreign.img")
    try:
        os.chown(f, 12345, 12345)
    except PermissionError:
        tap.skip("hook: prepare-untrusted-owner", "chown needs root")
        return
    check_all(tap, w, "untrusted_owner")


def read_only(tap, w):
    w.create("ro.img")
    check_all(tap, w, "read_only")


def ignored(tap, w):
    check_all(tap, w, "ignored")


def hostile(tap, w):
    w.create("hostile.img")
    check_all(tap, w, "hostile")


def migrate(tap, w):
    w.create("mig.img")
    check(tap, w, "migrate-no-rewrite")
    dest = os.path.join(w.root, "dest")
    os.mkdir(dest)
    w.write_conf(f"create_missing=true\npath_map={w.root}/src={dest}\n")
    made = os.path.join(dest, "vm9.img")
    check(tap, w, "migrate-rewrite-create", also=lambda: (
        os.path.exists(made) and os.path.getsize(made) == 8 * M and
        daxfile("check", "--align", "4K", "--allow-non-dax", made).rc == 0))
    check(tap, w, "restore-rewrite-existing")
    w.write_conf("create_missing=false\n")
    check(tap, w, "migrate-missing-no-create")
    w.write_conf()


def bad_configs(tap, w):
    """Whatever the hook cannot understand in its configuration refuses
    the operation (fail closed), naming the file."""
    w.create("conf.img")
    valid = f"[hook]\nmanaged_roots={w.root}\nallow_non_dax=true\n"
    confs = {
        "nul-bytes": b"\0" * 512,
        "non-utf8-root": (f"[hook]\nmanaged_roots={w.root};/mnt/\xff\n"
                          "allow_non_dax=true\n").encode("latin-1"),
        "non-utf8-owner": (valid + "trusted_owners=root;\xff\n")
        .encode("latin-1"),
        "unknown-owner": (valid + "trusted_owners=nosuchuser\n").encode(),
        "unknown-key": (valid.replace("managed_roots", "managed_root"))
        .encode(),
    }
    for case in CASES["bad_configs"]:
        with open(w.conf, "wb") as fh:
            fh.write(confs[case.name[len("config-"):]])
        check(tap, w, case.name)
    w.write_conf()


def spellings(tap, w):
    w.create("spelt.img")
    for name in ("prepare-dot-spelling", "prepare-relative-spelling",
                 "prepare-two-nvdimms-one-file", "prepare-empty-stdin",
                 "prepare-utf16-doctype"):
        check(tap, w, name)
    dest = os.path.join(w.root, "fromslash")
    os.mkdir(dest)
    w.write_conf(f"create_missing=true\npath_map=/={dest}\n")
    check(tap, w, "migrate-map-from-slash",
          also=lambda: os.path.exists(os.path.join(dest, "vm7.img")))
    w.write_conf()


def other_elements(tap, w):
    """A managed nvdimm's file, also named by another element of the same
    domain (by any spelling), is refused at prepare: QEMU would open it a
    second time outside the backend static mode reasons about."""
    f = w.create("shared.img")
    os.symlink(f, os.path.join(w.tmp, "outside-link.img"))
    for case in CASES["other_elements"]:
        if case.name != "prepare-also-loop-device":
            check(tap, w, case.name)
    if os.geteuid() != 0:
        tap.skip("hook: prepare-also-loop-device", "losetup needs root")
        return
    loopdev = subprocess.run(["losetup", "-r", "-f", "--show", f],
                             capture_output=True, text=True)
    if loopdev.returncode != 0:
        tap.skip("hook: prepare-also-loop-device", "no loop device: "
                 + loopdev.stderr.strip())
        return
    w.placeholders["@LOOPDEV@"] = loopdev.stdout.strip()
    try:
        check(tap, w, "prepare-also-loop-device")
    finally:
        subprocess.run(["losetup", "-d", w.placeholders.pop("@LOOPDEV@")])


def volumes(tap, w):
    w.create("vol.img")
    w.pool("tpool", "dir", w.root)
    w.pool("ipool", "iscsi", "/dev/disk/by-path")
    w.pool("epool", "dir", os.path.join(w.tmp, "elsewhere"))
    check_all(tap, w, "volumes")


def other_domains(tap, w):
    """A file that the registry holds for one domain is refused to any
    other domain that names it in any element, by any spelling."""
    f = w.create("held.img")
    os.symlink(f, os.path.join(w.tmp, "held-link.img"))
    check_all(tap, w, "other_domains")


def untrusted_configs(tap, w):
    """The root hook obeys only configuration that only root can change:
    the file, its drop-ins, and every directory on their way."""
    w.create("trust.img")
    xml = w.input("config-world-writable")
    good = w.conf
    root = os.geteuid() == 0

    def case(name, conf, setup, needs_root=False, write=True):
        if needs_root and not root:
            tap.skip(f"hook: config-{name}", "chown needs root")
            return
        w.conf = conf
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        if write:
            w.write_conf()
        setup()
        check(tap, w, f"config-{name}")
        if CASE[f"config-{name}"].registry:
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
         lambda: os.chmod(os.path.dirname(sticky), 0o1777))
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
    check(tap, w, "no-managed-roots")
    with open(w.conf, "w") as f:
        f.write("[hook]\nmanaged_roots=relative/dir\n")
    check(tap, w, "bad-config")
    w.write_conf()


def main():
    tap = Tap()
    if ENGAGED:
        need_root(tap)
    # every case of the table, the six checks of status, list, wipe and
    # repair beside them, and the isolation check (two)
    tap.plan(len(CASE) + 8 + PID_DIR_CHECKS)
    with contextlib.ExitStack() as stack:
        if ENGAGED:
            efs = stack.enter_context(EngagedFs())
            w = World(efs.mnt, efs.env, engaged=True)
        else:
            w = World(stack.enter_context(tempdir()))
        for func in (lifecycle, dot_name, attestation, pid_dir_not_roots,
                     virtio_pmem_device,
                     device_dax, refusals, untrusted_owner, read_only,
                     ignored, hostile,
                     migrate, bad_configs, spellings, other_elements,
                     volumes, other_domains, untrusted_configs, no_roots):
            tap.subtest(func.__name__, func, tap, w)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

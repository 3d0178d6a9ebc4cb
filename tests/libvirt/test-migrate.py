#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration of a guest with a static nvdimm, between two libvirt
daemons on this machine (the system daemon and the session daemon of a test
user, as in ../shared/reference/libvirt-by-hand.md): on the destination the
hook (running as that user) maps the path with path_map, creates and
provisions the missing file (create_missing), rewrites the XML, and engages
static mode; on the source the hook releases the file. The migration is
`--persistent --undefinesource`, with `daxfile watch` following the source
daemon and wipe_on_undefine=true: the source's definition goes with the
guest, so the watch wipes the source's file once its QEMU is gone, and the
destination's file keeps the guest's pmem.
"""

import os
import pwd
import subprocess
import sys

from daxtest import Tap, build_path, daxfile, need_root
import libvirt_env as lv
from lifeworld import Watcher, zeros

HERE = os.path.dirname(os.path.abspath(__file__))

lv.daxfile_vm.add_guest_dir(os.path.join(HERE, "..", "vm", "guest"))

USER = "daxfile-mig"
NAME = f"daxfile-mig-{os.getpid()}"
M = 1 << 20


def as_user(cmd, timeout=120):
    return subprocess.run(["su", USER, "-s", "/bin/sh", "-c", cmd],
                          capture_output=True, text=True, timeout=timeout)


def setup_user():
    created = False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/sh", USER], check=True)
        created = True
    home = pwd.getpwnam(USER).pw_dir
    # a host_uuid of its own, or libvirt refuses to migrate to "itself"
    as_user("mkdir -p ~/.config/libvirt && echo \"host_uuid = "
            "\\\"$(cat /proc/sys/kernel/random/uuid)\\\"\" > "
            "~/.config/libvirt/libvirtd.conf")
    return created, home


def stop_session():
    subprocess.run(["pkill", "-u", USER, "libvirtd"])
    subprocess.run(["pkill", "-u", USER, "virtlogd"])


def namespace_head(path, length=2 * M):
    """The first 2 MiB: the fsdax namespace's info block, which the guest
    wrote once at create-namespace (the filesystem after it keeps changing
    while the guest runs: ext4 initialises inode tables lazily)."""
    with open(path, "rb") as f:
        return f.read(length)


def main():
    tap = Tap()
    need_root(tap)
    tap.plan(8)
    created, home = setup_user()
    dest_uri = ("qemu+unix:///session?socket="
                f"{home}/.cache/libvirt/libvirt-sock")
    try:
        with lv.Libvirtd() as daemon, lv.LoopDir() as loop:
            run(tap, daemon, loop, dest_uri)
    finally:
        as_user(f"virsh -c qemu:///session destroy {NAME}; "
                f"virsh -c qemu:///session undefine {NAME}")
        stop_session()
        if created:
            subprocess.run(["userdel", "-r", USER], capture_output=True)
    return tap.done()


def run(tap, daemon, loop, dest_uri):
    src = os.path.join(loop.path, "src")
    dst = os.path.join(loop.path, "dest")
    serial = os.path.join(loop.tmp, "serial")
    for d, mode in ((src, 0o755), (dst, 0o777), (serial, 0o777)):
        os.mkdir(d)
        os.chmod(d, mode)
    os.chmod(loop.path, 0o755)
    hook = lv.Hook(build_path("libvirt-hooks", "daxfile-hook"), NAME,
                   [loop.path],
                   extra=f"trusted_owners=root;libvirt-qemu;{USER}\n"
                   f"create_missing=true\npath_map={src}={dst}\n"
                   "wipe_on_undefine=true\n")
    watcher = None
    try:
        hook.install(daemon)
        stop_session()  # the session daemon notices the hook when it starts
        as_user("virsh -c qemu:///session list >/dev/null")
        image = lv.GuestImage(loop.tmp, [])
        kernel, initrd, cmdline = image.files("idle", tag=NAME)
        for p in (kernel, initrd):
            os.chmod(p, 0o644)
        os.chmod(loop.tmp, 0o755)
        console = os.path.join(serial, "console")
        xml = lv.domain_xml(NAME, kernel, initrd, cmdline, console,
                            os.path.join(serial, "tap"))
        lv.define(xml, loop.tmp, NAME)
        f = os.path.join(src, "guest.img")
        res = daxfile("attach", NAME, f, "--create", "--size", "128M",
                      "--allow-non-dax")
        start = lv.virsh("start", NAME)
        up = lv.wait_file(console, "DAXFILE-IDLE: ready", 180)
        tap.ok(res.rc == 0 and start.returncode == 0 and up,
               "source guest on the system daemon is up, file static",
               f"{res}\n{start.stderr}")
        before = namespace_head(f)
        watcher = Watcher()
        mig = lv.run(["virsh", "-c", lv.URI, "migrate", "--live",
                      "--persistent", "--undefinesource", NAME, dest_uri,
                      "--migrateuri", "tcp://127.0.0.1:49200"], timeout=600)
        moved = os.path.join(dst, "guest.img")
        tap.ok(mig.returncode == 0 and lv.state(NAME) is None and
               NAME in as_user("virsh -c qemu:///session list --all "
                               "--persistent").stdout,
               "virsh migrate --live --persistent --undefinesource to the "
               "session daemon: defined there, no longer here", mig.stderr)
        tap.ok(os.path.exists(moved) and
               os.path.getsize(moved) == 128 * M and
               as_user(f"{build_path('src', 'daxfilectl', 'daxfile')} check "
                       f"--allow-non-dax {moved}").returncode == 0,
               "the destination hook created and provisioned the mapped file")
        dumped = as_user(f"virsh -c qemu:///session dumpxml {NAME}").stdout
        tap.ok(f"<path>{moved}</path>" in dumped,
               "the destination domain uses the rewritten path", dumped)
        ulist = as_user(f"{build_path('src', 'daxfilectl', 'daxfile')} list "
                        "--json").stdout
        tap.ok(f"domain:{NAME}" in ulist and moved in ulist and
               all(e["path"] != os.path.realpath(f)
                   for e in daxfile("list", "--json").json()),
               "static on the destination (the user's registry), released "
               "on the source", ulist)
        line = watcher.wait(f"'{f}'", timeout=120)
        tap.ok(line and line.startswith("daxfile: wiped") and zeros(f),
               "the watch wipes the source's file: the definition left "
               "with the guest", line)
        as_user(f"virsh -c qemu:///session destroy {NAME}")
        head = namespace_head(moved)
        tap.ok(b"NVDIMM_PFN_INFO" in head and head == before,
               "the guest's pmem contents arrived in the destination file "
               "(its fsdax info block)")
        tap.ok(not watcher.said(f"'{moved}'"),
               "the destination's file is none of the source watch's "
               "business", watcher.all)
    finally:
        if watcher:
            watcher.stop()
        lv.cleanup_domain(NAME)
        hook.remove()


if __name__ == "__main__":
    sys.exit(main())

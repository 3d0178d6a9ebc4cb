# SPDX-License-Identifier: GPL-2.0-or-later
"""What the stages of the chain suite's emulated host share (see
l1-chain.py): its configuration (Config, from CHAIN_*), the domains and
files, setting up libvirtd and the hook, what a test looks at (status,
entries, owner and mode, layouts), and L2's TAP."""

import errno
import os
import pwd
import re
import shutil
import subprocess
import time
import uuid

from daxtest import (DAXFILE, Tap, build_path, daxfile,
                     enforced, layout_changes)
import libvirt_env as lv


lv.QUIET = True
tap = Tap()


class Config:
    """What the test host configured this boot with (CHAIN_* in the
    environment, set by tests/chain/test-chain.py)"""

    def __init__(self, env):
        self.stage = env.get("CHAIN_STAGE", "first")
        self.l2dir = env.get("CHAIN_L2DIR", "")
        self.mech = env.get("CHAIN_MECH", "immutable-guard")
        self.crash = env.get("CHAIN_CRASH", "sysrq")
        self.count = int(env.get("CHAIN_COUNT", "0") or 0)
        # L2 boots and writes through its NVDIMMs (minutes under nested
        # TCG), or QEMU only maps the files (virsh start --paused: enough
        # for the guard)
        self.l2io = env.get("CHAIN_L2IO", "1") == "1"
        self.peer = env.get("CHAIN_PEER", "")
        # a migration's destination resumes L2, which writes on there
        self.resume = env.get("CHAIN_RESUME", "0") == "1"
        # the devdax namespace of the third NVDIMM (first stage)
        self.devdax = env.get("CHAIN_DEVDAX", "")
        self.seed = int(env.get("CHAIN_SEED", "0") or 0)
        self.caps = env.get("CHAIN_CAPS", "")
        # the users' paths (rename, hot-plug, save/restore, undefine), a
        # QEMU without MAP_SYNC, device-dax: on the stacks users run (the
        # Debian 12 and 13 ones), not again on every kernel
        self.users_paths = env.get("CHAIN_USERS_PATHS", "0") == "1"
        # a virtio-pmem domain started for real (libvirt 10 and later): the
        # chunks its L2 flushes before the crash; 0: none
        self.vpmem = int(env.get("CHAIN_VPMEM", "0") or 0)
        self.l2vdir = env.get("CHAIN_L2VDIR", "")
        # the probe cache libvirtd has, as the real host knows it
        self.seeded_caps = {}


cfg = Config(os.environ)

M = 1 << 20
IMAGES = "/var/lib/libvirt/images/chain"
WORK = "/var/tmp/chain"
PIDFILE = "/run/chain-libvirtd.pid"
STALL = "/run/chain-stalled"
QEMU_USER = pwd.getpwnam("libvirt-qemu").pw_uid

MAIN = "chain"
FILES = {"xfs": "/mnt/xfs/chain.img", "ext4": "/mnt/ext4/chain.img"}
# the domains left in one phase each when the host crashes
PHASES = {"chain-prepared": "/mnt/ext4/prepared.img",
          "chain-started": "/mnt/xfs/started.img",
          "chain-released": "/mnt/ext4/released.img"}
# the virtio-pmem domain (cfg.vpmem), running at the crash; its L2's boot
# files are in IMAGES/vpmem
VPMEM = "chain-vpmem"
VPMEM_FILE = "/mnt/xfs/vpmem.img"
ALL_FILES = list(FILES.values()) + list(PHASES.values()) + \
    ([VPMEM_FILE] if cfg.vpmem else [])
# the migration's file on each host; the destination maps the source's path
MIG_SRC, MIG_DST = "/mnt/xfs/chain.img", "/mnt/ext4/chain.img"
# the users' paths (t_lifecycle): a domain on one file, a second hot-plugged
LIFE = "chain-life"
LIFE_FILES = {"xfs": "/mnt/xfs/life.img", "ext4": "/mnt/ext4/life-hp.img"}
HOOK_CONF = {
    "migrate-src": "managed_roots=/mnt/xfs\n",
    "migrate-dst": "managed_roots=/mnt/ext4\ncreate_missing=true\n"
                   "path_map=/mnt/xfs=/mnt/ext4\n",
}


def diag(text):
    tap.diag(text)


def sh(argv, timeout=300):
    return subprocess.run(argv, capture_output=True, text=True,
                          errors="replace", timeout=timeout)


# ------------------------------------------------------------- set-up

def stall_hook(hooks):
    """A second hook (run after daxfile's, in name order) that holds one
    domain's start right after its prepare: a start that never finishes"""
    path = os.path.join(hooks, "zz-chain-stall")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nif [ \"$1\" = chain-prepared ] && "
                "[ \"$2\" = prepare ]; then\n"
                f"    touch {STALL}\n    exec sleep 3600\nfi\nexit 0\n")
    os.chmod(path, 0o755)


PROBE = "/run/chain-probe"


def started_probe(hooks):
    """A second hook (after daxfile's, in name order) that records on the
    migration's destination what the file is when libvirt runs 'start'
    (before it executes QEMU) and 'started' (QEMU has mapped the file;
    libvirt runs it at the end of its Prepare step, before the source is
    told to send anything): its static state, and at 'started' whether it
    still holds only the zeros create wrote. daxfile is run through
    /usr/bin/env: libvirtd's AppArmor profile (Debian 13), in which the
    hooks run, runs programs in /usr/bin unconfined (PUx) and none in the
    build tree."""
    path = os.path.join(hooks, "zz-chain-probe")
    size = 128 * M
    with open(path, "w") as f:
        f.write("#!/bin/sh\nif [ \"$3\" = begin ]; then\n"
                "    case \"$2\" in start|started) /usr/bin/env "
                f"{DAXFILE} status --json {MIG_DST} >{PROBE}.$2.json 2>&1 "
                ";; esac\nfi\n"
                "if [ \"$2\" = started ] && [ \"$3\" = begin ]; then\n"
                f"    if cmp -s -n {size} {MIG_DST} /dev/zero; then echo "
                f"zeros; else echo data; fi >{PROBE}.data\nfi\nexit 0\n")
    os.chmod(path, 0o755)


def install():
    """The configuration a user writes, the hook, a stock qemu.conf with
    what this L1 lacks switched off, the L2 boot files."""
    os.makedirs("/etc/daxfile", exist_ok=True)
    with open("/etc/daxfile/daxfile.conf", "w") as f:
        f.write("[hook]\n" + HOOK_CONF.get(cfg.stage, "managed_roots=/mnt/xfs;"
                                           "/mnt/ext4\ndevice_dax=true\n"
                                           "wipe_on_undefine=true\n"))
    hooks = "/etc/libvirt/hooks/qemu.d"
    os.makedirs(hooks, exist_ok=True)
    shutil.copy2(build_path("libvirt-hooks", "daxfile-hook"),
                 os.path.join(hooks, "daxfile"))
    # under AppArmor (Debian 13), the package's two rules for the hook in
    # libvirtd's profile, as its postinst adds them
    lv.apparmor_allow_hook(build_path())
    if cfg.stage == "first":
        stall_hook(hooks)
    if cfg.stage == "migrate-dst":
        started_probe(hooks)
    lv.nested_host_conf()
    with open(lv.QEMU_CONF, "a") as f:
        f.write('\n# chain suite\nstdio_handler = "file"\n')
    os.makedirs(WORK, exist_ok=True)
    os.makedirs(IMAGES, exist_ok=True)
    for name in os.listdir(cfg.l2dir):
        shutil.copy(os.path.join(cfg.l2dir, name), IMAGES)
    if cfg.l2vdir:
        os.makedirs(f"{IMAGES}/vpmem", exist_ok=True)
        for name in os.listdir(cfg.l2vdir):
            shutil.copy(os.path.join(cfg.l2vdir, name), f"{IMAGES}/vpmem")


def libvirtd_start(listen=False):
    """libvirtd by hand; listen: also on TCP without authentication (the
    two hosts of a migration, on their own network), with a host UUID of
    its own (both hosts share the test host's machine-id)"""
    t0 = time.monotonic()
    cfg.seeded_caps = lv.seed_caps(cfg.caps)
    argv = ["taskset", "-c", "0", "libvirtd", "-d", "-p", PIDFILE]
    if listen:
        conf = "/run/chain-libvirtd.conf"
        with open(conf, "w") as f:
            f.write('listen_tls = 0\nlisten_tcp = 1\nauth_tcp = "none"\n'
                    f'host_uuid = "{uuid.uuid4()}"\n')
        argv += ["--listen", "-f", conf]
    res = sh(argv)
    deadline = time.monotonic() + 120
    while res.returncode == 0 and time.monotonic() < deadline:
        if lv.virsh("-q", "version", timeout=30).returncode == 0:
            return time.monotonic() - t0
        time.sleep(0.3)
    return None


def host_up(listen=False):
    """install(), and libvirtd started by hand (@listen: also on TCP, for
    the other host of a migration), as a test result"""
    install()
    took = libvirtd_start(listen=listen)
    return tap.ok(took is not None, "libvirtd started by hand"
                  + (", listening on TCP" if listen else "")
                  + f" ({took or 0:.1f} s)", libvirtd_log_tail())


def export_caps():
    """After a define (libvirtd has probed the domain's QEMU by then): hand
    each new probe to the real host for the next boot"""
    cfg.seeded_caps = lv.export_caps(cfg.seeded_caps)


def libvirtd_stop():
    with open(PIDFILE) as f:
        return lv.terminate(int(f.read()), timeout=60)


def libvirtd_log_tail():
    try:
        with open("/var/log/libvirt/libvirtd.log", errors="replace") as f:
            return "".join(f.readlines()[-20:])
    except OSError:
        return "(no libvirtd.log)"


# --------------------------------------------------------------- facts

def status(path):
    res = daxfile("status", "--json", path)
    return res.json()[0] if res.rc == 0 else None


def entries():
    res = daxfile("list", "--json")
    return res.json() if res.rc == 0 else None


def entry_of(path):
    return [e for e in entries() or [] if e["path"] == path]


def owner_mode(path):
    st = os.stat(path)
    return st.st_uid, st.st_gid, st.st_mode & 0o7777


def layout(path):
    s = status(path)
    return (s["size"], s["fingerprint"]) if s else None


def domain(name, files, model=None):
    """Define @name booting L2 (its initrd is the host's: the stream phase
    on the first boot, the verify phase on the next) and attach @files
    (as @model's devices: nvdimm when None). The virtio-pmem domain boots
    its own L2 (IMAGES/vpmem: Debian 13's kernel) and runs too."""
    # Only the domain whose L2 runs and writes (--l2-io) is a guest of the
    # emulated host's KVM (on the SVM that TCG emulates: its L2 boots in
    # 8 s, not 110). The others are only ever started paused, and QEMU maps
    # their files the same under TCG, without making a KVM guest of the
    # emulated host: in 3 of 4 full CI runs the emulated host hung, its two
    # CPUs busy and nothing printed, two of them at a paused start (never
    # in a run of the chain alone). A migrating domain runs under TCG on
    # both hosts: the destination's daxctl() kernel has no KVM.
    # One vCPU (L2 writes from one process): on Debian 13's kernel, two L2
    # vCPUs under the emulated host's KVM took it down with "Oops: int3"
    # in apic_has_pending_timer(), KVM's APIC static keys patched (int3
    # first, as text_poke_bp() does) while its other CPU ran that code:
    # TCG does not show one CPU's code patch to the other in time.
    runs = (name in (MAIN, VPMEM) and cfg.l2io and
            not cfg.stage.startswith("migrate"))
    img = f"{IMAGES}/vpmem" if name == VPMEM else IMAGES
    xml = lv.domain_xml(name, f"{img}/vmlinux", f"{img}/initrd",
                        open(f"{img}/cmdline").read().strip(),
                        f"{WORK}/{name}.console", f"{WORK}/{name}.tap",
                        memory_mib=256, loader=lv.nested_loader(),
                        virt=None if runs else "qemu", vcpus=1)
    res = lv.define(xml, WORK, name)
    if res.returncode != 0:
        return res.stderr.strip()
    export_caps()
    for path in files:
        res = daxfile("attach", *(["--model", model] if model else []),
                      name, path)
        if res.rc != 0:
            return res.err.strip()
    return None


# ------------------------------------------------- what must be refused

def attempt(func):
    """'done' when @func succeeded, else the errno name it failed with"""
    try:
        func()
        return "done"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def layout_refusals(path):
    """Try every layout change of @path (layout_changes()) and undo the
    name one leaves when it succeeds: ({change: 'done' or the errno name
    it failed with}, the changes that succeeded, or the layout changed)"""
    before = layout(path)
    got = {op: attempt(f) for op, f in layout_changes(path).items()}
    for stray in (path + ".moved", path + ".link"):
        if os.path.lexists(stray):  # a refusal that failed: undo it
            os.unlink(stray)
    done = [op for op, r in got.items() if r == "done"]
    if layout(path) != before or not os.path.exists(path):
        done.append("the layout changed")
    return got, done


def qemu_vmflags(name, path):
    """VmFlags of the domain's QEMU mapping of @path, read here from
    /proc/PID/smaps (libvirt's pid file), as the hook reads it"""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    with open(f"/run/libvirt/qemu/{name}.pid") as f:
        pid = int(f.read().strip())
    flags, mine = [], False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", fields[0]):
                mine = len(fields) > 4 and fields[3] == dev and \
                    fields[4] == str(st.st_ino)
            elif mine and fields[0] == "VmFlags:":
                flags.append(fields[1:])
    return flags


def t_static_running(fs, path, name):
    """While domain @name's QEMU runs: @path static for it (cfg.mech),
    handed to libvirt-qemu by libvirt's DAC driver, every layout change
    refused"""
    st = (status(path) or {}).get("static") or {}
    tap.ok(st.get("enabled") and st.get("mechanism") == cfg.mech and
           st.get("owner") == f"domain:{name}",
           f"{fs}: static while QEMU runs, mechanism {cfg.mech}", st)
    tap.ok(os.stat(path).st_uid == QEMU_USER,
           f"{fs}: libvirt's DAC driver handed it to libvirt-qemu",
           owner_mode(path))
    got, done = layout_refusals(path)
    tap.ok(not done, f"{fs}: every layout change refused while QEMU runs ("
           + ", ".join(f"{op} {r}" for op, r in got.items()) + ")",
           f"succeeded: {done}")


def t_attested(fs, path, name):
    """What the hook attested at started, read independently: domain
    @name's QEMU maps @path shared with VM_SYNC (MAP_SYNC took)"""
    flags = qemu_vmflags(name, path)
    q = ((status(path) or {}).get("static") or {}).get("qemu") or {}
    tap.ok(flags and all("sh" in f and "sf" in f for f in flags) and
           q.get("attested") and (q.get("mapping") or {}).get("sync"),
           f"{fs}: QEMU's mapping is shared with MAP_SYNC (VmFlags sh, "
           "sf), as the hook attested at started and daxfile status "
           "shows", (flags, q))


class L2Tap:
    """L2's TAP, relayed as it comes: from its file (on a migration's
    destination a new one, with only what L2 printed there), or with
    console=True its lines in the kernel log on the console (see
    chain-l2.sh: a migration can silence ttyS1)"""

    KMSG_RE = re.compile(r"^(?:\[[^\]]*\]\s*)+((?:not )?ok \d+ - .*|# .*)$")

    def __init__(self, name, console=False, path=None):
        """@path: L2's file when it is not libvirt's domain's (a QEMU run
        by hand, l1_repro.py)"""
        self.name, self.console = name, console
        self.path = path or f"{WORK}/{name}.{'console' if console else 'tap'}"
        self.seen, self.chunks, self.failed = 0, [], False

    def lines(self):
        try:
            with open(self.path, errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        if not self.console:
            return lines
        return [m.group(1) for m in map(self.KMSG_RE.match, lines) if m]

    def poll(self):
        lines = self.lines()
        for line in lines[self.seen:]:
            diag(f"L2: {line}")
            if line.startswith("not ok"):
                self.failed = True
            elif line.startswith("ok") and " - chunk " in line:
                self.chunks.append(int(line.split(" - chunk ")[1].split()[0]))
        self.seen = len(lines)

    def wait(self, want, timeout, running=None):
        """until @want chunks, a failure, or the domain stops running; or
        until L2 has printed nothing for @timeout s: a slow L2 (nested TCG
        on a loaded machine) is waited for as long as it makes progress,
        a hung one is not. @running: whether L2's QEMU still runs, when
        libvirt does not run it"""
        # Whether the domain still runs: its QEMU's pid file each time
        # (free), libvirt's word every 10 s (a paused L2). A virsh every
        # 0.5 s (0.3-0.7 s of CPU each) took a third of this L1's one vCPU
        # from L2 (chain-migrate-debian13's STALL lines: L2's boot, 230 s)
        deadline = time.monotonic() + timeout
        asked = 0
        while time.monotonic() < deadline:
            seen = self.seen
            self.poll()
            if len(self.chunks) >= want or self.failed:
                break
            if running:
                if not running():
                    break
            elif time.monotonic() - asked >= 10:
                asked = time.monotonic()
                if lv.state(self.name) != "running":
                    break
            elif not lv.qemu_pid(self.name):
                break
            if self.seen > seen:
                deadline = time.monotonic() + timeout
            time.sleep(0.5)
        else:
            diag(f"L2 of {self.name}: nothing new for {timeout} s")
        self.poll()
        return -1 if self.failed else len(self.chunks)


def wait_chunks(name, want, timeout):
    """Relay L2's TAP as it comes; the number of chunks it completed"""
    return L2Tap(name).wait(want, timeout)


def released(path, orig):
    """no entry, not static, libvirt's owner and mode back and no label it
    remembered: (True, None) or (False, what is left)"""
    xattrs = [x for x in os.listxattr(path)
              if x.startswith("trusted.libvirt.security")]
    ok = (not entry_of(path) and not enforced(path) and
          owner_mode(path) == orig and not xattrs)
    return ok, (None if ok else (entry_of(path), enforced(path),
                                 owner_mode(path), orig, xattrs))


def console_tail(name):
    """L2's console, its state and its QEMU's log: why it did not do what
    it was started for"""
    parts = [lv.virsh("domstate", "--reason", name, timeout=30).stdout]
    for what, path in (("console", f"{WORK}/{name}.console"),
                       ("QEMU log", f"/var/log/libvirt/qemu/{name}.log")):
        try:
            with open(path, errors="replace") as f:
                parts.append(f"--- {what} ({path}):\n" + f.read()[-3000:])
        except OSError as e:
            parts.append(f"--- {what}: {e}")
    return "\n".join(parts)

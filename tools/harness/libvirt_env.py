# SPDX-License-Identifier: GPL-2.0-or-later
"""A libvirt environment for tests and the quickstart, on facts measured here
(../shared/reference/libvirt-by-hand.md):

- use the running system libvirtd, or start one by hand (pinned to one CPU
  with taskset, so the capabilities cache is not thrown away on every start,
  and stdio_handler = "file" so virtlogd is not needed) and stop it after,
  restoring qemu.conf;
- install the daxfile hook under /etc/libvirt/hooks/qemu.d/ and a config
  drop-in naming the managed directory, and remove both afterwards (libvirtd
  needs a SIGHUP to notice a first hook);
- TCG guests booting the VM harness's kernel and initramfs, with the console
  on a file (serial0) and the guest script's TAP on another (serial1).
Nothing here touches domains it did not define.
"""

import contextlib
import fcntl
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import daxfile_vm  # tools/harness, beside this module

URI = "qemu:///system"
QEMU_CONF = "/etc/libvirt/qemu.conf"
HOOK_DIR = "/etc/libvirt/hooks/qemu.d"
CONF_D = "/etc/daxfile/daxfile.conf.d"
PIDFILE = "/run/daxfile-libvirtd.pid"
# Held by every test using the system daemon (Libvirtd), machine-wide: two
# tests at once (./run-tests's two lanes) must not restart it, or its
# hooks and configuration, under each other. A process it runs (a
# quickstart --dev inside a test's Libvirtd()) has it from its holder:
# DAEMON_LOCK_PID names the holder to its descendants.
DAEMON_LOCK = "/run/daxfile-test/libvirtd.lock"
DAEMON_LOCK_PID = "DAXFILE_TEST_LIBVIRTD_LOCK_PID"


def _ancestors():
    """The pids above this process, its parent first"""
    pid, seen = os.getppid(), set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        yield pid
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return


QUIET = False


def log(msg):
    if not QUIET:
        print(f"# libvirt-env: {msg}", file=sys.stderr, flush=True)


def run(argv, check=False, timeout=300, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout, errors="replace", **kw)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
    return proc


def virsh(*args, check=False, timeout=300):
    return run(["virsh", "-c", URI] + [str(a) for a in args], check=check,
               timeout=timeout)


def terminate(pid, timeout=30):
    """SIGTERM @pid and wait until it is gone; False if it outlived @timeout"""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return True
        time.sleep(0.1)
    return False


def kvm_node_mismatch():
    """Why libvirtd would probe QEMU again at every call, or None: QEMU's
    probe finds KVM where libvirt's check, as the qemu user, finds
    /dev/kvm closed (measured: 'KVM was enabled when probing, but it is
    not available now', 30-45 s per virsh define). Seen when a chroot with
    another 'kvm' gid shared /dev and its packages' scripts chgrp'ed the
    node."""
    import grp
    try:
        st = os.stat("/dev/kvm")
        kvm = grp.getgrnam("kvm").gr_gid
    except (OSError, KeyError):
        return None
    if st.st_gid == kvm or st.st_mode & 0o006:
        return None
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return (f"/dev/kvm belongs to group '{group}', not 'kvm' (udev's "
            "rule): libvirtd will probe QEMU again at every call, 30 s "
            "each; 'chgrp kvm /dev/kvm' restores it")


class Libvirtd:
    """The system daemon: reused when running, else started and stopped."""

    _held = 0        # this process's Libvirtd()s (they nest)
    _lock_fd = None

    def __init__(self):
        self.ours = False
        self.conf_backup = None

    @classmethod
    def _lock(cls):
        holder = os.environ.get(DAEMON_LOCK_PID, "")
        if cls._held == 0 and holder.isdigit() and \
                int(holder) in _ancestors():
            cls._held += 1     # the holder above runs us
            return
        if cls._held == 0:
            os.makedirs(os.path.dirname(DAEMON_LOCK), exist_ok=True)
            fd = os.open(DAEMON_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log(f"waiting for another test's use of libvirtd to end "
                    f"({DAEMON_LOCK})")
                fcntl.flock(fd, fcntl.LOCK_EX)
            cls._lock_fd = fd
            os.environ[DAEMON_LOCK_PID] = str(os.getpid())
        cls._held += 1

    @classmethod
    def _unlock(cls):
        cls._held -= 1
        if cls._held == 0 and cls._lock_fd is not None:
            os.close(cls._lock_fd)
            cls._lock_fd = None
            os.environ.pop(DAEMON_LOCK_PID, None)

    @staticmethod
    def running():
        try:
            return virsh("version", timeout=20).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def __enter__(self):
        self._lock()
        try:
            return self._enter()
        except BaseException:
            self._unlock()
            raise

    def _enter(self):
        why = kvm_node_mismatch()
        if why:
            log(why)
        if self.running():
            log("using the running libvirtd")
            return self
        self.conf_backup = QEMU_CONF + ".daxfile-backup"
        shutil.copy2(QEMU_CONF, self.conf_backup)
        with open(QEMU_CONF, "a") as f:
            f.write('\n# added while daxfile tests run\n'
                    'stdio_handler = "file"\n')
        self._start()
        self.ours = True
        log("started libvirtd")
        return self

    def _start(self):
        run(["taskset", "-c", "0", "libvirtd", "-d", "-p", PIDFILE],
            check=True)
        deadline = time.monotonic() + 90
        while not self.running():
            if time.monotonic() > deadline:
                raise RuntimeError("libvirtd did not come up in 90 s")
            time.sleep(0.2)

    def restart(self):
        """Stop and start the daemon started here (clients lose their
        connections); False when it is not ours to restart."""
        if not self.ours:
            return False
        pid = self.pid()
        if pid:
            terminate(pid)
        self._start()
        log("restarted libvirtd")
        return True

    def pid(self):
        for path in (PIDFILE, "/run/libvirtd.pid", "/var/run/libvirtd.pid"):
            try:
                with open(path) as f:
                    pid = int(f.read().strip())
                os.kill(pid, 0)
                return pid
            except (OSError, ValueError):
                continue
        out = run(["pidof", "libvirtd"]).stdout.split()
        return int(out[0]) if out else None

    def reload_hooks(self):
        """libvirtd notices a first qemu.d hook only after SIGHUP."""
        pid = self.pid()
        if pid:
            os.kill(pid, signal.SIGHUP)
            time.sleep(2.0)
            deadline = time.monotonic() + 30
            while not self.running() and time.monotonic() < deadline:
                time.sleep(0.2)

    def __exit__(self, *exc):
        try:
            if self.ours:
                pid = self.pid()
                if pid:
                    terminate(pid)
                log("stopped libvirtd")
            if self.conf_backup:
                shutil.move(self.conf_backup, QEMU_CONF)
        finally:
            self._unlock()
        return False


# A guest nested under TCG in an emulated pmem host, measured there with
# initcall_debug: every console line costs milliseconds (quiet), 256
# legacy ptys 4 s (pty.legacy_count=0); QEMU's minimal firmware starts the
# kernel sooner than SeaBIOS (0.43 s of a 2.0 s boot under plain TCG).
# What the guest never uses is not set up: 8 loop devices (0.7 s), IPv6
# (0.6 s), the PS/2 keyboard and mouse ports (1.1 s), two of the four
# 8250 UARTs (its domain has two serial ports: 0.2-1.7 s), ACPI thermal
# zones (0.3-0.5 s).
# Under KVM on the emulated host's SVM (virt_type()) each VM exit costs
# tens of microseconds: measured with initcall_debug there, a Debian
# kernel reached /init at 9-12 s, 4.5 s without the early PCI scans of
# the AMD GART aperture check (pci=noearly: 65536 config reads, 2-4 s on
# the CPU QEMU's TCG emulates, family 0xf) and the zeroing of every page
# allocated (init_on_alloc=0); crypto self-tests and the SP800-108 KDF's
# (0.4-0.9 s) are skipped too.
NESTED_APPEND = ("quiet pty.legacy_count=0 nfit.no_init_ars=1 max_loop=0 "
                 "ipv6.disable=1 i8042.nokbd i8042.noaux 8250.nr_uarts=2 "
                 "thermal.off=1 pci=noearly init_on_alloc=0 cryptomgr.notests "
                 "initcall_blacklist=crypto_kdf108_init")
QBOOT = "/usr/share/qemu/qboot.rom"


# libvirtd in a nested host probes QEMU's capabilities at every boot: 7-9 s
# under TCG. The probe is libvirt's own cache file; the real host keeps a
# copy (CAPS_LINE lines in the nested host's TAP carry it out) and seeds
# the next boot with it. libvirt checks what it reads (QEMU's and its own
# binary, the kernel, the CPU) and probes again when that changed.
CAPS_DIR = "/var/cache/libvirt/qemu/capabilities"
CAPS_LINE = "# libvirt-caps "


def caps_cache(kernel):
    """The real host's copy of the probes of a nested host booting
    @kernel (a probe is only valid for the kernel it was made under)"""
    return os.path.join(daxfile_vm.CACHE_DIR, "libvirt-caps", kernel)


def seed_caps(src):
    """Copy the cached probes in @src (if any) where libvirtd reads them;
    {name: bytes} of what was copied"""
    seeded = {}
    try:
        names = [n for n in os.listdir(src) if n.endswith(".xml")]
    except OSError:
        return seeded
    os.makedirs(CAPS_DIR, mode=0o755, exist_ok=True)
    for name in names:
        with open(os.path.join(src, name), "rb") as f:
            seeded[name] = f.read()
        with open(os.path.join(CAPS_DIR, name), "wb") as f:
            f.write(seeded[name])
    return seeded


def export_caps(seeded):
    """Print each probe libvirtd made that differs from @seeded as a
    CAPS_LINE (name, gzip, base64) for the real host to keep; returns
    what is there now, for the next call"""
    import base64
    import gzip
    now = dict(seeded)
    try:
        names = sorted(n for n in os.listdir(CAPS_DIR) if n.endswith(".xml"))
    except OSError:
        return now
    for name in names:
        with open(os.path.join(CAPS_DIR, name), "rb") as f:
            data = f.read()
        if seeded.get(name) != data:
            blob = base64.b64encode(gzip.compress(data)).decode()
            print(f"{CAPS_LINE}{name} {blob}", flush=True)
            now[name] = data
    return now


def save_caps(line, dst):
    """Keep the probe of one CAPS_LINE in @dst (atomically)"""
    import base64
    import gzip
    name, blob = line[len(CAPS_LINE):].split(" ", 1)
    if "/" in name or not name.endswith(".xml"):
        return
    data = gzip.decompress(base64.b64decode(blob))
    os.makedirs(dst, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=dst)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, os.path.join(dst, name))


def apparmor_confines_libvirtd():
    """True when AppArmor has libvirtd's profile loaded (Debian 13's
    emulated pmem host): libvirt then labels each domain through
    virt-aa-helper"""
    try:
        with open("/sys/kernel/security/apparmor/profiles") as f:
            return any(line.startswith("libvirtd ") for line in f)
    except OSError:
        return False


def nested_loader():
    """QEMU's minimal firmware for a domain, or None (SeaBIOS): not under
    AppArmor, whose virt-aa-helper refuses a loader under /usr/share/qemu
    ("skipped restricted file") and with it the domain's start"""
    if apparmor_confines_libvirtd() or not os.path.exists(QBOOT):
        return None
    return QBOOT


def nested_host_conf():
    """On an emulated pmem host (the chain suite's L1, the quickstart's):
    switch off in qemu.conf what its kernel lacks (the daxctl() kernel has
    no cgroups or namespaces), and mount the cgroup2 hierarchy libvirt
    expects where there is one."""
    conf = []
    if not os.path.exists("/proc/cgroups"):
        conf.append("cgroup_controllers = [ ]")
    if not os.path.exists("/proc/self/ns/mnt"):
        conf.append("namespaces = [ ]")
    if conf:
        with open(QEMU_CONF, "a") as f:
            f.write("\n# an emulated pmem host\n" + "\n".join(conf) + "\n")
    if os.path.isdir("/sys/fs/cgroup") and os.path.exists("/proc/cgroups"):
        run(["mount", "-t", "cgroup2", "cgroup2", "/sys/fs/cgroup"])


AA_PROFILE = "/etc/apparmor.d/usr.sbin.libvirtd"
AA_LOCAL = "/etc/apparmor.d/local/usr.sbin.libvirtd"
AA_ABSTRACTION = "/etc/apparmor.d/abstractions/daxfile-libvirtd"
AA_LINE = "include if exists <abstractions/daxfile-libvirtd>"


def apparmor_allow_hook(build_dir):
    """Under AppArmor, what the Debian package's postinst does: the
    build's abstractions/daxfile-libvirtd (data/apparmor/) included from
    libvirtd's local override, and libvirtd's profile loaded again, so
    the hook it runs may set FS_IMMUTABLE_FL; False when there is no
    AppArmor to tell or the line was there"""
    if not apparmor_confines_libvirtd():
        return False
    shutil.copy2(os.path.join(build_dir, "data", "daxfile-libvirtd"),
                 AA_ABSTRACTION)
    try:
        with open(AA_LOCAL) as f:
            have = AA_LINE in f.read().splitlines()
    except FileNotFoundError:
        have = False
    if not have:
        with open(AA_LOCAL, "a") as f:
            f.write(f"{AA_LINE}\n")
    run(["apparmor_parser", "-r", "-T", "-W", AA_PROFILE], check=True)
    return not have


def apparmor_forget_hook():
    """Take back what apparmor_allow_hook() added"""
    with open(AA_LOCAL) as f:
        lines = [x for x in f.read().splitlines() if x != AA_LINE]
    with open(AA_LOCAL, "w") as f:
        f.write("".join(f"{x}\n" for x in lines))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(AA_ABSTRACTION)
    run(["apparmor_parser", "-r", "-T", "-W", AA_PROFILE])


class Hook:
    """The daxfile hook and a config drop-in, installed for a while."""

    MARK = "# installed for a while by daxfile's tests or quickstart"

    @staticmethod
    def sweep():
        """Remove the hooks and drop-ins of runs that died before removing
        them (SIGKILL, a timeout): libvirtd would run them at every start
        of every later domain, under their configuration (seen: a killed
        run's hook refused every start of the next one)"""
        try:
            names = os.listdir(CONF_D)
        except OSError:
            return
        for name in names:
            conf = os.path.join(CONF_D, name)
            try:
                with open(conf) as f:
                    first = f.readline()
            except OSError:
                continue
            if not name.endswith(".conf") or not first.startswith(Hook.MARK):
                continue
            # the installer's pid; before it was written: the name's
            m = re.search(r"\(pid (\d+)\)", first) or \
                re.search(r"(\d+)(?!.*\d)", name)
            if not m or os.path.exists(f"/proc/{m.group(1)}"):
                continue
            log(f"removing the hook and drop-in '{name[:-5]}' left behind "
                "by a run that is gone")
            for path in (conf, os.path.join(HOOK_DIR, name[:-5])):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass

    def __init__(self, hook_binary, name, roots, allow_non_dax=True,
                 extra=""):
        self.binary = hook_binary
        self.hook = os.path.join(HOOK_DIR, name)
        self.conf = os.path.join(CONF_D, name + ".conf")
        self.text = (f"{Hook.MARK} (pid {os.getpid()})\n"
                     f"[hook]\nmanaged_roots={';'.join(roots)}\n"
                     f"allow_non_dax={'true' if allow_non_dax else 'false'}\n"
                     f"{extra}")

    def install(self, daemon=None):
        """@daemon: a running libvirtd, told to look at its hooks again
        (one started after this reads them anyway)"""
        Hook.sweep()
        os.makedirs(HOOK_DIR, exist_ok=True)
        os.makedirs(CONF_D, exist_ok=True)
        shutil.copy2(self.binary, self.hook + ".tmp")
        os.chmod(self.hook + ".tmp", 0o755)
        os.rename(self.hook + ".tmp", self.hook)
        with open(self.conf, "w") as f:
            f.write(self.text)
        self.apparmor = apparmor_allow_hook(
            os.path.dirname(os.path.dirname(self.binary)))
        if daemon:
            daemon.reload_hooks()

    def remove(self):
        for path in (self.hook, self.conf):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        if getattr(self, "apparmor", False):
            apparmor_forget_hook()
            self.apparmor = False


class LoopDir:
    """A throwaway directory on a loop-mounted xfs made for 2 MiB extents
    (mkfs.xfs -d su=2m,sw=1), so files get aligned extents as on a real
    pmem filesystem. Always unmounted."""

    def __init__(self, size_mib=1536, prefix="daxfile-"):
        self.tmp = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
        os.chmod(self.tmp, 0o755)
        self.image = os.path.join(self.tmp, "fs.img")
        self.path = os.path.join(self.tmp, "pmem")
        self.size = size_mib << 20
        self.mounted = False

    def __enter__(self):
        try:
            os.mkdir(self.path)
            with open(self.image, "wb") as f:
                f.truncate(self.size)
            run(["mkfs.xfs", "-q", "-f", "-m", "reflink=0", "-d", "su=2m,sw=1",
                 self.image], check=True)
            run(["mount", "-o", "loop", self.image, self.path], check=True)
            self.mounted = True
            os.chmod(self.path, 0o755)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self.mounted:
            if run(["umount", self.path]).returncode != 0:
                run(["umount", "-l", self.path])
            self.mounted = False
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False


class GuestImage:
    """Kernel and initramfs from the VM harness, for libvirt guests."""

    def __init__(self, workdir, bins=(), kernel="6.1", image=None):
        """@image: a daxfile_vm Image made already (else one of @kernel
        with @bins)"""
        self.image = image or daxfile_vm.build_image(kernel, bins=list(bins))
        self.workdir = workdir

    def files(self, script, env=None, tag="guest"):
        """(kernel, initrd, cmdline) running SCRIPT (a path, or a NAME: NAME.sh
        in daxfile_vm.GUEST_DIRS)"""
        kernel = os.path.join(self.workdir, "vmlinux")
        if not os.path.exists(kernel):
            shutil.copy2(self.image.boot_kernel, kernel)
        if "/" not in script:
            script = daxfile_vm.guest_script(script)
        script_path = daxfile_vm.resolve_script(script)
        initrd = os.path.join(self.workdir, f"initrd-{tag}")
        self.image.initrd(initrd, script_path, env or {})
        cmdline = (f"{daxfile_vm.DEFAULT_APPEND} "
                   f"daxfile.script={script_path.name}")
        return kernel, initrd, cmdline


def virt_type():
    """'kvm' inside an emulated pmem host (a --hostroot boot of the VM
    harness) whose kernel has KVM: QEMU's TCG emulates AMD's SVM for it
    (its -cpu max is an AuthenticAMD with svm and npt), so its guests run
    under KVM at the emulated host's own speed instead of a second level
    of TCG (a Debian kernel's boot: about 8 s instead of 110). Else
    'qemu' (TCG): this machine's /dev/kvm, where there is one, does not
    run guests."""
    try:
        with open("/proc/cmdline") as f:
            nested = "daxfile.hostroot=1" in f.read().split()
    except OSError:
        nested = False
    return "kvm" if nested and os.path.exists("/dev/kvm") else "qemu"


def domain_xml(name, kernel, initrd, cmdline, console, tap, memory_mib=512,
               devices="", vcpus=2, loader=None, virt=None):
    """A small TCG domain ready for nvdimms: maxMemory with slots, one NUMA
    cell, ACPI; console on serial0, the guest script's TAP on serial1; no
    USB controller and no balloon (probing the balloon's virtio device
    took 4.7 s of a guest's boot nested under TCG). loader: a firmware
    ROM instead of SeaBIOS (QEMU's qboot.rom boots faster). virt: the
    domain type, else virt_type()'s."""
    rom = f"    <loader type='rom'>{loader}</loader>\n" if loader else ""
    kind = virt or virt_type()
    # TCG's XSAVE under its emulated SVM reports sizes a guest kernel
    # refuses (a WARNING and 0.5 s at boot): that guest saves its FPU
    # state with FXSAVE instead
    xsave = ("    <feature policy='disable' name='xsave'/>\n"
             if kind == "kvm" else "")
    return f"""<domain type='{kind}'>
  <name>{name}</name>
  <memory unit='MiB'>{memory_mib}</memory>
  <maxMemory slots='4' unit='MiB'>{memory_mib + 4096}</maxMemory>
  <vcpu>{vcpus}</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
{rom}    <kernel>{kernel}</kernel>
    <initrd>{initrd}</initrd>
    <cmdline>{cmdline}</cmdline>
  </os>
  <features><acpi/></features>
  <cpu mode='maximum'>
{xsave}    <numa>
      <cell id='0' cpus='0-{vcpus - 1}' memory='{memory_mib}' unit='MiB'/>
    </numa>
  </cpu>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
    <serial type='file'>
      <source path='{console}'/>
      <target port='0'/>
    </serial>
    <serial type='file'>
      <source path='{tap}'/>
      <target port='1'/>
    </serial>
{devices}  </devices>
</domain>
"""


def define(xml, workdir, name):
    path = os.path.join(workdir, f"{name}.xml")
    with open(path, "w") as f:
        f.write(xml)
    return virsh("define", path)


def state(name):
    res = virsh("domstate", name)
    return res.stdout.strip() if res.returncode == 0 else None


def qemu_pid(name):
    """The PID of @name's QEMU from libvirtd's pid file (system daemon),
    or None"""
    try:
        with open(f"/run/libvirt/qemu/{name}.pid") as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/comm") as f:
            return pid if f.read().startswith("qemu") else None
    except (OSError, ValueError):
        return None


def lsm_label(pid):
    """The LSM label of process @pid ("libvirt-UUID (enforce)" for a
    QEMU that AppArmor confines), or None where no LSM labels it"""
    for path in (f"/proc/{pid}/attr/apparmor/current",
                 f"/proc/{pid}/attr/current"):
        try:
            with open(path) as f:
                label = f.read().strip("\0\n ")
        except OSError:
            continue
        return label if label and label != "unconfined" else None
    return None


def stack():
    """What this host runs, for a result's record: {"os", "libvirt",
    "qemu", "security"} (security: the models libvirt's capabilities
    name, e.g. ["apparmor", "dac"])"""
    out = {"os": None, "libvirt": None, "qemu": None, "security": []}
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    out["os"] = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    for line in virsh("version").stdout.splitlines():
        m = re.match(r"\s*(Using library|Running hypervisor): "
                     r"(?:lib)?(\S+) (\S+)", line)
        if m:
            out["libvirt" if m.group(1) == "Using library" else "qemu"] = \
                m.group(3)
    caps = virsh("capabilities").stdout
    out["security"] = re.findall(r"<secmodel>\s*<model>(\w+)</model>", caps)
    return out


def wait_exit(pid, timeout):
    """Sleep until process @pid is gone (a pidfd, no polling) or @timeout"""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def wait_shutoff(name, timeout=240):
    """Wait until libvirt has @name shut off. First sleep on its QEMU's
    exit: a `virsh domstate` every 0.25 s is a process start each time,
    which on an emulated pmem host (TCG) took the CPU the guest needs."""
    deadline = time.monotonic() + timeout
    pid = qemu_pid(name)
    if pid:
        wait_exit(pid, timeout)
    while time.monotonic() < deadline:
        if state(name) == "shut off":
            return True
        time.sleep(0.25)
    return False


def wait_file(path, text, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, errors="replace") as f:
                if text in f.read():
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.25)
    return False


def cleanup_domain(name):
    if state(name) == "running":
        virsh("destroy", name)
    virsh("undefine", name, "--nvram")
    if state(name) is not None:
        virsh("undefine", name)


def tap_results(path):
    """(ok, not_ok) lines of a guest TAP file"""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return [], ["(no TAP file)"]
    oks = [line for line in lines if line.startswith("ok ")]
    bad = [line for line in lines if line.startswith("not ok")]
    return oks, bad

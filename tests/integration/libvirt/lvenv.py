"""A private libvirtd + virtlogd for numaorch's libvirt tests, and tiny TCG
domains to run in it.

libvirtd run as root reads its configuration, hooks and state from fixed
places (/etc/libvirt, /run/libvirt, /var/lib/libvirt, ...). To keep the
machine's own untouched, both daemons run in a private mount namespace
(unshare -m) held open by a sleeping process, in which those directories
(and /etc/numaorch, where the hook reads the agent's socket path) are
bind mounts of directories under one temporary directory. Only the
client socket (unix_sock_dir) is reached from outside, through
qemu:///system?socket=DIR/sock/libvirt-sock. QEMU runs inside as well;
its cgroups (/machine/qemu-N-NAME.libvirt-qemu) are the host's real ones.

Everything started is stopped by PID and everything created is removed
by cleanup(), even after a failure; empty mount points this created
(e.g. /var/lib/libvirt) and the libvirt-qemu user, if this created it,
are removed too.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib

MOUNTS = {  # host path -> private dir name
    "/etc/libvirt": "etc",
    "/run/libvirt": "run",
    "/var/lib/libvirt": "lib",
    "/var/cache/libvirt": "cache",
    "/var/log/libvirt": "log",
    "/etc/numaorch": "numaorch-etc",
}
QEMU = "/usr/bin/qemu-system-x86_64"
CGROOT = "/sys/fs/cgroup"


def missing_prerequisite():
    """None if a private libvirtd can be started here, else why not."""
    if os.geteuid() != 0:
        return "needs root (libvirtd with the QEMU driver, cgroups, mount namespaces)"
    for b in ("/usr/sbin/libvirtd", "/usr/sbin/virtlogd", "/usr/bin/virsh", QEMU,
              "/usr/bin/unshare", "/usr/bin/nsenter"):
        if not os.access(b, os.X_OK):
            return "%s is missing (make test-deps installs it)" % b
    return None


def _run(args, timeout=60, check=True, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=check, **kw)


def _pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if not _pid_alive(pid):
            return True
        time.sleep(0.02)
    return not _pid_alive(pid)


def _stop_pid(pid, timeout=10):
    if not pid or not _pid_alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if not _wait_gone(pid, timeout):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _wait_gone(pid, 5)


def qemu_pid_of(uuid):
    """The QEMU process running the domain with this uuid, or None."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        for i, a in enumerate(args[:-1]):
            if a == b"-uuid" and args[i + 1].decode(errors="replace").lower() == uuid.lower():
                return int(d)
    return None


def threads_by_comm(pid):
    """{tid: comm} of a process."""
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                out[int(t)] = f.read().strip()
        except OSError:
            pass
    return out


def cpus_allowed(pid, tid):
    with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return None


def boot_sector():
    """512 bytes that SeaBIOS boots: `jmp $` (EB FE), signature 55 AA.
    vCPU 0 spins in it at full speed."""
    b = bytearray(512)
    b[0:2] = b"\xeb\xfe"
    b[510:512] = b"\x55\xaa"
    return bytes(b)


class PrivateLibvirt:
    def __init__(self, hook_binary=None, agent_socket=None, virtlogd=True):
        self.dir = tempfile.mkdtemp(prefix="numaorch-lv-")
        # QEMU (user libvirt-qemu) must reach its serial files and boot images.
        os.chmod(self.dir, 0o755)
        self.hook_binary = hook_binary
        self.agent_socket = agent_socket
        self.use_virtlogd = virtlogd
        self.created_paths = []
        self.created_user = self.created_group = False
        self.holder = None
        self.libvirtd_pid = None
        self.virtlogd_pid = None
        self.domains = {}  # name -> uuid
        self.machine_existed = {c: os.path.isdir(os.path.join(CGROOT, c, "machine"))
                                for c in os.listdir(CGROOT)} if os.path.isdir(CGROOT) else {}
        self.uri = "qemu:///system?socket=%s/sock/libvirt-sock" % self.dir

    # ---- setup ---------------------------------------------------------
    def path(self, *p):
        return os.path.join(self.dir, *p)

    def _ensure_user(self):
        if _run(["getent", "group", "libvirt-qemu"], check=False).returncode != 0:
            _run(["groupadd", "--system", "libvirt-qemu"])
            self.created_group = True
        if _run(["getent", "passwd", "libvirt-qemu"], check=False).returncode != 0:
            _run(["useradd", "--system", "-g", "libvirt-qemu", "-d", "/nonexistent", "-M",
                  "-s", "/usr/sbin/nologin", "libvirt-qemu"])
            self.created_user = True

    def _write(self, rel, text, mode=0o644):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
        return p

    def _configure(self):
        for d in list(MOUNTS.values()) + ["sock", "images"]:
            os.makedirs(self.path(d), exist_ok=True)
        os.chmod(self.path("images"), 0o777)
        self._write("etc/libvirtd.conf",
                    'unix_sock_dir = "%s"\nlog_outputs = "3:file:%s"\n'
                    'keepalive_interval = 5\nkeepalive_count = 5\n'
                    % (self.path("sock"), "/var/log/libvirt/libvirtd.log"))
        self._write("etc/virtlogd.conf", 'log_outputs = "3:file:/var/log/libvirt/virtlogd.log"\n')
        # namespaces = []: QEMU keeps this namespace's /dev, where /dev/kvm is
        # a plain file (see _mount_namespace); libvirt cannot move that
        # mount into a per-domain /dev ("Unable to move ... to /dev/kvm").
        self._write("etc/qemu.conf",
                    'stdio_handler = "%s"\nnamespaces = []\n' % ("logd" if self.use_virtlogd else "file"))
        if self.hook_binary:
            os.makedirs(self.path("etc/hooks/qemu.d"), exist_ok=True)
            shutil.copy(self.hook_binary, self.path("etc/hooks/qemu.d/numaorch"))
            os.chmod(self.path("etc/hooks/qemu.d/numaorch"), 0o755)
        if self.agent_socket:
            self._write("numaorch-etc/numaorchd.conf", "[api]\nsocket = %s\n" % self.agent_socket)

    def _mount_namespace(self):
        binds = []
        if os.path.exists("/dev/kvm"):
            # The domains here are TCG ('qemu'), and this kind of machine's
            # /dev/kvm is root-only (and unreliable). libvirtd probes QEMU
            # as root, so its capabilities say KVM, then checks /dev/kvm as
            # the libvirt-qemu user, who cannot open it, and discards them
            # as outdated: every define, start and `virsh version` probed
            # QEMU again (4 s each here, 40 s per define; check-libvirt took
            # 14 min instead of ~2). A plain file over /dev/kvm in the
            # private namespace gives both checks the same answer: no KVM.
            fake = self._write("no-kvm", "", mode=0o600)
            binds.append("mount --bind %s /dev/kvm" % fake)
        for host, mine in MOUNTS.items():
            if not os.path.isdir(host):
                # the first missing ancestor is what to remove afterwards
                top = host
                while not os.path.isdir(os.path.dirname(top)):
                    top = os.path.dirname(top)
                os.makedirs(host)
                self.created_paths.append(top)
            binds.append("mount --bind %s %s" % (self.path(mine), host))
        script = " && ".join(binds) + " && echo ready && exec sleep 1000000"
        self.holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private",
                                        "sh", "-c", script],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.holder.stdout.readline().strip()
        if line != "ready":
            err = self.holder.stderr.read() if self.holder.poll() is not None else ""
            raise RuntimeError("cannot set up the private mount namespace: %r %s" % (line, err))

    def ns(self, args):
        return ["nsenter", "-t", str(self.holder.pid), "-m", "--"] + list(args)

    def setup(self):
        self._ensure_user()
        self._configure()
        self._mount_namespace()
        if self.use_virtlogd:
            self.start_virtlogd()
        # Always cold, as on a new machine: the cache is this instance's own
        # new directory, so libvirtd must probe QEMU before it answers.
        cached = os.listdir(self.path("cache"))
        if cached:
            raise RuntimeError("the private /var/cache/libvirt is not empty: %s" % cached)
        self.cold_start_s = self.start_libvirtd()
        return self

    def _daemon(self, name, conf, pidfile, timeout=60):
        try:
            p = _run(self.ns([name, "-d", "-f", conf, "-p", pidfile]), timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeError("%s -d did not return within %d s%s" % (name, timeout, self.log_tail(name, 40)))
        if p.returncode != 0:
            raise RuntimeError("%s did not start (exit %d): %s %s" % (name, p.returncode, p.stdout,
                                                                   p.stderr + self.log_tail(name)))
        host_pidfile = self.path("run", os.path.basename(pidfile))
        end = time.time() + timeout
        while time.time() < end:
            try:
                with open(host_pidfile) as f:
                    pid = int(f.read().strip())
                if _pid_alive(pid):
                    return pid
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        raise RuntimeError("%s wrote no pid file %s%s" % (name, host_pidfile, self.log_tail(name)))

    def log_tail(self, name, n=20):
        try:
            with open(self.path("log", name + ".log")) as f:
                return "\n" + "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def start_virtlogd(self):
        self.virtlogd_pid = self._daemon("virtlogd", "/etc/libvirt/virtlogd.conf", "/run/libvirt/virtlogd.pid")

    # A libvirtd with an empty QEMU capabilities cache probes QEMU before it
    # answers its first call: ~16 s on a new 2-core machine (measured
    # 2026-12-01), at once when the cache is warm. Every PrivateLibvirt has
    # its own empty /var/cache/libvirt, so each suite starts cold, as CI on
    # a new machine does. The deadline is generous; each probe's own
    # timeout is caught so a slow first answer never ends the wait early.
    START_DEADLINE = 120

    def start_libvirtd(self, timeout=None):
        """Start libvirtd and wait until it answers. Returns the seconds it took."""
        timeout = self.START_DEADLINE if timeout is None else timeout
        t0 = time.time()
        self.libvirtd_pid = self._daemon("libvirtd", "/etc/libvirt/libvirtd.conf", "/run/libvirt/libvirtd.pid")
        end = t0 + timeout
        last = "no answer yet"
        while time.time() < end:
            if not _pid_alive(self.libvirtd_pid):
                raise RuntimeError("libvirtd (pid %d) exited before it answered%s"
                                   % (self.libvirtd_pid, self.log_tail("libvirtd", 40)))
            try:
                p = self.virsh("version", check=False, timeout=max(1, min(15, end - time.time())))
            except subprocess.TimeoutExpired:
                last = "virsh version timed out"
                continue
            if p.returncode == 0:
                return time.time() - t0
            last = (p.stderr or p.stdout).strip()
            time.sleep(0.2)
        raise RuntimeError("libvirtd does not answer on %s within %d s (last: %s)%s"
                           % (self.uri, timeout, last, self.log_tail("libvirtd", 40)))

    def kill_libvirtd(self, sig=signal.SIGKILL):
        pid = self.libvirtd_pid
        os.kill(pid, sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            _wait_gone(pid, 15)
            try:
                os.unlink(self.path("run", "libvirtd.pid"))
            except OSError:
                pass
            self.libvirtd_pid = None

    def virsh(self, *args, check=True, timeout=60):
        p = _run(["virsh", "-q", "-c", self.uri] + list(args), timeout=timeout, check=False)
        if check and p.returncode != 0:
            raise RuntimeError("virsh %s: %s%s" % (" ".join(args), p.stderr.strip(), self.log_tail("libvirtd", 5)))
        return p

    # ---- domains ---------------------------------------------------------
    def domain_xml(self, name, uuid, vcpus=1, mem_mib=64, busy=False, numatune=None, policy=None, iothreads=0,
                   cpuset=None):
        disk = ""
        if busy:
            img = self.path("images", name + ".img")
            with open(img, "wb") as f:
                f.write(boot_sector())
            os.chmod(img, 0o666)
            disk = ("<disk type='file' device='disk'><driver name='qemu' type='raw'/>"
                    "<source file='%s'/><target dev='hda' bus='ide'/></disk>" % img)
        meta = ""
        if policy:
            attrs = " ".join('%s="%s"' % kv for kv in policy.items())
            meta = ('<metadata><numaorch:policy xmlns:numaorch="urn:numaorch:libvirt:1" %s/></metadata>'
                    % attrs)
        nt = ""
        if numatune:
            nt = "<numatune><memory mode='%s' nodeset='%s'/></numatune>" % numatune
        return """<domain type='qemu'>
  <name>{name}</name>
  <uuid>{uuid}</uuid>
  {meta}
  <memory unit='MiB'>{mem}</memory>
  <vcpu{vcpu_attr}>{vcpus}</vcpu>
  {io}
  {nt}
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <devices>
    <emulator>{qemu}</emulator>
    {disk}
    <serial type='file'><source path='{serial}'/></serial>
    <memballoon model='none'/>
  </devices>
</domain>
""".format(name=name, uuid=uuid, meta=meta, mem=mem_mib, vcpus=vcpus, nt=nt, qemu=QEMU, disk=disk,
           io="<iothreads>%d</iothreads>" % iothreads if iothreads else "",
           vcpu_attr=" placement='static' cpuset='%s'" % cpuset if cpuset else "",
           serial=self.path("images", name + ".serial"))

    def define(self, name, **kw):
        uuid = str(uuidlib.uuid4())
        xml = self._write("images/%s.xml" % name, self.domain_xml(name, uuid, **kw))
        self.virsh("define", xml)
        self.domains[name] = uuid
        return uuid

    def qemu_log(self, name, n=15):
        try:
            with open(self.path("log", "qemu", name + ".log")) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no QEMU log)"

    def start(self, name):
        """virsh start; returns (wall time before, wall time after). A start
        that fails is tried once more (QEMU on a saturated 2-CPU machine),
        and the first failure is printed with QEMU's log."""
        t0 = time.time()
        p = self.virsh("start", name, check=False)
        if p.returncode != 0:
            print("\n  note: starting %s failed once (%s); QEMU log:\n%s%s" % (
                name, p.stderr.strip(), self.qemu_log(name), self.log_tail("libvirtd", 8)), file=sys.stderr)
            t0 = time.time()
            self.virsh("start", name)
        return t0, time.time()

    def destroy(self, name, undefine=False):
        self.virsh("destroy", name, check=False)
        if undefine:
            self.virsh("undefine", name, check=False)
            self.domains.pop(name, None)

    def domid(self, name):
        return int(self.virsh("domid", name).stdout.strip())

    def domain_cgroup(self, name):
        return "/machine/qemu-%d-%s.libvirt-qemu" % (self.domid(name), name)

    # ---- cleanup ---------------------------------------------------------
    def cleanup(self):
        errors = []
        if self.libvirtd_pid and _pid_alive(self.libvirtd_pid):
            for name in list(self.domains):
                try:
                    self.virsh("destroy", name, check=False, timeout=30)
                    self.virsh("undefine", name, check=False, timeout=30)
                except Exception as e:  # keep cleaning
                    errors.append(str(e))
        # QEMU of domains libvirtd could not stop (it may be dead)
        for uuid in self.domains.values():
            pid = qemu_pid_of(uuid)
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                    _wait_gone(pid, 10)
                except ProcessLookupError:
                    pass
        _stop_pid(self.libvirtd_pid)
        _stop_pid(self.virtlogd_pid)
        if self.holder:
            if self.holder.poll() is None:
                self.holder.kill()
            self.holder.wait(timeout=10)
            for s in (self.holder.stdout, self.holder.stderr):
                s.close()
        for p in reversed(self.created_paths):
            shutil.rmtree(p, ignore_errors=True)
        # libvirt's machine partition, where this run created it
        for ctrl, existed in self.machine_existed.items():
            d = os.path.join(CGROOT, ctrl, "machine")
            if not existed and os.path.isdir(d):
                for sub, dirs, _ in sorted(os.walk(d), key=lambda t: -t[0].count("/")):
                    try:
                        os.rmdir(sub)
                    except OSError:
                        pass
        if self.created_user:
            _run(["userdel", "libvirt-qemu"], check=False)
        if self.created_group:
            _run(["groupdel", "libvirt-qemu"], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
        return errors

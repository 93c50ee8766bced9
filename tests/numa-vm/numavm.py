#!/usr/bin/env python3
"""numavm — the multi-node NUMA testbed: Debian's kernel under QEMU (TCG)
with N virtual NUMA nodes, a small initramfs holding numaorchd, numad,
numactl, the workload and a scenario runner, and the analysis of what the
runner measured.

    numavm.py fetch                      kernel, busybox-static, numad (.debs → build/numa-vm)
    numavm.py initrd                     build build/numa-vm/initrd.cpio
    numavm.py run SCENARIO PLACER        one boot; prints the metrics
    numavm.py itest                      the agent's cgroup v2 tests, in the VM
    numavm.py script NAME                run guest/NAME.sh in the VM (diagnostics)
    numavm.py check                      make check-numa: the assertions
    numavm.py check-libvirt              make check-numa-libvirt: a libvirt domain's memory
                                         moved by the agent, libvirtd + QEMU inside the VM
    numavm.py bench [-s SCN] [-p PLACER] make bench-numa: the matrix → results/REPORT.md
    numavm.py report                     rebuild REPORT.md and plots from saved runs
    numavm.py shell [SCENARIO]           boot to a shell on this terminal (debugging)

Everything downloaded or built lands under build/numa-vm/ (git-ignored);
nothing is installed on the host except with apt-get (qemu, gnuplot).
Stdlib only.
"""
import argparse
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO, "build")
CACHE = os.path.join(BUILD, "numa-vm")
DEBS = os.path.join(CACHE, "debs")
PKGROOT = os.path.join(CACHE, "pkgroot")
RUNS = os.path.join(CACHE, "runs")
INITRD = os.path.join(CACHE, "initrd.cpio")
# The same initramfs plus libvirtd and QEMU (make check-numa-libvirt only:
# ~100 MB more to unpack would slow every other boot).
INITRD_LIBVIRT = os.path.join(CACHE, "initrd-libvirt.cpio")
SCENARIOS = os.path.join(HERE, "scenarios")
RESULTS = os.path.join(HERE, "results")
PLACERS = ("none", "kernel", "numad", "numaorchd", "numaorchd+kernel")
# numaorchd beside the kernel's balancing with [memory] kernel_balancing set
# (numavm.py run only): how the default was chosen.
RUN_PLACERS = PLACERS + ("numaorchd+kernel:defer", "numaorchd+kernel:migrate", "numaorchd+kernel:auto")
# numaorchd with settings of its config changed through a drop-in
# (numavm.py run only), for an A/B of one setting from the tree:
# numaorchd:policy.min_free_mib=64 or numaorchd+kernel:a.b=1,c.d=x.
# numavm-run writes each as "[SECTION]\nKEY = VALUE"; the characters
# allowed are those it accepts.
SETTING_PLACER = re.compile(r"^numaorchd(\+kernel)?:[a-z_]+\.[a-z_]+=[A-Za-z0-9_.-]+(,[a-z_]+\.[a-z_]+=[A-Za-z0-9_.-]+)*$")


def run_placer(arg):
    """argparse type of `run`'s placer: a RUN_PLACERS name or a
    SETTING_PLACER form."""
    if arg in RUN_PLACERS or SETTING_PLACER.fullmatch(arg):
        return arg
    raise argparse.ArgumentTypeError(
        "%r: one of %s, or numaorchd[+kernel]:SECTION.KEY=VALUE[,...]" % (arg, ", ".join(RUN_PLACERS)))
# `--balancing on`: kernel.numa_balancing = 1 beside any placer (the
# kernel's default on most multi-node hosts). The balancing each placer
# runs with by itself:
PLACER_BALANCING = {"none": "off", "kernel": "on", "numad": "off", "numaorchd": "off"}
# make bench-numa's balancing-on column: PLACERS at their own setting
# already hold kernel (on) and numaorchd+kernel (numaorchd with it on);
# these placers are run once more with it on.
BENCH_BALANCING_ON = ("numad",)
# Guest keys numavm-run accepts (guest NAME key=value ...).
GUEST_KEYS = ("kind", "threads", "mib", "touch", "pages", "cpus", "mems", "run_on", "busy", "start", "stop",
              "containers", "ctr_cpuset", "driver", "widen", "hugetlb", "device")


def placer_balancing(placer):
    """kernel.numa_balancing ("on"/"off") PLACER runs with by itself."""
    if placer.startswith("numaorchd+kernel"):
        return "on"
    return PLACER_BALANCING.get(placer.split(":", 1)[0], "off")


def run_name(scn, placer, balancing=None, cgroup=None):
    """The run's directory under build/numa-vm/runs: SCENARIO.PLACER, with
    .balancing-on when the kernel's balancing is forced on beside a placer
    that runs without it, and .v1/.v2 when the cgroup version is not the
    scenario's own."""
    name = "%s.%s" % (scn["name"], placer)
    if balancing == "on" and placer_balancing(placer) != "on":
        name += ".balancing-on"
    if cgroup and cgroup != scn.get("cgroup", "v2"):
        name += "." + cgroup
    return name


def parse_guest(path, v):
    """NAME and {key: value} of a scenario's guest line; what numavm-run
    would refuse is refused here first (on the host, before a boot)."""
    parts = v.split()
    if not parts:
        raise SystemExit("%s: guest needs a name" % path)
    keys = {}
    for tok in parts[1:]:
        k, eq, val = tok.partition("=")
        if not eq or k not in GUEST_KEYS:
            raise SystemExit("%s: guest %s: unknown guest key %r" % (path, parts[0], tok))
        keys[k] = val
    kind = keys.get("kind", "docker")
    threads = int(keys.get("threads", "1"))
    if "containers" in keys:
        n = int(keys["containers"])
        if kind != "kubepods":
            raise SystemExit("%s: guest %s: containers= is for kind=kubepods" % (path, parts[0]))
        if not 1 <= n <= min(8, threads):
            raise SystemExit("%s: guest %s: containers must be 1..8 and at most threads" % (path, parts[0]))
    if "driver" in keys and (kind != "kubepods" or keys["driver"] not in ("systemd", "cgroupfs")):
        raise SystemExit("%s: guest %s: driver= is systemd or cgroupfs, for kind=kubepods" % (path, parts[0]))
    for k, ok in (("ctr_cpuset", ("own", "inherit")), ("widen", ("all", "mems", "no"))):
        if k in keys and keys[k] not in ok:
            raise SystemExit("%s: guest %s: %s must be %s" % (path, parts[0], k, " or ".join(ok)))
    return parts[0], keys
KERNEL_META = "linux-image-cloud-amd64"
GUEST_DEBS = ("busybox-static", "numad")
TARGET = 0.90


class Skip(Exception):
    """The testbed cannot run on this machine; the message says why."""


def log(msg):
    print("numavm: " + msg, file=sys.stderr, flush=True)


# ---- scenario files --------------------------------------------------------

def load_scenario(name):
    path = name if os.path.sep in name else os.path.join(SCENARIOS, name + ".scn")
    if not os.path.exists(path):
        raise SystemExit("no scenario %s" % path)
    scn = {"name": os.path.basename(path)[:-4], "path": path, "nodes": 4, "cpus_per_node": 2,
           "mem_per_node": 1024, "mem_nodes": None, "distance": 20, "duration": 60, "threads": 1,
           "dies": 1, "sample": 2, "pages": "thp", "check_within": None, "check_duration": None, "description": "", "guests": [],
           "bench": "yes", "cgroup": "v2", "distances": [], "memory_only": [], "pxb": [], "hugepages": [],
           "nvme": []}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            k, _, v = line.partition(" ")
            v = v.strip()
            if k == "guest":
                parse_guest(path, v)
                scn["guests"].append(v)
            elif k in ("nodes", "cpus_per_node", "mem_per_node", "distance", "threads", "dies"):
                scn[k] = int(v)
            elif k in ("duration", "sample", "check_within", "check_duration"):
                scn[k] = float(v)
            elif k in ("mem_nodes", "memory_only", "pxb", "hugepages", "nvme"):
                scn[k] = [int(x) for x in v.split(",")]
            elif k == "distances":
                scn[k].append([int(x) for x in v.split()])
            elif k in ("description", "pages", "name", "bench"):
                scn[k if k != "name" else "title"] = v
            elif k == "cgroup":
                if v not in ("v1", "v2"):
                    raise SystemExit("%s: cgroup must be v1 or v2" % path)
                scn[k] = v
            else:
                raise SystemExit("%s: unknown key %r" % (path, k))
    if scn["mem_nodes"] and len(scn["mem_nodes"]) != scn["nodes"]:
        raise SystemExit("%s: mem_nodes needs %d values" % (path, scn["nodes"]))
    if scn["threads"] < 1 or scn["cpus_per_node"] % scn["threads"]:
        raise SystemExit("%s: threads must divide cpus_per_node" % path)
    if scn["dies"] < 1 or scn["cpus_per_node"] % (scn["threads"] * scn["dies"]):
        raise SystemExit("%s: dies x threads must divide cpus_per_node" % path)
    if any(m < 1 for m in scn["memory_only"]):
        raise SystemExit("%s: memory_only: MiB per node, each at least 1" % path)
    total = scn["nodes"] + len(scn["memory_only"])
    if scn["distances"]:
        why = distance_matrix_problem(scn["distances"], total)
        if why:
            raise SystemExit("%s: distances: %s" % (path, why))
    if len(scn["hugepages"]) > total or any(n < 0 for n in scn["hugepages"]):
        raise SystemExit("%s: hugepages: 2 MiB pages per node, at most one per node" % path)
    if any(not 0 <= nd < total for nd in scn["pxb"]):
        raise SystemExit("%s: pxb: a node 0..%d" % (path, total - 1))
    if any(nd not in scn["pxb"] for nd in scn["nvme"]) or len(set(scn["nvme"])) != len(scn["nvme"]):
        raise SystemExit("%s: nvme: nodes that have a pxb, each once" % path)
    for v in scn["guests"]:
        name, keys = parse_guest(path, v)
        if "device" in keys and (not keys["device"].isdigit() or int(keys["device"]) not in scn["nvme"]):
            raise SystemExit("%s: guest %s: device=N names a node of the scenario's nvme key" % (path, name))
    return scn


def distance_matrix_problem(rows, total):
    """Why ROWS (the scenario's `distances` lines) is no distance matrix
    QEMU takes for TOTAL nodes, or None: one row per node, TOTAL values
    each, 10 on the diagonal (ACPI's local distance, the only one QEMU
    accepts there) and 11..255 elsewhere."""
    if len(rows) != total or any(len(r) != total for r in rows):
        return "%d rows of %d values (one per node, memory-only nodes last)" % (total, total)
    for i in range(total):
        for j in range(total):
            if (i == j) != (rows[i][j] == 10) or not 10 <= rows[i][j] <= 255:
                return "row %d: 10 on the diagonal, 11..255 elsewhere" % i
    return None


def node_distances(scn):
    """The full distance matrix of SCN's VM: its `distances` lines, else
    `distance` between every pair of nodes."""
    total = scn["nodes"] + len(scn["memory_only"])
    if scn["distances"]:
        return scn["distances"]
    return [[10 if i == j else scn["distance"] for j in range(total)] for i in range(total)]


def all_scenarios():
    return sorted(f[:-4] for f in os.listdir(SCENARIOS) if f.endswith(".scn"))


# ---- getting the parts -----------------------------------------------------

def have_cmd(c):
    return shutil.which(c) is not None


def run_quiet(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def ensure_host_tools(need_gnuplot=False):
    pkgs = [("qemu-system-x86_64", "qemu-system-x86")]
    if need_gnuplot:
        pkgs.append(("gnuplot", "gnuplot-nox"))
    missing = [p for c, p in pkgs if not have_cmd(c)]
    if missing:
        log("installing " + " ".join(missing))
        p = run_quiet([os.path.join(REPO, "deploy", "install-deps.sh")] + missing)
        if p.returncode != 0:
            raise Skip("cannot install %s: %s" % (" ".join(missing), p.stdout.strip()[-300:]))
    for c, p in pkgs:
        if not have_cmd(c):
            raise Skip("%s (Debian package %s) is not available" % (c, p))


def kernel_package():
    p = run_quiet(["apt-cache", "depends", KERNEL_META])
    m = re.search(r"Depends: (linux-image-[0-9][^\s]*-cloud-amd64)", p.stdout)
    if not m:
        # A fresh machine may not have the package lists yet.
        run_quiet(["apt-get", "update", "-qq"])
        p = run_quiet(["apt-cache", "depends", KERNEL_META])
        m = re.search(r"Depends: (linux-image-[0-9][^\s]*-cloud-amd64)", p.stdout)
    if not m:
        raise Skip("apt-cache knows no %s (run apt-get update?): %s" % (KERNEL_META, p.stdout.strip()[-200:]))
    return m.group(1)


def fetch():
    """Download the kernel, busybox-static and numad packages (once) and
    unpack them under build/numa-vm/pkgroot. Never installs them."""
    os.makedirs(DEBS, exist_ok=True)
    stamp = os.path.join(PKGROOT, ".unpacked")
    if os.path.exists(stamp) and find_kernel():
        return
    want = [kernel_package()] + list(GUEST_DEBS)
    have = os.listdir(DEBS)
    need = [w for w in want if not any(h.startswith(w + "_") for h in have)]
    if need:
        log("downloading " + " ".join(need))
        p = run_quiet(["apt-get", "download"] + need, cwd=DEBS)
        if p.returncode != 0:
            p2 = run_quiet(["apt-get", "update", "-qq"])
            p = run_quiet(["apt-get", "download"] + need, cwd=DEBS)
            if p.returncode != 0:
                raise Skip("apt-get download %s failed: %s" % (" ".join(need), (p2.stdout + p.stdout).strip()[-300:]))
    shutil.rmtree(PKGROOT, ignore_errors=True)
    os.makedirs(PKGROOT)
    for d in sorted(os.listdir(DEBS)):
        if d.endswith(".deb") and any(d.startswith(w + "_") for w in want):
            subprocess.run(["dpkg-deb", "-x", os.path.join(DEBS, d), PKGROOT], check=True)
    open(stamp, "w").close()


def find_kernel():
    boot = os.path.join(PKGROOT, "boot")
    if not os.path.isdir(boot):
        return None
    k = sorted(f for f in os.listdir(boot) if f.startswith("vmlinuz-"))
    return os.path.join(boot, k[-1]) if k else None


# ---- the initramfs ---------------------------------------------------------

class Cpio:
    """A newc archive, written by hand: the host has no cpio."""

    def __init__(self, path):
        self.f = open(path, "wb")
        self.ino = 1000
        self.seen = set()

    def _entry(self, name, mode, data=b"", nlink=1):
        self.ino += 1
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join("%08x" % v for v in (
            self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name_b), 0))
        self.f.write(hdr.encode() + name_b)
        self.f.write(b"\0" * ((4 - (110 + len(name_b)) % 4) % 4))
        self.f.write(data)
        self.f.write(b"\0" * ((4 - len(data) % 4) % 4))

    def dir(self, path):
        path = path.strip("/")
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p and p not in self.seen:
                self.seen.add(p)
                self._entry(p, stat.S_IFDIR | 0o755, nlink=2)

    def file(self, path, data, mode=0o755):
        path = path.strip("/")
        if path in self.seen:
            return
        self.dir(os.path.dirname(path))
        self.seen.add(path)
        self._entry(path, stat.S_IFREG | mode, data)

    def host_file(self, path, src, mode=None):
        with open(src, "rb") as f:
            data = f.read()
        self.file(path, data, mode if mode is not None else (os.stat(src).st_mode & 0o777))

    def symlink(self, path, target):
        path = path.strip("/")
        self.dir(os.path.dirname(path))
        self.seen.add(path)
        self._entry(path, stat.S_IFLNK | 0o777, target.encode())

    def close(self):
        self._entry("TRAILER!!!", 0)
        self.f.close()


def shared_libs(binary):
    """The libraries ldd lists for BINARY (absolute paths), with the
    dynamic loader. Empty for a static binary."""
    p = run_quiet(["ldd", binary])
    libs = []
    for line in p.stdout.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def guest_bins():
    b = os.path.join(CACHE, "bin")
    return {"numavm-run": os.path.join(b, "numavm-run"), "guestload": os.path.join(b, "guestload"),
            "migbench": os.path.join(b, "migbench")}


# What libvirtd and QEMU need inside the VM, from the host's own Debian
# packages (libvirt-daemon, libvirt-daemon-driver-qemu, libvirt-clients,
# qemu-system-x86: TEST_DEPS of make check-libvirt). Binaries and modules
# get the libraries ldd lists; data directories are copied whole.
LIBVIRT_BINS = ("/usr/sbin/libvirtd", "/usr/bin/virsh", "/usr/bin/qemu-system-x86_64")
LIBVIRT_MODULE_DIRS = ("/usr/lib/x86_64-linux-gnu/libvirt/storage-file",)
LIBVIRT_MODULES = ("/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so",
                   # QEMU 7.2 builds TCG as a module: without it "-accel tcg" has no accelerator.
                   "/usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so")
LIBVIRT_DATA = ("/usr/share/libvirt/cpu_map", "/usr/share/libvirt/schemas",
                "/usr/share/seabios/bios-256k.bin", "/usr/share/seabios/bios.bin",
                "/usr/share/qemu/kvmvapic.bin", "/usr/share/qemu/linuxboot_dma.bin",
                "/usr/share/qemu/linuxboot.bin", "/usr/share/qemu/multiboot_dma.bin")


def libvirt_missing():
    """None if the host has what the in-VM libvirt test copies, else why not."""
    for b in LIBVIRT_BINS + LIBVIRT_MODULES:
        if not os.access(b, os.R_OK):
            return "%s is missing (make test-deps installs libvirt-daemon-driver-qemu, qemu-system-x86)" % b
    if not os.path.exists(os.path.join(BUILD, "numaorch-libvirt.so")):
        return "build/numaorch-libvirt.so is missing (run make)"
    return None


def _add_libvirt(c, libs):
    files = list(LIBVIRT_BINS) + list(LIBVIRT_MODULES) + [os.path.join(BUILD, "numaorch-libvirt.so")]
    for d in LIBVIRT_MODULE_DIRS:
        files += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".so")]
    for src in files:
        # The agent loads its module from beside numaorchd, by its own name.
        dst = "bin/numaorch-libvirt.so" if src.endswith("/numaorch-libvirt.so") else src
        c.host_file(dst, src, 0o755)
        libs.update(shared_libs(src))
    for src in LIBVIRT_DATA:
        if os.path.isdir(src):
            for root, _, fs in os.walk(src):
                for f in sorted(fs):
                    c.host_file(os.path.join(root, f), os.path.realpath(os.path.join(root, f)), 0o644)
        elif os.path.exists(src):
            c.host_file(src, os.path.realpath(src), 0o644)
    for d in ("etc/libvirt", "var/lib/libvirt", "var/cache/libvirt", "var/log/libvirt", "images"):
        c.dir(d)


def build_initrd(libvirt=False):
    fetch()
    bins = guest_bins()
    numaorchd = os.path.join(BUILD, "numaorchd")
    for p in list(bins.values()) + [numaorchd, os.path.join(BUILD, "numaorchctl")]:
        if not os.path.exists(p):
            raise SystemExit("%s missing: run make (make check-numa builds it)" % p)
    numactl = shutil.which("numactl")
    if not numactl:
        raise Skip("numactl is not installed (Debian package numactl)")
    busybox = os.path.join(PKGROOT, "bin", "busybox")
    numad = os.path.join(PKGROOT, "usr", "bin", "numad")
    out = INITRD_LIBVIRT if libvirt else INITRD
    tmp = out + ".tmp"
    c = Cpio(tmp)
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "run", "tmp", "etc",
              "var/log", "var/run", "var/lib", "scenarios", "tests"):
        c.dir(d)
    c.host_file("init", os.path.join(HERE, "guest", "init"), 0o755)
    c.host_file("bin/busybox", busybox, 0o755)
    c.host_file("bin/numavm-run", bins["numavm-run"], 0o755)
    c.host_file("bin/guestload", bins["guestload"], 0o755)
    c.host_file("bin/migbench", bins["migbench"], 0o755)
    # A second migbench (another build of the mover) for script
    # bench_migrate_ab: the two alternate in one boot, so a change's
    # before and after meet the same host load.
    base = os.environ.get("NUMAVM_MIGBENCH_BASE")
    if base:
        c.host_file("bin/migbench-base", base, 0o755)
    dyn = {"bin/numaorchd": numaorchd, "bin/numaorchctl": os.path.join(BUILD, "numaorchctl"), "usr/bin/numad": numad, "usr/bin/numactl": numactl,
           "usr/bin/migratepages": shutil.which("migratepages") or numactl}
    # runc (make test-deps), for the in-VM test of a container a real
    # runtime started (test_cgroup_v2.sh: runc_container_moved_for_real, runc_container_killed_mid_move).
    runc = shutil.which("runc") or "/usr/sbin/runc"
    if os.access(runc, os.X_OK):
        dyn["usr/sbin/runc"] = runc
    libs = set()
    for dst, src in dyn.items():
        c.host_file(dst, src, 0o755)
        libs.update(shared_libs(src))
    if libvirt:
        _add_libvirt(c, libs)
    for lib in sorted(libs):
        c.host_file(lib, os.path.realpath(lib), 0o755)
    c.file("etc/numaorch/numaorchd.conf", testbed_conf(), 0o644)
    c.file("etc/passwd", b"root:x:0:0:root:/:/bin/sh\n", 0o644)
    c.file("etc/group", b"root:x:0:\n", 0o644)
    for f in sorted(os.listdir(SCENARIOS)):
        if f.endswith(".scn"):
            c.host_file("scenarios/" + f, os.path.join(SCENARIOS, f), 0o644)
    tests = os.path.join(HERE, "guest")
    for f in sorted(os.listdir(tests)):
        if f.endswith(".sh"):
            c.host_file("tests/" + f, os.path.join(tests, f), 0o755)
    c.close()
    os.replace(tmp, out)
    return out


def testbed_conf():
    """The shipped configuration, with mode = enforce: the package ships
    advise (a first install moves nothing until told), and the testbed
    measures the agent acting."""
    with open(os.path.join(REPO, "deploy", "numaorchd.conf")) as f:
        text = f.read()
    if "\nmode = advise\n" not in text:
        raise SystemExit("deploy/numaorchd.conf: no 'mode = advise' line to set to enforce")
    return text.replace("\nmode = advise\n", "\nmode = enforce\n", 1).encode()


# ---- booting ---------------------------------------------------------------

def cpu_model(scn):
    """-cpu: "max", and with SMT threads an Intel one. TCG's max is an AMD
    CPU, whose kernel reads siblings from CPUID leaf 0x8000001e, which TCG
    does not fill (+topoext did not help): every CPU is then a core of its
    own. As GenuineIntel the kernel reads leaf 0xb, which QEMU fills from
    -smp."""
    return "max" if scn["threads"] == 1 else "max,vendor=GenuineIntel"


def qemu_cmd(scn, append, console, results, initrd=INITRD):
    n, cpn = scn["nodes"], scn["cpus_per_node"]
    mems = scn["mem_nodes"] or [scn["mem_per_node"]] * n
    cmd = ["qemu-system-x86_64", "-nodefaults", "-display", "none", "-no-reboot",
           "-machine", "pc", "-accel", "tcg,thread=multi", "-cpu", cpu_model(scn),
           "-m", "%dM" % (sum(mems) + sum(scn["memory_only"])),
           # One socket per node: QEMU shares the L3 among a die's
           # cores, so each node has its own last-level cache (dies of
           # them with dies > 1), and with threads > 1 its CPUs are SMT
           # siblings in pairs (or more).
           "-smp", "%d,sockets=%d,%scores=%d,threads=%d" % (
               n * cpn, n, "dies=%d," % scn["dies"] if scn["dies"] > 1 else "",
               cpn // (scn["threads"] * scn["dies"]), scn["threads"])]
    for i in range(n):
        cmd += ["-object", "memory-backend-ram,id=mem%d,size=%dM" % (i, mems[i]),
                "-numa", "node,nodeid=%d,cpus=%d-%d,memdev=mem%d" % (i, i * cpn, i * cpn + cpn - 1, i)]
    # Memory-only nodes (a CXL expander's, a tier's): memory, no cpus=.
    for k, mib in enumerate(scn["memory_only"]):
        i = n + k
        cmd += ["-object", "memory-backend-ram,id=mem%d,size=%dM" % (i, mib),
                "-numa", "node,nodeid=%d,memdev=mem%d" % (i, i)]
    dist = node_distances(scn)
    total = len(dist)
    # QEMU makes a pair symmetric when one direction is given; a matrix
    # that is not symmetric needs both.
    sym = all(dist[i][j] == dist[j][i] for i in range(total) for j in range(total))
    for i in range(total):
        for j in range(total):
            if i != j and (j > i or not sym):
                cmd += ["-numa", "dist,src=%d,dst=%d,val=%d" % (i, j, dist[i][j])]
    # A PCI expander bridge per `pxb` node, a virtio device behind it: the
    # guest kernel reads the bridge's node from ACPI (_PXM) and gives it
    # to the device's numa_node. Bus numbers 32 apart leave room below.
    for k, nd in enumerate(scn["pxb"]):
        cmd += ["-device", "pxb,id=pxb%d,bus=pci.0,bus_nr=%d,numa_node=%d" % (k, 32 * (k + 1), nd),
                "-device", "virtio-rng-pci,bus=pxb%d,addr=0x0" % k]
        # `nvme`: an NVMe controller beside it (the kernel's built-in
        # driver binds it: /dev/nvmeXn1, whose sysfs device is under the
        # bridge, on its node), a null 64 MiB namespace.
        if nd in scn["nvme"]:
            cmd += ["-blockdev", "driver=null-co,node-name=nvm%d,size=67108864,read-zeroes=on" % k,
                    "-device", "nvme,serial=numavm%d,drive=nvm%d,bus=pxb%d,addr=0x1" % (k, k, k)]
    cmd += ["-kernel", find_kernel() or os.path.join(PKGROOT, "boot", "vmlinuz"), "-initrd", initrd,
            "-append", "console=ttyS0 panic=-1 quiet mitigations=off " + append +
            # the bridges' nodes, for the guest's checks to expect
            (" numavm.pxb=%s" % ",".join(map(str, scn["pxb"])) if scn["pxb"] else ""),
            "-serial", console, "-serial", "file:" + results]
    return cmd


# Seconds the guest kernel has to reach /init (its "numavm: mode=" line on
# the console). A whole diag_topology boot, /init included, takes 5 s here; the
# guest kernel sometimes hangs before it (a `cryptomgr_test` soft lockup
# under TCG, seen about once per 30 boots), and then the whole run's
# timeout (minutes) was lost and the run failed.
BOOT_DEADLINE = float(os.environ.get("NUMAVM_BOOT_DEADLINE", "60"))


class BootHang(RuntimeError):
    pass


def boot(scn, append, outdir, timeout, interactive=False, initrd=INITRD):
    """Boot the VM for SCN with APPEND on the kernel command line; results
    (the second serial port) and the console go to OUTDIR. Returns the
    results text and the wall time. A guest kernel that never reaches
    /init is booted once more, and says so: the hang is the emulated
    kernel's, before anything under test has run."""
    try:
        return boot_once(scn, append, outdir, timeout, interactive, initrd)
    except BootHang as e:
        log("note: %s; booting once more" % e)
        return boot_once(scn, append, outdir, timeout, interactive, initrd)


def boot_once(scn, append, outdir, timeout, interactive, initrd):
    os.makedirs(outdir, exist_ok=True)
    results = os.path.join(outdir, "results.txt")
    console = os.path.join(outdir, "console.log")
    for p in (results, console):
        if os.path.exists(p):
            os.unlink(p)
    cmd = qemu_cmd(scn, append, "stdio" if interactive else "file:" + console, results, initrd)
    with open(os.path.join(outdir, "command.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    t0 = time.time()
    if interactive:
        subprocess.run(cmd)
        return "", time.time() - t0

    def console_tail():
        return open(console, errors="replace").read()[-3000:] if os.path.exists(console) else ""

    out = os.path.join(outdir, "qemu.out")
    with open(out, "wb") as qf:
        p = subprocess.Popen(cmd, stdout=qf, stderr=subprocess.STDOUT)
        in_init = False
        rc = None
        while rc is None:
            try:
                rc = p.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
            now = time.time() - t0
            if rc is None and not in_init:
                in_init = "numavm: mode=" in console_tail()
                if in_init:
                    log("%s: guest at /init after %.0f s" % (os.path.basename(outdir), now))
                if not in_init and now > min(BOOT_DEADLINE, timeout):
                    p.kill()
                    p.wait()
                    raise BootHang("VM %s never reached /init in %.0f s (guest kernel hung in its boot); "
                                   "console tail:\n%s" % (outdir, now, console_tail()[-1500:]))
            if rc is None and now > timeout:
                p.kill()
                p.wait()
                rc = -1
                with open(out, "ab") as qf2:
                    qf2.write(b"\n(timed out after %ds)" % timeout)
    qemu_out = open(out, errors="replace").read()
    wall = time.time() - t0
    text = open(results, errors="replace").read() if os.path.exists(results) else ""
    if rc != 0 or "END rc=" not in text:
        raise RuntimeError("VM run failed (qemu exit %s) %s\n--- qemu ---\n%s\n--- console tail ---\n%s"
                           % (rc, outdir, qemu_out[-1500:], console_tail()))
    return text, wall


def prepare(need_gnuplot=False):
    ensure_host_tools(need_gnuplot)
    fetch()
    if not find_kernel():
        raise Skip("no kernel found in the downloaded %s package" % KERNEL_META)
    build_initrd()


def run_append(scn, placer, balancing=None, cgroup=None):
    """The kernel command line's numavm.* words for one run."""
    append = "numavm.mode=run numavm.scenario=%s numavm.placer=%s" % (scn["name"], placer)
    if balancing == "on":
        append += " numavm.balancing=on"
    if (cgroup or scn.get("cgroup", "v2")) == "v1":
        append += " numavm.cgroup=v1"
    return append


def run_one(name, placer, outroot=RUNS, balancing=None, cgroup=None):
    scn = load_scenario(name)
    outdir = os.path.join(outroot, run_name(scn, placer, balancing, cgroup))
    append = run_append(scn, placer, balancing, cgroup)
    text, wall = boot(scn, append, outdir, timeout=int(scn["duration"]) + 400)
    res = analyse(text, scn)
    res["wall_s"] = round(wall, 1)
    res["command"] = "tests/numa-vm/numavm.py run %s %s%s%s" % (
        scn["name"], placer, " --balancing on" if balancing == "on" else "",
        " --cgroup " + cgroup if cgroup else "")
    with open(os.path.join(outdir, "metrics.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    return res


# ---- analysis ----------------------------------------------------------------

def kv(line):
    out = {}
    for tok in line.split()[1:]:
        k, _, v = tok.partition("=")
        out[k] = v
    return out


def parse_results(text):
    r = {"header": {}, "nodes": {}, "guests": {}, "samples": [], "vm": [], "free": [], "placer": [],
         "events": [], "decisions": [], "log": [], "rc": None, "errors": [], "cores": None}
    for line in text.splitlines():
        if not line:
            continue
        tag = line.split(" ", 1)[0]
        if tag == "H":
            d = kv(line)
            if "guest" in d:
                r["guests"][d["guest"]] = d
            elif "cores" in d and "topo" in d:
                r["cores"] = parse_cores(d["topo"])
            elif "node" in d:
                r["nodes"][int(d["node"])] = d["cpus"]
            else:
                r["header"].update(d)
        elif tag == "G":
            d = kv(line)
            thr = []
            if d["thr"] != "-":
                for x in d["thr"].split(","):
                    node, busy = x.split(":")
                    thr.append((int(node), int(busy)))
            # tcpu=: the CPU each thread of thr= last ran on (runs before
            # the runner said so, or a count that disagrees: None).
            tcpu = [int(x) for x in d["tcpu"].split(",")] if d.get("tcpu", "-") != "-" else None
            r["samples"].append({"t": float(d["t"]), "g": d["g"],
                                 "mem": [int(x) for x in d["mem"].split(",")], "thr": thr,
                                 "cpus": d["cpus"], "mems": d["mems"], "ccpus": d["ccpus"],
                                 "cmems": d["cmems"], "prog": float(d["prog"]), "oom": int(d["oom"]),
                                 "tcpu": tcpu if tcpu is not None and len(tcpu) == len(thr) else None,
                                 # ready=0: a late guest still first-touching
                                 # its memory (runs before session 38 sampled
                                 # only ready guests and do not say).
                                 "ready": d.get("ready", "1") != "0",
                                 # A pod of several containers: per container,
                                 # how many of thr are its threads, and its
                                 # own memory per node (KiB).
                                 "parts": [(int(c), [int(x) for x in m.split(",")])
                                           for c, _, m in (p.partition(":") for p in d["parts"].split(";"))]
                                 if d.get("parts") else None,
                                 # The stalls its threads felt since they
                                 # started: (longest ms, MiB per bucket).
                                 "stall": parse_stall(d["stall"]) if d.get("stall") else None})
        elif tag == "V":
            d = kv(line)
            r["vm"].append({k: float(v) for k, v in d.items()})
        elif tag == "F":
            d = kv(line)
            r["free"].append({"t": float(d["t"]), "free": [int(x) for x in d["free"].split(",")]})
        elif tag == "P":
            d = kv(line)
            r["placer"].append((float(d["t"]), float(d["cpu_s"])))
        elif tag == "E":
            r["events"].append(kv(line))
        elif tag == "D":
            try:
                r["decisions"].append(json.loads(line[2:]))
            except ValueError:
                r["errors"].append("bad decision record: " + line[:200])
        elif tag == "L":
            r["log"].append(line[2:])
        elif tag == "ERROR":
            r["errors"].append(line[6:])
        elif tag.startswith("END"):
            r["rc"] = int(kv(line).get("rc", "1"))
    return r


def locality(s):
    """(union, weighted) locality of one guest sample: the share of its
    memory on the nodes its busy threads ran on, and the mean over busy
    threads of the share on the thread's own node. Busy: ≥ 50% of a CPU
    since the last sample; a guest none of whose threads is busy counts
    all its threads."""
    total = sum(s["mem"])
    if not total:
        return None, None
    idx = [i for i, (n, b) in enumerate(s["thr"]) if b >= 50 and n >= 0]
    if not idx:
        idx = [i for i, (n, b) in enumerate(s["thr"]) if n >= 0]
    if not idx:
        return None, None
    busy = [s["thr"][i][0] for i in idx]
    nodes = set(busy)
    u = sum(s["mem"][n] for n in nodes if n < len(s["mem"])) / total
    w = sum(s["mem"][n] / total for n in busy if n < len(s["mem"])) / len(busy)
    # A pod of several containers: each thread against its own
    # container's memory (a container's threads touch only its own).
    parts = s.get("parts")
    owner = [k for k, (cnt, _) in enumerate(parts or ()) for _ in range(cnt)]
    if parts and len(owner) == len(s["thr"]):
        ws = [parts[owner[i]][1][s["thr"][i][0]] / sum(parts[owner[i]][1]) if s["thr"][i][0] < len(parts[owner[i]][1])
              else 0.0 for i in idx if sum(parts[owner[i]][1])]
        if ws:
            w = sum(ws) / len(ws)
    return u, w


def parse_cores(v):
    """{cpu: {"core": CPUs of its core, "l3": CPUs of its last-level
    cache or None}} from the runner's "H cores topo=" value
    (CPU:PACKAGE:CORE:SIBLINGS:L3;... as the guest kernel's sysfs has
    them). A core is its thread_siblings_list, which holds the CPU itself."""
    out = {}
    if not v or v == "-":
        return out
    for ent in v.split(";"):
        cpu, _pkg, _core, sib, l3 = ent.split(":")
        out[int(cpu)] = {"core": frozenset(parse_cpulist(sib)) or frozenset([int(cpu)]),
                         "l3": frozenset(parse_cpulist(l3)) if l3 != "-" else None}
    return out


def core_sharing(r, dur):
    """What SMT placement a run gave its busy threads (busy as in
    locality(): >= 50% of a CPU), from the G lines' tcpu= against the
    runner's "H cores" line, over the samples of guests that are ready:
    per sample the share of busy threads with another busy thread (any
    guest's) on their core, its sibling or the same CPU (core_shared);
    the same counting only the guest's own threads (own_shared); the
    share of busy threads sharing a core while another core of their
    node had no busy thread (shared_idle_core: sharing the placement
    inside the node could have avoided), or a core of any node
    (shared_idle_core_any: a node choice could have); and the share of guests with two or more busy threads
    whose busy threads sit under two or more L3s (llc_split). Each as a
    mean weighted by the time each sample stands for (the interval since
    the previous one, over which its busy shares were measured) and as
    the mean over the last 10 s ("end", as true end). None for a run
    without the line or tcpu= (older runs)."""
    cores = r.get("cores")
    if not cores:
        return None
    node_of = {c: n for n, cl in r["nodes"].items() for c in parse_cpulist(cl)}
    node_cores = {}
    for c, t in cores.items():
        node_cores.setdefault(node_of.get(c), set()).add(t["core"])
    by_t = {}
    for s in r["samples"]:
        if not s["ready"] or s.get("tcpu") is None:
            continue
        busy = [(s["g"], c) for (n, b), c in zip(s["thr"], s["tcpu"]) if b >= 50 and c in cores]
        by_t.setdefault(s["t"], []).extend(busy)
    if not by_t:
        return None
    rows = []
    for t in sorted(by_t):
        busy = by_t[t]
        if not busy:
            rows.append((t, None, None, None, None, None))
            continue
        shared = own = idle = idle_any = 0
        used = {cores[c]["core"] for _, c in busy}
        for i, (g, c) in enumerate(busy):
            core = cores[c]["core"]
            others = [h for j, (h, d) in enumerate(busy) if j != i and d in core]
            if others:
                shared += 1
                if any(node_c not in used for node_c in node_cores.get(node_of.get(c), ())):
                    idle += 1
                if any(t_["core"] not in used for t_ in cores.values()):
                    idle_any += 1
            if g in others:
                own += 1
        per_g = {}
        for g, c in busy:
            per_g.setdefault(g, []).append(cores[c]["l3"])
        multi = [l3s for l3s in per_g.values() if len(l3s) >= 2]
        split = None
        if multi and all(x is not None for l3s in multi for x in l3s):
            split = sum(1 for l3s in multi if len(set(l3s)) >= 2) / len(multi)
        n = len(busy)
        rows.append((t, shared / n, own / n, idle / n, split, idle_any / n))
    step = float(r["header"].get("sample") or 0) or None
    out = {"samples": len(rows)}
    for k, key in enumerate(("core_shared", "own_shared", "shared_idle_core", "llc_split", "shared_idle_core_any"), 1):
        num = den = 0.0
        prev = None
        for row in rows:
            w = (row[0] - prev) if prev is not None else (step or 0.0)
            prev = row[0]
            if row[k] is not None and w > 0:
                num += w * row[k]
                den += w
        tail = [row[k] for row in rows if row[0] >= dur - 10 and row[k] is not None]
        out[key] = round(num / den, 4) if den else None
        out[key + "_end"] = round(sum(tail) / len(tail), 4) if tail else None
    return out


def parse_cpulist(s):
    out = set()
    if not s or s == "-":
        return out
    for part in s.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def start_mem(g, ss, h, late, nn):
    """KiB per node of guest G's memory as its workload placed it, before
    any placer acted. A guest there at t = 0: its first sample (taken
    before the placer starts). A guest that starts during the run is
    sampled from its start while it touches its memory, and a placer may
    have moved some of it by the time it is all touched (or placed the
    guest before it touched any): its memory is taken where its touch put
    it — all on the node of touch=N, spread evenly over
    touch=interleave:LIST — so every placer is measured against the same
    start. Other touches: the first sample once it is all touched."""
    first = next((s for s in ss if s.get("ready", True)), ss[0])["mem"]
    touch = h.get("touch", "")
    if not late or not touch:
        return first
    total = max(sum(s["mem"]) for s in ss)
    if touch.isdigit() and int(touch) < nn:
        out = [0] * nn
        out[int(touch)] = total
        return out
    if touch.startswith("interleave:"):
        nodes = sorted(parse_cpulist(touch.split(":", 1)[1]))
        nodes = [n for n in nodes if n < nn]
        if nodes:
            out = [0] * nn
            for n in nodes:
                out[n] = total / len(nodes)
            return out
    return first


def analyse(text, scn):
    r = parse_results(text)
    if r["rc"] != 0 or r["errors"]:
        raise RuntimeError("scenario run reported rc=%s errors=%s" % (r["rc"], r["errors"]))
    dur = float(r["header"].get("duration", scn["duration"]))
    nn = int(r["header"]["nodes"])
    times = sorted({s["t"] for s in r["samples"]})
    by_g = {}
    for s in r["samples"]:
        s["loc"], s["wloc"] = locality(s)
        by_g.setdefault(s["g"], []).append(s)
    started = {}
    for e in r["events"]:
        # A pod's containers each start (one event each): the first counts.
        if e.get("what") == "start" and float(e["t"]) > 0:
            started.setdefault(e["g"], float(e["t"]))
    stopped = {e["g"] for e in r["events"] if e.get("what") == "stop" and float(e["t"]) < dur}
    # Per guest: seconds from its start (or t = 0) until >= TARGET local,
    # by true locality (wloc: memory on each busy thread's own node), and
    # for reference by memory on the nodes its threads ran on (loc).
    # A late guest is sampled from its start, while it first-touches its
    # memory (ready=0): what its pages are then is what it feels first.
    # ready_only counts only its samples once every page is touched, as
    # runs before session 38 did (they sampled nothing earlier): that t90
    # can be no less than the touch's length, for every placer alike.
    def first_hit(key, ready_only=False):
        out = {}
        for g, ss in by_g.items():
            t0 = max(0.0, started.get(g, 0.0))
            hit = next((s["t"] for s in ss if s[key] is not None and s[key] >= TARGET
                        and (s["ready"] or not ready_only)), None)
            out[g] = None if hit is None else round(max(0.0, hit - t0), 1)
        return out, (None if any(v is None for v in out.values()) else max(out.values() or [0.0]))
    t90, all_t90 = first_hit("wloc")
    t90_ready, all_t90_ready = first_hit("wloc", ready_only=True)
    t90_nodes, all_t90_nodes = first_hit("loc")
    touching = any(not s["ready"] for s in r["samples"])
    # The least t90 this run could score: the distance from a guest's start
    # to its first sample that has a locality (one taken as it starts holds
    # no memory yet). Before session 38 a guest was first sampled once its
    # workload was ready (every page touched), so this was how long the
    # touch took, which is partly the placer's doing (a start binding's
    # cpuset.mems write slowed churn's guest e from 2.1 to 4.7 s under
    # TCG): the run's floor, not the scenario's.
    floor = {}
    for g, ss in by_g.items():
        s0 = next((s for s in ss if s["wloc"] is not None), ss[0])
        floor[g] = round(max(0.0, s0["t"] - max(0.0, started.get(g, 0.0))), 1)
    touch_s = {}
    for e in r["events"]:
        if e.get("what") == "ready" and e["g"] in started:
            touch_s[e["g"]] = float(e["t"]) - started[e["g"]]
    floor_g = max(floor, key=lambda g: floor[g]) if floor else None
    # Locality over time: mean and minimum over the guests present.
    series = []
    for t in times:
        ls = [s["loc"] for s in r["samples"] if s["t"] == t and s["loc"] is not None]
        ws = [s["wloc"] for s in r["samples"] if s["t"] == t and s["wloc"] is not None]
        if ls:
            series.append((t, sum(ls) / len(ls), min(ls), sum(ws) / len(ws), min(ws)))
    last = [x for x in series if x[0] >= dur - 60]
    tail = [x for x in series if x[0] >= dur - 10]
    loc_end = sum(x[1] for x in tail) / len(tail) if tail else None
    wloc_end = sum(x[3] for x in tail) / len(tail) if tail else None
    mean_last = sum(x[1] for x in last) / len(last) if last else None
    wmean_last = sum(x[3] for x in last) / len(last) if last else None
    # Memory: what had to move to reach the end state, and what moved.
    # Per guest: its memory where its workload put it (start_mem) that
    # is off the nodes its busy threads ended on (a guest that stops
    # during the run: at its last sample).
    needed = 0
    for g, ss in by_g.items():
        end = ss[-1]
        busy_end = {n for n, b in end["thr"] if b >= 50} or {n for n, b in end["thr"]}
        h = r["guests"].get(g, {})
        # Late: started by the scenario during the run (start=), not one
        # started during the setup, before t = 0 (its start event's t is
        # the setup's clock).
        late = float(h.get("start") or 0) > 0
        first = next((s for s in ss if s.get("ready", True)), ss[0])
        if end.get("parts") and first.get("parts") and len(end["parts"]) == len(first["parts"]) and \
                sum(c for c, _ in end["parts"]) == len(end["thr"]) and not late:
            # A pod of several containers: each container's memory off the
            # nodes its own busy threads ended on.
            k = 0
            for (cnt, _), (_, mem0) in zip(end["parts"], first["parts"]):
                thr = end["thr"][k:k + cnt]
                k += cnt
                ends_on = {n for n, b in thr if b >= 50} or {n for n, b in thr}
                needed += sum(v for n, v in enumerate(mem0) if n not in ends_on)
            continue
        needed += sum(v for n, v in enumerate(start_mem(g, ss, h, late, nn)) if n not in busy_end)
    vm0, vm1 = r["vm"][0], r["vm"][-1]
    moved_pages = vm1["pgmigrate_success"] - vm0["pgmigrate_success"]
    # pgmigrate_success is counted when a migrate_pages() call returns: a
    # migration still running at the end (a cpuset.mems write can take a
    # minute under TCG) is missing from it. What arrived on each node, per
    # guest and sample, is a lower bound that sees it (the workloads do not
    # grow after they are ready; while a late guest touches its memory its
    # growth is its touch, not a migration, so those samples are left out).
    inflow = 0
    for g, ss in by_g.items():
        ss = [s for s in ss if s["ready"]]
        for a, b in zip(ss, ss[1:]):
            inflow += sum(max(0, y - x) for x, y in zip(a["mem"], b["mem"]))
    # End state: guests and busy threads per node.
    tend = times[-1] if times else 0
    gpn, tpn = [0] * nn, [0] * nn
    for s in r["samples"]:
        if s["t"] != tend:
            continue
        for n in {n for n, b in s["thr"] if b >= 50}:
            gpn[n] += 1
        for n, b in s["thr"]:
            if b >= 50:
                tpn[n] += 1
    # Work: MiB written per second by all guests over the last minute.
    work = 0.0
    for g, ss in by_g.items():
        a = [s for s in ss if s["t"] >= tend - 60]
        if len(a) >= 2:
            work += (a[-1]["prog"] - a[0]["prog"]) / max(1e-9, a[-1]["t"] - a[0]["t"])
    # /proc/vmstat counts every OOM kill, memory.events those of each guest's
    # processes (any OOM killer): the same kill shows in both.
    oom = max(int(vm1["oom_kill"] - vm0["oom_kill"]), sum(max(s["oom"] for s in ss) for ss in by_g.values()))
    empty = sorted({s["g"] for s in r["samples"] if not parse_cpulist(s["cpus"]) or not parse_cpulist(s["mems"])})
    # The kernel's balancing as the runner read it back once the placer
    # had started (runs before it said so: the placer's own setting).
    pev = next((e for e in r["events"] if e.get("what") == "placer"), {})
    placer = r["header"].get("placer") or ""
    balancing = pev.get("balancing") or placer_balancing(placer)
    return {
        "scenario": scn["name"], "placer": r["header"].get("placer"), "pages": r["header"].get("pages"),
        "balancing": balancing, "balancing_forced": balancing == "on" and placer_balancing(placer) != "on",
        "cgroup": r["header"].get("cgroup", "v2"),
        "duration": dur, "t90_all": all_t90, "t90": t90, "t90_nodes_all": all_t90_nodes, "t90_nodes": t90_nodes,
        "t90_floor": floor[floor_g] if floor_g else 0.0, "t90_floor_guest": floor_g, "t90_floors": floor,
        "t90_ready_all": all_t90_ready, "t90_ready": t90_ready, "touch_sampled": touching, "touch_s": touch_s,
        "wloc_end": wloc_none(wloc_end), "wloc_min_end": wloc_none(series[-1][4] if series else None),
        "loc_start": series[0][1] if series else None,
        "loc_mean_last_min": mean_last, "loc_end": loc_end, "wloc_mean_last_min": wloc_none(wmean_last),
        "loc_min_end": series[-1][2] if series else None,
        "needed_mib": round(needed / 1024, 1),
        "moved_mib": round(max(moved_pages * 4, inflow) / 1024, 1),
        "pgmigrate_mib": round(moved_pages * 4 / 1024, 1), "inflow_mib": round(inflow / 1024, 1),
        "numa_pages_migrated": int(vm1["numa_pages_migrated"] - vm0["numa_pages_migrated"]),
        "oom_kills": oom, "placer_cpu_s": r["placer"][-1][1] if r["placer"] else None,
        "guests_per_node_end": gpn, "busy_threads_per_node_end": tpn,
        "work_mib_s": round(work, 1), "empty_cpuset_guests": empty,
        "series": [[round(a, 2), round(b, 4), round(c, 4), round(d, 4), round(e, 4)] for a, b, c, d, e in series],
        "n_decisions": len(r["decisions"]),
        "moves": sum(1 for d in r["decisions"] if d.get("decision") == "moved"),
        "device_local": device_locality(r, by_g, dur),
        "smt": core_sharing(r, dur),
        "guest_ends": guest_ends(r),
        "felt_stall": felt_stall(r), "agent_stall": agent_stall(r),
    }


def device_locality(r, by_g, dur):
    """Device locality of the guests that hold a device (their H line's
    device_node=, the numa_node the kernel gives the device; runs without
    one: None): per sample the share of a guest's busy threads on the
    device's node (busy as in locality(); none busy: all its threads) and
    the share of its memory there, averaged over those guests, over the
    last 10 s ("end") and the last minute. Beside the true locality, which
    weighs memory against threads only."""
    dev = {g: int(h["device_node"]) for g, h in r["guests"].items() if h.get("device_node", "").isdigit()}
    if not dev:
        return None

    def shares(s, dn):
        thr = [n for n, b in s["thr"] if b >= 50 and n >= 0] or [n for n, b in s["thr"] if n >= 0]
        total = sum(s["mem"])
        return (sum(1 for n in thr if n == dn) / len(thr) if thr else None,
                s["mem"][dn] / total if total and dn < len(s["mem"]) else None)

    per_t = {}
    per_g = {}
    for g, dn in dev.items():
        for s in by_g.get(g, []):
            th, me = shares(s, dn)
            if th is None or me is None:
                continue
            per_t.setdefault(s["t"], []).append((th, me))
            per_g.setdefault(g, []).append((s["t"], th, me))

    def mean_over(t_from):
        rows = [x for t, xs in per_t.items() if t >= t_from for x in xs]
        if not rows:
            return None, None
        return (round(sum(x[0] for x in rows) / len(rows), 4), round(sum(x[1] for x in rows) / len(rows), 4))
    thr_end, mem_end = mean_over(dur - 10)
    thr_min, mem_min = mean_over(dur - 60)
    guests = {}
    for g, dn in sorted(dev.items()):
        tail = [x for x in per_g.get(g, []) if x[0] >= dur - 10]
        guests[g] = {"node": dn,
                     "threads_end": round(sum(x[1] for x in tail) / len(tail), 4) if tail else None,
                     "mem_end": round(sum(x[2] for x in tail) / len(tail), 4) if tail else None}
    return {"guests": guests, "threads_end": thr_end, "mem_end": mem_end,
            "threads_last_min": thr_min, "mem_last_min": mem_min}


def wloc_none(v):
    return None if v is None else round(v, 4)


# ---- make check-numa ---------------------------------------------------------

def guest_id_map(r):
    """Decision-log guest id → scenario guest name: the ids carry the
    runtime's container id, which is in the cgroup name."""
    m = {}
    for name, h in r["guests"].items():
        base = h["cgroup"].rsplit("/", 1)[-1]
        for pre in ("docker-", "libpod-", "kubepods-burstable-pod", "lxc.payload."):
            if base.startswith(pre):
                base = base[len(pre):]
        # "pod<uid>": a pod under the cgroupfs driver's /kubepods/burstable.
        if h["cgroup"].startswith("/kubepods/") and base.startswith("pod"):
            base = base[3:]
        base = base.replace(".scope", "").replace(".slice", "").replace("_", "-")
        m[base] = name
    return m


def decision_guest(idmap, d):
    """The scenario guest name of decision record D (its id is
    "<runtime>-<container id>"), by IDMAP from guest_id_map; None if none."""
    gid = d.get("guest", "")
    return idmap.get(gid.split("-", 1)[1] if "-" in gid else gid)


def check_decisions(r, t_real0):
    """The decision log must agree with the cpusets the runner saw: every
    change of a guest's configured cpuset between two samples falls within
    a "moved" record's write window (its time minus its duration); after
    the window the cgroup holds the record's target, before it the
    record's origin. Returns a list of problems."""
    idmap = guest_id_map(r)
    problems = []
    moves = {}
    for d in r["decisions"]:
        if d.get("decision") == "failed":
            problems.append("failed move in the decision log: %s" % d.get("message"))
        # mems_released: a start placement's mems binding widened again
        # (the cpus stay: its "to" names none).
        if d.get("decision") not in ("moved", "mems_released"):
            continue
        name = decision_guest(idmap, d)
        if not name:
            problems.append("moved record for unknown guest %s" % d["guest"])
            continue
        tt = time.strptime(d["time"][:19], "%Y-%m-%dT%H:%M:%S")
        end = (time_gm(tt) + float("0." + d["time"][20:23])) - t_real0
        start = end - (d.get("duration_ms") or 0) / 1000.0
        moves.setdefault(name, []).append((start - 0.5, end + 0.5, d))
    by_g = {}
    for s in r["samples"]:
        by_g.setdefault(s["g"], []).append(s)
    for g, ss in by_g.items():
        mv = sorted(moves.get(g, []), key=lambda x: x[0])
        for a, b in zip(ss, ss[1:]):
            if (a["ccpus"], a["cmems"]) != (b["ccpus"], b["cmems"]) and \
                    not any(st <= b["t"] and en >= a["t"] for st, en, _ in mv):
                problems.append("guest %s: cpuset changed %s/%s -> %s/%s between t=%.1f and %.1f outside any "
                                "moved record" % (g, a["ccpus"], a["cmems"], b["ccpus"], b["cmems"], a["t"], b["t"]))
        for st, en, d in mv:
            before = [s for s in ss if s["t"] < st]
            after = [s for s in ss if s["t"] > en]
            # A later move before the next sample: that sample shows the
            # later one's target, and the later one's origin is checked
            # against this one's target (below).
            if after and not any(en < pst < after[0]["t"] for pst, pen, pd in mv if pd is not d):
                b = after[0]
                # Soft memory binding: the memory went to to.mems, then the
                # cgroup's mems were widened to mems_after.
                want_mems = d.get("mems_after") or d["to"]["mems"]
                # An empty cpuset.mems (never written: the cgroup inherits)
                # holds its effective mems.
                have_mems = b["cmems"] if b["cmems"] != "-" else b["mems"]
                want_cpus = d["to"].get("cpus") or d["from"].get("cpus")
                if parse_cpulist(b["ccpus"]) != parse_cpulist(want_cpus) or \
                        parse_cpulist(have_mems) != parse_cpulist(want_mems):
                    problems.append("guest %s: %s record says cpus %s mems %s, the cgroup has %s/%s at t=%.1f"
                                    % (g, d["decision"], want_cpus, want_mems, b["ccpus"], b["cmems"], b["t"]))
            if before:
                a = before[-1]
                # Two moves of one guest between two samples (a cycle 1.7 s
                # after another, oversubscribed at 1354c89): the later one's
                # origin is the earlier one's target, which no sample saw.
                prev = [pd for pst, pen, pd in mv if a["t"] < pen < st and pd is not d and pd.get("to")]
                if prev:
                    pd = prev[-1]
                    want_cpus = pd["to"].get("cpus") or pd["from"].get("cpus")
                    want_mems = pd.get("mems_after") or pd["to"]["mems"]
                    if parse_cpulist(want_cpus) != parse_cpulist(d["from"].get("cpus")) or \
                            parse_cpulist(want_mems) != parse_cpulist(d["from"]["mems"]):
                        problems.append("guest %s: moved record's from %s/%s, the move before it left %s/%s"
                                        % (g, d["from"].get("cpus"), d["from"]["mems"], want_cpus, want_mems))
                elif parse_cpulist(a["cpus"]) != parse_cpulist(d["from"].get("cpus")) or \
                        parse_cpulist(a["mems"]) != parse_cpulist(d["from"]["mems"]):
                    problems.append("guest %s: moved record's from %s/%s, the cgroup had %s/%s at t=%.1f"
                                    % (g, d["from"].get("cpus"), d["from"]["mems"], a["cpus"], a["mems"], a["t"]))
    return problems


def time_gm(tt):
    import calendar
    return calendar.timegm(tt)


def explain_late(r, t_real0, late):
    """What a failed convergence check prints: per late guest, where its
    threads ran and where its memory was every ~10 s, and every decision
    record about it; then the agent's warnings. CI keeps only the output,
    so this is all there is to go on afterwards."""
    idmap = guest_id_map(r)
    out = []
    for g in sorted(late):
        ss = [s for s in r["samples"] if s["g"] == g]
        out.append("  %s: t  threads(node:busy%%)  memory MiB per node  cpuset cpus/mems  locality" % g)
        nxt = -1.0
        for s in ss:
            if s["t"] < nxt and s is not ss[-1]:
                continue
            nxt = s["t"] + 10.0
            out.append("    t=%5.1f  %-14s %-22s %s/%s  %s" % (
                s["t"], ",".join("%d:%d" % x for x in s["thr"]),
                ",".join(str(m // 1024) for m in s["mem"]), s["ccpus"], s["cmems"],
                "-" if locality(s)[0] is None else "%.2f" % locality(s)[0]))
        for d in r["decisions"]:
            if decision_guest(idmap, d) != g:
                continue
            tt = time.strptime(d["time"][:19], "%Y-%m-%dT%H:%M:%S")
            t = time_gm(tt) + float("0." + d["time"][20:23]) - t_real0
            out.append("    decision t=%.1f %s (%s) -> cpus %s mems %s, %.0f MiB, %.1f s: %s | %s" % (
                t, d.get("decision"), d.get("reason") or d.get("skip"), d.get("to", {}).get("cpus"),
                d.get("to", {}).get("mems"), d.get("migrate_mib") or 0, (d.get("duration_ms") or 0) / 1000,
                d.get("message", ""), d.get("detail", "")))
    warn = [l for l in r["log"] if "[warn]" in l or "[error]" in l]
    if warn:
        out.append("  agent warnings (%d, last 10):" % len(warn))
        out += ["    " + l for l in warn[-10:]]
    return "\n".join(out)


# One boot's bound for the in-VM tests (test_cgroup_v2.sh, every check in
# a row: each bounds its own waits, a few minutes at most, and a slow one
# under a loaded host must not cut the others off).
ITEST_TIMEOUT_S = 900

# make check-numa's checks of a hypervisor host's shapes
# (test_cgroup_v2.sh's shape_check ones), each on the scenario that has
# its shape: one boot a scenario.
SHAPE_STAGES = (
    ("twosocket", ("distances_match_the_kernel", "memory_only_node_gets_no_cpus", "pxb_device_on_its_node")),
    ("smt3", ("smt_busy_threads_get_separate_cores",)),
    ("llc2", ("llc_busy_threads_share_one_cache",)),
)


def shapes_stage(vm, itests):
    """make check-numa's boot of scenario VM for ITESTS: the results text
    (a "not ok" line when the VM failed) and the wall time."""
    outdir = os.path.join(CACHE, "check", "itest-" + vm)
    log("check: booting the %s shape for %s" % (vm, ", ".join(itests)))
    try:
        return boot(load_scenario(vm), "numavm.mode=itest numavm.only=" + ",".join(itests),
                    outdir, timeout=300)
    except RuntimeError as e:
        return "not ok - the %s VM ran its checks to the end: %s\n" % (vm, str(e).splitlines()[0]), 0


def parse_itest(text):
    ok = [l for l in text.splitlines() if l.startswith("ok ")]
    bad = [l for l in text.splitlines() if l.startswith("not ok ")]
    skipped = [l for l in ok if "# SKIP" in l]
    return ok, bad, skipped


def cmd_check(args):
    t_start = time.time()
    # The analysis that judges the VM runs is tested first, without a VM.
    p = subprocess.run([sys.executable, "-m", "unittest", "-q", os.path.join(HERE, "test_numavm.py")],
                       capture_output=True, text=True)
    print(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "")
    if p.returncode != 0:
        print(p.stderr)
        print("not ok - host-side analysis unit tests (test_numavm.py)")
        print("0 passed, 1 failed")
        return 1
    try:
        prepare()
    except Skip as e:
        print("SKIP: check-numa: %s" % e)
        print("0 passed, 0 failed, 1 skipped")
        return 0
    failures = []
    passed = 0
    # 1. The shortest scenario with numaorchd on a 4-node VM.
    name = args.scenario or "misplaced"
    scn = load_scenario(name)
    if scn["nodes"] != 4:
        raise SystemExit("check-numa wants a 4-node scenario; %s has %d" % (name, scn["nodes"]))
    outdir = os.path.join(CACHE, "check", "%s.numaorchd" % name)
    append = "numavm.mode=run numavm.scenario=%s numavm.placer=numaorchd" % name
    if scn["check_duration"]:
        scn["duration"] = scn["check_duration"]
        append += " numavm.duration=%.0f" % scn["check_duration"]
    log("check: booting 4 nodes, scenario %s with numaorchd (%.0f s)" % (name, scn["duration"]))
    text, wall = boot(scn, append, outdir, timeout=int(scn["duration"]) + 400)
    r = parse_results(text)
    res = analyse(text, scn)
    within = scn["check_within"] or scn["duration"]
    t_real0 = next(float(e["real"]) for e in r["events"] if e.get("what") == "placer")

    def check(cond, what):
        nonlocal passed
        print("%s - %s" % ("ok" if cond else "not ok", what))
        if cond:
            passed += 1
        else:
            failures.append(what)

    late = {g: t for g, t in res["t90"].items() if t is None or t > within}
    check(not late, "every guest >= 90%% local (true locality: memory on each busy thread's node) within %.0f s (per guest: %s)"
          % (within, ", ".join("%s %s" % (g, "never" if t is None else "%.0fs" % t)
                               for g, t in sorted(res["t90"].items()))))
    if late:
        print(explain_late(r, t_real0, late))
    check(res["oom_kills"] == 0, "no OOM kill (%d)" % res["oom_kills"])
    check(not res["empty_cpuset_guests"], "no guest with an empty cpuset %s" % (res["empty_cpuset_guests"] or ""))
    probs = check_decisions(r, t_real0)
    check(res["moves"] > 0 and not probs, "decision log agrees with the cgroups (%d moves): %s"
          % (res["moves"], "; ".join(probs[:5]) or "consistent"))
    log("scenario run took %.0f s wall" % wall)
    # 2. The agent's cgroup v2 integration tests inside the VM.
    outdir = os.path.join(CACHE, "check", "itest")
    log("check: booting 4 nodes for the cgroup v2 integration tests")
    itext, wall = boot(load_scenario("itest") if os.path.exists(os.path.join(SCENARIOS, "itest.scn")) else scn,
                       "numavm.mode=itest", outdir, timeout=ITEST_TIMEOUT_S)
    log("the in-VM tests took %.0f s" % wall)
    ok, bad, skipped = parse_itest(itext)
    for l in ok + bad:
        print("  itest: " + l)
    check(ok and not bad and not skipped and "END rc=0" in itext,
          "cgroup v2 integration tests in the VM: %d ok, %d not ok, %d skipped" % (len(ok), len(bad), len(skipped)))
    failures.extend("  itest: " + l for l in bad + skipped)
    # 2b. The checks that need a hypervisor host's shapes, each on a VM
    #     that has them (distances 10/12/32, a memory-only node, a PCI
    #     expander bridge; SMT siblings with an L3 a node): a boot each.
    for vm, itests in SHAPE_STAGES:
        stext, wall = shapes_stage(vm, itests)
        ok, bad, skipped = parse_itest(stext)
        for l in ok + bad:
            print("  itest --vm %s: %s" % (vm, l))
        check(len(ok) == len(itests) and not bad and not skipped and "END rc=0" in stext,
              "hypervisor shapes in the %s VM: %d ok, %d not ok, %d skipped (%.0f s)"
              % (vm, len(ok), len(bad), len(skipped), wall))
        failures.extend("  itest --vm %s: %s" % (vm, l) for l in bad + skipped)
    # 3. A libvirt domain's memory moved by the mover, libvirtd and QEMU
    #    inside the VM (make check-numa-libvirt runs this alone).
    try:
        good, lines, wall = libvirt_stage()
        for l in lines:
            if not l.startswith("# ") or not good:
                print("  libvirt: " + l)
        check(good, "a libvirt domain's memory moved by the mover in the VM: %d ok, %d not ok (%.0f s)"
              % (sum(l.startswith("ok ") for l in lines), sum(l.startswith("not ok ") for l in lines), wall))
        if not good:
            failures.extend("  libvirt: " + l for l in lines if l.startswith("not ok "))
    except Skip as e:
        print("SKIP: check-numa: the libvirt domain in the VM: %s" % e)
    print("check-numa: %.0f s" % (time.time() - t_start))
    recap(failures)
    print("%d passed, %d failed" % (passed, sum(not f.startswith("  ") for f in failures)))
    return 1 if failures else 0


def recap(failures):
    """What failed, again, at the end: CI shows a run's last lines only,
    and a failing stage prints hundreds of log lines after its verdict."""
    if failures:
        print("what failed:")
        for f in failures:
            print("  " + f[:600])


def libvirt_stage():
    """libvirtd and a nested TCG domain inside the 4-node VM, numaorchd
    with its libvirt module moving the domain's memory through the mover
    (guest/test_vm_mover.sh says what is checked). Returns (good, the
    test's lines, wall seconds), or raises Skip."""
    prepare()
    why = libvirt_missing()
    if why:
        raise Skip(why)
    initrd = build_initrd(libvirt=True)
    outdir = os.path.join(CACHE, "check", "libvirt")
    log("check: booting 4 nodes with libvirtd and QEMU in the initramfs")
    try:
        text, wall = boot(load_scenario("itest"), "numavm.mode=script numavm.script=test_vm_mover", outdir,
                          timeout=900, initrd=initrd)
    except RuntimeError as e:
        return False, str(e).splitlines() + ["not ok - the VM ran the libvirt test to its end"], 0
    ok, bad, skipped = parse_itest(text)
    lines = [l for l in text.splitlines() if l.startswith(("ok ", "not ok ", "# "))]
    return bool(ok) and not bad and "END rc=0" in text, lines, wall


def cmd_check_libvirt(args):
    """make check-numa-libvirt."""
    t_start = time.time()
    try:
        good, lines, wall = libvirt_stage()
    except Skip as e:
        print("SKIP: check-numa-libvirt: %s" % e)
        print("0 passed, 0 failed, 1 skipped")
        return 0
    for l in lines:
        print(l)
    n_ok = sum(1 for l in lines if l.startswith("ok "))
    n_bad = sum(1 for l in lines if l.startswith("not ok "))
    print("check-numa-libvirt: %.0f s (VM %.0f s)" % (time.time() - t_start, wall))
    recap([l for l in lines if l.startswith("not ok ")])
    print("%d passed, %d failed" % (n_ok, n_bad if n_bad or good else 1))
    return 0 if good else 1


# ---- make bench-numa ---------------------------------------------------------

def fmt(v, f="%.0f", none="never"):
    return none if v is None else f % v


def fmt_s(v, none="never"):
    """Seconds as read on a scenario's grid: 6, 5.5 (churn samples every
    0.5 s; "%.0f" printed its 5.5 as 6)."""
    return none if v is None else "%g" % round(v, 1)


def report(runs, wall_total=None, cmdline=None, failed=(), note=None):
    os.makedirs(RESULTS, exist_ok=True)
    scns = []
    for r in runs:
        if r["scenario"] not in scns:
            scns.append(r["scenario"])
    lines = ["# numaorch multi-node testbed: placement benchmark", "",
             "Generated by `%s` on %s." % (cmdline or "make bench-numa", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())),
             "Every figure below comes from a real run: Debian's cloud kernel under QEMU TCG",
             "(`tests/numa-vm/numavm.py`), one fresh boot per scenario and placer; each row's",
             "raw samples are under `build/numa-vm/runs/<scenario>.<placer>/results.txt` and the",
             "command for one row is `tests/numa-vm/numavm.py run SCENARIO PLACER` (a row whose",
             "**balancing** says `on (forced)`: the same with `--balancing on`, the kernel's NUMA",
             "balancing left on beside the placer; `kernel` and `numaorchd+kernel` have it on by",
             "themselves).", ""]
    if wall_total:
        lines += ["Whole matrix: %d runs in %.1f min of wall time on this machine (2 cores)." % (len(runs), wall_total / 60), ""]
    if note:
        lines += [note, ""]
    lines += ["Columns: **t90** seconds until every guest is >= 90% local by **true locality** (per",
              "guest from its start; a guest starting during the run is sampled from its start, while it",
              "first touches its memory, since where those pages land is what it feels first;",
              "\"never\" if some guest never got there); **true loc** mean true",
              "locality over the last minute: the share of a guest's memory on each busy thread's own",
              "node, averaged over its busy threads (threads using >= 50% of a CPU; what the workload",
              "feels, and what numaorchd decides on); **true end** the same over the last 10 s;",
              "**true min** the least truly local guest at the end; **t90 nodes** / **nodes loc** the",
              "older, weaker figures: memory on the union of the nodes its busy threads ran on (a guest",
              "spread over two nodes with its memory on one is 100% there, 50% true);",
              "**needed** MiB of the guests' memory, as their workloads placed it, off the nodes their busy threads",
              "ended on (guests there at the start: at t=0; guests starting later: where their first touch put it,",
              "since a placer may act before or while they touch it; a guest that stops: at its last sample); **moved** MiB migrated",
              "(pgmigrate_success x 4 KiB, all causes, or the MiB that arrived on nodes per memory.numa_stat",
              "when larger: a migration still running at the end is not yet in pgmigrate_success);",
              "**OOM** OOM kills; **died** guests whose workload ended other than by the runner's",
              "SIGTERM (SIGBUS: a hugetlb fault with no free page; '-': a run from before the runner said);",
              "**CPU s** the placer's own",
              "CPU time (numad, numaorchd; the kernel's balancing is paid inside the guests' own time);",
              "**threads/node** busy threads per node at the end; **work** MiB/s written by all guests",
              "over the last minute (under TCG remote memory costs no more than local, so this shows",
              "what moving cost the guests, not what locality gained them).",
              "Scenarios with SMT siblings (`threads` > 1) add, from each busy thread's CPU (`tcpu=`)",
              "against the cores and L3s the guest kernel reports (the runner's `H cores` line), each as",
              "the time-weighted mean over the run / the mean over the last 10 s: **core-shared** the share",
              "of busy threads with another busy thread (any guest's) on their core, so running at a",
              "sibling's speed; **own-shared** the same counting only the guest's own threads (a guest",
              "competing with itself); **LLC-split** the share of guests with two or more busy threads",
              "whose busy threads sit under two or more L3s. Lower is better for all three; with more",
              "busy threads than cores some sharing is unavoidable. '-': a run from before the runner",
              "printed its cores.", ""]
    for s in scns:
        rs = [r for r in runs if r["scenario"] == s]
        scn = load_scenario(s)
        smt = scn["threads"] > 1
        lines += ["## %s" % s, "", scn["description"], "",
                  "Pages: %s. VM: %d nodes x %d CPUs%s, %s MiB per node, %.0f s." % (
                      rs[0]["pages"], scn["nodes"], scn["cpus_per_node"],
                      " (%d threads a core)" % scn["threads"] if smt else "",
                      ",".join(map(str, scn["mem_nodes"])) if scn["mem_nodes"] else scn["mem_per_node"],
                      scn["duration"]), "",
                  "| placer | balancing | t90 s | true loc | true end | true min | t90 nodes s | nodes loc | needed MiB | moved MiB | OOM | died | CPU s | threads/node | work MiB/s |"
                  + (" core-shared | own-shared | LLC-split |" if smt else ""),
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" * 3 if smt else "")]
        for r in rs:
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f | %d | %s | %s | %s | %.0f |" % (
                r["placer"], run_balancing(r) + (" (forced)" if r.get("balancing_forced") else ""),
                fmt_s(r["t90_all"]), fmt(pct(r["wloc_mean_last_min"]), "%.0f%%", "-"),
                fmt(pct(r.get("wloc_end")), "%.0f%%", "-"), fmt(pct(r.get("wloc_min_end")), "%.0f%%", "-"),
                fmt_s(r.get("t90_nodes_all")), fmt(pct(r["loc_mean_last_min"]), "%.0f%%", "-"),
                r["needed_mib"], r["moved_mib"], r["oom_kills"], died_cell(r.get("guest_ends")),
                fmt(r["placer_cpu_s"], "%.1f", "-"),
                "/".join(map(str, r["busy_threads_per_node_end"])), r["work_mib_s"]) + (smt_cells(r) if smt else ""))
        lines += device_table(rs)
        lines += stall_table(rs)
        lines += ["", target_line(rs), "", target_line(rs, "on"), "", "![%s](%s.png)" % (s, s), ""]
        plot(s, rs)
    if failed:
        lines += ["## Runs that failed", ""] + ["- %s / %s: %s" % f for f in failed] + [""]
    with open(os.path.join(RESULTS, "REPORT.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(RESULTS, "runs.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k != "series"} for r in runs], f, indent=1, sort_keys=True)


def pct(v):
    return None if v is None else v * 100


def smt_cells(r):
    """The report's core-shared, own-shared and LLC-split cells of run R
    (" a / b | ... |": time-weighted mean / last 10 s), "-" for a run
    without the reading."""
    m = r.get("smt")
    cells = []
    for key in ("core_shared", "own_shared", "llc_split"):
        if not m or (m.get(key) is None and m.get(key + "_end") is None):
            cells.append("-")
        else:
            cells.append("%s / %s" % (fmt(pct(m.get(key)), "%.0f%%", "-"), fmt(pct(m.get(key + "_end")), "%.0f%%", "-")))
    return " " + " | ".join(cells) + " |"


def device_table(rs):
    """The device locality of runs RS (one scenario's) as a table, for a
    scenario whose guests hold devices: [] when no run has any."""
    if not any(r.get("device_local") for r in rs):
        return []
    out = ["", "Device locality (guests holding a device: %s): **dev threads** the share of their busy threads "
           "on the device's node, **dev memory** the share of their memory there; mean over those guests, the "
           "last minute and the last 10 s. True locality above does not weigh the device." %
           ", ".join(sorted("%s on node %d" % (g, v["node"])
                            for g, v in next(r["device_local"] for r in rs if r.get("device_local"))["guests"].items())),
           "", "| placer | balancing | dev threads | dev memory | dev threads end | dev memory end | per guest at the end (threads/memory) |",
           "|---|---|---|---|---|---|---|"]
    for r in rs:
        d = r.get("device_local")
        if not d:
            continue
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["placer"], run_balancing(r) + (" (forced)" if r.get("balancing_forced") else ""),
            fmt(pct(d["threads_last_min"]), "%.0f%%", "-"), fmt(pct(d["mem_last_min"]), "%.0f%%", "-"),
            fmt(pct(d["threads_end"]), "%.0f%%", "-"), fmt(pct(d["mem_end"]), "%.0f%%", "-"),
            ", ".join("%s %s/%s" % (g, fmt(pct(v["threads_end"]), "%.0f%%", "-"), fmt(pct(v["mem_end"]), "%.0f%%", "-"))
                      for g, v in sorted(d["guests"].items()))))
    return out


def stall_table(rs):
    """The stalls of runs RS (one scenario's): what the guests' threads
    felt beside what numaorchd said of its own move calls; [] when no run
    has the guests' reading."""
    if not any(r.get("felt_stall") for r in rs):
        return []
    out = ["", "Stalls: **felt** the time the guests' threads took for one MiB of their writes "
           "(guestload; a thread waiting on a page being migrated waits there, whoever moves it; "
           "TCG's own scheduling of 8 vCPUs on 2 host cores is in every row): the 99th percentile "
           "(as a power-of-two bucket's upper bound) and the longest, and how many MiB took 128 ms "
           "or more and 512 ms or more; **agent's** what numaorchd's log says of its move calls: "
           "jobs, the worst job's p99 and the longest call.", "",
           "| placer | balancing | felt p99 ms | felt max ms | MiB >= 128 ms | MiB >= 512 ms | MiB written | "
           "agent's jobs | agent's p99 ms | agent's longest ms |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rs:
        f, a = r.get("felt_stall"), r.get("agent_stall") or {}
        if not f:
            continue
        out.append("| %s | %s | %s | %.0f | %d | %d | %d | %s | %s | %s |" % (
            r["placer"], run_balancing(r) + (" (forced)" if r.get("balancing_forced") else ""),
            fmt(f["p99_ms"], "<= %.0f", "> 4096"), f["max_ms"], f["over_128"], f["over_512"], f["mib"],
            a.get("jobs", "-"), fmt(a.get("p99_ms"), "%.0f", "-"), fmt(a.get("max_ms"), "%.0f", "-")))
    return out


def run_balancing(r):
    """"on"/"off": the kernel's balancing in run R (older runs: its placer's)."""
    return r.get("balancing") or placer_balancing(r.get("placer") or "")


def target_line(rs, balancing="off"):
    """numaorchd against its peers in one column: BALANCING "off" (the
    agent alone against the kernel's balancing and numad) or "on" (every
    placer beside the kernel's balancing: numaorchd+kernel or numaorchd
    --balancing on against the kernel alone and numad with it on)."""
    by = {}
    for r in rs:
        if run_balancing(r) != balancing and r["placer"] != "kernel":
            continue
        by.setdefault("numaorchd" if r["placer"] == "numaorchd+kernel" else r["placer"], r)
    o = by.get("numaorchd")
    peers = [by[p] for p in ("kernel", "numad") if p in by]
    head = "Target for numaorchd" if balancing == "off" else \
        "Target for numaorchd with kernel.numa_balancing = 1 (%s)" % (o["placer"] if o else "numaorchd+kernel")
    if not o or not peers:
        return "%s: not evaluated (numaorchd or its peers missing)." % head
    parts = []
    best_t = [p["t90_all"] for p in peers if p["t90_all"] is not None]
    if o["t90_all"] is None:
        parts.append("t90: numaorchd never reached 90%% for all guests (best peer: %s)" % (fmt_s(min(best_t)) + " s" if best_t else "never"))
    elif not best_t:
        parts.append("t90: met (numaorchd %s s; kernel and numad never)" % fmt_s(o["t90_all"]))
    else:
        b = min(best_t)
        ok = o["t90_all"] * 2 <= b
        if b == 0 and o["t90_all"] == 0:
            parts.append("t90: a tie at 0 s (every guest was local from the start)")
            b = None
        if b is not None:
            parts.append("t90: %s (numaorchd %s s vs best peer %s s; needs <= %.2f s)" % (
                "met" if ok else "NOT met", fmt_s(o["t90_all"]), fmt_s(b), b / 2))
            fl = o.get("t90_floor") or 0.0
            if not ok and fl > b / 2:
                parts[-1] = parts[-1][:-1] + (", under this run's floor: guest %s was first sampled %.1f s after "
                                              "its start%s)" % (o.get("t90_floor_guest"), fl,
                                                                "" if o.get("touch_sampled") else
                                                                ", once its workload had touched all its memory"))
    # Late guests sampled while they touch their memory: say also what t90
    # reads counting only their samples once it is all touched, the way
    # runs before session 38 counted (the touch's length is its floor).
    if o.get("touch_sampled"):
        best_r = [p.get("t90_ready_all") for p in peers if p.get("t90_ready_all") is not None]
        parts.append("t90 counting only samples once each guest's memory was all touched (as before session 38): "
                     "numaorchd %s vs best peer %s" % (
                         fmt_s(o.get("t90_ready_all")) + " s" if o.get("t90_ready_all") is not None else "never",
                         fmt_s(min(best_r)) + " s" if best_r else "never"))
    best_loc = max((p.get("wloc_end") or 0) for p in peers)
    parts.append("true locality at the end: %s (%.0f%% vs best peer %.0f%%; last minute %.0f%% vs %.0f%%)" % (
        "met" if (o.get("wloc_end") or 0) >= best_loc - 0.005 else "NOT met",
        pct(o.get("wloc_end") or 0), pct(best_loc), pct(o["wloc_mean_last_min"] or 0),
        pct(max((p["wloc_mean_last_min"] or 0) for p in peers))))
    if o["needed_mib"] > 0:
        ratio = o["moved_mib"] / o["needed_mib"]
        parts.append("memory moved: %s (%.2fx of the %.0f MiB its end state needed%s)" % (
            "within 1.2x" if ratio <= 1.2 else "NOT within 1.2x", ratio, o["needed_mib"],
            "; it did not get there" if o["t90_all"] is None else ""))
    else:
        parts.append("memory moved: %.0f MiB with none needed" % o["moved_mib"])
    parts.append("OOM: %s" % ("none" if o["oom_kills"] == 0 else "%d kills" % o["oom_kills"]))
    return head + ": " + "; ".join(parts) + "."


def plot(name, rs):
    if not have_cmd("gnuplot"):
        log("gnuplot missing: no plot for " + name)
        return
    os.makedirs(RESULTS, exist_ok=True)
    tmpd = os.path.join(CACHE, "plot")
    os.makedirs(tmpd, exist_ok=True)
    plots = []
    for r in rs:
        # A run forced to balancing on is a line of its own.
        label = r["placer"] + (" balancing on" if r.get("balancing_forced") else "")
        dat = os.path.join(tmpd, "%s.%s.dat" % (name, label.replace(" ", "_")))
        with open(dat, "w") as f:
            for row in r["series"]:
                t, w = row[0], row[3]
                wmin = row[4] if len(row) > 4 else row[3]
                f.write("%.2f %.2f %.2f\n" % (t, w * 100, wmin * 100))
        plots.append("'%s' using 1:2 with lines lw 2 title '%s (mean)'" % (dat, label))
    script = "\n".join([
        "set terminal pngcairo size 900,500 font 'sans,10'" if pngcairo() else "set terminal png size 900,500",
        "set output '%s'" % os.path.join(RESULTS, name + ".png"),
        "set title 'scenario %s: mean true guest locality over time'" % name,
        "set xlabel 'seconds since the placer started'",
        "set ylabel 'memory on the node of each busy thread (%)'",
        "set yrange [0:105]", "set grid", "set key bottom right",
        "set arrow from graph 0, first 90 to graph 1, first 90 nohead dt 2 lc rgb 'gray'",
        "plot " + ", ".join(plots), ""])
    p = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if p.returncode != 0:
        log("gnuplot failed for %s: %s" % (name, p.stderr.strip()))


def pngcairo():
    p = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" in (p.stdout + p.stderr)


def cmd_bench(args):
    try:
        prepare(need_gnuplot=True)
    except Skip as e:
        print("SKIP: bench-numa: %s" % e)
        return 1
    scns = args.scenario or [s for s in all_scenarios() if load_scenario(s)["bench"] == "yes"]
    t0 = time.time()
    runs, failed = [], []
    for s in scns:
        for p, bal in bench_matrix(args.placer, args.balancing):
            log("bench: %s with %s%s" % (s, p, " (balancing on)" if bal == "on" else ""))
            try:
                r = run_one(s, p, balancing=bal)
            except (RuntimeError, ValueError, KeyError, IndexError) as e:
                # One broken run must not cost the whole matrix: the report
                # names it and why.
                log("bench: %s/%s failed: %s" % (s, p, e))
                failed.append((s, p + (" --balancing on" if bal == "on" else ""), str(e).splitlines()[0][:300]))
                continue
            runs.append(r)
            log("bench: %s/%s: t90 %s, true loc %s, moved %.0f MiB, %.0f s wall" % (
                s, p, fmt_s(r["t90_all"]), fmt(pct(r["wloc_mean_last_min"]), "%.0f%%", "-"), r["moved_mib"], r["wall_s"]))
    total = time.time() - t0
    report(runs, total, "make bench-numa" if not (args.scenario or args.placer) else
           "tests/numa-vm/numavm.py bench " + " ".join(sys.argv[2:]), failed)
    print("wrote %s (%d runs, %.1f min)" % (os.path.join(RESULTS, "REPORT.md"), len(runs), total / 60))
    return 1 if failed else 0


def bench_matrix(placers=None, balancing=None):
    """(placer, balancing) pairs of one scenario's bench rows: PLACERS (all
    by default) at their own setting and, for the balancing-on column,
    BENCH_BALANCING_ON with it forced on; BALANCING ["on"] or ["placer"]
    keeps one of the two."""
    placers = list(placers or PLACERS)
    want = balancing or ["placer", "on"]
    out = []
    if "placer" in want:
        out += [(p, None) for p in placers]
    if "on" in want:
        out += [(p, "on") for p in placers if placer_balancing(p) != "on"
                and (balancing or p in BENCH_BALANCING_ON)]
    return out


def died_cell(ends):
    """The REPORT's died column: "-" unknown, "0", or each guest's end."""
    if ends is None:
        return "-"
    if not ends["died"]:
        return "0"
    return ", ".join("%s %s" % (g, "SIGBUS" if how == "sig7" else how) for g, how in sorted(ends["died"].items()))


def parse_stall(v):
    """A G line's stall=MAX:N0,...: (longest ms, [MiB per bucket]); bucket
    0 is under 1 ms, bucket k under 2^k ms, the last unbounded."""
    mx, _, hist = v.partition(":")
    return float(mx), [int(x) for x in hist.split(",")]


def felt_stall(r):
    """The stalls the guests' threads felt (guestload's time per MiB of
    writes, from each guest's last sample: counted from its start), over
    all guests: {"max_ms", "p99_ms" (the bucket's upper bound the 99th
    percentile MiB falls in), "mib", "over_128", "over_512" (MiB that
    took that many ms or more)}; None for runs without the reading."""
    last = {}
    for smp in r["samples"]:
        if smp.get("stall"):
            last[smp["g"]] = smp["stall"]
    if not last:
        return None
    nb = max(len(h) for _, h in last.values())
    hist = [sum(h[k] for _, h in last.values() if k < len(h)) for k in range(nb)]
    total = sum(hist)
    if not total:
        return None
    p99, acc = None, 0
    for k, n in enumerate(hist):
        acc += n
        if total and acc >= 0.99 * total:
            p99 = float(2 ** k) if k + 1 < nb else None
            break
    return {"max_ms": max(m for m, _ in last.values()), "p99_ms": p99, "mib": total,
            "over_128": sum(hist[8:]), "over_512": sum(hist[10:])}


STALL_RE = re.compile(r"longest stall ([0-9.]+) ms, p99 ([0-9.]+|-) ms")


def agent_stall(r):
    """What numaorchd said of its own move calls (its log's "memory job"
    lines): {"jobs", "max_ms" (the longest), "p99_ms" (the worst job's
    p99)}; None when no job said."""
    got = [m.groups() for m in (STALL_RE.search(l) for l in r["log"]) if m]
    if not got:
        return None
    p99s = [float(p) for _, p in got if p != "-"]
    return {"jobs": len(got), "max_ms": max(float(x) for x, _ in got), "p99_ms": max(p99s) if p99s else None}


def guest_ends(r):
    """{"sigbus": N, "died": {guest: how}} from the runner's stop events
    (how a guest's processes ended: sig7 is SIGBUS, a hugetlb fault with
    no free page; sig9 an OOM kill, also in oom_kills), or None for runs
    whose runner did not say (older runs)."""
    stops = [e for e in r["events"] if e.get("what") == "stop"]
    if not stops or any("end" not in e for e in stops):
        return None
    died = {e["g"]: e["end"] for e in stops if e["end"] != "ok"}
    return {"sigbus": sum(1 for how in died.values() if how == "sig7"), "died": died}


def cmd_report(args):
    """REPORT.md from the saved runs, their metrics computed again from
    the raw results (so a change to the analysis reaches every row)."""
    runs = []
    for s in all_scenarios():
        dirs = [os.path.join(RUNS, run_name(load_scenario(s), p, bal)) for p, bal in bench_matrix()]
        # and rows of numaorchd with a setting (`run SCN numaorchd:SECTION.KEY=VALUE`)
        # that were run beside them, after the matrix's own
        dirs += sorted(d for d in glob.glob(os.path.join(RUNS, glob.escape(s) + ".numaorchd*:*"))
                       if d not in dirs)
        for d in dirs:
            if not os.path.exists(os.path.join(d, "metrics.json")):
                continue
            with open(os.path.join(d, "metrics.json")) as f:
                old = json.load(f)
            with open(os.path.join(d, "results.txt"), errors="replace") as f:
                r = analyse(f.read(), load_scenario(s))
            r["wall_s"], r["command"] = old.get("wall_s"), old.get("command")
            with open(os.path.join(d, "metrics.json"), "w") as f:
                json.dump(r, f, indent=1, sort_keys=True)
            runs.append(r)
    report(runs, args.wall * 60 if args.wall else None, args.cmdline, note=args.note)
    return 0


def capture_append(scn):
    """The kernel command line's numavm.* words of a capture boot: the
    scenario's `hugepages` pools, which guest/capture_fixture.sh reserves
    before its guests take huge pages from them."""
    append = "numavm.mode=script numavm.script=capture_fixture"
    if scn["hugepages"]:
        append += " numavm.hugepages=" + ",".join(map(str, scn["hugepages"]))
    return append


def parse_capture(text):
    """{path: content} from guest/capture_fixture.sh's lines ("F path",
    "| line"..., "E"). A file cut short (no "E") is an error."""
    files, cur, lines = {}, None, []
    for line in text.splitlines():
        if line.startswith("F ") and cur is None:
            cur, lines = line[2:], []
        elif cur is not None and line == "E":
            files[cur] = "".join(l + "\n" for l in lines)
            cur = None
        elif cur is not None and (line.startswith("| ") or line == "|"):
            lines.append(line[2:])
        elif cur is not None:
            raise ValueError("capture: unexpected line in %s: %r" % (cur, line))
    if cur is not None:
        raise ValueError("capture: %s cut short" % cur)
    return files


def write_capture(text, dest):
    """Write the captured files under DEST (a fresh tree: DEST/sys/...,
    DEST/proc/...). The reviewed goldens at its top (expected-*.json) are
    kept: a new capture that reads differently then fails its unit tests
    until the goldens are regenerated and reviewed. Returns how many."""
    files = parse_capture(text)
    if not any(p.startswith("/sys/devices/system/node/node") for p in files):
        raise RuntimeError("capture: no NUMA node in the VM's output")
    for sub in ("sys", "proc"):
        if os.path.isdir(os.path.join(dest, sub)):
            shutil.rmtree(os.path.join(dest, sub))
    for path, content in sorted(files.items()):
        if not path.startswith("/") or ".." in path.split("/"):
            raise ValueError("capture: bad path %r" % path)
        out = os.path.join(dest, path.lstrip("/"))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(content)
    return len(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch")
    sub.add_parser("initrd")
    p = sub.add_parser("run")
    p.add_argument("scenario")
    p.add_argument("placer", type=run_placer)
    p.add_argument("--balancing", choices=("placer", "on"), default="placer",
                   help="on: kernel.numa_balancing = 1 beside the placer (default: the placer's own setting)")
    p.add_argument("--cgroup", choices=("v1", "v2"),
                   help="v1: the guests' cgroups in v1 cpuset and memory hierarchies (default: the scenario's)")
    p = sub.add_parser("itest")
    p.add_argument("--only", help="comma-separated test names (test_cgroup_v2.sh's check NAMEs) to run alone")
    p.add_argument("--vm", default="misplaced", help="scenario whose VM shape to boot (smt: SMT siblings)")
    p = sub.add_parser("script")
    p.add_argument("name")
    p.add_argument("--vm", default="misplaced", help="scenario whose VM shape to boot")
    p.add_argument("--libvirt", action="store_true", help="boot the initramfs with libvirtd and QEMU in it")
    p = sub.add_parser("capture", help="capture a fixture tree from the VM's real kernel into tests/fixtures/NAME")
    p.add_argument("name")
    p.add_argument("--vm", default="misplaced", help="scenario whose VM shape to boot")
    p = sub.add_parser("check")
    p.add_argument("--scenario")
    sub.add_parser("check-libvirt")
    p = sub.add_parser("bench")
    p.add_argument("-s", "--scenario", action="append")
    p.add_argument("-p", "--placer", action="append", choices=PLACERS)
    p.add_argument("-b", "--balancing", action="append", choices=("placer", "on"),
                   help="placer: each placer's own setting; on: kernel.numa_balancing = 1 beside it "
                        "(default both: the on column runs %s)" % ", ".join(BENCH_BALANCING_ON))
    p = sub.add_parser("report")
    p.add_argument("--wall", type=float, help="minutes the matrix took, for the report")
    p.add_argument("--cmdline")
    p.add_argument("--note", help="a paragraph for the report's head (how the rows were produced)")
    p = sub.add_parser("shell")
    p.add_argument("scenario", nargs="?", default="misplaced")
    a = ap.parse_args()
    try:
        if a.cmd == "fetch":
            fetch()
            print(find_kernel())
        elif a.cmd == "initrd":
            ensure_host_tools()
            print(build_initrd())
        elif a.cmd == "run":
            prepare()
            r = run_one(a.scenario, a.placer, balancing=a.balancing, cgroup=a.cgroup)
            print(json.dumps({k: v for k, v in r.items() if k != "series"}, indent=1, sort_keys=True))
        elif a.cmd == "itest":
            prepare()
            text, wall = boot(load_scenario(a.vm),
                              "numavm.mode=itest" + (" numavm.only=" + a.only if a.only else ""),
                              os.path.join(CACHE, "itest"), timeout=ITEST_TIMEOUT_S)
            print(text)
            ok, bad, skipped = parse_itest(text)
            return 0 if ok and not bad else 1
        elif a.cmd == "script":
            prepare()
            initrd = INITRD
            if a.libvirt:
                why = libvirt_missing()
                if why:
                    raise Skip(why)
                initrd = build_initrd(libvirt=True)
            text, wall = boot(load_scenario(a.vm), "numavm.mode=script numavm.script=" + a.name,
                              os.path.join(CACHE, "script." + a.name), timeout=900, initrd=initrd)
            print(text)
        elif a.cmd == "capture":
            prepare()
            text, wall = boot(load_scenario(a.vm), capture_append(load_scenario(a.vm)),
                              os.path.join(CACHE, "capture." + a.name), timeout=600)
            dest = os.path.join(REPO, "tests", "fixtures", a.name)
            n = write_capture(text, dest)
            print("%s: %d files from the %s VM (%.0f s)" % (dest, n, a.vm, wall))
        elif a.cmd == "check":
            return cmd_check(a)
        elif a.cmd == "check-libvirt":
            return cmd_check_libvirt(a)
        elif a.cmd == "bench":
            return cmd_bench(a)
        elif a.cmd == "report":
            return cmd_report(a)
        elif a.cmd == "shell":
            prepare()
            boot(load_scenario(a.scenario), "numavm.mode=shell", os.path.join(CACHE, "shell"), 0, interactive=True)
    except Skip as e:
        print("SKIP: %s" % e)
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

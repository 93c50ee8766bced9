"""numaorchd against containers started by real runtimes (issue 42).

Each test starts a container with the runtime's own tools on a busybox
rootfs built here (no registry is needed), runs one dry-run cycle of the
real daemon on the live host and checks what it discovered. A runtime
that is not installed, or cannot start here, skips with the reason.
"""
import json
import os
import shutil
import subprocess
import time
import unittest

import itlib

BUSYBOX = "/bin/busybox"


def skip_reason_runc():
    if os.geteuid() != 0:
        return "needs root to run containers"
    if not shutil.which("runc"):
        return "runc is not installed (Debian package runc)"
    if not os.path.exists(BUSYBOX) or subprocess.run(["ldd", BUSYBOX], capture_output=True).returncode == 0:
        return "needs a static busybox for the rootfs (Debian package busybox-static)"
    if not os.path.exists(itlib.NUMAORCHD):
        return "build/numaorchd missing (run make)"
    return None


def busybox_bundle(root, args):
    """An OCI bundle at ROOT: a busybox rootfs and a config.json (from
    `runc spec`) that runs ARGS, with no cgroupsPath: the runtime picks
    the cgroups, as a user's plain `runc run` does."""
    rootfs = os.path.join(root, "rootfs")
    os.makedirs(os.path.join(rootfs, "bin"))
    os.makedirs(os.path.join(rootfs, "tmp"))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for tool in ("sh", "sleep", "dd"):
        os.symlink("busybox", os.path.join(rootfs, "bin", tool))
    subprocess.run(["runc", "spec"], cwd=root, check=True)
    with open(os.path.join(root, "config.json")) as f:
        cfg = json.load(f)
    cfg["process"]["terminal"] = False
    cfg["process"]["args"] = args
    cfg["root"]["readonly"] = False
    cfg["linux"].pop("cgroupsPath", None)
    with open(os.path.join(root, "config.json"), "w") as f:
        json.dump(cfg, f)
    return root


# 24 MiB written to a file of the rootfs: page cache charged to the
# container's memory cgroup, then the container idles.
TOUCH_24M = ["sh", "-c", "dd if=/dev/zero of=/tmp/f bs=1M count=24 2>/dev/null; "
             "touch /tmp/ready; exec sleep 600"]


def planned(test, out, gid):
    """The guest GID is a container of one single-threaded process and
    an item of the dry-run plan (a move or a skip with its reason)."""
    g = {g["id"]: g for g in out["snapshot"]["guests"]}[gid]
    test.assertEqual((g["kind"], g["nr_procs"], g["nr_threads"]), ("container", 1, 1), g)
    test.assertIn(gid, {i["guest"] for i in out["plan"]["items"]}, out["plan"])


def wait_file(path, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return False


def run_detached(cmd, cwd, tmp):
    """Run a command that leaves a container running: its output goes to
    a file, not a pipe (the container holds what it inherits, so a pipe
    never ends). None on success, else the end of what it said."""
    out = os.path.join(tmp, "run.out")
    with open(out, "w") as f:
        rc = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                            timeout=30).returncode
    if rc == 0:
        return None
    with open(out) as f:
        return f.read().strip()[-300:]


REASON_RUNC = skip_reason_runc()


@unittest.skipIf(REASON_RUNC, REASON_RUNC or "")
class PlainRunc(itlib.DaemonTest):
    def setUp(self):
        super().setUp()
        self.id = "numaorch-it-runc-%d" % os.getpid()
        self.bundle = busybox_bundle(os.path.join(self.tmp, "bundle"), TOUCH_24M)
        self.addCleanup(self.delete)

    def delete(self):
        subprocess.run(["runc", "delete", "--force", self.id], capture_output=True)

    def test_memory_read_where_proc_says(self):
        """Plain `runc run`: cpuset at /ID, memory below runc's own memory
        cgroup (this machine's shells live in a memory cgroup of their
        own). The daemon reads memory.numa_stat where the container's
        process's /proc/PID/cgroup says, not 0 B with a warning."""
        err = run_detached(["runc", "run", "--detach", self.id], self.bundle, self.tmp)
        if err is not None:
            self.skipTest("runc run fails here: %s" % err)
        self.assertTrue(wait_file(os.path.join(self.bundle, "rootfs", "tmp", "ready")),
                        "the container did not write its 24 MiB")
        state = json.loads(subprocess.run(["runc", "state", self.id], capture_output=True, text=True,
                                          check=True).stdout)
        with open("/proc/%d/cgroup" % state["pid"]) as f:
            cg = dict(l.split(":", 2)[1:] for l in f.read().splitlines())
        cpuset = cg["cpuset"].strip()
        mem_elsewhere = cg["memory"].strip() != cpuset
        d = subprocess.run(self.numaorchd("--once", "--dry-run", "--json", "--socket", "",
                                          "--scope", cpuset),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(d.returncode, 0, d.stderr)
        out = json.loads(d.stdout)
        snap = out["snapshot"]
        guests = {g["id"]: g for g in snap["guests"]}
        self.assertIn("runc-" + self.id, guests, snap)
        g = guests["runc-" + self.id]
        self.assertEqual((g["runtime"], g["name"]), ("runc", self.id))
        planned(self, out, "runc-" + self.id)
        self.assertEqual(g["cgroup"], cpuset)
        self.assertEqual(g["nr_procs"], 1)
        self.assertGreaterEqual(g["mem_total_bytes"], 20 << 20,
                                "memory %s (memory cgroup %s, cpuset %s)" % (g["mem_total_bytes"],
                                                                           cg["memory"], cpuset))
        self.assertEqual([w for w in snap.get("warnings", []) if self.id in w], [])
        print("\n  runc container: cpuset %s, memory cgroup %s%s, %.1f MiB read"
              % (cpuset, cg["memory"].strip(), " (elsewhere)" if mem_elsewhere else "",
                 g["mem_total_bytes"] / 2**20))


def skip_reason_containerd():
    reason = skip_reason_runc()
    if reason:
        return reason
    for tool in ("containerd", "ctr", "containerd-shim-runc-v2"):
        if not shutil.which(tool):
            return "%s is not installed (Debian package containerd)" % tool
    return None


REASON_CONTAINERD = skip_reason_containerd()


@unittest.skipIf(REASON_CONTAINERD, REASON_CONTAINERD or "")
class Containerd(itlib.DaemonTest):
    """A private containerd (its own socket, root and state; no CRI) and
    `ctr run --rootfs` in a namespace of this test's own: the container's
    cgroup is /NAMESPACE/ID, runc's state /run/containerd/runc/NAMESPACE/ID
    (the shim's runc root does not follow containerd's state dir)."""

    def setUp(self):
        super().setUp()
        self.ns = "numaorch-it-ctrd-%d" % os.getpid()
        self.id = "web"
        base = os.path.join(self.tmp, "containerd")
        os.makedirs(base)
        self.sock = os.path.join(base, "containerd.sock")
        cfg = os.path.join(base, "config.toml")
        with open(cfg, "w") as f:
            f.write('version = 2\nroot = "%s/root"\nstate = "%s/state"\n'
                    'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
                    '[grpc]\n  address = "%s"\n[ttrpc]\n  address = ""\n'
                    '[debug]\n  address = ""\n[metrics]\n  address = ""\n' % (base, base, self.sock))
        self.cfg = cfg
        self.log = open(os.path.join(base, "log"), "w")
        self.addCleanup(self.log.close)
        self.addCleanup(self.stop_containerd)
        if not self.start_containerd():
            self.skipTest("containerd does not start here (see its log: %s)" % self.log.name)
        self.rootfs = os.path.join(busybox_bundle(os.path.join(self.tmp, "bundle"), TOUCH_24M), "rootfs")

    def start_containerd(self):
        """True once it answers on its socket."""
        self.ctrd = subprocess.Popen(["containerd", "--config", self.cfg], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log)
        end = time.monotonic() + 15
        while time.monotonic() < end and self.ctrd.poll() is None:
            if self.ctr("version").returncode == 0:
                return True
            time.sleep(0.1)
        return False

    def ctr(self, *args, timeout=30):
        return subprocess.run(["ctr", "--address", self.sock, "--namespace", self.ns] + list(args),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)

    def stop_containerd(self):
        # The task first: its shim exits with it, then containerd.
        self.ctr("task", "kill", "--signal", "KILL", self.id)
        for _ in range(50):
            if self.ctr("task", "delete", self.id).returncode == 0 or \
                    self.ctr("task", "ls", "-q").stdout.strip() == "":
                break
            time.sleep(0.1)
        self.ctr("container", "delete", self.id)
        self.ctr("namespaces", "remove", self.ns)
        if self.ctrd.poll() is None:
            self.ctrd.terminate()
            try:
                self.ctrd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.ctrd.kill()
                self.ctrd.wait()
        for c in os.listdir(itlib.CGROOT):
            d = os.path.join(itlib.CGROOT, c, self.ns)
            if os.path.isdir(d):
                for sub in os.listdir(d):
                    if os.path.isdir(os.path.join(d, sub)):
                        try:
                            os.rmdir(os.path.join(d, sub))
                        except OSError:
                            pass
                try:
                    os.rmdir(d)
                except OSError:
                    pass
        try:
            os.rmdir(os.path.join("/run/containerd/runc", self.ns))
        except OSError:
            pass

    def test_found_by_default(self):
        """With the built-in defaults (no configuration at all), a `ctr
        run` container is a guest: runtime containerd, its id, its
        memory; still the same guest while containerd is stopped and
        after it starts again (the runtime restarting)."""
        out = os.path.join(self.tmp, "ctr-run.out")
        with open(out, "w") as f:
            rc = subprocess.run(["ctr", "--address", self.sock, "--namespace", self.ns, "run", "--detach",
                                 "--rootfs", self.rootfs, self.id, "/bin/sh", "-c", TOUCH_24M[2]],
                                stdin=subprocess.DEVNULL, stdout=f, stderr=f, timeout=30).returncode
        if rc != 0:
            with open(out) as f:
                self.skipTest("ctr run fails here: %s" % f.read().strip()[-300:])
        self.assertTrue(wait_file(os.path.join(self.rootfs, "tmp", "ready")),
                        "the container did not write its 24 MiB")
        rel = "/%s/%s" % (self.ns, self.id)
        empty = itlib.config_file(self.tmp, "")
        shipped = os.path.join(itlib.REPO, "deploy", "numaorchd.conf")
        for cfg in (empty, shipped):
            d = subprocess.run(self.numaorchd("--config", cfg, "--once", "--dry-run", "--json", "--socket", "",
                                              "--scope", "/" + self.ns, "--log-level", "debug"),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(d.returncode, 0, d.stderr)
            out = json.loads(d.stdout)
            snap = out["snapshot"]
            guests = {g["cgroup"]: g for g in snap["guests"]}
            self.assertIn(rel, guests, "%s: %s" % (cfg, d.stderr[-2000:]))
            g = guests[rel]
            self.assertEqual(g["id"], "containerd-" + self.id)
            planned(self, out, g["id"])
            self.assertEqual(g["runtime"], "containerd")
            self.assertEqual(g["name"], self.id)
            self.assertEqual(g["namespace"], self.ns)
            self.assertEqual(g["nr_procs"], 1)
            self.assertGreaterEqual(g["mem_total_bytes"], 20 << 20)
            self.assertEqual([w for w in snap.get("warnings", []) if self.ns in w], [])
        # containerd stopped (its shim keeps the container running) and
        # started again: the same guest throughout, read from the runc
        # state the shim keeps, not from containerd
        task_pid = self.ctr("task", "ls").stdout.split()[-2]
        self.ctrd.terminate()
        self.ctrd.wait(timeout=10)
        for when in ("while containerd is down", "after containerd's restart"):
            if when.startswith("after"):
                self.assertTrue(self.start_containerd(), "containerd did not start again (%s)" % self.log.name)
                self.assertEqual(self.ctr("task", "ls").stdout.split()[-2], task_pid,
                                 "the container did not outlive containerd's restart")
            d = subprocess.run(self.numaorchd("--config", empty, "--once", "--dry-run", "--json", "--socket", "",
                                              "--scope", "/" + self.ns),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(d.returncode, 0, d.stderr)
            guests = {g["cgroup"]: g for g in json.loads(d.stdout)["snapshot"]["guests"]}
            self.assertIn(rel, guests, when)
            self.assertEqual((guests[rel]["id"], guests[rel]["name"]), ("containerd-" + self.id, self.id), when)
        # a cgroup nothing names: the debug log says why it is not a guest
        stray = os.path.join(itlib.CGROOT, "cpuset", self.ns, "stray")
        os.mkdir(stray)
        d = subprocess.run(self.numaorchd("--config", empty, "--once", "--dry-run", "--json", "--socket", "",
                                          "--scope", "/" + self.ns, "--log-level", "debug"),
                           capture_output=True, text=True, timeout=60)
        self.assertIn("cgroup /%s/stray: not a guest: no runtime's name, no runc or containerd state, "
                      "no configured parent names it" % self.ns, d.stderr)


PODMAN = ["podman", "--cgroup-manager=cgroupfs", "--events-backend=file"]


def skip_reason_podman():
    reason = skip_reason_runc()
    if reason:
        return reason
    if not shutil.which("podman"):
        return "podman is not installed (Debian package podman)"
    return None


REASON_PODMAN = skip_reason_podman()


@unittest.skipIf(REASON_PODMAN, REASON_PODMAN or "")
class Podman(itlib.DaemonTest):
    """podman + runc with the cgroupfs manager (no systemd here), from an
    image imported from a busybox rootfs: /libpod_parent/libpod-<id>, its
    name in containers/storage's containers.json."""

    def setUp(self):
        super().setUp()
        self.image = "localhost/numaorch-it-busybox:%d" % os.getpid()
        self.name = "numaorch-it-pm-%d" % os.getpid()
        rootfs = os.path.join(busybox_bundle(os.path.join(self.tmp, "bundle"), TOUCH_24M), "rootfs")
        tar = os.path.join(self.tmp, "rootfs.tar")
        subprocess.run(["tar", "-C", rootfs, "-cf", tar, "."], check=True)
        p = subprocess.run(PODMAN + ["import", tar, self.image], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            self.skipTest("podman import fails here: %s" % p.stderr.strip()[-300:])
        self.addCleanup(subprocess.run, PODMAN + ["rmi", "--force", self.image], capture_output=True)

    def podman(self, *args):
        return subprocess.run(PODMAN + list(args), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)

    def scan(self, cgroup):
        d = subprocess.run(self.numaorchd("--once", "--dry-run", "--json", "--socket", "", "--scope", cgroup),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(d.returncode, 0, d.stderr)
        out = json.loads(d.stdout)
        for g in out["snapshot"]["guests"]:
            if g["cgroup"] == cgroup:
                planned(self, out, g["id"])
        return {g["cgroup"]: g for g in out["snapshot"]["guests"]}

    def test_named_and_renamed(self):
        """Shown by its podman name; renamed, the same guest (its id) with
        the new name."""
        err = run_detached(PODMAN + ["run", "--detach", "--name", self.name, "--runtime", "runc",
                                     "--network", "none", "--ulimit", "nofile=1024:1024",
                                     "--ulimit", "nproc=1024:1024", self.image, "/bin/sh", "-c",
                                     "exec sleep 600"], self.tmp, self.tmp)
        # by its name when the test ends (it renames it)
        self.addCleanup(lambda: self.podman("rm", "--force", "--time", "0", self.name))
        if err is not None:
            self.skipTest("podman run fails here: %s" % err)
        cid = self.podman("inspect", "--format", "{{.Id}}", self.name).stdout.strip()
        rel = "/libpod_parent/libpod-" + cid
        g = self.scan(rel)[rel]
        self.assertEqual((g["id"], g["runtime"], g["name"]), ("podman-" + cid, "podman", self.name))
        self.assertEqual(g["nr_procs"], 1)
        p = self.podman("rename", self.name, self.name + "-b")
        if p.returncode != 0:
            self.skipTest("podman rename fails here: %s" % p.stderr.strip()[-300:])
        self.name += "-b"
        g = self.scan(rel)[rel]
        self.assertEqual((g["id"], g["name"]), ("podman-" + cid, self.name))


if __name__ == "__main__":
    unittest.main()

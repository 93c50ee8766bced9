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
        snap = json.loads(d.stdout)["snapshot"]
        guests = {g["id"]: g for g in snap["guests"]}
        self.assertIn("runc-" + self.id, guests, snap)
        g = guests["runc-" + self.id]
        self.assertEqual(g["runtime"], "runc")
        self.assertEqual(g["cgroup"], cpuset)
        self.assertEqual(g["nr_procs"], 1)
        self.assertGreaterEqual(g["mem_total_bytes"], 20 << 20,
                                "memory %s (memory cgroup %s, cpuset %s)" % (g["mem_total_bytes"],
                                                                           cg["memory"], cpuset))
        self.assertEqual([w for w in snap.get("warnings", []) if self.id in w], [])
        print("\n  runc container: cpuset %s, memory cgroup %s%s, %.1f MiB read"
              % (cpuset, cg["memory"].strip(), " (elsewhere)" if mem_elsewhere else "",
                 g["mem_total_bytes"] / 2**20))


if __name__ == "__main__":
    unittest.main()

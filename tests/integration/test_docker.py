"""numaorchd against containers started by a real dockerd (issue 42).

A private dockerd (Debian's docker.io): its own data root, exec root,
pidfile and socket in the test's temporary directory, its own containerd
(started by dockerd under the exec root), no bridge, no iptables rules,
the cgroupfs cgroup driver and the vfs storage driver (works on any
filesystem; the image is a 2 MB busybox). The image is `docker import`ed
from the same busybox rootfs the other runtimes' tests build (no
registry). Containers are named and placed in /docker/<id>, as a host's
docker does.

The private data root is set the way a host moves docker's: "data-root"
in a daemon.json, given to dockerd with --config-file. The agent reads
that same file ([containers] docker_config names it, as dockerd's
--config-file does; /etc/docker/daemon.json by default) without being
told the data root; [containers] docker_root, which a dockerd started
with --data-root needs, still wins. With neither it looks in
/var/lib/docker, and shows the containers by their ids.

Skips with the reason where dockerd cannot run: not root, docker.io not
installed, or a dockerd that refuses this host (its log's last lines are
printed).
"""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

import apilib
import itlib
from test_runtimes import busybox_bundle, skip_reason_runc

DOCKER_CLI = "/usr/bin/docker"   # docker.io's; another docker earlier on PATH may be any version
MEMHOG_SRC = os.path.join(itlib.REPO, "tests", "integration", "memhog.c")


def skip_reason_docker():
    reason = skip_reason_runc()
    if reason:
        return reason
    if not shutil.which("dockerd") or not os.path.exists(DOCKER_CLI):
        return "dockerd or %s missing (Debian package docker.io)" % DOCKER_CLI
    return None


REASON = skip_reason_docker()


def static_memhog(dest):
    """memhog (its threads: a guest with more threads than processes)
    built static for the busybox image; False if this machine's compiler
    cannot link statically."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return False
    return subprocess.run([cc, "-static", "-O2", "-pthread", "-o", dest, MEMHOG_SRC],
                          capture_output=True).returncode == 0


def mounts_under(path):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp == path or mp.startswith(path + "/"):
                out.append(mp)
    return sorted(out, key=len, reverse=True)


class LiveDaemon(apilib.Daemon):
    """apilib's daemon on the live host (no --root), dry run, a cycle a
    second: each /v1/guests answer is at most a cycle or two old."""

    def args(self):
        a = super().args()
        i = a.index("--root")
        del a[i:i + 2]
        return a + ["--dry-run", "--interval", "1", "--scope", "/docker"]


@unittest.skipIf(REASON, REASON or "")
class Docker(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t0 = time.monotonic()
        cls.base = itlib.mktemp()
        cls.addClassCleanup(shutil.rmtree, cls.base, True)
        cls.data = os.path.join(cls.base, "data")
        cls.exec_root = os.path.join(cls.base, "exec")
        cls.sock = os.path.join(cls.base, "docker.sock")
        cls.pidfile = os.path.join(cls.base, "docker.pid")
        cls.logpath = os.path.join(cls.base, "dockerd.log")
        cls.daemon_json = itlib.config_file(cls.base, json.dumps({"data-root": cls.data}) + "\n",
                                            "daemon.json")
        # /docker, the cgroupfs driver's parent: removed at the end only
        # if this test made it (a host's dockerd may own it).
        cls.made_parent = [c for c in os.listdir(itlib.CGROOT)
                           if os.path.isdir(os.path.join(itlib.CGROOT, c))
                           and not os.path.isdir(os.path.join(itlib.CGROOT, c, "docker"))]
        cls.addClassCleanup(cls.cleanup_host)
        cls.dockerd = None
        why = cls.start_dockerd()
        if why:
            raise unittest.SkipTest("dockerd does not start here: %s" % why)
        cls.image = "numaorch-it-busybox:%d" % os.getpid()
        rootfs = os.path.join(busybox_bundle(os.path.join(cls.base, "bundle"), ["true"]), "rootfs")
        cls.have_memhog = static_memhog(os.path.join(rootfs, "bin", "memhog"))
        tar = os.path.join(cls.base, "rootfs.tar")
        subprocess.run(["tar", "-C", rootfs, "-cf", tar, "."], check=True)
        p = cls.docker("import", tar, cls.image)
        if p.returncode != 0:
            raise unittest.SkipTest("docker import fails here: %s" % p.stderr.strip()[-300:])

    @classmethod
    def docker(cls, *args, timeout=60):
        return subprocess.run([DOCKER_CLI, "-H", "unix://" + cls.sock] + list(args), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)

    @classmethod
    def start_dockerd(cls):
        """Start (or restart) the private dockerd; None once it answers,
        else why not (the end of its log)."""
        log = open(cls.logpath, "a")
        cls.dockerd = subprocess.Popen(
            ["dockerd", "--exec-root", cls.exec_root, "--pidfile", cls.pidfile,
             "-H", "unix://" + cls.sock, "--config-file", cls.daemon_json,
             "--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
             "--exec-opt", "native.cgroupdriver=cgroupfs", "--storage-driver=vfs",
             # containers outlive a dockerd restart, as on hosts that upgrade docker
             "--live-restore"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        end = time.monotonic() + 30
        while time.monotonic() < end and cls.dockerd.poll() is None:
            if cls.docker("version", timeout=10).returncode == 0:
                return None
            time.sleep(0.1)
        with open(cls.logpath) as f:
            tail = f.read().strip().splitlines()[-3:]
        return "exit %s: %s" % (cls.dockerd.poll(), " | ".join(tail))

    @classmethod
    def stop_dockerd(cls):
        """SIGTERM, as an init system stops it; its containerd goes with it."""
        if cls.dockerd and cls.dockerd.poll() is None:
            cls.dockerd.terminate()
            try:
                cls.dockerd.wait(timeout=30)
            except subprocess.TimeoutExpired:
                cls.dockerd.kill()
                cls.dockerd.wait()

    @classmethod
    def cleanup_host(cls):
        if cls.dockerd and cls.dockerd.poll() is not None:
            # a test that failed while dockerd was down: its containers
            # live on (live restore) until a dockerd removes them
            cls.start_dockerd()
        if cls.dockerd and cls.dockerd.poll() is None:
            ids = cls.docker("ps", "-aq").stdout.split()
            if ids:
                cls.docker("rm", "--force", *ids)
            cls.docker("rmi", "--force", cls.image)
        cls.stop_dockerd()
        # dockerd's own containerd, should it have outlived dockerd
        try:
            with open(os.path.join(cls.exec_root, "containerd", "containerd.pid")) as f:
                pid = int(f.read().strip())
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if cls.exec_root.encode() in f.read():
                    os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass
        for mp in mounts_under(cls.base):
            subprocess.run(["umount", "-l", mp], capture_output=True)
        for c in cls.made_parent:
            d = os.path.join(itlib.CGROOT, c, "docker")
            try:
                os.rmdir(d)
            except OSError:
                pass
        print("\n  docker tests: %.1f s with dockerd's start, image import and stop"
              % (time.monotonic() - cls.t0))

    # --- per test ---------------------------------------------------------
    def setUp(self):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.state = os.path.join(self.tmp, "state")
        # no docker_root: the agent finds the data root in dockerd's daemon.json
        self.conf = "[containers]\ndocker_config = %s\n" % self.daemon_json

    def run_container(self, name, *args, cmd=("sleep", "600")):
        p = self.docker("run", "--detach", "--name", name, "--network", "none", *args, self.image, *cmd)
        self.addCleanup(self.docker, "rm", "--force", name)
        if p.returncode != 0:
            self.skipTest("docker run fails here: %s" % p.stderr.strip()[-300:])
        return p.stdout.strip()

    def once(self, conf):
        cfg = itlib.config_file(self.tmp, conf)
        d = subprocess.run(itlib.numaorchd("--config", cfg, "--once", "--dry-run", "--json", "--socket", "",
                                           "--scope", "/docker", state_dir=self.state),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(d.returncode, 0, d.stderr)
        return json.loads(d.stdout)

    def test_discovered_named_and_planned(self):
        """A plain container and one pinned like a performance container
        (--cpuset-cpus/--cpuset-mems, a few threads): each a guest of
        kind container, runtime docker, by its docker name and its id,
        with its processes and threads, and in the dry-run plan."""
        cpu = max(os.sched_getaffinity(0))
        web = self.run_container("numaorch-it-web")
        if self.have_memhog:
            perf_cmd, procs, threads = ("memhog", "--mib", "8", "--threads", "4"), 1, 4
        else:
            print("\n  no static memhog (cc -static fails): a container of 3 processes instead")
            perf_cmd, procs, threads = ("sh", "-c", "sleep 600 & sleep 600 & exec sleep 600"), 3, 3
        perf = self.run_container("numaorch-it-perf", "--cpuset-cpus", str(cpu), "--cpuset-mems", "0",
                                  cmd=perf_cmd)
        end = time.monotonic() + 20
        while self.have_memhog and "ready" not in self.docker("logs", perf).stdout:
            self.assertLess(time.monotonic(), end, "memhog did not start in the container")
            time.sleep(0.05)
        out = self.once(self.conf)
        snap = out["snapshot"]
        guests = {g["id"]: g for g in snap["guests"]}
        for cid, name, np, nt in ((web, "numaorch-it-web", 1, 1), (perf, "numaorch-it-perf", procs, threads)):
            self.assertIn("docker-" + cid, guests, snap)
            g = guests["docker-" + cid]
            self.assertEqual((g["kind"], g["runtime"], g["name"], g["cgroup"]),
                             ("container", "docker", name, "/docker/" + cid))
            self.assertEqual((g["nr_procs"], g["nr_threads"]), (np, nt))
        self.assertEqual(guests["docker-" + perf]["cpus"], str(cpu))
        self.assertEqual(guests["docker-" + perf]["mems"], "0")
        planned = {i["guest"] for i in out["plan"]["items"]}
        self.assertLessEqual({"docker-" + web, "docker-" + perf}, planned, out["plan"])
        self.assertEqual([w for w in snap.get("warnings", []) if web in w or perf in w], [])
        # docker_root set: it wins over the daemon.json
        for conf, name in (("docker_root = %s\n" % self.data, "numaorch-it-web"),
                           ("docker_root = %s\n" % os.path.join(self.base, "elsewhere"), web)):
            g = {g["id"]: g for g in self.once(self.conf + conf)["snapshot"]["guests"]}["docker-" + web]
            self.assertEqual(g["name"], name, conf)
        # with neither key the agent reads /etc/docker/daemon.json (the
        # host's; any data root it names is not this dockerd's) or looks
        # in /var/lib/docker: found, by the id
        g = {g["id"]: g for g in self.once("")["snapshot"]["guests"]}["docker-" + web]
        self.assertEqual(g["name"], web)

    def guests(self, d):
        r = d.get("/v1/guests?runtime=docker")
        self.assertEqual(r.status, 200, r)
        return {g["id"]: g for g in r.json()["guests"]}

    def cycles_later(self, d, n=2):
        """Wait until N more cycles have ended (the first may have begun
        before what the test just did)."""
        c0 = d.get("/v1/status").json()["cycles"]
        end = time.monotonic() + 30
        while d.get("/v1/status").json()["cycles"] < c0 + n:
            self.assertLess(time.monotonic(), end, "no cycle in 30 s")
            time.sleep(0.05)

    def test_renamed_while_running(self):
        """`docker rename` of a running container: the same guest (its id)
        shows the new name within a few cycles, the old one nowhere."""
        cid = self.run_container("numaorch-it-before")
        d = LiveDaemon(self.tmp, "/", conf="[agent]\nsample = 0.05\n" + self.conf)
        self.addCleanup(d.stop)
        d.start()
        self.cycles_later(d, 1)
        self.assertEqual(self.guests(d)["docker-" + cid]["name"], "numaorch-it-before")
        p = self.docker("rename", "numaorch-it-before", "numaorch-it-after")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.addCleanup(self.docker, "rm", "--force", "numaorch-it-after")
        for _ in range(5):
            self.cycles_later(d, 1)
            if self.guests(d)["docker-" + cid]["name"] == "numaorch-it-after":
                break
        g = self.guests(d)
        self.assertEqual(g["docker-" + cid]["name"], "numaorch-it-after", "5 cycles after the rename")
        self.assertEqual([x for x in g.values() if x["name"] == "numaorch-it-before"], [])
        self.assertTrue(d.alive())

    def test_stopped_mid_run_and_dockerd_restarted(self):
        """With the daemon running: a container stopped between cycles is
        gone from the next /v1/guests without a warning; dockerd stopped
        and started again (live restore: the container runs on) leaves the
        other one a guest, the same id and name, throughout."""
        keep = self.run_container("numaorch-it-keep")
        stop = self.run_container("numaorch-it-stop")
        d = LiveDaemon(self.tmp, "/", conf="[agent]\nsample = 0.05\n" + self.conf)
        self.addCleanup(d.stop)
        d.start()
        self.cycles_later(d, 1)
        g = self.guests(d)
        self.assertEqual(g["docker-" + keep]["name"], "numaorch-it-keep")
        self.assertEqual(g["docker-" + stop]["name"], "numaorch-it-stop")

        p = self.docker("stop", "--time", "0", stop)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.cycles_later(d)
        g = self.guests(d)
        self.assertNotIn("docker-" + stop, g)
        self.assertIn("docker-" + keep, g)
        self.assertEqual([w for w in d.get("/v1/status").json()["warnings"] if stop in w], [])

        pid = self.docker("inspect", "--format", "{{.State.Pid}}", keep).stdout.strip()
        self.stop_dockerd()
        self.cycles_later(d)
        self.assertEqual(self.guests(d)["docker-" + keep]["name"], "numaorch-it-keep",
                         "while dockerd is down")
        why = self.start_dockerd()
        self.assertIsNone(why, "dockerd did not start again")
        self.assertEqual(self.docker("inspect", "--format", "{{.State.Pid}}", keep).stdout.strip(), pid,
                         "the container did not outlive dockerd's restart")
        self.cycles_later(d)
        g = self.guests(d)
        self.assertEqual(g["docker-" + keep]["name"], "numaorch-it-keep", "after dockerd's restart")
        self.assertEqual([w for w in d.get("/v1/status").json()["warnings"] if keep in w], [])
        self.assertTrue(d.alive())
        log = d.logtext()
        self.assertEqual([l for l in log.splitlines() if ("[error]" in l or "[warn]" in l) and
                          (keep in l or stop in l)], [], log[-2000:])


if __name__ == "__main__":
    unittest.main()

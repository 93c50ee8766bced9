"""The image `make image` builds, run with podman as the DaemonSet in
deploy/kubernetes/base runs it: privileged, the host's PID namespace, the
host's /sys/fs/cgroup and /sys/devices/system, the ConfigMap's drop-ins as
the directory /etc/numaorch/numaorchd.conf.d, the socket and state
directories as host paths (temporary ones here, so a numaorchd already on
this host keeps its own), the manifest's command. Two containers started
with podman + runc on a busybox rootfs are the workload; the checks are made
from outside, through the socket on the host path: health, the probe the
DaemonSet runs, discovery of both containers, and a dry-run plan that
writes nothing. Whatever cannot run here skips with the reason.

Run by `make check-image` (which builds the image first)."""
import http.client
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import itlib  # noqa: E402
import test_runtimes as rt  # noqa: E402

K8S = os.path.join(itlib.REPO, "deploy", "kubernetes")
PODMAN = rt.PODMAN


def version():
    p = subprocess.run(["dpkg-parsechangelog", "-l", os.path.join(itlib.REPO, "deploy", "debian", "changelog"),
                        "-S", "Version"], capture_output=True, text=True)
    return p.stdout.strip() or "0.1.0"


IMAGE = os.environ.get("IMAGE", "localhost/numaorch:" + version())


def skip_reason():
    if os.geteuid() != 0:
        return "needs root to run privileged containers"
    try:
        import yaml  # noqa: F401
    except ImportError:
        return "python3 has no yaml module (Debian: python3-yaml)"
    for tool, pkg in (("podman", "podman"), ("runc", "runc")):
        if not shutil.which(tool):
            return "%s is not installed (Debian package %s)" % (tool, pkg)
    if not os.path.exists(rt.BUSYBOX) or subprocess.run(["ldd", rt.BUSYBOX], capture_output=True).returncode == 0:
        return "needs a static busybox for the workload's rootfs (Debian package busybox-static)"
    p = subprocess.run(PODMAN + ["image", "exists", IMAGE], capture_output=True, text=True)
    if p.returncode != 0:
        return "image %s is not in podman's storage (make image builds it)%s" % (
            IMAGE, (": " + p.stderr.strip()[-200:]) if p.stderr.strip() else "")
    return None


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def api(sock, method, path, body=None, timeout=60):
    c = UnixHTTP(sock, timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        c.close()


def podman(*args, timeout=120):
    return subprocess.run(PODMAN + list(args), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def load_base():
    """The base's DaemonSet and its ConfigMap's files, as kustomize puts
    them together (the files named in configMapGenerator)."""
    import yaml
    base = os.path.join(K8S, "base")
    with open(os.path.join(base, "kustomization.yaml")) as f:
        kust = yaml.safe_load(f)
    with open(os.path.join(base, "daemonset.yaml")) as f:
        ds = yaml.safe_load(f)
    files = {}
    for gen in kust["configMapGenerator"]:
        if gen["name"] == "numaorchd-config":
            for name in gen["files"]:
                with open(os.path.join(base, name)) as f:
                    files[name] = f.read()
    return ds, files


REASON = skip_reason()


@unittest.skipIf(REASON, REASON or "")
class DaemonSetImage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="numaorch-image-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        tag = "%d" % os.getpid()
        cls.workload_image = "localhost/numaorch-it-busybox:img-" + tag
        cls.names = ["numaorch-img-a-" + tag, "numaorch-img-b-" + tag]
        cls.agent = "numaorch-img-agent-" + tag

        # The workload: two containers on a busybox rootfs, one holding 24 MiB.
        rootfs = os.path.join(rt.busybox_bundle(os.path.join(cls.tmp, "bundle"), rt.TOUCH_24M), "rootfs")
        tar = os.path.join(cls.tmp, "rootfs.tar")
        subprocess.run(["tar", "-C", rootfs, "-cf", tar, "."], check=True)
        p = podman("import", tar, cls.workload_image)
        if p.returncode != 0:
            raise unittest.SkipTest("podman import fails here: %s" % p.stderr.strip()[-300:])
        cls.addClassCleanup(podman, "rmi", "--force", cls.workload_image)
        cls.ids = {}
        for name, cmd in zip(cls.names, (rt.TOUCH_24M[2], "exec sleep 600")):
            cls.addClassCleanup(podman, "rm", "--force", "--time", "0", name)
            err = rt.run_detached(PODMAN + ["run", "--detach", "--name", name, "--runtime", "runc",
                                            "--network", "none", "--ulimit", "nofile=1024:1024",
                                            "--ulimit", "nproc=1024:1024", cls.workload_image,
                                            "/bin/sh", "-c", cmd], cls.tmp, cls.tmp)
            if err is not None:
                raise unittest.SkipTest("podman run fails here: %s" % err)
            cls.ids[name] = podman("inspect", "--format", "{{.Id}}", name).stdout.strip()
        end = time.monotonic() + 30
        while podman("exec", cls.names[0], "/bin/sh", "-c", "test -f /tmp/ready").returncode != 0:
            if time.monotonic() > end:
                raise AssertionError("the workload did not write its 24 MiB")
            time.sleep(0.2)
        cls.cgroups = {name: "/libpod_parent/libpod-" + cid for name, cid in cls.ids.items()}

        # The agent, mounted as the manifest says.
        ds, files = load_base()
        spec = ds["spec"]["template"]["spec"]
        c = spec["containers"][0]
        cls.probe = c["readinessProbe"]["exec"]["command"]
        confd = os.path.join(cls.tmp, "conf.d")
        os.makedirs(confd)
        for name, text in files.items():
            itlib.write(os.path.join(confd, name), text)
        # The test's own drop-in, read last: only its two containers, and
        # advise (the cycles the agent runs by itself move nothing).
        itlib.write(os.path.join(confd, "90-test.conf"),
                    "[agent]\nmode = advise\ninterval = 1\n[scope]\ncgroup =\n" +
                    "".join("cgroup = %s\n" % cg for cg in cls.cgroups.values()))
        cls.run_dir = os.path.join(cls.tmp, "run")
        # The agent's own directories and the kubelet's (this host runs no
        # kubelet) are temporary ones; the host's cgroupfs and sysfs are real.
        remap = {"/run/numaorch": cls.run_dir, "/var/lib/numaorch": os.path.join(cls.tmp, "state"),
                 "/var/log/pods": os.path.join(cls.tmp, "pods"), "/var/lib/kubelet": os.path.join(cls.tmp, "kubelet")}
        vols = {v["name"]: v for v in spec["volumes"]}
        # runc (crun does not start on a cgroup v1 hybrid host); rlimits
        # set, as for the workload: podman's defaults may pass what this
        # machine allows (the agent needs the descriptors: 1024 connections
        # on each listener).
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        args = ["run", "--detach", "--name", cls.agent, "--runtime", "runc", "--network", "none",
                "--cgroupns", "host", "--ulimit", "nofile=%d:%d" % (nofile, nofile),
                "--ulimit", "nproc=4096:4096"]
        if spec.get("hostPID"):
            args += ["--pid", "host"]
        if c["securityContext"].get("privileged"):
            args += ["--privileged"]
        for m in c["volumeMounts"]:
            v = vols[m["name"]]
            if "configMap" in v:
                src = confd
            else:
                src = remap.get(v["hostPath"]["path"], v["hostPath"]["path"])
                if src != v["hostPath"]["path"]:
                    os.makedirs(src, exist_ok=True)
            args += ["--volume", "%s:%s%s" % (src, m["mountPath"], ":ro" if m.get("readOnly") else "")]
        args += ["--entrypoint", c["command"][0], IMAGE] + c["command"][1:]
        cls.addClassCleanup(podman, "rm", "--force", "--time", "5", cls.agent)
        p = podman(*args)
        if p.returncode != 0:
            raise unittest.SkipTest("podman cannot run the image here: %s" % p.stderr.strip()[-300:])
        cls.sock = os.path.join(cls.run_dir, "api.sock")
        cls.health = None
        end = time.monotonic() + 90
        while time.monotonic() < end:
            if os.path.exists(cls.sock):
                try:
                    status, body = api(cls.sock, "GET", "/v1/health", timeout=10)
                    cls.health = (status, body)
                    if status == 200 and body.get("ready"):
                        break
                except (OSError, ValueError, http.client.HTTPException):
                    pass
            state = podman("inspect", "--format", "{{.State.Status}}", cls.agent).stdout.strip()
            if state not in ("running", "created", "configured"):
                break
            time.sleep(0.5)

    def logs(self):
        return podman("logs", self.agent).stderr[-3000:]

    def test_health(self):
        self.assertIsNotNone(self.health, "no answer on %s; the agent said:\n%s" % (self.sock, self.logs()))
        status, body = self.health
        self.assertEqual(status, 200, body)
        self.assertEqual(body["status"], "ok")
        self.assertTrue(body["ready"], "not ready after 90 s:\n%s" % self.logs())
        # the DaemonSet's probe, run in the container as the kubelet runs it
        p = podman("exec", self.agent, *self.probe)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_discovers_the_containers(self):
        status, body = api(self.sock, "GET", "/v1/guests")
        self.assertEqual(status, 200, body)
        guests = {g["cgroup"]: g for g in body["guests"]}
        for name, cg in self.cgroups.items():
            self.assertIn(cg, guests, "%s not found; the agent said:\n%s" % (name, self.logs()))
            g = guests[cg]
            # By its id: the DaemonSet mounts what names a Kubernetes node's
            # pods (/var/log/pods), not podman's storage, so a podman
            # container outside Kubernetes has no other name here
            # (tests/integration/test_runtimes.py checks podman's names).
            self.assertEqual((g["id"], g["kind"], g["runtime"], g["name"]),
                             ("podman-" + self.ids[name], "container", "podman", self.ids[name]))
            status, one = api(self.sock, "GET", "/v1/guests/" + g["id"])
            self.assertEqual(status, 200, one)
            self.assertEqual((one["nr_procs"], one["nr_threads"]), (1, 1), one)
        a = guests[self.cgroups[self.names[0]]]
        self.assertGreaterEqual(a["mem_total_bytes"], 20 << 20, a)
        # only what the scope names: not the agent's own container
        self.assertEqual(len(guests), 2, sorted(guests))

    def test_dry_run_plan(self):
        def cpusets():
            return {cg: itlib.read(os.path.join(itlib.CGROOT, "cpuset", cg.lstrip("/"), "cpuset.cpus")).strip()
                    for cg in self.cgroups.values()}
        before = cpusets()
        status, body = api(self.sock, "POST", "/v1/rebalance", {"dry_run": True, "verbose": True})
        self.assertEqual(status, 200, body)
        self.assertTrue(body["dry_run"])
        self.assertFalse(body["applied"])
        self.assertEqual(body["summary"]["moved"], 0)
        items = {i["guest"]: i for i in body["plan"]["items"]}
        for name in self.names:
            self.assertIn("podman-" + self.ids[name], items, body["plan"])
            self.assertIn(items["podman-" + self.ids[name]]["kind"], ("move", "skip", "settled"))
        self.assertEqual(cpusets(), before, "a dry run wrote a cpuset")
        print("\n  image %s: %s; plan: %s" % (
            IMAGE, image_size(),
            ", ".join("%s %s%s" % (n, items["podman-" + self.ids[n]]["kind"],
                                   (" " + items["podman-" + self.ids[n]].get("skip", "")).rstrip())
                      for n in self.names)))


def image_size():
    p = podman("image", "inspect", "--format", "{{.Size}}", IMAGE)
    try:
        return "%.1f MiB" % (int(p.stdout.strip()) / 2**20)
    except ValueError:
        return "size unknown"


if __name__ == "__main__":
    unittest.main(verbosity=2)

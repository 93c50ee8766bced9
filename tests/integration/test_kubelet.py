"""Kubernetes on a fixture host (no root needed): pods shown by namespace
and name, and the kubelet's CPU and Memory Manager checkpoints respected
(issue 42). The real numaorchd serves the fixture root's cgroup v2 tree
(tests/fixtures/cg-v2: two pods, besteffort and burstable, systemd
driver) with /var/log/pods and /var/lib/kubelet added in the kubelet's
own formats."""
import json
import os
import shutil
import subprocess
import threading
import time
import unittest

import apilib
import itlib

REASON = apilib.skip_reason() or (None if os.path.exists(apilib.NUMAORCHCTL) else
                                  "build/numaorchctl missing (run make)")

BESTEFFORT = "0f9e8d7c-6b5a-4c3d-8e2f-a1b2c3d4e5f6"
BURSTABLE = "8c3e0f1a-5b6d-4e2f-9a7c-1d2e3f4a5b6c"
GUARANTEED = "5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"   # tests/fixtures/kubelet: CPUs 2,4 and node 0
KUBELET_FIX = os.path.join(apilib.FIX, "kubelet")


def put(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    itlib.write(path, text)


def add_pod_logs(root):
    for d in ("shop_cart-7d9f_" + BURSTABLE, "kube-system_coredns-x2x4q_" + BESTEFFORT):
        put(root, "var/log/pods/%s/c/0.log" % d, "")


@unittest.skipIf(REASON, REASON or "")
class PodNames(apilib.ClassDaemon):
    @classmethod
    def prepare_root(cls, root):
        add_pod_logs(root)

    def test_api_and_cli(self):
        r = self.d.get("/v1/guests?runtime=kubernetes")
        self.assertEqual(r.status, 200)
        guests = {g["id"]: g for g in r.json()["guests"]}
        g = guests["kubernetes-" + BURSTABLE]
        self.assertEqual((g["name"], g["namespace"], g["pod"]), ("shop/cart-7d9f", "shop", "cart-7d9f"))
        g = self.d.get("/v1/guests/kubernetes-" + BESTEFFORT).json()
        self.assertEqual((g["name"], g["namespace"], g["pod"]),
                         ("kube-system/coredns-x2x4q", "kube-system", "coredns-x2x4q"))
        out = self.d.ctl("guests", "--runtime", "kubernetes").stdout.splitlines()
        self.assertEqual(out[0].split()[:3], ["GUEST", "NAME", "KIND"])
        self.assertTrue(any(l.split()[:2] == ["kubernetes-" + BURSTABLE, "shop/cart-7d9f"] for l in out), out)
        self.assertIn("name kube-system/coredns-x2x4q, namespace kube-system",
                      self.d.ctl("guest", "kubernetes-" + BESTEFFORT).stdout)

    def test_metrics(self):
        """numaorch_guest_info carries the names, to join on guest."""
        body = self.d.get("/metrics").body
        self.assertIn(('numaorch_guest_info{guest="kubernetes-%s",kind="container",runtime="kubernetes",name="shop/cart-7d9f",'
                       'namespace="shop",pod="cart-7d9f",owner=""} 1\n' % BURSTABLE).encode(), body)
        promtool = shutil.which("promtool")
        if promtool:
            p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


def add_guaranteed_pod(root):
    """A Guaranteed pod (systemd driver: kubepods-pod<uid>.slice right
    under kubepods.slice), a copy of the fixture's burstable one."""
    cg = os.path.join(root, "sys", "fs", "cgroup", "kubepods.slice")
    src = os.path.join(cg, "kubepods-burstable.slice",
                       "kubepods-burstable-pod%s.slice" % BURSTABLE.replace("-", "_"))
    shutil.copytree(src, os.path.join(cg, "kubepods-pod%s.slice" % GUARANTEED.replace("-", "_")))


def kubelet_writes(root, name, fixture):
    """Replace a checkpoint the way the kubelet does: a new file renamed
    over the old one."""
    d = os.path.join(root, "var", "lib", "kubelet")
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ".%s.tmp" % name)
    shutil.copyfile(os.path.join(KUBELET_FIX, fixture), tmp)
    os.rename(tmp, os.path.join(d, name))


@unittest.skipIf(REASON, REASON or "")
class KubeletPlacer(unittest.TestCase):
    """The kubelet's CPU and Memory Manager checkpoints in its own format;
    [kubelet] reserved_cpus = 1. Node 0 is CPUs 0,2,4,6, node 1 1,3,5,7:
    the shared pool (defaultCpuSet 0-1,3,5-7 but CPU 1) is 6 on node 0,
    3,5,7 on node 1."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = itlib.mktemp()
        try:
            cls.root = apilib.compose_root(cls.tmp)
            add_guaranteed_pod(cls.root)
            kubelet_writes(cls.root, "cpu_manager_state", "cpu_manager_state")
            kubelet_writes(cls.root, "memory_manager_state", "memory_manager_state")
            cls.d = apilib.Daemon(cls.tmp, cls.root, binary=itlib.NUMAORCHD_TEST,
                                  conf="[agent]\nsample = 0.05\n[kubelet]\nreserved_cpus = 1\n").start()
        except BaseException:
            shutil.rmtree(cls.tmp, True)
            raise

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        shutil.rmtree(cls.tmp, True)
        if rc != 0:
            raise AssertionError("numaorchd exited %d" % rc)

    def plan(self):
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True, "verbose": True})
        self.assertEqual(r.status, 200, r.body)
        return {i["guest"]: i for i in r.json()["plan"]["items"]}

    def cycle(self):
        """A real cycle: the guests' view is the last cycle's."""
        r = self.d.request("POST", "/v1/rebalance", {})
        self.assertEqual(r.status, 200, r.body)

    def test_owned_pod_never_moved(self):
        self.cycle()
        g = self.d.get("/v1/guests/kubernetes-" + GUARANTEED).json()
        self.assertEqual(g["owner"], "kubelet")
        self.assertEqual(g["owner_reason"], "the kubelet's CPU Manager gave app exclusive CPUs 2,4; "
                         "the kubelet's Memory Manager binds app to NUMA node 0")
        it = self.plan()["kubernetes-" + GUARANTEED]
        self.assertEqual((it["kind"], it["skip"]), ("skip", "owned"), it)
        self.assertIn("placed by the kubelet, never moved: the kubelet's CPU Manager", it["detail"])
        # the decision record says so too
        self.cycle()
        recs = [r for r in self.d.get("/v1/decisions?guest=kubernetes-%s&limit=1000" % GUARANTEED).json()
                ["decisions"] if not r["dry_run"]]
        self.assertTrue(recs)
        self.assertTrue(all(r.get("skip_reason") == "owned" for r in recs), recs)
        self.assertIn("the kubelet's Memory Manager binds app to NUMA node 0", recs[-1]["detail"])
        writes = apilib.slurp(os.path.join(self.root, "sys", "fs", "cgroup", ".numaorch-writes"))
        self.assertNotIn(GUARANTEED.replace("-", "_"), writes)

    def test_shared_pool(self):
        """The burstable and best-effort pods go only to the shared pool:
        never onto the exclusive CPUs 2,4 nor the reserved CPU 1. Both
        belong on node 1 (most of their memory): 3,5,7, not 1,3,5,7."""
        self.cycle()
        for uid in (BURSTABLE, BESTEFFORT):
            g = self.d.get("/v1/guests/kubernetes-" + uid).json()
            self.assertNotIn("owner", g)

        def cpus_of(text):
            cpus = set()
            for part in text.split(","):
                a, _, b = part.partition("-")
                cpus |= set(range(int(a), int(b or a) + 1))
            return cpus
        seen = []
        for gid, it in self.plan().items():
            if gid.startswith("kubernetes-") and it["kind"] == "move" and it.get("to_cpus"):
                seen.append(it["to_cpus"])
        # the cycles so far wrote the pods' cpusets (the test build logs them)
        for line in apilib.slurp(os.path.join(self.root, "sys", "fs", "cgroup", ".numaorch-writes")).splitlines():
            cg, f, v = line.split(" ", 2)
            if cg.startswith("/kubepods.slice/") and f == "cpuset.cpus":
                seen.append(v)
        self.assertTrue(seen, "no pod was planned or moved")
        for v in seen:
            self.assertTrue(cpus_of(v) <= {3, 5, 6, 7}, seen)

    def test_kubelet_rewrites_its_checkpoint(self):
        """A new checkpoint (renamed over the old one) is read on the next
        cycle: with the default policies nothing is the kubelet's."""
        self.addCleanup(kubelet_writes, self.root, "cpu_manager_state", "cpu_manager_state")
        self.addCleanup(kubelet_writes, self.root, "memory_manager_state", "memory_manager_state")
        kubelet_writes(self.root, "cpu_manager_state", "cpu_manager_state.none")
        kubelet_writes(self.root, "memory_manager_state", "memory_manager_state.none")
        # a dry run: a real cycle would move the pod, now free to move
        it = self.plan()["kubernetes-" + GUARANTEED]
        self.assertNotEqual(it.get("skip"), "owned", it)


class KubeletLike(threading.Thread):
    """The kubelet's reconcile loop (its CPU Manager writes every shared
    pool container's cpuset back to the shared pool, every 10 s on a real
    node; here every 20 ms): whatever cpuset.cpus the cgroup CG holds, it
    is made SHARED again, as the kernel then shows it."""

    def __init__(self, cg, shared):
        super().__init__(daemon=True)
        self.cg, self.shared, self.stop = cg, shared, threading.Event()
        self.rewrites = 0

    def run(self):
        while not self.stop.wait(0.02):
            if apilib.slurp(os.path.join(self.cg, "cpuset.cpus")).strip() != self.shared:
                for f in ("cpuset.cpus", "cpuset.cpus.effective"):
                    itlib.write(os.path.join(self.cg, f), self.shared + "\n")
                self.rewrites += 1


@unittest.skipIf(REASON, REASON or "")
class KubeletRewrites(unittest.TestCase):
    """A cpuset the kubelet rewrites after numaorchd's move is a conflict,
    said once (a decision record conflict, numaorch_placer_conflicts_total
    {placer="kubelet"}) and not fought: the pod is not moved again while
    its cpuset stays as the kubelet left it. No cool-down ([policy]
    cooldown = 0): the hold alone keeps it from a second move."""
    SHARED = "0-1,3,5-7"   # the checkpoint's defaultCpuSet

    def setUp(self):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = apilib.compose_root(self.tmp)
        kubelet_writes(self.root, "cpu_manager_state", "cpu_manager_state")
        self.d = apilib.Daemon(self.tmp, self.root, binary=itlib.NUMAORCHD_TEST,
                               conf="[agent]\nsample = 0.05\n[policy]\ncooldown = 0\n").start()

    def tearDown(self):
        rc = self.d.stop()
        self.assertEqual(rc, 0, "numaorchd exited %d" % rc)

    def cycle(self):
        r = self.d.request("POST", "/v1/rebalance", {})
        self.assertEqual(r.status, 200, r.body)

    def cpus_writes(self):
        out = []
        for line in apilib.slurp(os.path.join(self.root, "sys", "fs", "cgroup", ".numaorch-writes")).splitlines():
            cg, f, v = line.split(" ", 2)
            if cg.startswith("/kubepods.slice/") and f == "cpuset.cpus":
                out.append((cg, v))
        return out

    def conflict_metric(self, placer):
        prefix = 'numaorch_placer_conflicts_total{placer="%s"} ' % placer
        for line in self.d.get("/metrics").body.decode().splitlines():
            if line.startswith(prefix):
                return float(line[len(prefix):])
        self.fail("no " + prefix)

    def conflicts_after_cycles(self, gid):
        """Guest GID's conflict records after five more cycles."""
        for _ in range(5):
            self.cycle()
            time.sleep(0.1)
        return [r for r in self.d.get("/v1/decisions?guest=%s&limit=1000" % gid).json()["decisions"]
                if r["decision"] == "conflict"]

    def kubelet_rewrites(self, cg):
        """A kubelet-like writer on the pod cgroup CG, once it has written
        the shared pool back (within 10 s)."""
        kubelet = KubeletLike(os.path.join(self.root, "sys", "fs", "cgroup", cg.lstrip("/")), self.SHARED)
        kubelet.start()
        self.addCleanup(kubelet.join)
        self.addCleanup(kubelet.stop.set)
        deadline = time.monotonic() + 10
        while kubelet.rewrites == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(kubelet.rewrites, 1)
        return kubelet

    def test_rewritten_once_not_fought(self):
        self.assertEqual(self.conflict_metric("kubelet"), 0)
        self.assertEqual(self.conflict_metric("unknown"), 0)
        self.cycle()
        writes = self.cpus_writes()
        self.assertTrue(writes, "no pod was moved")
        cg, wrote = writes[0]
        uid = next(u for u in (BURSTABLE, BESTEFFORT) if u.replace("-", "_") in cg)
        gid = "kubernetes-" + uid
        kubelet = self.kubelet_rewrites(cg)
        recs = self.conflicts_after_cycles(gid)
        self.assertEqual(len(recs), 1, recs)
        rec = recs[0]
        self.assertEqual(rec["placer"], "kubelet")
        self.assertEqual(rec["wrote"]["cpus"], wrote)
        self.assertEqual(rec["found"]["cpus"], self.SHARED)
        self.assertIn("rewritten by another placer (the kubelet)", rec["detail"])
        self.assertEqual(self.conflict_metric("kubelet"), 1)
        self.assertEqual(self.conflict_metric("unknown"), 0)
        # not fought: no second write of its cpuset, the kubelet's one rewrite
        self.assertEqual([w for w in self.cpus_writes() if w[0] == cg], [(cg, wrote)])
        self.assertEqual(kubelet.rewrites, 1)
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True, "verbose": True})
        item = next(i for i in r.json()["plan"]["items"] if i["guest"] == gid)
        # the policy would move it back to one node: the hold keeps it
        self.assertEqual((item["kind"], item.get("hold")), ("move", "conflict"), item)

    def test_start_placement_rewritten_once_not_fought(self):
        """A pod that starts while numaorchd runs, placed at once (a start
        placement: reason place) and its cpuset rewritten by the kubelet
        right after: a conflict said once and held, as after a move."""
        self.cycle()
        self.cycle()
        uid = "7e6d5c4b-3a29-4817-9f0e-1d2c3b4a5968"
        gid = "kubernetes-" + uid
        cgd = os.path.join(self.root, "sys", "fs", "cgroup", "kubepods.slice", "kubepods-burstable.slice")
        src = os.path.join(cgd, "kubepods-burstable-pod%s.slice" % BURSTABLE.replace("-", "_"))
        new = "kubepods-burstable-pod%s.slice" % uid.replace("-", "_")
        # built aside and renamed in: the agent sees it whole, just
        # started (no CPU used yet, a few pages touched)
        tmp = os.path.join(cgd, ".new")
        shutil.copytree(src, tmp)
        for d, _, files in os.walk(tmp):
            if "cpu.stat" in files:
                itlib.write(os.path.join(d, "cpu.stat"), "usage_usec 0\nuser_usec 0\nsystem_usec 0\n")
            if "memory.numa_stat" in files:
                itlib.write(os.path.join(d, "memory.numa_stat"), "anon N0=0 N1=65536\nfile N0=0 N1=0\n")
            if "memory.current" in files:
                itlib.write(os.path.join(d, "memory.current"), "65536\n")
            for f in ("cpuset.cpus", "cpuset.cpus.effective"):
                if f in files:
                    itlib.write(os.path.join(d, f), self.SHARED + "\n")
        os.rename(tmp, os.path.join(cgd, new))
        cg = "/kubepods.slice/kubepods-burstable.slice/" + new
        deadline = time.monotonic() + 10
        while not [w for w in self.cpus_writes() if w[0] == cg] and time.monotonic() < deadline:
            self.cycle()
        writes = [w for w in self.cpus_writes() if w[0] == cg]
        self.assertEqual(len(writes), 1, "the new pod was not placed: %s" % self.cpus_writes())
        wrote = writes[0][1]
        placed = [r for r in self.d.get("/v1/decisions?guest=%s&limit=1000" % gid).json()["decisions"]
                  if r["decision"] == "moved"]
        self.assertEqual([r.get("reason") for r in placed], ["place"], placed)
        kubelet = self.kubelet_rewrites(cg)
        before = self.conflict_metric("kubelet")
        recs = self.conflicts_after_cycles(gid)
        self.assertEqual(len(recs), 1, recs)
        self.assertEqual((recs[0]["placer"], recs[0]["wrote"]["cpus"], recs[0]["found"]["cpus"]),
                         ("kubelet", wrote, self.SHARED))
        self.assertEqual(self.conflict_metric("kubelet"), before + 1)
        # not fought: the start placement's write only, the kubelet's one rewrite
        self.assertEqual([w for w in self.cpus_writes() if w[0] == cg], [(cg, wrote)])
        self.assertEqual(kubelet.rewrites, 1)


if __name__ == "__main__":
    unittest.main()

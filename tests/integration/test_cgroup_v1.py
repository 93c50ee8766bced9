"""numaorchd against this machine's real cgroup v1 cpuset hierarchy.

The machine has one NUMA node, so the topology comes from a small fixture
sysfs (--sysfs) that splits its two CPUs into two nodes; /proc and the
cgroup tree are the real ones and every cpuset write is a real write
through libcgroup. Where the fixture claims a node the kernel does not
have, the kernel's refusal (EINVAL on cpuset.mems) is the real thing the
agent must survive.
"""
import json
import os
import signal
import subprocess
import time
import unittest

import itlib
from itlib import cpuset_state

REASON = itlib.skip_reason_v1()
if REASON is None and len(os.sched_getaffinity(0)) < 2:
    REASON = "needs 2 CPUs to split into two fixture nodes"


def fake_topology_two_mem_nodes(root):
    """Two nodes of one CPU each, both with memory (node 1's is the
    fixture's alone: a plan may target it, a write would be refused)."""
    return itlib.fake_topology(root, [{"cpus": "0", "mem_mib": 16384}, {"cpus": "1", "mem_mib": 16384}])


@unittest.skipIf(REASON, REASON or "")
class CgroupV1(itlib.V1SandboxTest):
    def setUp(self):
        super().setUp()
        self.outside_before = cpuset_state(exclude_prefix=self.sb.rel)

    def assert_outside_untouched(self):
        """The agent wrote no cgroup outside its scope. Exact when strace is
        there (the agent's own opens for writing); otherwise compare every
        cpuset outside the sandbox before and after (which other software
        on the machine might change too)."""
        if getattr(self.agent, "audited", False):
            cg = [w for w in self.agent.written if w.startswith(itlib.CGROOT + "/")]
            outside = [w for w in cg if not any(w.startswith("%s/%s%s/" % (itlib.CGROOT, c, self.sb.rel))
                                                  for c in itlib.V1_CTRLS)]
            self.assertEqual(outside, [], "the agent wrote cgroups outside its scope")
            return
        after = cpuset_state(exclude_prefix=self.sb.rel)
        changed = {k: (v, after.get(k)) for k, v in self.outside_before.items() if after.get(k) != v}
        changed = {k: v for k, v in changed.items() if v[1] is not None}
        self.assertEqual(changed, {}, "cpusets outside the scope changed")

    def run_once(self, sysfs, *extra, procfs=None):
        if procfs is None:
            if not getattr(self, "_quiet", None):
                self._quiet = self.fake_load({0: 0.1, 1: 0.1})
            procfs = self._quiet
        return self.agent.once("--sysfs", sysfs, "--procfs", procfs, "--parent", self.sb.rel,
                               "--scope", self.sb.rel, "--json", *extra)

    def test_discovery_and_dry_run_write_nothing(self):
        sysfs = self.topo_cpu_only_node1()
        self.sb.start("ctr-a", cpus="0-1", mems="0", mib=64)
        self.sb.start("ctr-b", cpus="0-1", mems="0", mib=32)
        before = {c: self.sb.cpuset(c) for c in ("ctr-a", "ctr-b")}
        p = self.run_once(sysfs, "--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        guests = {g["id"]: g for g in rep["snapshot"]["guests"]}
        self.assertEqual(sorted(guests), ["custom-ctr-a", "custom-ctr-b"])
        a = guests["custom-ctr-a"]
        self.assertEqual(a["runtime"], "custom")
        self.assertEqual(a["cgroup"], self.sb.rel + "/ctr-a")
        self.assertEqual(a["nr_procs"], 1)
        self.assertGreaterEqual(a["nr_threads"], 1)
        self.assertEqual(a["cpus"], "0-1")
        self.assertEqual(a["mems"], "0")
        self.assertIsNotNone(a["cpu_use"], "CPU use measured over the priming window")
        # 64 MiB touched: all of it charged to the cgroup, all on node 0.
        self.assertGreaterEqual(a["mem_total_bytes"], 60 << 20)
        self.assertEqual(a["mem_bytes_by_node"]["1"], 0)
        self.assertGreaterEqual(guests["custom-ctr-b"]["mem_total_bytes"], 28 << 20)
        moves = [i for i in rep["plan"]["items"] if i["kind"] == "move"]
        self.assertEqual(len(moves), 2, rep["plan"])
        for m in moves:
            self.assertEqual(m["reason"], "consolidate")
            self.assertIn(m["to_nodes"], ("0", "1"))
            self.assertEqual(m["to_mems"], "0")
        self.assertFalse(rep["applied"])
        self.assertEqual({c: self.sb.cpuset(c) for c in ("ctr-a", "ctr-b")}, before)
        recs = self.agent.decisions()
        self.assertTrue(recs and all(r["decision"] == "planned" and r["dry_run"] for r in recs), recs)
        self.assert_outside_untouched()

    def test_consolidates_for_real_and_converges(self):
        sysfs = self.topo_cpu_only_node1()
        self.sb.start("ctr-a", cpus="0-1", mems="0", mib=32)
        self.sb.start("ctr-b", cpus="0-1", mems="0", mib=32)
        p = self.run_once(sysfs)
        self.assertEqual(p.returncode, 0, p.stderr)
        for c in ("ctr-a", "ctr-b"):
            cpus, mems = self.sb.cpuset(c)
            self.assertIn(cpus, ("0", "1"), "guest %s should sit on one node" % c)
            self.assertEqual(mems, "0")
        moved = [r for r in self.agent.decisions() if r["decision"] == "moved"]
        self.assertEqual(sorted(r["guest"] for r in moved), ["custom-ctr-a", "custom-ctr-b"])
        if self.agent.audited:
            # The audit sees the agent's real writes: cpuset.cpus of both guests.
            self.assertTrue(any(w.endswith("/ctr-a/cpuset.cpus") for w in self.agent.written),
                            self.agent.written)
        self.assert_outside_untouched()
        for r in moved:
            self.assertEqual(r["outcome"], "moved")
            self.assertEqual(r["from"]["cpus"], "0-1")
            self.assertIn("load_before", r)
            self.assertIn("locality_before", r)
        # A second cycle finds them settled: nothing moves back. Load-only
        # moves are switched off here: on a shared machine the idle node of
        # a moment ago may be busy now, and following that would be right.
        conf = itlib.config_file(self.tmp, "[policy]\nrebalance_util = 100\n")
        p = self.run_once(sysfs, "--config", conf)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        self.assertEqual([i for i in rep["plan"]["items"] if i["kind"] == "move"], [])
        self.assert_outside_untouched()

    def test_guest_in_the_cpuset_hierarchy_only_is_unknown_and_left_alone(self):
        # A cgroup with a cpuset (and cpuacct) but no memory cgroup: its
        # memory cannot be measured. It was shown 0 B and all local, and
        # consolidated like a guest with no memory; now it is null and
        # left where it is, its cpuset untouched.
        sysfs = self.topo_cpu_only_node1()
        for c in ("cpuset", "cpuacct"):
            os.makedirs(self.sb.path(c, "nomem"), exist_ok=True)
        itlib.write(os.path.join(self.sb.path("cpuset", "nomem"), "cpuset.cpus"), "0-1")
        itlib.write(os.path.join(self.sb.path("cpuset", "nomem"), "cpuset.mems"), "0")
        attach = " ; ".join("echo $$ > %s" % os.path.join(self.sb.path(c, "nomem"), "cgroup.procs")
                            for c in ("cpuset", "cpuacct"))
        p = subprocess.Popen(["sh", "-c", attach + " ; exec " + itlib.MEMHOG + " --mib 16"],
                             stdout=subprocess.PIPE, text=True)
        self.sb.procs.append(p)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        p = self.run_once(sysfs)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        g = {g["id"]: g for g in rep["snapshot"]["guests"]}["custom-nomem"]
        for k in ("locality", "mem_in_cpuset", "mem_total_bytes", "mem_in_cpuset_bytes", "mem_bytes_by_node"):
            self.assertIsNone(g[k], k)
        self.assertIsNotNone(g["cpu_use"])
        item = [i for i in rep["plan"]["items"] if i["guest"] == "custom-nomem"]
        self.assertEqual([(i["kind"], i["skip"]) for i in item], [("skip", "mem_unknown")], rep["plan"])
        self.assertEqual(self.sb.cpuset("nomem"), ("0-1", "0"))
        self.assertIn("memory.numa_stat: missing in the memory hierarchy", p.stderr + json.dumps(rep))
        self.assert_outside_untouched()

    def test_nested_guest_subtree_moves_children_first(self):
        sysfs = self.topo_cpu_only_node1()
        # A pod-like guest: the guest cgroup and a child holding the process.
        self.sb.start("pod1/ctr", cpus="0-1", mems="0", mib=16)
        p = self.run_once(sysfs)
        self.assertEqual(p.returncode, 0, p.stderr)
        parent = self.sb.cpuset("pod1")
        child = self.sb.cpuset("pod1/ctr")
        self.assertIn(parent[0], ("0", "1"))
        self.assertEqual(child, parent, "the child follows its guest")

    def test_multi_container_pod_moves_as_one(self):
        # A pod as runtimes make it on v1: two container cgroups below the
        # pod, each with its own cpuset (v1 requires one) and a process of
        # its own. One guest, both containers' threads; the move writes
        # the pod and every container, and none is left behind.
        sysfs = self.topo_cpu_only_node1()
        self.sb.start("pod4/ctr-a", cpus="0", mems="0", mib=16)
        self.sb.start("pod4/ctr-b", cpus="0", mems="0", mib=16)
        p = self.run_once(sysfs, procfs=self.fake_load({0: 1.0, 1: 0.0}))
        recs = self.agent.decisions()
        self.assertEqual(p.returncode, 0, "%s\n%s" % (recs, p.stderr))
        guests = {g["id"]: g for g in json.loads(p.stdout)["snapshot"]["guests"]}
        self.assertIn("custom-pod4", guests, sorted(guests))
        # memhog runs one thread: one from each container
        self.assertEqual(guests["custom-pod4"]["nr_threads"], 2, guests["custom-pod4"])
        self.assertEqual([(r["guest"], r["decision"]) for r in recs if r["decision"] != "planned"],
                         [("custom-pod4", "moved")], p.stderr)
        for c in ("pod4", "pod4/ctr-a", "pod4/ctr-b"):
            self.assertEqual(self.sb.cpuset(c), ("1", "0"), c)
        self.assert_outside_untouched()

    def test_pod_containers_get_their_own_nodes_in_the_plan(self):
        # A pod of two busy containers, each with its own cpuset (v1), one
        # on each fixture node, the pod's memory all on node 0: the pod
        # needs both nodes, and each container its own, the one where its
        # thread runs. The dry-run plan gives each container its own node
        # (parts, in the order of the snapshot's parts), the snapshot shows
        # each container's memory and CPU as measured from its own cgroup
        # and threads, and nothing is written. Node 1's memory is the
        # fixture's: this machine has one node.
        sysfs = fake_topology_two_mem_nodes(self.tmp)
        self.sb.mkdir("pod5", "0-1", "0")
        self.sb.start("pod5/ctr-a", cpus="0", mems="0", mib=16, busy=True)
        self.sb.start("pod5/ctr-b", cpus="1", mems="0", mib=16, busy=True)
        before = {c: self.sb.cpuset(c) for c in ("pod5", "pod5/ctr-a", "pod5/ctr-b")}
        # Node load from the fixture (the machine is shared); the threads'
        # own stat files, where each ran, from the real /proc.
        procfs = self.fake_load({0: 0.1, 1: 0.1})
        for c in ("pod5/ctr-a", "pod5/ctr-b"):
            with open(os.path.join(self.sb.path("cpuset", c), "tasks")) as f:
                for tid in f.read().split():
                    os.symlink("/proc/%s" % tid, os.path.join(procfs, tid))
        # The pod needs both nodes whatever the machine lets its threads
        # use in the window: a demand of at least one CPU (with its headroom, more than one node holds).
        conf = itlib.config_file(self.tmp, "[policy]\nmin_cpu = 1\n")
        p = self.agent.once("--config", conf, "--sysfs", sysfs, "--procfs", procfs, "--parent", self.sb.rel,
                            "--scope", self.sb.rel, "--json", "--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        g = {g["id"]: g for g in out["snapshot"]["guests"]}["custom-pod5"]
        parts = [q["cgroup"].rsplit("/", 1)[-1] for q in g.get("parts", [])]
        self.assertEqual(parts, ["ctr-a", "ctr-b"], g)
        self.assertTrue(all(q["mem_total_bytes"] >= 16 << 20 for q in g["parts"]), g["parts"])
        if g.get("busy_threads", 0) < 2 or not all(q["cpu_use"] for q in g["parts"]):
            self.skipTest("both containers' threads must be measured busy in the agent's window, and this "
                          "(shared) machine gave them less: %s" % g["parts"])
        self.assertEqual(g["parts"][1]["locality"], 0.0, g["parts"])
        item = {i["guest"]: i for i in out["plan"]["items"]}.get("custom-pod5")
        self.assertIsNotNone(item, out["plan"])
        self.assertEqual((item["kind"], item["reason"]), ("move", "locality"), item)
        # Both containers' memory is on node 0: the busier one (biggest CPU
        # use first) keeps node 0, the other gets node 1, which has the CPU
        # left for its busy thread.
        big = 0 if g["parts"][0]["cpu_use"] >= g["parts"][1]["cpu_use"] else 1
        want = [(0, "0", "0"), (1, "1", "1")] if big == 0 else [(0, "1", "1"), (1, "0", "0")]
        self.assertEqual([(q["part"], q["nodes"], q["mems"]) for q in item.get("parts", [])], want, item)
        self.assertEqual(item["to_mems"], "0-1", item)
        self.assertIn("containers: ctr-a to node %s, ctr-b to node %s" % (want[0][1], want[1][1]), item["detail"])
        self.assertEqual({c: self.sb.cpuset(c) for c in before}, before, "a dry run wrote a cpuset")

    def test_guest_with_a_grandchild_moves_to_disjoint_cpus(self):
        # v1: a grandchild takes the new CPUs only once its own parent
        # holds them too, so the applier widens every cgroup of the guest's
        # subtree that has children (top-down) before narrowing them
        # deepest-first. Widening the guest alone made the kernel refuse
        # the grandchild's write (EACCES). The guest sits on CPU 0; node 0
        # reads fully busy, node 1 (CPU 1) idle: it moves to CPU 1.
        sysfs = self.topo_cpu_only_node1()
        self.sb.start("pod2/ctr/proc", cpus="0", mems="0", mib=16)
        p = self.run_once(sysfs, procfs=self.fake_load({0: 1.0, 1: 0.0}))
        recs = self.agent.decisions()
        self.assertEqual(p.returncode, 0, "%s\n%s" % (recs, p.stderr))
        self.assertEqual([(r["guest"], r["decision"]) for r in recs if r["decision"] != "planned"],
                         [("custom-pod2", "moved")], p.stderr)
        for c in ("pod2", "pod2/ctr", "pod2/ctr/proc"):
            self.assertEqual(self.sb.cpuset(c), ("1", "0"), c)
        self.assert_outside_untouched()

    def test_refused_cpus_write_is_reported_and_nothing_left_changed(self):
        # A real kernel refusal: in v1, a cpuset may not overlap a sibling
        # that is cpu_exclusive. The guest (Docker-named) sits on CPU 0, node
        # 0 reads fully busy and node 1 (CPU 1) idle, so the agent relocates
        # it; the sibling "reserved" holds CPU 1 exclusively, so the kernel
        # says EINVAL to the guest's cpuset.cpus write.
        sysfs = self.topo_cpu_only_node1()
        try:
            itlib.write(os.path.join(self.sb.path("cpuset"), "cpuset.cpu_exclusive"), "1")
        except OSError as e:
            self.skipTest("cannot make the sandbox cpuset exclusive here: %s" % e)
        guest = "docker-" + "ab" * 32 + ".scope"
        self.sb.mkdir("reserved", "1", "0")
        itlib.write(os.path.join(self.sb.path("cpuset", "reserved"), "cpuset.cpu_exclusive"), "1")
        self.sb.start(guest, cpus="0", mems="0", mib=32)
        procfs = self.fake_load({0: 1.0, 1: 0.0})
        p = self.agent.once("--sysfs", sysfs, "--procfs", procfs, "--scope", self.sb.rel, "--json")
        recs = self.agent.decisions()
        failed = [r for r in recs if r["decision"] == "failed"]
        self.assertEqual(len(failed), 1, "expected one refused move; got %s\n%s" % (recs, p.stderr))
        self.assertEqual(p.returncode, 3, p.stderr)
        f = failed[0]
        self.assertEqual(f["guest"], "docker-" + "ab" * 32)
        self.assertEqual(f["reason"], "load")
        self.assertEqual(f["errno"], "EINVAL")
        self.assertIn("writing cpuset.cpus of %s/%s: Invalid argument" % (self.sb.rel, guest), f["message"])
        self.assertEqual(self.sb.cpuset(guest), ("0", "0"))
        self.assertEqual(self.sb.cpuset("reserved"), ("1", "0"))
        self.assertIn("failed", p.stderr)
        self.assert_outside_untouched()

    def test_real_one_node_host_reports_and_moves_nothing(self):
        # No --sysfs: this machine's real topology (one NUMA node).
        if os.path.exists("/sys/devices/system/node/node1"):
            self.skipTest("this host has more than one NUMA node")
        self.sb.start("ctr-a", cpus="0-1", mems="0", mib=16)
        p = self.agent.once("--parent", self.sb.rel, "--scope", self.sb.rel)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("host: 1 NUMA node", p.stdout)
        self.assertIn("custom-ctr-a", p.stdout)
        self.assertIn("1 NUMA node with CPUs", p.stderr)
        self.assertEqual([r for r in self.agent.decisions() if r["decision"] == "moved"], [])
        self.assertEqual(self.sb.cpuset("ctr-a"), ("0-1", "0"))

    def test_daemon_keeps_running_through_broken_sysfs(self):
        sysfs = self.topo_cpu_only_node1()
        self.sb.start("ctr-a", cpus="0", mems="0", mib=16)
        conf = itlib.config_file(self.tmp, "[agent]\ninterval = 0.3\nsample = 0.2\n")
        dist = os.path.join(sysfs, "devices", "system", "node", "node1", "distance")
        d, w = self.start_daemon("--config", conf, "--sysfs", sysfs, "--parent", self.sb.rel,
                                 "--scope", self.sb.rel, "--log-level", "debug")
        w.wait_for("cycle")
        itlib.write(dist, "20 not-a-number\n")
        bad = w.wait_for("cannot read the host topology")
        self.assertIsNone(d.poll(), "daemon exited on a malformed sysfs file")
        itlib.write(dist, "20 10\n")
        # Cycles go on after the file is mended.
        w.wait_for("cycle", after=w.wait_for("cannot read the host topology", after=bad - 1))
        self.stop_daemon(d, w)

    def test_daemon_survives_vanishing_guest_bad_reload_and_stops_cleanly(self):
        sysfs = self.topo_cpu_only_node1()
        self.sb.start("ctr-a", cpus="0", mems="0", mib=16)
        self.sb.start("ctr-gone", cpus="0", mems="0", mib=16)
        conf = itlib.config_file(self.tmp, "[agent]\ninterval = 0.3\nsample = 0.2\n")
        d, w = self.start_daemon("--config", conf, "--sysfs", sysfs, "--parent", self.sb.rel,
                                 "--scope", self.sb.rel, "--log-level", "debug", "--decision-log", self.agent.declog)
        w.wait_for("2 guests")
        self.sb.remove_child("ctr-gone")
        gone = w.wait_for("1 guests")
        self.assertIsNone(d.poll(), "daemon exited after a guest vanished")
        with open(conf, "w") as f:
            f.write("[agent]\ninterval = 0.3\n[policy]\nmax_util = 150\n")
        d.send_signal(signal.SIGHUP)
        kept = w.wait_for("keeping the old configuration", after=gone)
        # a cycle after the refused reload, still with the one guest
        w.wait_for("1 guests", after=kept)
        self.assertIsNone(d.poll(), "daemon exited on a bad reload")
        err = self.stop_daemon(d, w)
        self.assertIn("numaorchd.conf:4: [policy] max_util", err)
        self.assertIn("keeping the old configuration", err)
        self.assertIn("stopping", err)
        # The vanished guest is simply gone from later cycles: the only error
        # logged is the bad reload.
        errors = [l for l in err.splitlines() if "[error]" in l]
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("1 guests", err.splitlines()[-3])


class ConfigCheck(itlib.DaemonTest):
    """--check-config needs no root and no cgroups."""

    def setUp(self):
        if not os.path.exists(itlib.NUMAORCHD):
            self.skipTest("build/numaorchd missing")
        super().setUp()

    def check(self, text):
        conf = itlib.config_file(self.tmp, text)
        return subprocess.run(self.numaorchd("--check-config", "--config", conf),
                              capture_output=True, text=True)

    def test_shipped_config_is_valid(self):
        p = subprocess.run(self.numaorchd("--check-config", "--config",
                                          os.path.join(itlib.REPO, "deploy", "numaorchd.conf")),
                           capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "configuration OK"), p.stderr)

    def test_errors_name_line_and_key(self):
        cases = [
            ("[agent]\nmode = fast\n", "numaorchd.conf:2: [agent] mode"),
            ("[policy]\n\nmax_moves = 0\n", "numaorchd.conf:3: [policy] max_moves"),
            ("[scope]\ncgroup = ../etc\n", "numaorchd.conf:2: [scope] cgroup"),
            ("[nosuch]\nx = 1\n", "numaorchd.conf:2: unknown section [nosuch]"),
            ("[agent]\nthis is not ini\n", "numaorchd.conf:2: syntax error"),
            ("[api]\nlisten = 127.0.0.1:9000\n", "listen needs token_file"),
        ]
        for text, want in cases:
            with self.subTest(want=want):
                p = self.check(text)
                self.assertEqual(p.returncode, 2)
                self.assertIn(want, p.stderr)

    def test_auto_move_budget_and_cooldown(self):
        """max_moves, max_migrate_mib and cooldown take auto (the
        defaults, sized by the mover) or a number; anything else is an
        error naming the line, the key and what it must be."""
        p = self.check("[policy]\nmax_moves = auto\nmax_migrate_mib = auto\ncooldown = auto\n"
                       "[schedule]\nwindow = * 22:00-06:00 max_moves=auto cooldown=120\n")
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "configuration OK"), p.stderr)
        for text, want in (
                ("[policy]\nmax_moves = autox\n",
                 'numaorchd.conf:2: [policy] max_moves: must be auto or an integer 1..10000, got "autox"'),
                ("[policy]\ncooldown = AUTO\n", "numaorchd.conf:2: [policy] cooldown: must be auto or seconds"),
                ("[schedule]\nwindow = * 22:00-06:00 max_migrate_mib=autox\n",
                 "max_migrate_mib: must be auto or an integer of MiB")):
            with self.subTest(want=want):
                p = self.check(text)
                self.assertEqual(p.returncode, 2)
                self.assertIn(want, p.stderr)

    def test_missing_config_file(self):
        p = subprocess.run(self.numaorchd("--check-config", "--config", "/nonexistent/x.conf"),
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot open", p.stderr)

    def test_bad_flags(self):
        for args, want in ((["--scope", "relative"], "--scope"), (["--interval", "0"], "--interval"),
                           (["--mode", "x", "--check-config"], "--mode")):
            with self.subTest(args=args):
                p = subprocess.run(self.numaorchd(*args), capture_output=True, text=True)
                self.assertEqual(p.returncode, 2)
                self.assertIn(want, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)

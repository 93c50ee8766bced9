"""The agent's own CPU time, left out of the nodes' load (agents/selfload.c).

The real numaorchd --once on this machine's real /proc, with a fixture
sysfs of two nodes of one CPU each, reports per node `agent_cpus`: its own
threads' CPUs over the sample window, taken off `busy`. Checked against a
figure the kernel keeps apart from the agent: the daemon's whole CPU time
(the child's rusage), which bounds what its window can hold, however the
agent splits it between nodes. A unit slip (nanoseconds read as
microseconds, seconds reported as CPUs) breaks the bound; the size of a real
subtraction (0.29 CPU s of start-up, a mover job's 3.9 CPU s) is measured in
the multi-node testbed (tests/numa-vm/guest/diag_selfload.sh). On a fixture
root (--root), whose procfs has no process of the agent's, it is null: not
measured, rather than a made-up 0.
"""
import json
import os
import resource
import shutil
import subprocess
import unittest

import itlib


def child_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class AgentLoad(itlib.DaemonTest):
    def setUp(self):
        if not os.path.exists(itlib.NUMAORCHD):
            self.skipTest("build/numaorchd missing (run make)")
        super().setUp()

    def once(self, conf, *args, binary=None):
        before = child_cpu_s()
        p = subprocess.run(self.numaorchd("--config", itlib.config_file(self.tmp, conf), "--once", "--dry-run",
                                          "--json", *args, binary=binary),
                           capture_output=True, text=True, timeout=120)
        used = child_cpu_s() - before
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)["snapshot"], used

    def test_live_proc_own_load_within_the_kernels_figure(self):
        sysfs = itlib.fake_topology(self.tmp, [{"cpus": "0"}, {"cpus": "1"}])
        snap, used = self.once("[agent]\nsample = 0.5\n", "--sysfs", sysfs)
        own = [n["agent_cpus"] for n in snap["nodes"]]
        print("\nagent_cpus by node %s over a %.2f s window; the process used %.3f CPU s in all"
              % (own, snap["window_s"], used))
        self.assertEqual(len(own), 2)
        for n in snap["nodes"]:
            self.assertIsNotNone(n["agent_cpus"], n)
            self.assertGreaterEqual(n["agent_cpus"], 0.0, n)
            if n["busy"] is not None:
                self.assertGreaterEqual(n["busy"], 0.0, n)
        self.assertGreaterEqual(snap["window_s"], 0.5)
        # What the window held of the agent is part of all it used (the
        # kernel's rusage: ticks, so 10 ms of slack a thread).
        self.assertLessEqual(sum(own) * snap["window_s"], used + 0.05)

    def test_fixture_root_not_measured(self):
        if not os.path.exists(itlib.NUMAORCHD_TEST):
            self.skipTest("build/numaorchd-test missing (make build/numaorchd-test)")
        fix = os.path.join(itlib.REPO, "tests", "fixtures")
        root = os.path.join(self.tmp, "host")
        shutil.copytree(os.path.join(fix, "host-2node", "sys"), os.path.join(root, "sys"))
        shutil.copytree(os.path.join(fix, "host-2node", "proc"), os.path.join(root, "proc"))
        shutil.copytree(os.path.join(fix, "cg-v2", "sys", "fs", "cgroup"), os.path.join(root, "sys", "fs", "cgroup"))
        snap, _ = self.once("[agent]\nsample = 0.05\n", "--root", root, binary=itlib.NUMAORCHD_TEST)
        self.assertEqual(len(snap["nodes"]), 2)
        for n in snap["nodes"]:
            self.assertIsNone(n["agent_cpus"], n)


if __name__ == "__main__":
    unittest.main()

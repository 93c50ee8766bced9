"""Hostile cgroup trees against the real numaorchd on this machine's real
cgroup v1 hierarchies (issue 14): trees deeper than the walk's limit and
trees with thousands of branches must not leak file descriptors; a guest
with thousands of threads is counted whole; names that collide after
truncation, or /docker/<id> beside docker-<id>.scope, stay distinct
guests; control characters in cgroup names never reach the log or the
CLI raw.

Each test runs the daemon (--dry-run, --scope on a private sandbox, API on
a private socket) and reads what it reports through the API."""
import json
import os
import shutil
import subprocess
import time
import unittest

import apilib
import itlib
from itlib import V1Sandbox

REASON = itlib.skip_reason_v1()
if REASON is None and not os.path.exists(apilib.NUMAORCHCTL):
    REASON = "build/numaorchctl missing (run make)"


class RealDaemon(apilib.Daemon):
    """numaorchd on the real host (sysfs, procfs, cgroupfs), dry run,
    discovering only under SCOPE; API on a private socket + loopback."""

    def __init__(self, tmp, scope, parents=(), conf="[agent]\nsample = 0.05\n", extra=()):
        super().__init__(tmp, None, conf=conf, extra=extra)
        self.scope = scope
        self.parents = list(parents)

    def args(self):
        a = [itlib.NUMAORCHD, "--config", self.conf, "--socket", self.sock, "--state-dir", self.state,
             "--listen", "127.0.0.1:0", "--token-file", self.token_file, "--dry-run",
             "--decision-log", os.path.join(self.tmp, "decisions.jsonl"), "--scope", self.scope]
        for p in self.parents:
            a += ["--parent", p]
        return a + self.extra

    def status(self):
        r = self.get("/v1/status")
        if r.status != 200:
            raise AssertionError("GET /v1/status: %r" % r)
        return r.json()

    def cycles(self):
        return self.status()["cycles"]

    def wait_cycles(self, n, timeout):
        """Wait until the daemon has run N cycles in all; returns the count."""
        deadline = time.time() + timeout
        c = self.cycles()
        while c < n:
            if time.time() > deadline:
                raise AssertionError("only %d of %d cycles within %ds" % (c, n, timeout))
            if not self.alive():
                raise AssertionError("numaorchd exited:\n" + self.logtext())
            time.sleep(0.05)
            c = self.cycles()
        return c

    def nfds(self):
        """Open descriptors of the daemon, the least of a few looks: an
        API connection of our own may be open at any one look."""
        best = None
        for _ in range(5):
            n = len(os.listdir("/proc/%d/fd" % self.proc.pid))
            best = n if best is None else min(best, n)
            time.sleep(0.01)
        return best

    def guests(self):
        r = self.get("/v1/guests")
        if r.status != 200:
            raise AssertionError("GET /v1/guests: %r" % r)
        return r.json()["guests"]


def mkdirs_v1(path_rel, ctrls=("cpuset",)):
    for c in ctrls:
        os.makedirs(os.path.join(itlib.CGROOT, c, path_rel.lstrip("/")), exist_ok=True)


@unittest.skipIf(REASON, REASON or "")
class HostileCgroups(unittest.TestCase):
    def setUp(self):
        self.sb = V1Sandbox()
        self.addCleanup(self.sb.cleanup)
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def start(self, **kw):
        d = RealDaemon(self.tmp, self.sb.rel, **kw)
        self.addCleanup(d.stop)
        return d.start()

    def fd_flat_over_100_cycles(self, d, what):
        first = d.wait_cycles(3, 120)
        before = d.nfds()
        last = d.wait_cycles(first + 100, 300)
        after = d.nfds()
        print("\n  %s: %d fds after cycle %d, %d fds after cycle %d" % (what, before, first, after, last))
        self.assertLessEqual(after, before + 2, "%s: fds grew from %d to %d over %d cycles"
                             % (what, before, after, last - first))
        return before, after

    def test_deeper_than_the_walk_limit_leaks_nothing(self):
        # 80 nested levels (the walk stops at 64) in the cpuset hierarchy.
        chain = "/".join(["d"] * 80)
        mkdirs_v1(self.sb.rel + "/deep/" + chain)
        d = self.start(conf="[agent]\nsample = 0.05\ninterval = 0.1\n")
        self.fd_flat_over_100_cycles(d, "deep tree (80 levels)")
        # Said once, not once a cycle.
        log = d.logtext()
        self.assertIn("levels deep, not searched further", log)
        self.assertLessEqual(log.count("levels deep, not searched further"), 2, log[-3000:])

    def test_thousands_of_branches_leak_nothing(self):
        # 1000 guests with a child each (their subtree is summed) and 1000
        # plain branches with a child each (walked).
        for i in range(1000):
            mkdirs_v1("%s/guests/g%04d/sub" % (self.sb.rel, i))
            mkdirs_v1("%s/plain/b%04d/sub" % (self.sb.rel, i))
        d = self.start(conf="[agent]\nsample = 0.05\ninterval = 0.1\n",
                       parents=[self.sb.rel + "/guests"])
        d.wait_cycles(2, 120)
        self.assertEqual(d.status()["guests"]["total"], 1000)
        self.fd_flat_over_100_cycles(d, "wide tree (2000 branches, 1000 guests)")

    def test_every_thread_is_counted(self):
        # ~1500 thread ids are ~10 KiB of "tasks": more than one page.
        self.sb.start("many/ctr", cpus="0", mems="0", mib=4, threads=1500)
        d = self.start(parents=[self.sb.rel + "/many"])
        d.wait_cycles(1, 60)
        g = [g for g in d.guests() if g["id"] == "custom-ctr"]
        self.assertEqual(len(g), 1, d.guests())
        with open(self.sb.path("cpuset", "many/ctr") + "/tasks") as f:
            real = len(f.read().split())
        self.assertGreater(len("\n".join(str(p) for p in range(real))), 4096)
        self.assertEqual(g[0]["nr_threads"], real)

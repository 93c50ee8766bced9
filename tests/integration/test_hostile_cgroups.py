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
import subprocess
import time
import unittest

import apilib
import itlib

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
        a = itlib.numaorchd("--config", self.conf, "--socket", self.sock,
                            "--listen", "127.0.0.1:0", "--token-file", self.token_file, "--dry-run",
                            "--decision-log", os.path.join(self.tmp, "decisions.jsonl"), "--scope", self.scope,
                            state_dir=self.state)
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

    def guest(self, gid):
        r = self.get("/v1/guests/" + gid)
        if r.status != 200:
            raise AssertionError("GET /v1/guests/%s: %r" % (gid, r))
        return r.json()

    def guests(self):
        r = self.get("/v1/guests")
        if r.status != 200:
            raise AssertionError("GET /v1/guests: %r" % r)
        return r.json()["guests"]


def mkdirs_v1(path_rel, ctrls=("cpuset",)):
    for c in ctrls:
        os.makedirs(os.path.join(itlib.CGROOT, c, path_rel.lstrip("/")), exist_ok=True)


@unittest.skipIf(REASON, REASON or "")
class HostileCgroups(itlib.V1SandboxTest):
    def setUp(self):
        super().setUp()

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
        said = [l for l in log.splitlines() if "levels deep, not searched further" in l]
        # Once, then only with the count after 10 and 100 cycles.
        self.assertEqual(len([l for l in said if "(the same in each" not in l]), 1, said)
        self.assertLessEqual(len(said), 3, said)

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
        self.assertEqual(d.guest("custom-ctr")["nr_threads"], real)

    def test_ids_never_collide_and_survive_a_restart(self):
        hexid = "3604d7038a72a313f9f53f9eef280acc01f82192f1a94b00c05daa9ef9e4d069"
        long_a, long_b = "x" * 200 + "-alpha", "x" * 200 + "-beta"
        cgs = ["docker/" + hexid, "system.slice/docker-%s.scope" % hexid,
               "long/" + long_a, "long/" + long_b]
        for c in cgs:
            self.sb.mkdir(c, "0", "0")
        d = RealDaemon(self.tmp, self.sb.rel, parents=[self.sb.rel + "/long"])
        self.addCleanup(d.stop)
        d.start()
        d.wait_cycles(1, 60)
        ids = {g["cgroup"]: g["id"] for g in d.guests()}
        want = {self.sb.rel + "/" + c for c in cgs}
        self.assertEqual(set(ids) & want, want, ids)
        self.assertEqual(len({ids[c] for c in want}), 4, ids)
        self.assertEqual(ids[self.sb.rel + "/docker/" + hexid], "docker-" + hexid)
        self.assertEqual(d.stop(), 0)
        # The same ids after a restart (policies are keyed by them).
        d.start()
        d.wait_cycles(1, 60)
        again = {g["cgroup"]: g["id"] for g in d.guests()}
        self.assertEqual({c: again.get(c) for c in want}, {c: ids[c] for c in want})
        self.assertEqual(d.stop(), 0)

    def test_control_characters_in_names_are_escaped(self):
        evil = "evil\x1b[31mred\x07"
        self.sb.mkdir("ctl/" + evil, "0", "0")
        # A chain too deep to search, whose warning names the evil cgroup.
        mkdirs_v1(self.sb.rel + "/deep-" + evil + "/" + "/".join(["d"] * 70))
        # A short interval: the test waits for the second cycle, 15 s away
        # at the default.
        d = self.start(conf="[agent]\nsample = 0.05\ninterval = 0.5\n", parents=[self.sb.rel + "/ctl"])
        d.wait_cycles(2, 60)
        g = [g for g in d.guests() if g["runtime"] == "custom"]
        self.assertEqual(len(g), 1, d.guests())
        self.assertEqual(d.guest(g[0]["id"])["name"], evil)   # JSON escapes it itself
        p = d.ctl("guest", g[0]["id"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("\x1b", p.stdout)
        self.assertNotIn("\x07", p.stdout)
        self.assertIn("evil\\x1b[31mred\\x07", p.stdout)
        p = d.ctl("status")   # the warnings (the API tames them to "?" already)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("more than 64 levels deep", p.stdout)
        self.assertNotIn("\x1b", p.stdout)
        self.assertNotIn("\x07", p.stdout)
        self.assertEqual(d.stop(), 0)
        with open(d.log, "rb") as f:
            log = f.read()
        self.assertIn(b"deep-evil\\x1b[31mred\\x07/d/", log)
        self.assertNotIn(b"\x1b", log)
        self.assertNotIn(b"\x07", log)

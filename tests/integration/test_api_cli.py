"""numaorchctl against the real numaorchd: each command's output and exit
code, over the unix socket and over TCP with a token."""
import json
import os
import select
import shutil
import subprocess
import time
import unittest

import apilib
import itlib

REASON = apilib.skip_reason() or (None if os.path.exists(apilib.NUMAORCHCTL) else
                                  "build/numaorchctl missing (run make)")


@unittest.skipIf(REASON, REASON or "")
class Cli(apilib.ClassDaemon):
    # setUpClass/tearDownClass (one daemon; it must exit 0): apilib.ClassDaemon

    def run_ok(self, *args, **kw):
        p = self.d.ctl(*args, **kw)
        self.assertEqual(p.returncode, 0, "numaorchctl %s: %s" % (" ".join(args), p.stderr))
        self.assertEqual(p.stderr, "")
        return p.stdout

    def fails(self, code, *args, **kw):
        p = self.d.ctl(*args, **kw)
        self.assertEqual(p.returncode, code, "numaorchctl %s: rc %d, %s%s" % (" ".join(args), p.returncode,
                                                                            p.stdout, p.stderr))
        lines = p.stderr.strip().splitlines()
        self.assertTrue(lines and lines[0].startswith("numaorchctl: "), p.stderr)
        return p.stderr

    def test_status_nodes_guests(self):
        out = self.run_ok("status")
        self.assertRegex(out, r"numaorchd \S+, up .*, mode enforce")
        self.assertIn("host:        2 NUMA nodes (2 with CPUs), cgroup v2", out)
        out = self.run_ok("nodes").splitlines()
        self.assertEqual(out[0].split(), ["NODE", "CPUS", "BUSY", "LOAD", "MEM", "FREE", "/", "TOTAL", "MOVING",
                                        "OUT", "/", "IN", "GUESTS"])
        self.assertTrue(all(" 0 B / 0 B " in l for l in out[1:]), out)
        self.assertEqual(len(out), 3)
        out = self.run_ok("guests").splitlines()
        self.assertTrue(out[0].startswith("GUEST"))
        self.assertTrue(any(l.startswith("lxc-db ") for l in out))
        only = self.run_ok("guests", "--runtime", "lxc").splitlines()
        self.assertEqual(len(only), 2)
        self.assertIn("kind:      container (lxc)", self.run_ok("guest", "lxc-db"))
        j = json.loads(self.run_ok("--json", "guests", "--kind", "container"))
        self.assertEqual(j["count"], len(j["guests"]))
        self.assertEqual(json.loads(self.run_ok("status", "--json"))["host"]["nodes"], 2)
        self.assertIn("ok (ready)", self.run_ok("health"))

    def test_memory_not_measured_is_unknown_everywhere(self):
        # The fixture's docker-861 has a malformed memory.numa_stat: its
        # memory is unknown, never 0 B and 100 % local.
        gid = "docker-861aff256de973d0666f19d1cefd33194d8b5fe2ed95ffe3e52ab1fc12e562ae"
        g = self.d.get("/v1/guests/" + gid).json()
        for k in ("locality", "mem_in_cpuset", "mem_total_bytes", "mem_in_cpuset_bytes", "mem_bytes_by_node"):
            self.assertIsNone(g[k], k)
        self.assertEqual(g["plan"]["skip"], "mem_unknown", g["plan"])
        listed = {x["id"]: x for x in self.d.get("/v1/guests").json()["guests"]}
        for k in ("locality", "mem_in_cpuset", "mem_total_bytes", "mem_bytes_by_node"):
            self.assertIsNone(listed[gid][k], k)
        self.assertIsNotNone(listed["lxc-db"]["locality"])
        row = [l for l in self.run_ok("guests").splitlines() if l.startswith(gid + " ")]
        self.assertEqual(len(row), 1)
        cols = row[0].split()
        self.assertEqual(cols[7:9], ["-", "-"], row)  # MEMORY, LOCAL (after NAME, KIND, ...)
        out = self.run_ok("guest", gid)
        self.assertIn("locality:  - where its threads run", out)
        self.assertIn("memory:    - (not measured", out)
        metrics = self.run_ok("metrics")
        for fam in ("numaorch_guest_locality_ratio", "numaorch_guest_mem_in_cpuset_ratio",
                    "numaorch_guest_memory_bytes"):
            self.assertNotIn('%s{guest="%s"' % (fam, gid), metrics)
            self.assertIn('%s{guest="lxc-db"' % fam, metrics)

    def test_policy_get_set(self):
        out = self.run_ok("policy")
        self.assertRegex(out, r"max_util\s+90\s+%")
        self.assertEqual(out, self.run_ok("policy", "get"))
        out = self.run_ok("policy", "set", "max_util=85", "cooldown=60", "mode=advise")
        self.assertIn("changed: mode \"enforce\" -> \"advise\", max_util 90.0 -> 85.0, cooldown \"auto\" -> 60.0",
                      out)
        self.assertEqual(json.loads(self.run_ok("--json", "policy"))["mode"], "advise")
        err = self.fails(5, "policy", "set", "max_util=150")
        self.assertIn("max_util: must be a number 1..100 (percent), got 150 (HTTP 400 Bad Request)", err)
        err = self.fails(5, "policy", "set", "nonsense=1")
        # Every known field, whole: the list lost its last letter ("schedul").
        self.assertIn("min_free_share, schedule) (HTTP 400", err)
        self.fails(2, "policy", "set", "max_util")
        self.fails(2, "policy", "frobnicate")
        self.run_ok("policy", "set", "max_util=90", "cooldown=auto", "mode=enforce")

    def test_guest_policy(self):
        out = self.run_ok("guest-policy", "runc-ctr1", "pinned", "0")
        self.assertIn("runc-ctr1: pinned 0 (api)", out)
        self.assertIn("runc-ctr1: pinned 0 (api)", self.run_ok("guest-policy", "runc-ctr1"))
        out = self.run_ok("guest-policies").splitlines()
        self.assertEqual(out[0].split(), ["GUEST", "MODE", "NODES", "SET", "PRESENT"])
        self.assertTrue(out[1].startswith("runc-ctr1 ") and out[1].endswith("yes"), out)
        self.run_ok("guest-policy", "runc-ctr1", "ignore")
        self.assertIn("cleared", self.run_ok("guest-policy", "runc-ctr1", "clear"))
        self.fails(4, "guest-policy", "runc-ctr1", "clear")
        # A guest id not on the host: refused, nothing stored, unless the
        # caller says it is one yet to start.
        err = self.fails(4, "guest-policy", "vm-future", "auto")
        self.assertIn("no guest vm-future on this host", err)
        self.assertIn("--provision", err)
        self.fails(4, "guest-policy", "vm-future")
        self.assertNotIn("vm-future", self.run_ok("guest-policies"))
        self.assertIn("not on this host now", self.run_ok("guest-policy", "vm-future", "auto", "--provision"))
        self.run_ok("guest-policy", "vm-future", "clear")
        self.fails(5, "guest-policy", "runc-ctr1", "pinned", "9")          # 409: no such node
        self.fails(5, "guest-policy", "../etc", "auto")                     # 400: bad id
        self.fails(2, "guest-policy", "runc-ctr1", "pinned")
        self.fails(4, "guest", "docker-not-here")

    def test_rebalance_decisions_advise_event(self):
        out = self.run_ok("rebalance", "--dry-run")
        self.assertRegex(out, r"^cycle #\d+ \(nothing written\) in [\d.]+ ms: \d+ moves? planned")
        self.assertIn("planned_moves", self.run_ok("--json", "rebalance", "--dry-run", "--verbose"))
        out = self.run_ok("decisions", "--limit", "5")
        self.assertTrue(out.strip())
        self.assertLessEqual(len(out.strip().splitlines()), 5)
        last = json.loads(self.run_ok("--json", "decisions", "--limit", "1"))["last_id"]
        self.assertGreater(last, 0)
        out = self.run_ok("decisions", "--since", "0s", "--guest", "nobody")
        self.assertRegex(out, r"^\(no decisions match; the newest recorded is #\d+\)$")
        self.assertNotIn("recorded yet", self.run_ok("decisions", "--guest", "nobody"))
        self.assertTrue(self.run_ok("decisions", "--since", "1h").strip())
        self.fails(5, "decisions", "--limit", "0")
        # --follow: what is there, then what comes, one JSON record per line.
        # Without a cool-down every dry run plans (and records) the fixture's moves.
        self.run_ok("policy", "set", "cooldown=0")
        self.run_ok("rebalance", "--dry-run")
        f = subprocess.Popen([apilib.NUMAORCHCTL, "--socket", self.d.sock, "--json", "decisions", "--follow",
                              "--limit", "1"], stdout=subprocess.PIPE, text=True)

        def line():
            r, _, _ = select.select([f.stdout], [], [], 15)
            self.assertTrue(r, "numaorchctl decisions --follow printed nothing")
            return json.loads(f.stdout.readline())
        try:
            first = line()
            self.run_ok("rebalance", "--dry-run")
            nxt = line()
            self.assertGreater(nxt["id"], first["id"])
        finally:
            f.kill()
            f.wait()
            f.stdout.close()
            self.run_ok("policy", "set", "cooldown=auto")
        out = self.run_ok("advise", "2", "1G")
        self.assertRegex(out, r"^nodes \d+ \(cpus [\d,-]+, memory on \d+\): ")
        # The policy's units: percent, as policy get and numaorchd.conf say.
        self.assertRegex(out, r"util \d+ % after \(≤ 90 %\)")
        out = self.run_ok("advise", "1", "256M", "--reserve", "5", "--label", "vm-x")
        self.assertIn("reserved for 5 s (reservation ", out)
        p = self.d.ctl("advise", "1", "900T")
        self.assertEqual(p.returncode, 8, p.stderr)
        self.assertTrue(p.stdout.startswith("nothing fits: needs "), p.stdout)
        self.assertNotIn("nothing fits: nothing fits", p.stdout)
        self.assertIn("below 90 % util", p.stdout)
        # --device: a PCI function's node from sysfs (a tree of the real
        # layout under NUMAORCH_SYSFS), or a node id.
        sysfs = os.path.join(self.tmp, "ctl-sysfs")
        for addr, node in (("0000:3b:00.1", "1"), ("0000:00:02.0", "-1")):
            os.makedirs(os.path.join(sysfs, "bus/pci/devices", addr), exist_ok=True)
            with open(os.path.join(sysfs, "bus/pci/devices", addr, "numa_node"), "w") as f:
                f.write(node + "\n")
        env = dict(os.environ, NUMAORCH_SYSFS=sysfs)
        out = self.run_ok("advise", "1", "64M", "--device", "0000:3b:00.1", "--devices", "require", env=env)
        self.assertIn("near its device on node 1 (required)", out)
        out = self.run_ok("advise", "1", "64M", "--device", "1", "--devices", "require")
        self.assertIn("near its device on node 1 (required)", out)
        p = self.d.ctl("advise", "1", "64M", "--device", "0000:00:02.0", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("gives it no NUMA node; not weighed", p.stderr)
        self.assertNotIn("device", p.stdout)
        self.fails(2, "advise", "1", "64M", "--device", "0000:99:00.0", env=env)
        self.fails(2, "advise", "1", "64M", "--device", "eth0")
        self.fails(2, "advise", "1", "64M", "--devices", "must")
        self.fails(2, "advise", "two", "1G")
        self.fails(2, "advise", "2", "lots")
        self.assertIn("accepted", self.run_ok("event", "started", "vm1", "--uuid",
                                              "4dea22b3-1d52-d8f3-2516-782e98ab3fa0"))
        self.fails(5, "event", "exploded", "vm1")
        self.assertIn("numaorch_moves_total", self.run_ok("metrics"))

    def test_usage_and_connection_errors(self):
        self.fails(2, "nonsense")
        self.fails(2, "status", "extra")
        p = subprocess.run([apilib.NUMAORCHCTL], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("Exit status:", subprocess.run([apilib.NUMAORCHCTL, "--help"], capture_output=True,
                                                      text=True).stdout)
        p = subprocess.run([apilib.NUMAORCHCTL, "--socket", os.path.join(self.tmp, "nope.sock"), "status"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 3)
        self.assertIn("is numaorchd running?", p.stderr)
        p = subprocess.run([apilib.NUMAORCHCTL, "--url", "http://127.0.0.1:1", "status"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 3)

    def test_tcp_with_token(self):
        self.assertIn("numaorchd", self.run_ok("status", tcp=True))
        bad = os.path.join(self.tmp, "badtoken")
        itlib.write(bad, "wrong-token-wrong-token\n")
        err = self.fails(6, "status", tcp=True, token_file=bad)
        self.assertIn("HTTP 403", err)
        env = dict(os.environ, NUMAORCH_URL="http://127.0.0.1:%d" % self.d.port,
                   NUMAORCH_TOKEN_FILE=self.d.token_file)
        p = subprocess.run([apilib.NUMAORCHCTL, "health"], capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        env.pop("NUMAORCH_TOKEN_FILE")
        p = subprocess.run([apilib.NUMAORCHCTL, "nodes"], capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 6, p.stderr)
        self.assertIn("HTTP 401", p.stderr)


    def test_health_exit_status_is_a_readiness_probe(self):
        # A first cycle that takes a while (a 3 s sample window): health
        # answers at once, exit 7 until the snapshot exists, then 0.
        tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        d = apilib.Daemon(tmp, self.root, conf="[agent]\nsample = 3\n").start(wait_ready=False)
        self.addCleanup(d.stop)
        p = d.ctl("health")
        self.assertEqual(p.returncode, 7, p.stdout + p.stderr)
        self.assertIn("starting", p.stdout)
        deadline = time.time() + 20
        while time.time() < deadline and d.ctl("health").returncode != 0:
            time.sleep(0.1)
        self.assertIn("(ready)", d.ctl("health").stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)

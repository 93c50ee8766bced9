"""Per-guest history (GET /v1/guests/{id}/history, numaorchctl guest's
sparkline, numaorch_history_bytes) from the real numaorchd on a fixture
host whose guest's memory per node the test changes between cycles."""
import os
import shutil
import unittest

import apilib
import itlib

REASON = apilib.skip_reason() or (None if os.path.exists(apilib.NUMAORCHCTL) else
                                  "build/numaorchctl missing (run make)")
MIB = 1024 * 1024


@unittest.skipIf(REASON, REASON or "")
class History(unittest.TestCase):
    def start(self, conf):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = apilib.compose_root(self.tmp)
        self.cg = os.path.join(self.root, "sys", "fs", "cgroup", "lxc.payload.db")
        # lxc-db's CPUs on node 0 only (0,2 in host-2node): its locality is
        # then its node-0 share, which each cycle below sets.
        for f in ("cpuset.cpus", "cpuset.cpus.effective"):
            itlib.write(os.path.join(self.cg, f), "0,2\n")
        self.set_mem(64, 64)
        self.d = apilib.Daemon(self.tmp, self.root, conf="[agent]\nsample = 0.05\nmode = advise\n" + conf)
        self.d.start()
        self.addCleanup(self.stop)

    def stop(self):
        self.assertEqual(self.d.stop(), 0)

    def set_mem(self, n0_mib, n1_mib):
        itlib.write(os.path.join(self.cg, "memory.numa_stat"),
                    "anon N0=%d N1=%d\nfile N0=0 N1=0\n" % (n0_mib * MIB, n1_mib * MIB))

    def cycle(self):
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True})
        self.assertEqual(r.status, 200, r)

    def history(self, gid="lxc-db"):
        r = self.d.get("/v1/guests/%s/history" % gid)
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_samples_follow_the_guest(self):
        self.start("history = 0\n")
        for n0, n1 in ((16, 48), (32, 32), (64, 0)):
            self.set_mem(n0, n1)
            self.cycle()
        h = self.history()
        self.assertEqual((h["guest"], h["capacity"], h["spacing_s"], h["nodes"]), ("lxc-db", 240, 0, [0, 1]))
        self.assertEqual(h["count"], len(h["samples"]))
        # the first cycle (64/64 MiB) and the three above, oldest first
        last = h["samples"][-4:]
        self.assertEqual([s["locality"] for s in last], [0.5, 0.25, 0.5, 1.0])
        self.assertEqual([s["mem_bytes_by_node"] for s in last][1:],
                         [{"0": 16 * MIB, "1": 48 * MIB}, {"0": 32 * MIB, "1": 32 * MIB}, {"0": 64 * MIB, "1": 0}])
        self.assertTrue(all(s["cpu_nodes"] == "0" and s["mems"] == "1" for s in last), last)
        self.assertEqual(sorted(s["time"] for s in h["samples"]), [s["time"] for s in h["samples"]])
        # the CLI: one line, from 25% up to 100%, as blocks in a UTF-8 locale
        p = self.d.ctl("guest", "lxc-db", env=dict(os.environ, LC_ALL="C.UTF-8"))
        self.assertEqual(p.returncode, 0, p.stderr)
        line = [l for l in p.stdout.splitlines() if l.startswith("history:")]
        self.assertEqual(len(line), 1, p.stdout)
        spark = line[0].split()[1]
        self.assertEqual(spark[-3:], "\u2583\u2585\u2588", line)
        self.assertIn("50% -> 100% over", line[0])
        self.assertIn("(%d samples)" % h["count"], line[0])
        p = self.d.ctl("guest", "lxc-db", env=dict(os.environ, LC_ALL="C"))
        line = [l for l in p.stdout.splitlines() if l.startswith("history:")][0]
        self.assertTrue(line.split()[1].endswith(",=#"), line)
        # bounded memory, reported
        m = self.d.get("/metrics").body.decode()
        hb = [l for l in m.splitlines() if l.startswith("numaorch_history_bytes ")]
        self.assertEqual(len(hb), 1, m)
        self.assertGreater(float(hb[0].split()[1]), 0)
        self.assertIn("numaorch_history_guests 9", m)

    def test_unknown_and_gone_guests(self):
        self.start("history = 0\n")
        r = self.d.get("/v1/guests/nope/history")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["type"], "urn:numaorch:problem:not-found")
        self.assertEqual(self.d.get("/v1/guests/..%2f/history").status, 400)
        self.history("runc-ctr1")
        shutil.rmtree(os.path.join(self.root, "sys", "fs", "cgroup", "mygroup", "ctr1"))
        self.cycle()
        self.assertEqual(self.d.get("/v1/guests/runc-ctr1/history").status, 404)

    def test_spacing_of_the_default_window(self):
        # history = 3600: at most one sample per 15 s, so cycles in quick
        # succession add none
        self.start("")
        n = self.history()["count"]
        for _ in range(3):
            self.cycle()
        h = self.history()
        self.assertEqual(h["spacing_s"], 15)
        self.assertEqual(h["count"], n)


if __name__ == "__main__":
    unittest.main()

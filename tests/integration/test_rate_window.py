"""The memory mover's rate budget from the configuration and the schedule
windows: the real numaorchd on this machine's real /proc and cgroup tree
(so its mover runs; a fixture root has none), a fixture sysfs of two
nodes. [memory] rate_mib is the budget; a window's rate_mib= replaces it
while the window is open, and it refines the per-cycle max_migrate_mib
(no more planned per cycle than the budget moves in an interval).
GET /v1/status shows what is in force."""
import os
import unittest

import apilib
import itlib

REASON = itlib.skip_reason_v1()


class LiveDaemon(apilib.Daemon):
    """apilib's daemon on the live host (real /proc, real cgroupfs) with a
    fixture sysfs, scoped to a sandbox cgroup nobody else uses."""

    def __init__(self, tmp, sysfs, scope, conf):
        super().__init__(tmp, None, conf=conf)
        self.sysfs = sysfs
        self.scope = scope

    def args(self):
        return itlib.numaorchd("--config", self.conf, "--sysfs", self.sysfs, "--scope", self.scope,
                               "--parent", self.scope, "--socket", self.sock,
                               "--listen", "127.0.0.1:0", "--token-file", self.token_file, "--interval", "2",
                               "--decision-log", os.path.join(self.tmp, "decisions.jsonl"), state_dir=self.state)


@unittest.skipIf(REASON, REASON or "")
class RateWindow(itlib.V1SandboxTest):
    def setUp(self):
        super().setUp()
        sysfs = itlib.fake_topology(self.tmp, [{"cpus": "0"}, {"cpus": "1"}])
        self.d = LiveDaemon(self.tmp, sysfs, self.sb.rel,
                            "[agent]\nsample = 0.05\n[memory]\nrate_mib = 100\n"
                            "[schedule]\nwindow = * 00:00-24:00 rate_mib=7\n").start()
        self.addCleanup(self.d.stop)

    def status(self):
        r = self.d.get("/v1/status")
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_window_sets_the_rate_and_refines_the_cycle_cap(self):
        st = self.status()
        self.assertTrue(st["schedule"][0]["active"], st["schedule"])
        self.assertEqual(st["in_force"]["rate_mib"], 7)
        # 7 MiB/s over a 2 s interval: 14 MiB a cycle, not the default 4096
        self.assertEqual(st["in_force"]["max_migrate_mib"], 14)
        self.assertIn("at most 100 MiB/s", self.d.logtext())
        p = self.d.ctl("schedule")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("memory mover: at most 7 MiB/s", p.stdout)
        # The window gone: the configured budget again, from the next cycle.
        r = self.d.request("PUT", "/v1/policy", {"schedule": []})
        self.assertEqual(r.status, 200, r)
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True})
        self.assertEqual(r.status, 200, r)
        st = self.status()
        self.assertEqual(st["in_force"]["rate_mib"], 100)
        self.assertEqual(st["in_force"]["max_migrate_mib"], 200)
        self.assertIn("at most 100 MiB/s for the whole host now", self.d.logtext())


if __name__ == "__main__":
    unittest.main()

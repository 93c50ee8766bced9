"""Scheduled rebalancing end to end: the real numaorchd on a fixture host
(no root needed) in advise mode, with schedule windows set through
PUT /v1/policy that open (or do not) at the real local time. Where a
window with mode=enforce is open, a cycle moves guests (the test build
of the daemon records the cgroup writes); where it is closed, nothing is written."""
import datetime
import os
import shutil
import unittest

import apilib
import itlib

REASON = apilib.skip_reason(test_build=True)


@unittest.skipIf(REASON, REASON or "")
class Schedule(unittest.TestCase):
    def setUp(self):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = apilib.compose_root(self.tmp)
        self.writes = os.path.join(self.root, "sys", "fs", "cgroup", ".numaorch-writes")
        self.d = apilib.Daemon(self.tmp, self.root, binary=itlib.NUMAORCHD_TEST,
                               conf="[agent]\nsample = 0.05\nmode = advise\n"
                                    "[schedule]\nwindow = Sat,Sun 00:00-24:00 max_moves=1\n").start()
        self.addCleanup(self.d.stop)

    def ok(self, resp, status=200):
        self.assertEqual(resp.status, status, resp)
        return resp.json()

    def nwrites(self):
        return len(apilib.slurp(self.writes).splitlines())

    def rebalance(self):
        return self.ok(self.d.request("POST", "/v1/rebalance", {"dry_run": False}))

    @staticmethod
    def day(offset):
        return (datetime.date.today() + datetime.timedelta(days=offset)).strftime("%a")

    def test_config_windows_are_shown(self):
        pol = self.ok(self.d.get("/v1/policy"))
        self.assertEqual(pol["schedule"], ["Sat,Sun 00:00-24:00 max_moves=1"])
        st = self.ok(self.d.get("/v1/status"))
        self.assertEqual(st["configured"]["mode"], "advise")
        self.assertEqual([w["window"] for w in st["schedule"]], ["Sat,Sun 00:00-24:00 max_moves=1"])
        weekend = datetime.date.today().weekday() >= 5
        self.assertEqual(st["schedule"][0]["active"], weekend)
        self.assertEqual(st["in_force"]["max_moves"], 1 if weekend else 4)

    def test_closed_window_moves_nothing_open_window_moves(self):
        # A window two days from now: closed. The agent stays in advise mode.
        later = "%s 00:00-24:00 mode=enforce" % self.day(2)
        r = self.ok(self.d.request("PUT", "/v1/policy", {"schedule": [later]}))
        self.assertIn("schedule", r["changed"])
        n0 = self.nwrites()
        rep = self.rebalance()
        self.assertFalse(rep["applied"], rep)
        self.assertTrue(any(i["kind"] == "move" for i in rep["plan"]["items"]),
                        "the fixture has guests worth moving: the plan should say so")
        self.assertEqual(self.nwrites(), n0, "advise mode wrote cgroups")
        st = self.ok(self.d.get("/v1/status"))
        self.assertEqual(st["mode"], "advise")
        self.assertEqual(st["schedule"], [{"window": later, "active": False}])

        # A window open all day today: enforce now, and at most 2 moves.
        now = "* 00:00-24:00 mode=enforce max_moves=2"
        self.ok(self.d.request("PUT", "/v1/policy", {"schedule": [later, now]}))
        rep = self.rebalance()
        self.assertTrue(rep["applied"], rep)
        moved = [x for x in rep["results"] if x["outcome"] == "moved"]
        self.assertTrue(moved, rep)
        # max_moves counts the moves that migrate memory (moves of CPUs alone are not capped)
        guests = {g["id"]: g for g in self.ok(self.d.get("/v1/guests"))["guests"]}
        migrating = [i for i in rep["plan"]["items"] if i["kind"] == "move" and
                     i.get("migrate_bytes", 0) > 0.01 * (guests.get(i["guest"], {}).get("mem_total_bytes") or 0)]
        self.assertLessEqual(len(migrating), 2, rep["plan"]["items"])
        self.assertGreater(self.nwrites(), n0)
        st = self.ok(self.d.get("/v1/status"))
        self.assertEqual(st["mode"], "enforce")
        self.assertEqual(st["configured"]["mode"], "advise")
        self.assertEqual([w["active"] for w in st["schedule"]], [False, True])
        self.assertEqual(st["in_force"]["max_moves"], 2)
        # GET /v1/policy is the configured policy, windows included.
        pol = self.ok(self.d.get("/v1/policy"))
        self.assertEqual(pol["mode"], "advise")
        self.assertEqual(pol["schedule"], [later, now])

        # Clearing the windows: back to advise.
        self.ok(self.d.request("PUT", "/v1/policy", {"schedule": []}))
        n1 = self.nwrites()
        rep = self.rebalance()
        self.assertFalse(rep["applied"])
        self.assertEqual(self.nwrites(), n1)

    def test_bad_windows_are_rejected_and_change_nothing(self):
        before = self.ok(self.d.get("/v1/policy"))
        for body, field in (({"schedule": "Mon 08:00-18:00 mode=advise"}, "schedule"),
                            ({"schedule": [42]}, "schedule[0]"),
                            ({"schedule": ["* 08:00-18:00 mode=advise", "Mon 25:00-26:00 mode=off"]},
                             "schedule[1]"),
                            ({"schedule": ["Mon 08:00-18:00"]}, "schedule[0]"),
                            ({"schedule": ["x" * 200]}, "schedule[0]"),
                            ({"schedule": ["* 00:00-24:00 mode=off"] * 33}, "schedule")):
            with self.subTest(body=str(body)[:60]):
                r = self.d.request("PUT", "/v1/policy", body)
                self.assertEqual(r.status, 400, r)
                self.assertEqual(r.json()["field"], field)
        self.assertEqual(self.ok(self.d.get("/v1/policy")), before)

    def test_cli(self):
        p = self.d.ctl("schedule", "set", "* 00:00-24:00 mode=off")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.d.ctl("schedule")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.rebalance()
        p = self.d.ctl("schedule")
        self.assertIn("open   * 00:00-24:00 mode=off", p.stdout)
        self.assertIn("in force now: mode off", p.stdout)
        p = self.d.ctl("status")
        self.assertIn("schedule:    * 00:00-24:00 mode=off  [open]", p.stdout)
        self.assertEqual(self.d.ctl("schedule", "clear").returncode, 0)
        self.assertEqual(self.d.ctl("schedule", "set").returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)

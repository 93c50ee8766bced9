"""The REST API over real HTTP: the real numaorchd on a fixture host (no
root needed) with its API on a private unix socket and on 127.0.0.1 with a
bearer token. Every route's happy path; a table of bad requests, each
answered with the right status and an RFC 7807 body, after which the
daemon still answers and nothing changed; the served routes against
api/openapi.yaml; /metrics through promtool; TLS; slow clients."""
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import unittest

import apilib
import itlib
from apilib import TOKEN

# The test build: test_rebalance_dry_run_and_real and BadRequests count the
# cgroup writes it logs.
REASON = apilib.skip_reason(test_build=True)


@unittest.skipIf(REASON, REASON or "")
class Api(apilib.ClassDaemon):
    # setUpClass/tearDownClass (one daemon; it must exit 0): apilib.ClassDaemon
    BINARY = itlib.NUMAORCHD_TEST
    SETTLED = "lxc-settled"

    @classmethod
    def prepare_root(cls, root):
        """One guest already where it belongs (CPUs and all its memory on
        node 0): the policy calls it settled, which only a verbose plan shows."""
        cg = os.path.join(root, "sys", "fs", "cgroup")
        d = os.path.join(cg, "lxc.payload.settled")
        shutil.copytree(os.path.join(cg, "lxc.payload.db"), d)
        for f, v in (("cpuset.cpus", "0,2"), ("cpuset.cpus.effective", "0,2"),
                     ("cpuset.mems", "0"), ("cpuset.mems.effective", "0")):
            itlib.write(os.path.join(d, f), v + "\n")
        itlib.write(os.path.join(d, "memory.numa_stat"), "anon N0=%d N1=0\nfile N0=0 N1=0\n" % (64 << 20))

    def ok(self, r, status=200):
        self.assertEqual(r.status, status, r)
        if r.body:
            self.assertTrue(r.headers["content-type"].startswith("application/json"), r.headers)
            return r.json()
        return None

    def guests(self):
        return self.ok(self.d.get("/v1/guests"))["guests"]

    # --- the spec ---------------------------------------------------------
    def test_routes_served_are_the_routes_in_the_spec(self):
        try:
            spec, documented = apilib.openapi_routes()
        except ImportError:
            self.skipTest("python3-yaml is not installed: cannot read api/openapi.yaml")
        self.assertTrue(spec["openapi"].startswith("3."))
        served = apilib.served_routes()
        self.assertEqual(served, documented,
                         "served but not documented: %s; documented but not served: %s"
                         % (sorted(served - documented), sorted(documented - served)))
        # And the running server answers each of them (not 404/405).
        gid = self.guests()[0]["id"]
        for method, path in sorted(served):
            target = path.replace("{id}", gid)
            r = self.d.request(method, target, body={} if method in ("PUT", "POST") else None)
            self.assertNotEqual(r.status, 405, "%s %s -> %r" % (method, target, r))
            if r.status == 404:  # a guest policy never set, not a missing route
                self.assertNotEqual(r.json()["detail"], "no such resource", "%s %s" % (method, target))
        # Every $ref in the spec resolves.
        text = apilib.slurp(apilib.OPENAPI)
        import re
        for kind, name in re.findall(r'\$ref: "#/components/(\w+)/(\w+)"', text):
            self.assertIn(name, spec["components"][kind], "dangling $ref %s/%s" % (kind, name))

    def test_every_route_answers_as_its_schema_says(self):
        try:
            chk = apilib.SpecChecker()
        except ImportError as e:
            self.skipTest("python3-jsonschema / python3-yaml missing: %s" % e)
        d = self.d
        gid = self.guests()[0]["id"]
        gp = "/v1/guests/{id}/policy"
        pol = d.get("/v1/policy").json()
        calls = [
            ("GET", "/v1/health", "/v1/health", None, {}),
            ("GET", "/v1/health", "/v1/health", None, {"tcp": True, "token": None}),
            ("GET", "/v1/status", "/v1/status", None, {}),
            ("GET", "/v1/nodes", "/v1/nodes", None, {}),
            ("GET", "/v1/topology", "/v1/topology", None, {}),
            ("GET", "/v1/guests", "/v1/guests", None, {}),
            ("GET", "/v1/guests?kind=container", "/v1/guests", None, {}),
            ("GET", "/v1/guests?kind=nope", "/v1/guests", None, {}),
            ("GET", "/v1/guests/" + gid, "/v1/guests/{id}", None, {}),
            ("GET", "/v1/guests/no-such-guest", "/v1/guests/{id}", None, {}),
            ("GET", "/v1/guests/" + gid + "/history", "/v1/guests/{id}/history", None, {}),
            ("GET", "/v1/guests/no-such-guest/history", "/v1/guests/{id}/history", None, {}),
            ("GET", "/v1/guests/" + gid + "/policy", gp, None, {}),
            ("PUT", "/v1/guests/" + gid + "/policy", gp, {"mode": "pinned", "nodes": "0"}, {}),
            ("PUT", "/v1/guests/" + gid + "/policy", gp, {"mode": "pinned"}, {}),
            ("PUT", "/v1/guests/no-such-guest/policy", gp, {"mode": "auto"}, {}),
            ("GET", "/v1/guests/" + gid + "/policy", gp, None, {}),
            ("GET", "/v1/guest-policies", "/v1/guest-policies", None, {}),
            ("GET", "/v1/guest-policies?limit=1", "/v1/guest-policies", None, {}),
            ("GET", "/v1/guest-policies?limit=0", "/v1/guest-policies", None, {}),
            ("DELETE", "/v1/guests/" + gid + "/policy", gp, None, {}),
            ("DELETE", "/v1/guests/" + gid + "/policy", gp, None, {}),
            ("GET", "/v1/policy", "/v1/policy", None, {}),
            ("PUT", "/v1/policy", "/v1/policy", {"max_util": 90, "revision": pol["revision"]}, {}),
            ("PUT", "/v1/policy", "/v1/policy", {"max_util": 90, "revision": "0000000000000000"}, {}),
            ("PUT", "/v1/policy", "/v1/policy", {"max_util": 150}, {}),
            ("PUT", "/v1/policy", "/v1/policy", {"max_util": 90}, {"content_type": "text/plain"}),
            ("DELETE", "/v1/policy", "/v1/policy", None, {}),
            ("POST", "/v1/rebalance", "/v1/rebalance", {"dry_run": True, "verbose": True}, {}),
            ("POST", "/v1/rebalance", "/v1/rebalance", {"dry_run": True}, {}),
            ("GET", "/v1/decisions", "/v1/decisions", None, {}),
            ("GET", "/v1/decisions?limit=2000", "/v1/decisions", None, {}),
            ("POST", "/v1/placements", "/v1/placements", {"vcpus": 1, "memory_mib": 64}, {}),
            ("POST", "/v1/placements", "/v1/placements", {"vcpus": 1, "memory_mib": 64,
                                                           "reserve_seconds": 5, "label": "x"}, {}),
            ("POST", "/v1/events", "/v1/events", {"source": "spec", "event": "stopped", "domain": "d"}, {}),
            ("POST", "/v1/events", "/v1/events", {"source": "spec", "event": "exploded", "domain": "d"}, {}),
            ("GET", "/metrics", "/metrics", None, {}),
            ("GET", "/v1/migrations", "/v1/migrations", None, {}),
            ("DELETE", "/v1/migrations/1", "/v1/migrations/{id}", None, {}),
            ("DELETE", "/v1/migrations/x", "/v1/migrations/{id}", None, {}),
            ("GET", "/v1/status", "/v1/status", None, {"tcp": True, "token": None}),
            ("GET", "/v1/status", "/v1/status", None, {"tcp": True, "token": "wrong-token-0123456789"}),
            ("DELETE", "/v1/status", "/v1/status", None, {}),
        ]
        failures = []
        for method, target, template, body, kw in calls:
            r = d.request(method, target, body=body, **kw)
            if method == "DELETE" and template == "/v1/status":
                # 405 is a route's answer the spec gives through `default`.
                method = "GET"
            try:
                chk.check(method, template, r)
            except AssertionError as e:
                failures.append(str(e))
        self.assertEqual(failures, [], "\n\n".join(failures))
        # Every route and most of its documented answers were seen.
        seen = {(m, t) for m, t, _ in chk.checked}
        self.assertEqual(seen, apilib.served_routes(), "routes without a checked answer")

    # --- happy paths --------------------------------------------------------
    def test_health_status_nodes(self):
        h = self.ok(self.d.get("/v1/health"))
        self.assertEqual((h["status"], h["ready"]), ("ok", True))
        self.assertLess(h["engine_heartbeat_age_s"], 5)
        s = self.ok(self.d.get("/v1/status"))
        for k in ("version", "uptime_s", "mode", "interval_s", "last_cycle", "cycles", "totals", "warnings"):
            self.assertIn(k, s)
        self.assertEqual(s["host"]["nodes"], 2)
        self.assertEqual(s["interval_s"], 3600)
        self.assertGreaterEqual(s["cycles"], 1)
        self.assertGreater(s["guests"]["total"], 5)
        n = self.ok(self.d.get("/v1/nodes"))
        self.assertEqual([x["id"] for x in n["nodes"]], [0, 1])
        for node in n["nodes"]:
            for k in ("cpus", "nr_cpus", "mem_total_bytes", "mem_free_bytes", "busy", "distance", "guests"):
                self.assertIn(k, node)
            # Memory in flight: no mover job runs on this fixture host.
            self.assertEqual((node["mem_leaving_bytes"], node["mem_coming_bytes"]), (0, 0))
        r = self.d.request("HEAD", "/v1/status")
        self.assertEqual(r.status, 200)

    def test_guests_and_filters(self):
        g = self.ok(self.d.get("/v1/guests"))
        self.assertEqual(g["count"], len(g["guests"]))
        ids = [x["id"] for x in g["guests"]]
        self.assertEqual(ids, sorted(ids))
        docker = self.ok(self.d.get("/v1/guests?runtime=docker"))["guests"]
        self.assertTrue(docker and all(x["runtime"] == "docker" for x in docker))
        self.assertEqual(self.ok(self.d.get("/v1/guests?kind=vm"))["count"], 0)
        self.assertEqual(self.ok(self.d.get("/v1/guests?kind=container"))["count"], g["count"])
        on0 = self.ok(self.d.get("/v1/guests?node=0"))["guests"]
        self.assertTrue(all("0" in x["cpu_nodes"] for x in on0))
        one = self.ok(self.d.get("/v1/guests/" + ids[0]))
        for k in ("cgroup", "nr_threads", "cpu_use", "mem_bytes_by_node", "locality", "cpus", "mems",
                  "policy", "plan", "last_decision", "locality_source", "mem_in_cpuset", "mem_in_cpuset_bytes"):
            self.assertIn(k, one)
        self.assertEqual(one["id"], ids[0])
        # Locality where the threads run beside memory inside the cpuset:
        # on one node they agree; a summary carries both.
        for x in g["guests"]:
            self.assertIn(x["locality_source"], ("one_node", "threads", "estimate"))
            self.assertIn("mem_in_cpuset", x)
            if x["locality_source"] == "one_node" and x["mem_total_bytes"]:
                self.assertAlmostEqual(x["locality"], x["mem_in_cpuset"], places=6)

    def test_guest_policy_lifecycle(self):
        gid = [x["id"] for x in self.guests() if x["runtime"] == "lxc"][0]
        p = "/v1/guests/%s/policy" % gid
        self.assertEqual(self.ok(self.d.get(p))["source"], "default")
        r = self.ok(self.d.request("PUT", p, {"mode": "pinned", "nodes": "1"}))
        self.assertEqual((r["mode"], r["nodes"], r["source"], r["present"]), ("pinned", "1", "api", True))
        self.assertEqual(self.ok(self.d.get(p))["mode"], "pinned")
        self.assertEqual(self.ok(self.d.get("/v1/guests/" + gid))["policy"]["nodes"], "1")
        listed = self.ok(self.d.get("/v1/guest-policies"))["policies"]
        self.assertIn(gid, [x["guest"] for x in listed])
        self.assertEqual(apilib.stored_policies(self.d.state)[gid]["nodes"], "1")
        r = self.ok(self.d.request("PUT", p, {"mode": "pinned", "nodes": [0, 1]}))
        self.assertEqual(r["nodes"], "0-1")
        before = self.ok(self.d.get("/v1/status"))["cycles"]
        self.assertEqual(self.ok(self.d.request("PUT", p, {"mode": "ignore"}))["mode"], "ignore")
        # Once a cycle's snapshot carries the override, a DELETE shows the
        # guest's own policy at once, not the snapshot's until the next cycle.
        t0 = time.time()
        while time.time() < t0 + 10 and self.ok(self.d.get("/v1/status"))["cycles"] <= before:
            time.sleep(0.05)
        self.assertEqual(self.ok(self.d.get("/v1/guests/" + gid))["policy"]["mode"], "ignore")
        self.assertEqual(self.d.request("DELETE", p).status, 204)
        self.assertEqual(self.ok(self.d.get(p))["source"], "default")
        self.assertEqual(self.ok(self.d.get("/v1/guests/" + gid))["policy"]["mode"], "auto")
        self.assertEqual(self.d.request("DELETE", p).status, 404)
        # A guest that is not here now: refused (a mistyped id must not be
        # stored silently), unless it is meant for one about to start.
        r = self.d.request("PUT", "/v1/guests/vm-not-yet-here/policy", {"mode": "ignore"})
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.headers["content-type"], "application/problem+json")
        self.assertIn("provision", r.json()["detail"])
        self.assertEqual(self.d.get("/v1/guests/vm-not-yet-here/policy").status, 404)
        self.assertNotIn("vm-not-yet-here", apilib.stored_policies(self.d.state))
        r = self.ok(self.d.request("PUT", "/v1/guests/vm-not-yet-here/policy", {"mode": "ignore", "provision": True}))
        self.assertFalse(r["present"])
        self.assertEqual(self.d.request("DELETE", "/v1/guests/vm-not-yet-here/policy").status, 204)

    def test_guest_policy_change_prompts_a_cycle(self):
        # The interval is an hour: only the change can bring a cycle. An
        # operator's pin is acted on in about a second (the prompt waits
        # a second after the last cycle), not at the next interval.
        self.d.quiesce()
        p = "/v1/guests/%s/policy" % self.SETTLED
        before = self.ok(self.d.get("/v1/status"))["cycles"]
        t0 = time.time()
        self.ok(self.d.request("PUT", p, {"mode": "auto"}))
        self.addCleanup(self.d.request, "DELETE", p)
        while time.time() < t0 + 10 and self.ok(self.d.get("/v1/status"))["cycles"] <= before:
            time.sleep(0.05)
        self.assertGreater(self.ok(self.d.get("/v1/status"))["cycles"], before,
                           "no cycle within 10 s of a guest-policy change (interval 3600 s)")

    def test_policy_get_put_revision(self):
        before = self.ok(self.d.get("/v1/policy"))
        self.assertEqual(before["max_util"], 90)
        r = self.ok(self.d.request("PUT", "/v1/policy", {"max_util": 85, "cooldown": 120,
                                                          "revision": before["revision"]}))
        self.assertIn("max_util 90.0 -> 85.0", r["changed"])
        now = self.ok(self.d.get("/v1/policy"))
        self.assertEqual((now["max_util"], now["cooldown"]), (85, 120))
        self.assertNotEqual(now["revision"], before["revision"])
        stale = self.d.request("PUT", "/v1/policy", {"max_util": 80, "revision": before["revision"]})
        self.assertEqual(stale.status, 409, stale)
        self.assertEqual(stale.json()["field"], "revision")
        # Put it back (other tests read the defaults).
        self.ok(self.d.request("PUT", "/v1/policy", {"max_util": 90, "cooldown": "auto"}))
        self.assertEqual(self.ok(self.d.get("/v1/policy"))["revision"], before["revision"])

    def test_policy_auto_settings(self):
        """max_moves, max_migrate_mib and cooldown are "auto" by default
        (sized by the mover: GET /v1/status says from what) and take a
        number or "auto" back."""
        pol = self.ok(self.d.get("/v1/policy"))
        self.assertEqual((pol["max_moves"], pol["max_migrate_mib"], pol["cooldown"]), ("auto", "auto", "auto"))
        inf = self.ok(self.d.get("/v1/status"))["in_force"]
        # a fixture root has no mover: its 4 workers, auto's floor
        self.assertEqual(inf["max_moves"], 4, inf)
        self.assertEqual(inf["sized"]["max_moves"], "4 = [memory] workers", inf)
        self.assertIn("auto's floor", inf["sized"]["max_migrate_mib"], inf)
        self.assertIsNone(inf["mover_rate_mibs"], inf)
        self.addCleanup(self.d.request, "PUT", "/v1/policy", {"max_moves": "auto"})
        r = self.ok(self.d.request("PUT", "/v1/policy", {"max_moves": 7}))
        self.assertIn('max_moves "auto" -> 7', r["changed"])
        self.assertEqual(self.ok(self.d.get("/v1/policy"))["max_moves"], 7)
        self.ok(self.d.request("PUT", "/v1/policy", {"max_moves": "auto"}))
        self.assertEqual(self.ok(self.d.get("/v1/policy"))["max_moves"], "auto")

    def test_rebalance_dry_run_and_real(self):
        writes = os.path.join(self.root, "sys", "fs", "cgroup", ".numaorch-writes")
        # A cycle an earlier test prompted (a guest-policy change, an
        # event) would write during the dry runs, and would have moved
        # the guests this test wants moves of: let it run, then lift the
        # cool-down for this test (put back after it).
        self.d.quiesce()
        self.ok(self.d.request("PUT", "/v1/policy", {"cooldown": 0}))
        self.addCleanup(self.d.request, "PUT", "/v1/policy", {"cooldown": "auto"})
        n0 = len(apilib.slurp(writes).splitlines())
        r = self.ok(self.d.request("POST", "/v1/rebalance", {"dry_run": True, "verbose": True}))
        self.assertFalse(r["applied"])
        self.assertEqual(r["results"], [])
        kinds = {i["guest"]: i["kind"] for i in r["plan"]["items"]}
        # verbose: the settled guest is in the plan as settled, beside the others
        self.assertEqual(kinds.get(self.SETTLED), "settled", r["plan"])
        self.assertIn("move", kinds.values(), r["plan"])
        self.assertEqual(len(apilib.slurp(writes).splitlines()), n0, "a dry run wrote")
        # not verbose: the same plan without its settled items
        quiet = self.ok(self.d.request("POST", "/v1/rebalance", {"dry_run": True}))
        qkinds = {i["guest"]: i["kind"] for i in quiet["plan"]["items"]}
        self.assertEqual(qkinds, {g: k for g, k in kinds.items() if k != "settled"}, quiet["plan"])
        self.assertEqual(len(apilib.slurp(writes).splitlines()), n0, "a dry run wrote")
        r = self.ok(self.d.request("POST", "/v1/rebalance", None, content_type=None))
        self.assertTrue(r["applied"])
        self.assertTrue(r["results"], r)
        for res in r["results"]:
            self.assertIn(res["outcome"], ("moved", "vanished", "changed", "no_room"))
        self.assertEqual(r["summary"]["moved"], sum(1 for x in r["results"] if x["outcome"] == "moved"))
        self.assertFalse(any(i["kind"] == "settled" for i in r["plan"]["items"]))

    def test_cycle_records_its_engine_thread_time(self):
        """Each cycle that records anything records its own time on the
        engine thread too (decision "cycle", no guest): wall and CPU
        seconds by phase, none negative, none above its total, the CPU
        time within the wall time, through GET /v1/decisions."""
        before = self.ok(self.d.get("/v1/decisions"))["last_id"]
        r = self.ok(self.d.request("POST", "/v1/rebalance", {"dry_run": True}))
        recs = self.ok(self.d.get("/v1/decisions?since=%d&limit=1000" % before))["decisions"]
        cyc = [x for x in recs if x["decision"] == "cycle"]
        self.assertEqual(len(cyc), 1, recs)
        c = cyc[0]
        self.assertEqual(c["cycle"], r["seq"])
        self.assertNotIn("guest", c)
        self.assertTrue(c["dry_run"])
        # it comes after the cycle's other records
        self.assertEqual(c["id"], max(x["id"] for x in recs))
        phases = ("acquire", "decide", "apply", "record")
        for kind in ("wall_s", "cpu_s"):
            t = c["engine_time"][kind]
            self.assertEqual(sorted(t), sorted(phases + ("total",)), t)
            for ph in phases:
                self.assertGreaterEqual(t[ph], 0, (kind, t))
                self.assertLessEqual(t[ph], t["total"] + 1e-9, (kind, t))
            self.assertAlmostEqual(sum(t[ph] for ph in phases), t["total"], places=6)
            self.assertGreater(t["total"], 0, (kind, t))
            self.assertLess(t["total"], 60, (kind, t))
        # one thread's CPU time cannot exceed the wall time it ran in
        self.assertLessEqual(c["engine_time"]["cpu_s"]["total"], c["engine_time"]["wall_s"]["total"] + 0.01, c)
        # the guests' records of the cycle carry none
        self.assertFalse([x for x in recs if x["decision"] != "cycle" and "engine_time" in x])

    def test_decisions(self):
        self.ok(self.d.request("POST", "/v1/rebalance", {"dry_run": True}))
        d = self.ok(self.d.get("/v1/decisions"))
        self.assertTrue(d["decisions"])
        last = d["last_id"]
        ids = [x["id"] for x in d["decisions"]]
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(self.ok(self.d.get("/v1/decisions?since=%d" % last))["decisions"], [])
        # the last guest's (a cycle's own record has no guest)
        g = [x for x in d["decisions"] if "guest" in x][-1]["guest"]
        only = self.ok(self.d.get("/v1/decisions?guest=" + g + "&limit=1000"))["decisions"]
        self.assertTrue(only and all(x["guest"] == g for x in only))
        self.assertEqual(len(self.ok(self.d.get("/v1/decisions?limit=1"))["decisions"]), 1)
        self.assertTrue(self.ok(self.d.get("/v1/decisions?since=2000-01-01T00:00:00Z"))["decisions"])
        self.assertTrue(self.ok(self.d.get("/v1/decisions?since=2000-02-29T00:00:00.000Z"))["decisions"])
        self.assertEqual(self.ok(self.d.get("/v1/decisions?since=2999-01-01T00:00:00Z"))["decisions"], [])

    def test_placements_reserve_room(self):
        free = {n["id"]: n["mem_free_bytes"] >> 20 for n in self.ok(self.d.get("/v1/nodes"))["nodes"]}
        # Big enough that one node cannot take two of them.
        mib = int(min(free.values()) * 0.6)
        a = self.ok(self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": mib,
                                                               "reserve_seconds": 30, "label": "vm-a"}))
        b = self.ok(self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": mib,
                                                               "reserve_seconds": 30}))
        self.assertTrue(a["ok"] and b["ok"], (a, b))
        self.assertNotEqual(a["nodes"], b["nodes"], "two reservations were given the same room")
        self.assertEqual(a["reservation"]["label"], "vm-a")
        self.assertGreaterEqual(b["active_reservations"], 2)
        # Without reserving, nothing is held.
        c = self.ok(self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64}))
        self.assertIsNone(c["reservation"])
        nofit = self.ok(self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 1 << 28}))
        self.assertFalse(nofit["ok"])
        self.assertIn("nothing fits", nofit["detail"])

    def test_placements_weigh_devices(self):
        # The fixture host's nodes, a small guest: where the advice puts it
        # without a device, then with its device on another node (require:
        # a set holding it; prefer: the record weighs it, near or away as
        # the other node's load says).
        plain = self.ok(self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64}))
        self.assertTrue(plain["ok"], plain)
        ids = [n["id"] for n in self.ok(self.d.get("/v1/nodes"))["nodes"] if n.get("cpus")]
        other = [i for i in ids if str(i) != plain["nodes"]]
        if not other:
            self.skipTest("the fixture host has one CPU node: no other node for a device")
        dev = other[-1]
        pref = self.ok(self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64,
                                                                  "device_nodes": [dev]}))
        self.assertTrue(pref["ok"], pref)
        self.assertIn("its device on node %d" % dev, pref["detail"])
        a = self.ok(self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64,
                                                               "device_nodes": [dev], "devices": "require"}))
        self.assertTrue(a["ok"], a)
        self.assertIn(dev, [int(x) for x in a["nodes"].replace("-", ",").split(",")], a)
        self.assertIn("near its device on node %d (required)" % dev, a["detail"])
        ign = self.ok(self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64,
                                                                 "device_nodes": str(dev), "devices": "ignore"}))
        self.assertEqual(ign["nodes"], plain["nodes"])
        self.assertNotIn("device", ign["detail"])

    def test_event_triggers_a_cycle(self):
        # A cycle still pending (an earlier test's policy change) would
        # serve the event, which then says so only at debug level.
        self.d.quiesce()
        before = self.ok(self.d.get("/v1/status"))["cycles"]
        r = self.d.request("POST", "/v1/events", {"source": "libvirt-hook", "event": "started",
                                                   "domain": "vm1",
                                                   "uuid": "4dea22b3-1d52-d8f3-2516-782e98ab3fa0"})
        self.assertEqual(r.status, 202, r)
        self.assertEqual(r.json(), {"accepted": True})
        deadline = time.time() + 10
        while time.time() < deadline and self.ok(self.d.get("/v1/status"))["cycles"] <= before:
            time.sleep(0.05)
        self.assertGreater(self.ok(self.d.get("/v1/status"))["cycles"], before, "no cycle after the event")
        self.assertIn("event from libvirt-hook: domain vm1 started", self.d.logtext())

    def test_tcp_needs_the_token_except_health(self):
        r = self.d.get("/v1/health", tcp=True, token=None)
        self.assertEqual(r.status, 200)
        self.assertEqual(self.d.get("/v1/status", tcp=True).status, 200)
        self.assertEqual(self.d.get("/v1/guests", tcp=True).status, 200)
        r = self.d.request("POST", "/v1/events", {"source": "x", "event": "started", "domain": "d"},
                           tcp=True, token=None)
        self.assertEqual(r.status, 401)
        r = self.d.get("/metrics", tcp=True)
        self.assertEqual(r.status, 200)

    def test_metrics(self):
        self.d.get("/v1/status")
        r = self.d.get("/metrics")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.headers["content-type"].startswith("text/plain; version=0.0.4"))
        text = r.body.decode()
        for fam in ("numaorch_node_cpu_busy_ratio", "numaorch_node_memory_free_bytes",
                    "numaorch_guest_locality_ratio", "numaorch_guest_mem_in_cpuset_ratio",
                    "numaorch_guest_memory_bytes", "numaorch_moves_total",
                    "numaorch_migrated_bytes_total", "numaorch_cycle_duration_seconds_bucket",
                    "numaorch_guest_cpu_seconds_total", "numaorch_guest_info",
                    "numaorch_api_requests_total", "numaorch_api_request_duration_seconds_bucket"):
            self.assertIn(fam, text)
        # a fixture root runs no libvirt source: exactly the "disabled" state is 1
        self.assertIn('numaorch_libvirt_state{state="disabled"} 1', text)
        self.assertIn('numaorch_libvirt_state{state="connected"} 0', text)
        self.assertIn('numaorch_api_requests_total{route="/v1/status",code="200"}', text)
        promtool = shutil.which("promtool")
        if not promtool:
            self.skipTest("promtool (Debian package prometheus) not installed: metrics format not checked")
        p = subprocess.run([promtool, "check", "metrics"], input=r.body, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())

    def test_slow_and_half_requests_do_not_block_others(self):
        # Connections that send half a request (or nothing) hold only themselves.
        held = []
        for i in range(8):
            s = self.d.connect()
            s.sendall(b"PUT /v1/policy HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"max")
            held.append(s)
        for i in range(4):
            s = self.d.connect(tcp=True)
            s.sendall(b"GET /v1/sta")
            held.append(s)
        t0 = time.time()
        self.assertEqual(self.d.get("/v1/status").status, 200)
        self.assertEqual(self.d.get("/v1/status", tcp=True).status, 200)
        self.assertLess(time.time() - t0, 2)
        for s in held:
            s.close()

    def test_concurrent_readers_and_writers(self):
        errors = []

        def reader():
            for _ in range(30):
                for t in ("/v1/status", "/v1/guests", "/metrics"):
                    r = self.d.get(t)
                    if r.status != 200:
                        errors.append((t, r))

        def writer():
            for i in range(15):
                r = self.d.request("PUT", "/v1/guests/runc-ctr1/policy",
                                   {"mode": "pinned", "nodes": str(i % 2)})
                if r.status != 200:
                    errors.append(("put", r))
            self.d.request("DELETE", "/v1/guests/runc-ctr1/policy")

        ts = [threading.Thread(target=reader) for _ in range(4)] + [threading.Thread(target=writer)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertTrue(self.d.alive())


# (name, method, target, body, kwargs, status, problem code, field)
BIG = b'{"max_util": 80, "pad": "' + b"x" * (70 * 1024) + b'"}'
BAD = [
    ("malformed JSON", "PUT", "/v1/policy", '{"max_util": 8', {}, 400, "malformed-body", None),
    ("JSON array body", "PUT", "/v1/policy", "[1, 2]", {}, 400, "malformed-body", None),
    ("empty body", "PUT", "/v1/policy", "", {}, 400, "malformed-body", None),
    ("string for a number", "PUT", "/v1/policy", {"max_util": "85"}, {}, 400, "invalid-field", "max_util"),
    ("bool for an integer", "PUT", "/v1/policy", {"max_moves": True}, {}, 400, "invalid-field", "max_moves"),
    ("out of range", "PUT", "/v1/policy", {"max_util": 150}, {}, 400, "invalid-field", "max_util"),
    ("negative seconds", "PUT", "/v1/policy", {"cooldown": -1}, {}, 400, "invalid-field", "cooldown"),
    ("fraction for an integer", "PUT", "/v1/policy", {"max_moves": 2.5}, {}, 400, "invalid-field", "max_moves"),
    ("not auto", "PUT", "/v1/policy", {"max_moves": "autox"}, {}, 400, "invalid-field", "max_moves"),
    ("unknown field", "PUT", "/v1/policy", {"max_utl": 80}, {}, 400, "unknown-field", "max_utl"),
    ("unknown mode", "PUT", "/v1/policy", {"mode": "aggressive"}, {}, 400, "invalid-field", "mode"),
    ("bad revision", "PUT", "/v1/policy", {"revision": "xyz"}, {}, 400, "invalid-field", "revision"),
    ("duplicate keys", "PUT", "/v1/policy", '{"max_util": 80, "max_util": 90}', {}, 400, "malformed-body", None),
    ("NaN", "PUT", "/v1/policy", '{"max_util": NaN}', {}, 400, "malformed-body", None),
    ("non-UTF-8 in JSON", "PUT", "/v1/policy", b'{"mode": "\xff\xfe"}', {}, 400, "malformed-body", None),
    ("number overflow", "PUT", "/v1/policy", '{"max_moves": 1e400}', {}, 400, "malformed-body", None),
    ("escaped NUL", "PUT", "/v1/policy", '{"mode": "enf\\u0000orce"}', {}, 400, "malformed-body", None),
    ("deep nesting", "PUT", "/v1/policy", "[" * 5000 + "]" * 5000, {}, 400, "malformed-body", None),
    ("guest policy without mode", "PUT", "/v1/guests/runc-ctr1/policy", {}, {}, 400, "invalid-field", "mode"),
    ("pinned without nodes", "PUT", "/v1/guests/runc-ctr1/policy", {"mode": "pinned"}, {}, 400,
     "invalid-field", "nodes"),
    ("nodes with auto", "PUT", "/v1/guests/runc-ctr1/policy", {"mode": "auto", "nodes": "0"}, {}, 400,
     "invalid-field", "nodes"),
    ("malformed node list", "PUT", "/v1/guests/runc-ctr1/policy", {"mode": "pinned", "nodes": "0-"}, {},
     400, "invalid-field", "nodes"),
    ("node id out of range", "PUT", "/v1/guests/runc-ctr1/policy", {"mode": "pinned", "nodes": [5000]}, {},
     400, "invalid-field", "nodes"),
    ("pinned to a node the host lacks", "PUT", "/v1/guests/runc-ctr1/policy",
     {"mode": "pinned", "nodes": "0,5"}, {}, 409, "conflict", "nodes"),
    ("guest policy unknown field", "PUT", "/v1/guests/runc-ctr1/policy", {"mode": "auto", "why": 1}, {},
     400, "unknown-field", "why"),
    ("clear a policy never set", "DELETE", "/v1/guests/runc-ctr1/policy", None, {}, 404, "not-found", "id"),
    ("rebalance wrong type", "POST", "/v1/rebalance", {"dry_run": "yes"}, {}, 400, "invalid-field", "dry_run"),
    ("rebalance unknown field", "POST", "/v1/rebalance", {"force": True}, {}, 400, "unknown-field", "force"),
    ("zero vcpus", "POST", "/v1/placements", {"vcpus": 0, "memory_mib": 1}, {}, 400, "invalid-field", "vcpus"),
    ("placement without memory", "POST", "/v1/placements", {"vcpus": 2}, {}, 400, "invalid-field",
     "memory_mib"),
    ("placement bad device nodes", "POST", "/v1/placements", {"vcpus": 1, "memory_mib": 1, "device_nodes": "x"},
     {}, 400, "invalid-field", "device_nodes"),
    ("placement bad devices weight", "POST", "/v1/placements", {"vcpus": 1, "memory_mib": 1, "devices": "must"},
     {}, 400, "invalid-field", "devices"),
    ("negative reservation", "POST", "/v1/placements", {"vcpus": 2, "memory_mib": 1, "reserve_seconds": -5},
     {}, 400, "invalid-field", "reserve_seconds"),
    ("negative busy threads", "POST", "/v1/placements", {"vcpus": 2, "memory_mib": 1, "busy_threads": -2},
     {}, 400, "invalid-field", "busy_threads"),
    ("busy threads as a string", "POST", "/v1/placements", {"vcpus": 2, "memory_mib": 1, "busy_threads": "2"},
     {}, 400, "invalid-field", "busy_threads"),
    ("unknown event", "POST", "/v1/events", {"source": "libvirt-hook", "event": "exploded", "domain": "d"}, {},
     400, "invalid-field", "event"),
    ("event without domain", "POST", "/v1/events", {"source": "libvirt-hook", "event": "started"}, {}, 400,
     "invalid-field", "domain"),
    ("event with a bad uuid", "POST", "/v1/events",
     {"source": "libvirt-hook", "event": "started", "domain": "d", "uuid": "not-a-uuid"}, {}, 400,
     "invalid-field", "uuid"),
    ("event with an extra field", "POST", "/v1/events",
     {"source": "libvirt-hook", "event": "started", "domain": "d", "extra": 1}, {}, 400, "unknown-field",
     "extra"),
    ("body over 64 KiB", "PUT", "/v1/policy", BIG, {}, 413, "body-too-large", None),
    ("chunked body over 64 KiB", "PUT", "/v1/policy", None, {"chunked": BIG}, 413, "body-too-large", None),
    ("text/plain body", "PUT", "/v1/policy", {"max_util": 80}, {"content_type": "text/plain"}, 415,
     "unsupported-media-type", "Content-Type"),
    ("form body", "POST", "/v1/events", "a=b", {"content_type": "application/x-www-form-urlencoded"}, 415,
     "unsupported-media-type", "Content-Type"),
    ("id ..", "GET", "/v1/guests/..", None, {}, 400, "invalid-field", "id"),
    ("id %2e%2e", "GET", "/v1/guests/%2e%2e", None, {}, 400, "invalid-field", "id"),
    ("id %2e%2e%2f into the policy route", "PUT", "/v1/guests/%2e%2e%2fetc/policy", {"mode": "auto"}, {}, 400,
     "invalid-field", "id"),
    ("id with a slash", "GET", "/v1/guests/a%2Fb", None, {}, 400, "invalid-field", "id"),
    ("overlong id", "GET", "/v1/guests/" + "a" * 200, None, {}, 400, "invalid-field", "id"),
    ("id starting with -", "GET", "/v1/guests/-rf", None, {}, 400, "invalid-field", "id"),
    ("raw non-UTF-8 in the path", "GET", b"/v1/guests/\xff\xfe", None, {}, 400, "malformed-request", "path"),
    ("escaped non-UTF-8", "GET", "/v1/guests/%ff%fe", None, {}, 400, "malformed-request", "path"),
    ("escaped NUL in the path", "GET", "/v1/guests/ab%00cd", None, {}, 400, "malformed-request", "path"),
    ("bad escape", "GET", "/v1/guests/%zz", None, {}, 400, "malformed-request", "path"),
    ("unknown guest", "GET", "/v1/guests/docker-does-not-exist", None, {}, 404, "not-found", "id"),
    ("unknown route", "GET", "/v1/nope", None, {}, 404, "not-found", None),
    ("trailing slash", "GET", "/v1/status/", None, {}, 404, "not-found", None),
    ("version 2", "GET", "/v2/status", None, {}, 404, "not-found", None),
    ("DELETE status", "DELETE", "/v1/status", None, {}, 405, "method-not-allowed", None),
    ("GET rebalance", "GET", "/v1/rebalance", None, {}, 405, "method-not-allowed", None),
    ("PATCH policy", "PATCH", "/v1/policy", {"max_util": 80}, {}, 405, "method-not-allowed", None),
    ("unknown query parameter", "GET", "/v1/guests?colour=red", None, {}, 400, "unknown-field", "colour"),
    ("bad kind", "GET", "/v1/guests?kind=pod", None, {}, 400, "invalid-field", "kind"),
    ("node the host lacks", "GET", "/v1/guests?node=7", None, {}, 400, "invalid-field", "node"),
    ("limit 0", "GET", "/v1/decisions?limit=0", None, {}, 400, "invalid-field", "limit"),
    ("since yesterday", "GET", "/v1/decisions?since=yesterday", None, {}, 400, "invalid-field", "since"),
    ("since negative time fields", "GET", "/v1/decisions?since=2024-01-31T-1:-1:-1Z", None, {}, 400, "invalid-field", "since"),
    ("since a negative month", "GET", "/v1/decisions?since=2024--1-31T12:00:00Z", None, {}, 400, "invalid-field", "since"),
    ("since a signed hour", "GET", "/v1/decisions?since=2024-01-31T+1:00:00Z", None, {}, 400, "invalid-field", "since"),
    ("since a blank in a field", "GET", "/v1/decisions?since=2024-01-31T%201:00:00Z", None, {}, 400, "invalid-field", "since"),
    ("since negative milliseconds", "GET", "/v1/decisions?since=2024-01-31T12:00:00.-12Z", None, {}, 400, "invalid-field", "since"),
    ("since February 31", "GET", "/v1/decisions?since=2024-02-31T12:00:00Z", None, {}, 400, "invalid-field", "since"),
    ("since February 29 of 2023", "GET", "/v1/decisions?since=2023-02-29T12:00:00Z", None, {}, 400, "invalid-field", "since"),
    ("since April 31", "GET", "/v1/decisions?since=2024-04-31T12:00:00Z", None, {}, 400, "invalid-field", "since"),
    ("duplicate query parameter", "GET", "/v1/guests?kind=vm&kind=container", None, {}, 400,
     "malformed-request", "path"),
    ("query on status", "GET", "/v1/status?verbose=1", None, {}, 400, "unknown-field", "verbose"),
    # TCP: the token comes before anything else.
    ("TCP without a token", "GET", "/v1/status", None, {"tcp": True, "token": None}, 401, "unauthorized", None),
    ("TCP with a wrong token", "GET", "/v1/status", None, {"tcp": True, "token": TOKEN + "x"}, 403,
     "forbidden", None),
    ("TCP with a token prefix", "GET", "/v1/status", None, {"tcp": True, "token": TOKEN[:-1]}, 403,
     "forbidden", None),
    ("TCP Basic auth", "GET", "/v1/status", None,
     {"tcp": True, "token": None, "headers": {"Authorization": "Basic YTpi"}}, 401, "unauthorized", None),
    ("TCP unknown route without a token", "GET", "/v1/nope", None, {"tcp": True, "token": None}, 401,
     "unauthorized", None),
    ("TCP change without a token", "PUT", "/v1/policy", {"max_util": 10}, {"tcp": True, "token": None}, 401,
     "unauthorized", None),
]


@unittest.skipIf(REASON, REASON or "")
@unittest.skipIf(REASON, REASON or "")
class PlacementsByCores(apilib.ClassDaemon):
    """POST /v1/placements with busy_threads on the fixture host given SMT
    siblings: each node's four CPUs two cores of two threads (node 0: CPUs
    0,2,4,6; node 1: 1,3,5,7), an L3 per node, as sysfs shows them."""

    CORES = {0: ("0,2", "4,6"), 1: ("1,3", "5,7")}

    @classmethod
    def prepare_root(cls, root):
        cpu = os.path.join(root, "sys", "devices", "system", "cpu")
        for node, cores in cls.CORES.items():
            llc = ",".join(cores)
            for core in cores:
                for c in core.split(","):
                    for d in ("topology", os.path.join("cache", "index3")):
                        os.makedirs(os.path.join(cpu, "cpu" + c, d), exist_ok=True)
                    itlib.write(os.path.join(cpu, "cpu" + c, "topology", "core_cpus_list"), core + "\n")
                    itlib.write(os.path.join(cpu, "cpu" + c, "cache", "index3", "level"), "3\n")
                    itlib.write(os.path.join(cpu, "cpu" + c, "cache", "index3", "shared_cpu_list"), llc + "\n")

    def advise(self, **body):
        r = self.d.request("POST", "/v1/placements", dict({"vcpus": 1, "memory_mib": 64}, **body))
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_busy_threads_counted_against_free_cores(self):
        nodes = self.d.get("/v1/nodes").json()["nodes"]
        self.assertEqual([n["threads_per_core"] for n in nodes], [2, 2], nodes)
        # Two CPUs promised on node 0 (beside a device there): two busy
        # threads, both of its cores.
        res = self.advise(vcpus=2, device_nodes=[0], devices="require", reserve_seconds=600, label="vm-r")
        self.assertEqual(res["nodes"], "0", res)
        # A one-vCPU guest with its device on node 0: by CPUs beside it
        # (util 0.75, node 1 idle but away from the device), its thread on
        # a sibling of a busy core; with its busy thread named, node 1.
        cpus = self.advise(device_nodes=[0])
        self.assertEqual(cpus["nodes"], "0", cpus)
        self.assertNotIn("core", cpus["detail"])
        cores = self.advise(device_nodes=[0], busy_threads=1)
        self.assertEqual(cores["nodes"], "1", cores)
        self.assertIn("by free cores: one for each of its 1 busy thread (by CPUs: nodes 0, short of cores)",
                      cores["detail"])
        # numaorchctl sends it (exit 2 for a bad count, nothing sent).
        p = self.d.ctl("advise", "1", "64M", "--device", "0", "--busy-threads", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("nodes 1 (cpus 1,3,5,7, memory on 1): "), p.stdout)
        self.assertIn("by free cores", p.stdout)
        for bad in ("0", "-1", "x", "8193", "1.5"):
            p = self.d.ctl("advise", "1", "64M", "--busy-threads", bad)
            self.assertEqual(p.returncode, 2, (bad, p.stdout, p.stderr))
            self.assertIn("--busy-threads: must be an integer 1..8192, got \"%s\"" % bad, p.stderr)
        # Three busy threads fit no node's two cores: by CPUs, saying so.
        three = self.advise(vcpus=3, busy_threads=3)
        self.assertEqual(three["nodes"], "1", three)
        self.assertIn("no set has a free core for each of its 3 busy threads: counted by CPUs", three["detail"])

    def test_malformed_busy_threads(self):
        for bad, got in ((-1, "-1"), (0, "0"), ("2", '"2"'), (1.5, "1.5"), (None, "null"), (8193, "8193")):
            with self.subTest(bad=bad):
                r = self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64, "busy_threads": bad})
                self.assertEqual(r.status, 400, r)
                p = r.json()
                self.assertEqual(p["type"], "urn:numaorch:problem:invalid-field", p)
                self.assertEqual(p["field"], "busy_threads", p)
                self.assertEqual(p["detail"], "busy_threads: must be an integer 1..8192 (threads), got " + got, p)


class ModeSwitch(unittest.TestCase):
    """The operator switches the agent from advise to enforce through the
    API: it acts at once (a cycle that moves), not at the next interval
    (an hour here)."""

    def setUp(self):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = apilib.compose_root(self.tmp)
        self.d = apilib.Daemon(self.tmp, self.root, extra=("--mode", "advise")).start()
        self.addCleanup(self.d.stop)

    def test_switch_to_enforce_acts_now(self):
        st = self.d.get("/v1/status").json()
        self.assertEqual(st["totals"]["moves"], 0, st)
        self.d.quiesce()
        t0 = time.time()
        r = self.d.request("PUT", "/v1/policy", {"mode": "enforce"})
        self.assertEqual(r.status, 200, r)
        moves = 0
        while time.time() < t0 + 10 and not moves:
            moves = self.d.get("/v1/status").json()["totals"]["moves"]
            time.sleep(0.05)
        self.assertGreater(moves, 0, "no move within 10 s of switching to enforce (interval 3600 s): %s"
                           % self.d.logtext()[-1500:])


class BadRequests(unittest.TestCase):
    """Every row must be refused with its status and a problem body; then the
    daemon must still answer, and nothing may have changed."""

    def setUp(self):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = apilib.compose_root(self.tmp)
        self.d = apilib.Daemon(self.tmp, self.root, binary=itlib.NUMAORCHD_TEST).start()
        self.addCleanup(self.d.stop)

    def state(self):
        d = self.d
        st = d.get("/v1/status").json()
        path = os.path.join(d.state, "guest-policies.json")
        writes = os.path.join(self.root, "sys", "fs", "cgroup", ".numaorch-writes")
        return {
            "policy": d.get("/v1/policy").json(),
            "guest-policies": d.get("/v1/guest-policies").json(),
            "cycles": st["cycles"],
            "moves": st["totals"],
            "file": apilib.slurp(path) if os.path.exists(path) else None,
            "journal": apilib.slurp(path.replace(".json", ".journal"))
            if os.path.exists(path.replace(".json", ".journal")) else None,
            "writes": apilib.slurp(writes),
            "decisions": d.get("/v1/decisions").json()["last_id"],
        }

    def send(self, method, target, body, kw):
        kw = dict(kw)
        chunked = kw.pop("chunked", None)
        if chunked is None:
            return self.d.request(method, target, body, **kw)
        # A chunked upload: no Content-Length, so the server finds out late.
        head = ("%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" % (method, target)).encode()
        data = b""
        for i in range(0, len(chunked), 8192):
            part = chunked[i:i + 8192]
            data += b"%x\r\n" % len(part) + part + b"\r\n"
        return self.d.raw(head + data + b"0\r\n\r\n")

    def test_table(self):
        self.assertGreaterEqual(len(BAD), 30)
        # A per-guest policy that must survive everything below unchanged.
        self.assertEqual(self.d.request("PUT", "/v1/guests/lxc-db/policy",
                                        {"mode": "pinned", "nodes": "1"}).status, 200)
        self.d.quiesce()  # the cycle that change prompts, before the count
        before = self.state()
        for name, method, target, body, kw, status, code, field in BAD:
            with self.subTest(name):
                r = self.send(method, target, body, kw)
                self.assertEqual(r.status, status, "%s: %r" % (name, r))
                self.assertEqual(r.headers.get("content-type"), "application/problem+json", name)
                p = json.loads(r.body)
                self.assertEqual(p["type"], "urn:numaorch:problem:" + code, "%s: %r" % (name, p))
                self.assertEqual(p["status"], status)
                self.assertTrue(p["title"] and p["detail"], p)
                if field:
                    self.assertEqual(p.get("field"), field, "%s: %r" % (name, p))
                    if code in ("invalid-field", "unknown-field") and field not in ("id", "path"):
                        self.assertIn(field, p["detail"], "the message must name the field")
                if status == 405:
                    self.assertTrue(r.headers.get("allow"), "405 without Allow")
                if status == 401:
                    self.assertEqual(r.headers.get("www-authenticate"), 'Bearer realm="numaorch"')
                self.assertTrue(self.d.alive(), "numaorchd died on: " + name)
        h = self.d.get("/v1/health").json()
        self.assertEqual((h["status"], h["ready"]), ("ok", True))
        after = self.state()
        self.assertEqual(after, before, "a refused request changed something")
        # And the refusals were counted by route and status.
        m = self.d.get("/metrics").body.decode()
        self.assertIn('numaorch_api_requests_total{route="/v1/policy",code="400"}', m)
        self.assertIn('code="401"', m)

    def test_errors_libmicrohttpd_answers_itself(self):
        # These never reach numaorch's handler: the library answers with
        # its own HTML body and closes. What we can hold it to: the right
        # status, a closed connection, a live daemon, and the spec saying so.
        spec = apilib.slurp(apilib.OPENAPI)
        # The library the daemon runs with, as it says itself.
        lib = ctypes.CDLL("libmicrohttpd.so.12")
        lib.MHD_get_version.restype = ctypes.c_char_p
        mhd = lib.MHD_get_version().decode()
        cases = [
            ("negative Content-Length", b"PUT /v1/policy HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
             b"\r\nContent-Length: -5\r\n\r\n{}", 400, "negative `Content-Length`"),
            ("malformed Content-Length", b"PUT /v1/policy HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
             b"\r\nContent-Length: 12abc\r\n\r\n{}", 400, "a malformed or negative `Content-Length`"),
            ("100 KB request line", b"GET /v1/status?" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
             414, "(414/431)"),
            ("Content-Length over 2^64", b"PUT /v1/policy HTTP/1.1\r\nHost: x\r\nContent-Type: "
             b"application/json\r\nContent-Length: 99999999999999999999999\r\n\r\n{}", 413, "above"),
            ("bad chunk size", b"PUT /v1/policy HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400, "bad chunked encoding"),
            ("100 KB header", b"GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n",
             431, "do not fit in 64 KiB"),
            ("HTTP/9.9", b"GET /v1/status HTTP/9.9\r\nHost: x\r\n\r\n", 505, "(505)"),
        ]
        for name, data, status, documented in cases:
            s = self.d.connect()
            s.sendall(data)
            out = b""
            s.settimeout(5)
            try:
                while True:
                    c = s.recv(65536)
                    if not c:
                        break
                    out += c
            except socket.timeout:
                self.fail("%s: the connection was not closed after the answer: %r" % (name, out[:300]))
            except ConnectionResetError:
                pass  # closed with the rest of our request unread: a reset, after the answer
            finally:
                s.close()
            self.assertTrue(out.startswith(b"HTTP/1.1 %d " % status), (name, out[:200]))
            self.assertIn(documented, spec, "api/openapi.yaml does not document: " + name)
            self.assertNotIn(b"problem+json", out)  # if it ever is, the docs must say so
            blocks = out.count(b"HTTP/1.1 ")
            # libmicrohttpd before 1.0.0 builds the header block of its
            # Content-Length errors twice (its state machine carries on
            # after the error; numaorchctl(1) says exactly how); only those,
            # and only before 1.0.0. A newer library that sends one block
            # fails here too, so that the docs are brought up to date.
            old = [int(x) for x in mhd.split("-")[0].split(".")[:2]] < [1, 0]
            twice = "Content-Length" in name
            self.assertEqual(blocks, 2 if twice and old else 1,
                             "%s: %d header blocks with libmicrohttpd %s" % (name, blocks, mhd))
            if blocks == 2:
                self.assertIn("header block", spec)
                self.assertIn("twice", spec)
            self.assertTrue(self.d.alive())
        self.assertEqual(self.d.get("/v1/health").status, 200)

    def test_garbage_on_the_wire(self):
        junk = [b"\x00\x01\x02\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                b"GET /v1/status HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                b"GET /v1/status HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 100000 + b"\r\n\r\n",
                b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                b"POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"]
        for j in junk:
            try:
                s = self.d.connect(timeout=3)
                s.sendall(j)
                s.shutdown(socket.SHUT_WR)
                s.recv(65536)
                s.close()
            except OSError:
                pass
        self.assertTrue(self.d.alive())
        self.assertEqual(self.d.get("/v1/health").status, 200)


@unittest.skipIf(REASON, REASON or "")
def slurp_log(d):
    return d.logtext() if os.path.exists(d.log) else ""


class Startup(unittest.TestCase):
    def setUp(self):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = apilib.compose_root(self.tmp)

    def test_world_readable_token_is_refused(self):
        d = apilib.Daemon(self.tmp, self.root)
        os.chmod(d.token_file, 0o644)
        p = subprocess.run(d.args() + ["--check-config"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("accessible to others", p.stderr)
        p = subprocess.run(d.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_token_file_that_is_a_fifo_or_directory_fails_at_once(self):
        for kind in ("fifo", "dir"):
            d = apilib.Daemon(self.tmp, self.root)
            os.unlink(d.token_file)
            if kind == "fifo":
                os.mkfifo(d.token_file, 0o600)
            else:
                os.mkdir(d.token_file, 0o700)
            for extra in (["--check-config"], []):
                t0 = time.time()
                p = subprocess.run(d.args() + extra, capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("token file", p.stderr)
                self.assertIn("a FIFO" if kind == "fifo" else "a directory", p.stderr)
                self.assertLess(time.time() - t0, 10)
            if kind == "fifo":
                os.unlink(d.token_file)
            else:
                os.rmdir(d.token_file)

    def test_token_is_re_read_on_sighup(self):
        d = apilib.Daemon(self.tmp, self.root).start()
        self.addCleanup(d.stop)
        self.assertEqual(d.get("/v1/status", tcp=True).status, 200)
        new = "rotated-token-0123456789-abcdefghij"
        # Rotated as a secret volume does: a new file renamed over the old.
        tmpf = d.token_file + ".new"
        itlib.write(tmpf, new + "\n")
        os.chmod(tmpf, 0o600)
        os.rename(tmpf, d.token_file)
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while time.time() < deadline and d.get("/v1/status", tcp=True, token=new).status != 200:
            time.sleep(0.05)
        self.assertEqual(d.get("/v1/status", tcp=True, token=new).status, 200)
        self.assertEqual(d.get("/v1/status", tcp=True).status, 403)
        # A bad one (readable by others) keeps the current token.
        os.chmod(d.token_file, 0o644)
        offset = len(d.logtext())
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while time.time() < deadline and "keeping the old token" not in d.logtext()[offset:]:
            time.sleep(0.05)
        self.assertIn("keeping the old token", d.logtext()[offset:])
        self.assertEqual(d.get("/v1/status", tcp=True, token=new).status, 200)
        self.assertTrue(d.alive())

    def test_symlinked_token_and_interval_change(self):
        d = apilib.Daemon(self.tmp, self.root)
        real = os.path.join(self.tmp, "secret-token")
        os.rename(d.token_file, real)
        os.symlink(real, d.token_file)  # as a Kubernetes secret volume has it
        d.start()
        self.addCleanup(d.stop)
        self.assertEqual(d.get("/v1/status", tcp=True).status, 200)
        # From an hour to half a second: the new interval applies at once,
        # not after the hour the timer was armed for.
        before = d.get("/v1/status").json()["cycles"]
        self.assertEqual(d.request("PUT", "/v1/policy", {"interval": 0.5}).status, 200)
        deadline = time.time() + 10
        while time.time() < deadline and d.get("/v1/status").json()["cycles"] < before + 3:
            time.sleep(0.1)
        self.assertGreaterEqual(d.get("/v1/status").json()["cycles"], before + 3)
        self.assertEqual(d.get("/v1/status").json()["interval_s"], 0.5)

    def test_guest_named_with_bytes_that_are_not_utf8(self):
        # A cgroup may be named with any bytes; the API must still answer.
        cg = os.path.join(self.root, "sys", "fs", "cgroup").encode()
        os.makedirs(os.path.join(cg, b"custom"))
        for f in ("cgroup.controllers", "cgroup.subtree_control", "cpuset.cpus.effective",
                  "cpuset.mems.effective"):
            src = os.path.join(self.root, "sys", "fs", "cgroup", f)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(cg, b"custom", f.encode()))
        shutil.copytree(os.path.join(cg, b"lxc.payload.db"), os.path.join(cg, b"custom", b"bad\xff\xfename"))
        d = apilib.Daemon(self.tmp, self.root, extra=["--parent", "/custom"]).start()
        self.addCleanup(d.stop)
        guests = d.get("/v1/guests?runtime=custom").json()["guests"]
        self.assertEqual(len(guests), 1, guests)
        g = guests[0]
        self.assertIn("\ufffd", g["name"])
        one = d.get("/v1/guests/" + g["id"])
        self.assertEqual(one.status, 200, one)
        # One rule for both answers (issue 44): U+FFFD for each byte that
        # is not UTF-8, in the guest as in the list.
        self.assertEqual(one.json()["name"], g["name"])
        self.assertEqual(one.json()["cgroup"], g["cgroup"])
        self.assertEqual(d.get("/metrics").status, 200)
        self.assertTrue(d.alive())

    def test_listen_without_token_is_refused(self):
        p = subprocess.run(itlib.numaorchd("--root", self.root, "--listen", "127.0.0.1:0",
                                           "--socket", os.path.join(self.tmp, "s"), "--check-config",
                                           state_dir=os.path.join(self.tmp, "state")),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("token_file", p.stderr)

    def test_socket_mode_directory_and_second_agent(self):
        d = apilib.Daemon(self.tmp, self.root).start()
        self.addCleanup(d.stop)
        self.assertEqual(apilib.mode_of(d.sock), 0o660)
        # A second agent on the same socket is refused, and leaves it alone.
        d2 = apilib.Daemon(self.tmp, self.root)
        p = subprocess.run(d2.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("another process is listening", p.stderr)
        self.assertEqual(d.get("/v1/health").status, 200)
        self.assertEqual(d.stop(), 0)
        self.assertFalse(os.path.exists(d.sock), "the socket was left behind")

    def test_503_before_the_first_snapshot(self):
        # A slow first sample keeps the first cycle from finishing for a while.
        d = apilib.Daemon(self.tmp, self.root, conf="[agent]\nsample = 3\n").start(wait_ready=False)
        self.addCleanup(d.stop)
        r = d.get("/v1/status")
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["type"], "urn:numaorch:problem:no-snapshot")
        self.assertTrue(r.headers.get("retry-after"))
        self.assertEqual(d.get("/v1/health").json()["ready"], False)
        self.assertEqual(d.get("/v1/decisions").status, 200)

    def test_tls(self):
        openssl = shutil.which("openssl")
        if not openssl:
            self.skipTest("openssl not installed: cannot make a test certificate")
        cert, key = os.path.join(self.tmp, "cert.pem"), os.path.join(self.tmp, "key.pem")
        p = subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                            "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        # A key others can read is refused, like the token.
        os.chmod(key, 0o644)
        d = apilib.Daemon(self.tmp, self.root, tls=(cert, key))
        p = subprocess.run(d.args(), capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("TLS key %s is accessible to others" % key, p.stderr + slurp_log(d))
        os.chmod(key, 0o600)
        d = apilib.Daemon(self.tmp, self.root, tls=(cert, key)).start()
        self.addCleanup(d.stop)
        self.assertIn("API listening on https", d.logtext())
        # TLS 1.2 and 1.3 only: a client that offers at most 1.1 (allowed
        # by its own side with SECLEVEL=0) gets no session.
        for ver, ok in (("-tls1", False), ("-tls1_1", False), ("-tls1_2", True), ("-tls1_3", True)):
            p = subprocess.run([openssl, "s_client", ver, "-cipher", "DEFAULT@SECLEVEL=0", "-connect",
                                "127.0.0.1:%d" % d.port, "-servername", "localhost"],
                               input="", capture_output=True, text=True, timeout=30)
            established = p.returncode == 0 and "Cipher is (NONE)" not in p.stdout
            self.assertEqual(established, ok, "%s: rc %d\n%s%s" % (ver, p.returncode, p.stdout[-800:],
                                                                   p.stderr[-800:]))
        r = d.get("/v1/status", tcp=True)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(d.get("/v1/status", tcp=True, token=None).status, 401)
        c = d.ctl("status", tcp=True)
        self.assertEqual(c.returncode, 0, c.stderr)
        # Plain HTTP on the TLS port gets no answer it could mistake for one.
        s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            data = s.recv(100)
        except OSError:
            data = b""
        s.close()
        self.assertFalse(data.startswith(b"HTTP/1.1 200"))
        self.assertTrue(d.alive())


if __name__ == "__main__":
    unittest.main(verbosity=2)

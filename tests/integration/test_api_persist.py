"""Per-guest policies survive restarts, and a kill -9 in the middle of
writing them leaves the old or the new file, never a corrupt one."""
import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time
import unittest

import apilib
import itlib

REASON = apilib.skip_reason()


@unittest.skipIf(REASON or not os.path.exists(apilib.NUMAORCHCTL), REASON or "build/numaorchctl missing")
class ApiSettings(unittest.TestCase):
    """policy set and schedule set survive a reload (SIGHUP: logrotate's
    too) and a restart: they are kept in the state directory and laid over
    the configuration file; policy reset drops them."""
    WINDOW = "Sat,Sun 01:00-02:00 max_moves=1"

    def setUp(self):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = apilib.compose_root(self.tmp)
        self.d = apilib.Daemon(self.tmp, self.root)
        self.addCleanup(self.d.stop)
        self.file = os.path.join(self.d.state, "settings.json")

    def ctl(self, *args):
        p = self.d.ctl(*args)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def policy(self):
        r = self.d.get("/v1/policy")
        self.assertEqual(r.status, 200, r)
        return r.json()

    def reload(self):
        offset = len(self.d.logtext())
        self.d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 30
        while time.time() < deadline and "configuration reloaded" not in self.d.logtext()[offset:]:
            time.sleep(0.05)
        self.assertIn("configuration reloaded", self.d.logtext()[offset:])

    def test_policy_and_schedule_set_survive_reload_and_restart(self):
        self.d.start()
        self.assertEqual(self.policy()["max_util"], 90)
        out = self.ctl("policy", "set", "max_util=85")
        self.assertIn("kept across reloads and restarts", out)
        self.ctl("schedule", "set", self.WINDOW)
        self.assertEqual(apilib.mode_of(self.file), 0o640)
        with open(self.file) as f:
            doc = json.load(f)
        self.assertEqual(doc["settings"], {"max_util": 85, "schedule": [self.WINDOW]})
        self.reload()
        pol = self.policy()
        self.assertEqual((pol["max_util"], pol["schedule"]), (85, [self.WINDOW]))
        self.assertEqual(self.d.stop(), 0)
        self.d.start()
        pol = self.policy()
        self.assertEqual((pol["max_util"], pol["schedule"]), (85, [self.WINDOW]))
        self.assertIn("settings changed through the API, over the configuration file: max_util, schedule",
                      self.d.logtext())
        # Dropped: the file's settings again, now and after a reload.
        out = self.ctl("policy", "reset")
        self.assertIn("settings changed through the API dropped", out)
        pol = self.policy()
        self.assertEqual((pol["max_util"], pol["schedule"]), (90, []))
        self.assertFalse(os.path.exists(self.file))
        self.reload()
        self.assertEqual(self.policy()["max_util"], 90)
        self.assertIn("no settings changed through the API", self.ctl("policy", "reset"))

    def test_settings_that_no_longer_fit_are_left_out_loudly(self):
        os.makedirs(self.d.state, mode=0o750)
        itlib.write(self.file, json.dumps({"format": "numaorch-settings", "version": 1,
                                           "settings": {"max_util": 150}}))
        self.d.start()
        self.assertEqual(self.policy()["max_util"], 90)
        self.assertIn("running on the configuration file's settings", self.d.logtext())
        self.assertIn("max_util", self.d.logtext())


@unittest.skipIf(REASON, REASON or "")
class Persistence(unittest.TestCase):
    def setUp(self):
        self.tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = apilib.compose_root(self.tmp)
        self.d = apilib.Daemon(self.tmp, self.root)
        self.addCleanup(self.d.stop)
        self.file = os.path.join(self.d.state, "guest-policies.json")

    def policies(self):
        r = self.d.get("/v1/guest-policies")
        self.assertEqual(r.status, 200, r)
        return {p["guest"]: (p["mode"], p.get("nodes")) for p in r.json()["policies"]}

    def test_restart_keeps_policies_and_the_engine_honours_them(self):
        self.d.start()
        want = {"lxc-db": ("pinned", "1"), "runc-ctr1": ("ignore", None), "vm-later": ("auto", None)}
        for gid, (mode, nodes) in want.items():
            body = {"mode": mode}
            if nodes:
                body["nodes"] = nodes
            if gid == "vm-later":
                body["provision"] = True  # not on the host yet
            self.assertEqual(self.d.request("PUT", "/v1/guests/%s/policy" % gid, body).status, 200)
        self.assertEqual(self.policies(), want)
        self.assertEqual(self.d.stop(), 0)
        self.assertEqual(apilib.mode_of(self.file), 0o640)

        self.d.start()
        self.assertEqual(self.policies(), want)
        g = self.d.get("/v1/guests/lxc-db").json()
        self.assertEqual(g["policy"], {"mode": "pinned", "nodes": "1", "source": "api"})
        # The engine took them from the file at start: the first cycle's
        # snapshot already carries them (not just the API's view of the store).
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True, "verbose": True}).json()
        items = {i["guest"]: i for i in r["plan"]["items"]}
        self.assertEqual(items["runc-ctr1"]["skip"], "ignored", items["runc-ctr1"])
        self.assertIn("per-guest policies loaded from", self.d.logtext())
        # numaorchd --once honours them too, and creates nothing.
        p = subprocess.run(itlib.numaorchd("--config", self.d.conf, "--root", self.root, "--once", "--json",
                                           "--dry-run", state_dir=self.d.state), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        pol = {g["id"]: g["policy"] for g in rep["snapshot"]["guests"]}
        self.assertEqual(pol["runc-ctr1"]["mode"], "ignore")

    def dry_items(self):
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True, "verbose": True})
        self.assertEqual(r.status, 200, r)
        return {i["guest"]: i for i in r.json()["plan"]["items"]}

    def test_restart_keeps_cooldowns_and_reservations(self):
        """Reservations and cool-downs survive a restart
        (engine-state.json in the state directory)."""
        self.d.start()
        # The first cycle moved the fixture's misplaced guests: each now
        # cools down. Make one of them misplaced again (its memory all on
        # the node its CPUs left): only the cool-down keeps it where it is.
        moved = [r["guest"] for r in self.d.get("/v1/decisions?limit=1000").json()["decisions"]
                 if r.get("decision") == "moved"]
        self.assertTrue(moved, "the fixture has misplaced guests: expected moves in the first cycle")
        gid = moved[0]
        g = self.d.get("/v1/guests/" + gid).json()
        other = 1 if g["cpu_nodes"] == "0" else 0
        stat = os.path.join(self.root, "sys", "fs", "cgroup", g["cgroup"].lstrip("/"), "memory.numa_stat")
        n = {other: 256 << 20, 1 - other: 0}
        itlib.write(stat, "anon N0=%d N1=%d\nfile N0=0 N1=0\n" % (n[0], n[1]))
        item = self.dry_items().get(gid)
        self.assertEqual((item or {}).get("skip"), "cooldown", item)
        # Room reserved for a guest about to start.
        free = {x["id"]: x["mem_free_bytes"] >> 20 for x in self.d.get("/v1/nodes").json()["nodes"]}
        mib = int(min(free.values()) * 0.6)
        a = self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": mib, "reserve_seconds": 600,
                                                      "label": "vm-next"}).json()
        self.assertTrue(a["ok"], a)
        cpuset = [os.path.join(os.path.dirname(stat), f) for f in ("cpuset.cpus", "cpuset.mems")]
        before = [itlib.read(f) for f in cpuset]
        self.assertEqual(self.d.stop(), 0)

        self.d.start()
        # The restarted agent's first cycle (enforce mode) left it alone...
        self.assertEqual([itlib.read(f) for f in cpuset], before,
                         "the cool-down did not survive the restart: the first cycle moved %s" % gid)
        # ...because it is still cooling down.
        item = self.dry_items().get(gid)
        self.assertEqual((item or {}).get("skip"), "cooldown", item)
        # The reservation still holds its room: one more of the same size
        # goes elsewhere, and it is counted.
        b = self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": mib}).json()
        self.assertTrue(b["ok"], b)
        self.assertEqual(b["active_reservations"], 1, b)
        self.assertNotEqual(a["nodes"], b["nodes"], "the reservation did not survive the restart")
        self.assertIn("1 reservation loaded from", self.d.logtext())
        self.assertEqual(apilib.mode_of(os.path.join(self.d.state, "engine-state.json")), 0o640)

    def test_a_bad_engine_state_file_is_set_aside(self):
        os.makedirs(self.d.state, exist_ok=True)
        os.chmod(self.d.state, 0o750)
        f = os.path.join(self.d.state, "engine-state.json")
        itlib.write(f, "{not json")
        self.d.start()
        self.assertIn("set aside as engine-state.json.rejected", self.d.logtext())
        self.assertEqual(itlib.read(f + ".rejected"), "{not json")
        self.assertEqual(self.d.get("/v1/health").status, 200)

    def test_an_impossible_or_huge_engine_state_is_set_aside(self):
        """Issue 45: a reservation of 10^6 CPUs and 2^60 bytes expiring in
        2200 was honoured (every placement "nothing fits") and saved back;
        a valid 65 MiB state file stopped the agent from starting."""
        os.makedirs(self.d.state, exist_ok=True)
        os.chmod(self.d.state, 0o750)
        f = os.path.join(self.d.state, "engine-state.json")
        y2200 = 7258118400 * 10**9
        bad = {"format": "numaorch-engine-state", "version": 1, "cooldowns": [], "last_reservation_id": 1,
               "reservations": [{"id": 1, "label": "hog", "expires_real_ns": y2200, "nodes": "0-1",
                                 "cpus": 1e6, "mem_bytes": 2**60, "cpu_nodes": "0", "mems": "0"}]}
        cool = {"format": "numaorch-engine-state", "version": 1, "reservations": [], "last_reservation_id": 0,
                "cooldowns": [{"guest": "lxc-db", "last_move_real_ns": y2200, "moves": 1}]}
        huge = {"format": "numaorch-engine-state", "version": 1, "cooldowns": [], "reservations": [],
                "last_reservation_id": 0}
        for state, what in ((json.dumps(bad), "reservations[0]"), (json.dumps(cool), "cooldowns[0]"),
                            (json.dumps(huge)[:-1] + " " * (65 << 20) + "}", "over 64 MiB")):
            itlib.write(f, state)
            self.d.start()
            log = self.d.logtext()
            self.assertIn(what, log)
            self.assertIn("set aside as engine-state.json.rejected", log)
            self.assertEqual(os.path.getsize(f + ".rejected"), len(state))
            a = self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64}).json()
            self.assertTrue(a["ok"], a)
            self.assertEqual(a["active_reservations"], 0, a)
            self.assertEqual(self.d.stop(), 0)
            os.unlink(f + ".rejected")
            if os.path.exists(f):
                with open(f) as fh:
                    self.assertNotIn("hog", fh.read())
                os.unlink(f)

    def test_a_guest_that_goes_and_comes_back_keeps_its_policy(self):
        self.d.start()
        self.assertEqual(self.d.request("PUT", "/v1/guests/lxc-db/policy", {"mode": "ignore"}).status, 200)
        cg = os.path.join(self.root, "sys", "fs", "cgroup")
        os.rename(os.path.join(cg, "lxc.payload.db"), os.path.join(self.tmp, "lxc.payload.db"))
        self.assertEqual(self.d.request("POST", "/v1/rebalance", {"dry_run": True}).status, 200)
        self.assertEqual(self.d.get("/v1/guests/lxc-db").status, 404)
        p = self.d.get("/v1/guests/lxc-db/policy").json()
        self.assertEqual((p["mode"], p["present"]), ("ignore", False))
        # The container is restarted (same name, so the same id).
        os.rename(os.path.join(self.tmp, "lxc.payload.db"), os.path.join(cg, "lxc.payload.db"))
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True, "verbose": True}).json()
        items = {i["guest"]: i for i in r["plan"]["items"]}
        self.assertEqual(items["lxc-db"]["skip"], "ignored")
        self.assertEqual(self.d.get("/v1/guests/lxc-db").json()["policy"]["mode"], "ignore")

    def test_corrupt_state_file_refuses_to_start(self):
        os.makedirs(self.d.state, mode=0o750)
        itlib.write(self.file, '{"format": "numaorch-guest-policies", "version": 1, "guests": {"x": {"mode": "pinn')
        p = subprocess.run(self.d.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn(self.file, p.stderr)

    def test_one_bad_record_is_dropped_the_rest_load(self):
        """Issue 14: one bad record used to stop the daemon from starting."""
        os.makedirs(self.d.state, mode=0o750)
        text = ('{"format": "numaorch-guest-policies", "version": 1, "guests": {'
                '"lxc-db": {"mode": "pinned", "nodes": "1", "set": "2026-12-01T00:00:00Z"}, '
                '"../etc": {"mode": "ignore"}, '
                '"runc-ctr1": {"mode": "ignore", "set": "2026-12-01T00:00:00Z"}}}')
        itlib.write(self.file, text)
        self.d.start()
        self.assertEqual(self.policies(), {"lxc-db": ("pinned", "1"), "runc-ctr1": ("ignore", None)})
        log = self.d.logtext()
        self.assertIn('"../etc" is not a valid guest id: record dropped', log)
        self.assertIn("guest-policies.json.rejected", log)
        # Nothing is lost: the file as it was is kept beside.
        self.assertEqual(apilib.slurp(self.file + ".rejected"), text)
        self.assertEqual(self.d.stop(), 0)

    def journal_records(self, ids):
        return b"".join(b'{"id":"%s","policy":{"mode":"ignore","set":"2026-12-01T00:00:00Z"}}\n' % i.encode()
                        for i in ids)

    def test_journal_replays_past_nul_and_oversized_lines(self):
        """Issue 45: a line of NUL bytes silently ended the replay and the
        start-up compaction emptied the journal; one line over 64 MiB lost
        every record. Each bad line is dropped and named, the rest load,
        and the journal as it was is kept as .rejected."""
        os.makedirs(self.d.state, mode=0o750)
        journal = os.path.join(self.d.state, "guest-policies.journal")
        for bad, what in ((b"\0" * 4096 + b"\n", "NUL bytes"),
                          (b"x" * (65 << 20) + b"\n", "over the 65536 a record may have")):
            text = self.journal_records(["lxc-db"]) + bad + self.journal_records(["runc-ctr1", "vm-later"])
            with open(journal, "wb") as f:
                f.write(text)
            self.d.start()
            self.assertEqual(self.policies(), {"lxc-db": ("ignore", None), "runc-ctr1": ("ignore", None),
                                               "vm-later": ("ignore", None)}, what)
            log = self.d.logtext()
            self.assertIn("guest-policies.journal:2: ", log)
            self.assertIn(what, log)
            self.assertIn("guest-policies.journal.rejected", log)
            with open(journal + ".rejected", "rb") as f:
                self.assertTrue(f.read() == text, "the rejected copy differs from the journal")
            self.assertEqual(self.d.stop(), 0)
            os.unlink(journal + ".rejected")
            # Compacted into the base: they stay after the next start.
            self.d.start()
            self.assertEqual(len(self.policies()), 3)
            self.assertEqual(self.d.stop(), 0)
            os.unlink(self.file)

    def test_hostile_state_directory_is_refused(self):
        """Issue 14: a state directory others can write, or a symlink in
        place of the store, made root write wherever it pointed."""
        os.makedirs(self.d.state)
        os.chmod(self.d.state, 0o777)
        p = subprocess.run(self.d.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("state directory %s is writable by others (mode 0777)" % self.d.state, p.stderr)
        os.chmod(self.d.state, 0o750)
        victim = os.path.join(self.tmp, "victim")
        itlib.write(victim, "precious\n")
        os.symlink(victim, os.path.join(self.d.state, "guest-policies.journal"))
        p = subprocess.run(self.d.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(apilib.slurp(victim), "precious\n")
        os.unlink(os.path.join(self.d.state, "guest-policies.journal"))
        self.d.start()
        self.assertEqual(self.d.request("PUT", "/v1/guests/lxc-db/policy", {"mode": "ignore"}).status, 200)
        self.assertEqual(apilib.slurp(victim), "precious\n")

    def test_kill9_during_writes_leaves_old_or_new(self):
        """Hammer PUT/DELETE, kill -9 at a random moment, check the file, restart."""
        rnd = random.Random(1234)
        seen_states = []
        for rnd_i in range(6):
            self.d.start()
            states = []  # every state the file could legitimately hold
            states.append(self.policies())
            stop = threading.Event()

            def hammer():
                i = 0
                while not stop.is_set():
                    gid = "guest-%d" % (i % 7)
                    try:
                        if i % 5 == 4:
                            r = self.d.request("DELETE", "/v1/guests/%s/policy" % gid, timeout=5)
                        else:
                            r = self.d.request("PUT", "/v1/guests/%s/policy" % gid,
                                               {"mode": "pinned", "nodes": str(i % 2), "provision": True},
                                               timeout=5)
                    except OSError:
                        return  # the daemon is gone
                    i += 1

            ts = [threading.Thread(target=hammer) for _ in range(3)]
            for t in ts:
                t.start()
            time.sleep(0.2 + rnd.random() * 0.8)
            self.d.proc.send_signal(signal.SIGKILL)
            self.d.proc.wait()
            stop.set()
            for t in ts:
                t.join()
            self.d.stop()
            # The base file and its journal must be complete, valid, and
            # in our format (a torn last journal line was never answered).
            stored = apilib.stored_policies(self.d.state)
            for gid, rec in stored.items():
                self.assertEqual(rec["mode"], "pinned")
                self.assertIn(rec["nodes"], ("0", "1"))
            # Restart: what the agent serves is exactly what the files held.
            self.d.start()
            served = self.policies()
            self.assertEqual(served, {g: ("pinned", r["nodes"]) for g, r in stored.items()})
            seen_states.append(len(served))
            self.assertEqual([f for f in os.listdir(self.d.state) if ".tmp." in f], [],
                             "a temp file from the killed agent was left behind")
            self.d.stop()
        self.assertTrue(any(seen_states), "the hammer never wrote anything")


if __name__ == "__main__":
    unittest.main(verbosity=2)

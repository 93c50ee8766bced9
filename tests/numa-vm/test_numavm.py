"""Unit tests of the testbed's host side (numavm.py): the initramfs
archive, the QEMU command, scenario parsing, and the analysis that turns
the runner's raw lines into the report's figures and check-numa's
verdicts. No VM needed; make check-numa runs these first.

    python3 -m unittest -v tests/numa-vm/test_numavm.py
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numavm  # noqa: E402

REAL0 = 1_800_000_000.0


def iso(t):
    import datetime
    d = datetime.datetime.fromtimestamp(REAL0 + t, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def results(samples, decisions=(), vm_end="pgmigrate_success=81920 oom_kill=0", extra=()):
    """Raw runner output: SAMPLES are (t, guest, mem KiB list, thr, ccpus, cmems, cpus, mems[, ready])."""
    lines = ["H scenario=t placer=numaorchd nodes=2 duration=60 sample=2.0 pages=thp",
             "H node=0 cpus=0-1", "H node=1 cpus=2-3",
             "H guest=a cgroup=/system.slice/docker-%s.scope kind=docker threads=1 mib=320" % ("a" * 64),
             "H guest=b cgroup=/system.slice/docker-%s.scope kind=docker threads=1 mib=320" % ("b" * 64),
             "E t=0.00 what=placer placer=numaorchd pid=9 real=%.3f" % REAL0,
             "V t=0.00 numa_pages_migrated=0 pgmigrate_success=0 pgmigrate_fail=0 oom_kill=0"]
    lines += list(extra)
    for smp in samples:
        t, g, mem, thr, cc, cm, c, m = smp[:8]
        lines.append("G t=%.2f g=%s mem=%s thr=%s cpus=%s mems=%s ccpus=%s cmems=%s prog=0 oom=0"
                     % (t, g, ",".join(map(str, mem)), thr, c, m, cc, cm)
                     + ("" if len(smp) < 9 else " ready=%d" % smp[8]))
    lines.append("V t=60.00 numa_pages_migrated=0 pgmigrate_fail=0 " + vm_end)
    lines.append("P t=60.00 cpu_s=1.50")
    for d in decisions:
        lines.append("D " + json.dumps(d, sort_keys=True))
    lines.append("END rc=0")
    return "\n".join(lines) + "\n"


def moved(guest_hex, t_end, dur_ms, frm, to):
    return {"decision": "moved", "guest": "docker-" + guest_hex, "time": iso(t_end), "duration_ms": dur_ms,
            "from": {"cpus": frm[0], "mems": frm[1], "nodes": "0-1"},
            "to": {"cpus": to[0], "mems": to[1], "nodes": "1"}}


SCN = {"name": "t", "duration": 60}
A, B = "a" * 64, "b" * 64

# Two guests sampled at t=0, 2, 4: a moves to node 1 (its memory follows:
# 0% → 50% → 95% local), b stays local on node 1 throughout.
A_MOVES_B_STAYS = (
    (0, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
    (0, "b", [0, 1000], "1:100", "-", "-", "0-3", "0-1"),
    (2, "a", [500, 500], "1:100", "2-3", "1", "2-3", "1"),
    (2, "b", [0, 1000], "1:100", "-", "-", "0-3", "0-1"),
    (4, "a", [50, 950], "1:100", "2-3", "1", "2-3", "1"),
    (4, "b", [0, 1000], "1:100", "-", "-", "0-3", "0-1"))


class TestbedConf(unittest.TestCase):
    def test_shipped_conf_with_enforce(self):
        # The package ships advise; the testbed measures the agent acting.
        with open(os.path.join(numavm.REPO, "deploy", "numaorchd.conf")) as f:
            shipped = f.read()
        got = numavm.testbed_conf().decode()
        self.assertIn("\nmode = advise\n", shipped)
        self.assertEqual(got, shipped.replace("\nmode = advise\n", "\nmode = enforce\n"))


class Analysis(unittest.TestCase):
    def test_locality_union_and_weighted(self):
        s = {"mem": [300, 100], "thr": [(0, 100), (1, 100), (1, 0)]}
        u, w = numavm.locality(s)
        self.assertAlmostEqual(u, 1.0)            # both nodes run a busy thread
        self.assertAlmostEqual(w, (0.75 + 0.25) / 2)
        s = {"mem": [300, 100], "thr": [(1, 100), (0, 3)]}  # the idle thread does not count
        self.assertAlmostEqual(numavm.locality(s)[0], 0.25)
        s = {"mem": [300, 100], "thr": [(1, -1), (0, -1)]}  # no busy figure yet: all threads
        self.assertAlmostEqual(numavm.locality(s)[0], 1.0)
        self.assertEqual(numavm.locality({"mem": [0, 0], "thr": [(0, 100)]}), (None, None))

    def test_t90_needed_moved_and_end_state(self):
        text = results(A_MOVES_B_STAYS)
        r = numavm.analyse(text, SCN)
        self.assertEqual(r["t90"], {"a": 4.0, "b": 0.0})
        self.assertEqual(r["t90_all"], 4.0)
        self.assertAlmostEqual(r["needed_mib"], round(1000 / 1024, 1))
        self.assertEqual(r["moved_mib"], 320.0)       # 81920 pages × 4 KiB
        self.assertEqual(r["busy_threads_per_node_end"], [0, 2])
        self.assertEqual(r["guests_per_node_end"], [0, 2])
        self.assertEqual(r["oom_kills"], 0)
        self.assertEqual(r["placer_cpu_s"], 1.5)
        self.assertEqual(r["empty_cpuset_guests"], [])

    def test_t90_by_true_locality(self):
        # Two busy threads on nodes 0 and 1, all memory on node 0: on the
        # union of their nodes (t90 nodes) from the start, half true.
        text = results([
            (0, "a", [1000, 0], "0:100,1:100", "-", "-", "0-3", "0-1"),
            (2, "a", [1000, 0], "0:100,1:100", "-", "-", "0-3", "0-1"),
            (4, "a", [1000, 0], "0:100,0:100", "0-1", "0", "0-1", "0")])
        r = numavm.analyse(text, SCN)
        self.assertEqual(r["t90_nodes"], {"a": 0.0})
        self.assertEqual(r["t90"], {"a": 4.0})
        self.assertAlmostEqual(r["series"][0][3], 0.5)

    def test_never_and_late_start(self):
        text = results([
            (0, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
            (10, "b", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
            (12, "b", [0, 1000], "1:100", "-", "-", "0-3", "0-1")],
            extra=["E t=9.00 what=start g=b cgroup=x pid=3"])
        r = numavm.analyse(text, SCN)
        self.assertIsNone(r["t90"]["a"])
        self.assertEqual(r["t90"]["b"], 3.0)            # from its own start at t=9
        self.assertIsNone(r["t90_all"])

    def test_floor_is_a_late_guests_first_sample(self):
        # b starts at 9 and is first sampled (ready) at 14, local there:
        # its t90 is 5, and so is the run's floor; a, sampled from 0, adds
        # nothing. The target line says a miss is under the floor.
        text = results([
            (0, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
            (14, "b", [0, 1000], "1:100", "-", "-", "0-3", "0-1")],
            extra=["E t=9.00 what=start g=b cgroup=x pid=3"])
        r = numavm.analyse(text, SCN)
        self.assertEqual(r["t90"]["b"], 5.0)
        self.assertEqual((r["t90_floor"], r["t90_floor_guest"]), (5.0, "b"))
        peer = dict(r, placer="kernel", t90_all=8.0)
        line = numavm.target_line([dict(r, placer="numaorchd", t90_all=5.0), peer])
        self.assertIn("NOT met (numaorchd 5 s vs best peer 8 s; needs <= 4.00 s, under this run's floor: "
                      "guest b was first sampled 5.0 s after its start", line)
        met = numavm.target_line([dict(r, placer="numaorchd", t90_all=5.0), dict(peer, t90_all=10.0)])
        self.assertNotIn("floor", met)

    def test_late_guest_is_sampled_while_it_touches(self):
        # b starts at 9 and touches its memory until 14 (ready=0 before):
        # placed on node 1 before its touch, every page it has is local
        # from its first sample at 9.5, so its t90 is 0.5 s; counting only
        # its samples once ready (as before session 38) it is 5 s. Its
        # growth while touching is not memory that arrived by migration.
        touch0 = "H guest=b cgroup=/x kind=docker threads=1 mib=1 touch=0 start=9 stop=-1"
        local = [
            (0, "a", [1000, 0], "0:100", "-", "-", "0-3", "0-1"),
            (9, "b", [0, 0], "-", "-", "-", "0-3", "0-1", 0),   # as it starts: no memory yet
            (9.5, "b", [0, 100], "1:-1", "2-3", "-", "2-3", "0-1", 0),
            (12, "b", [0, 600], "1:100", "2-3", "-", "2-3", "0-1", 0),
            (14, "b", [0, 1000], "1:100", "2-3", "-", "2-3", "0-1", 1),
            (16, "b", [0, 1000], "1:100", "2-3", "-", "2-3", "0-1", 1)]
        ev = [touch0, "E t=9.00 what=start g=b cgroup=x pid=3", "E t=13.90 what=ready g=b"]
        r = numavm.analyse(results(local, vm_end="pgmigrate_success=0 oom_kill=0", extra=ev), SCN)
        self.assertEqual(r["t90"]["b"], 0.5)
        self.assertEqual(r["t90_ready"]["b"], 5.0)
        self.assertEqual((r["t90_all"], r["t90_ready_all"]), (0.5, 5.0))
        self.assertEqual((r["t90_floor"], r["t90_floor_guest"]), (0.5, "b"))
        self.assertTrue(r["touch_sampled"])
        self.assertAlmostEqual(r["touch_s"]["b"], 4.9)
        self.assertEqual(r["moved_mib"], 0.0)
        self.assertAlmostEqual(r["needed_mib"], round(1000 / 1024, 1))  # from where touch=0 put it
        # The same guest touching node 0 while it runs on node 1 (as the
        # kernel leaves it) is not local until its memory moves, at 16.
        remote = [x if x[1] != "b" else x[:2] + ([x[2][1], 0] if x[0] < 16 else [0, 1000],) + x[3:] for x in local]
        k = numavm.analyse(results(remote, extra=ev), SCN)
        self.assertEqual((k["t90"]["b"], k["t90_ready"]["b"]), (7.0, 7.0))
        # The target says both readings.
        line = numavm.target_line([dict(r, placer="numaorchd"), dict(k, placer="kernel")])
        self.assertIn("t90: met (numaorchd 0.5 s vs best peer 7 s; needs <= 3.50 s)", line)
        self.assertIn("t90 counting only samples once each guest's memory was all touched (as before "
                      "session 38): numaorchd 5 s vs best peer 7 s", line)
        # A late guest without touch= is counted from its first sample
        # once its memory is all touched, not from a partial one.
        r = numavm.analyse(results([
            (9.5, "b", [100, 0], "1:-1", "-", "-", "2-3", "0-1", 0),
            (14, "b", [400, 600], "1:100", "-", "-", "2-3", "0-1", 1),
            (16, "b", [0, 1000], "1:100", "-", "-", "2-3", "0-1", 1)],
            extra=["E t=9.00 what=start g=b cgroup=x pid=3"]), SCN)
        self.assertAlmostEqual(r["needed_mib"], round(400 / 1024, 1))
        # A run from before session 38 (no ready= field) reads as before.
        self.assertNotIn("counting only", numavm.target_line([dict(k, placer="numaorchd", touch_sampled=False),
                                                              dict(k, placer="kernel")]))

    def test_needed_counts_a_late_guest_where_its_touch_put_it(self):
        # b starts at t=9 with touch=0 (first sampled once its memory is
        # all touched: a placer already moved 600 of its 1000 KiB to node
        # 1, or placed it there before it touched any); it ends on node 1.
        # Its end state needed all 1000 KiB moved, whatever its first
        # sample shows; a guest there at t=0 (a) is counted from t=0 as
        # before; a late guest without touch from its first sample.
        touch0 = "H guest=b cgroup=/x kind=docker threads=1 mib=1 touch=0 start=9 stop=-1"
        for first_b in ([400, 600], [0, 1000]):
            text = results([
                (0, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
                (2, "a", [0, 1000], "1:100", "-", "-", "0-3", "0-1"),
                (10, "b", first_b, "1:100", "-", "-", "2-3", "1"),
                (12, "b", [0, 1000], "1:100", "-", "-", "2-3", "1")],
                extra=[touch0, "E t=9.00 what=start g=b cgroup=x pid=3"])
            r = numavm.analyse(text, SCN)
            self.assertAlmostEqual(r["needed_mib"], round(2000 / 1024, 1), msg=str(first_b))
        text = results([
            (10, "b", [400, 600], "1:100", "-", "-", "2-3", "1"),
            (12, "b", [0, 1000], "1:100", "-", "-", "2-3", "1")],
            extra=["E t=9.00 what=start g=b cgroup=x pid=3"])
        self.assertAlmostEqual(numavm.analyse(text, SCN)["needed_mib"], round(400 / 1024, 1))
        # A guest started during the setup (its start event at t=0.02 on
        # the setup's clock, start=0): counted from its first sample.
        text = results([
            (0, "b", [400, 600], "1:100", "-", "-", "2-3", "1"),
            (12, "b", [0, 1000], "1:100", "-", "-", "2-3", "1")],
            extra=[touch0.replace("start=9", "start=0"), "E t=0.02 what=start g=b cgroup=x pid=3"])
        self.assertAlmostEqual(numavm.analyse(text, SCN)["needed_mib"], round(400 / 1024, 1))
        # touch=interleave:0-1, ending on node 1: half of it.
        text = results([
            (10, "b", [0, 1000], "1:100", "-", "-", "2-3", "1"),
            (12, "b", [0, 1000], "1:100", "-", "-", "2-3", "1")],
            extra=[touch0.replace("touch=0", "touch=interleave:0-1"), "E t=9.00 what=start g=b cgroup=x pid=3"])
        self.assertAlmostEqual(numavm.analyse(text, SCN)["needed_mib"], round(500 / 1024, 1))

    def test_oom_and_empty_cpuset_are_seen(self):
        text = results([(0, "a", [1000, 0], "0:100", "-", "-", "", "0")],
                       vm_end="pgmigrate_success=0 oom_kill=1")
        r = numavm.analyse(text, SCN)
        self.assertEqual(r["oom_kills"], 1)
        self.assertEqual(r["empty_cpuset_guests"], ["a"])

    def test_guests_killed_during_the_run_are_seen(self):
        """The runner's stop events say how each guest ended: a SIGBUS
        (sig7) is counted and named in the REPORT's died column; a run
        whose runner did not say reads "-", not 0."""
        smp = [(0, "a", [1000, 0], "0:100", "0-3", "0-1", "0-3", "0-1"),
               (0, "b", [1000, 0], "0:100", "0-3", "0-1", "0-3", "0-1")]
        r = numavm.analyse(results(smp, extra=["E t=60.00 what=stop g=a end=sig7",
                                                 "E t=60.00 what=stop g=b end=ok"]), SCN)
        self.assertEqual(r["guest_ends"], {"sigbus": 1, "died": {"a": "sig7"}})
        self.assertEqual(numavm.died_cell(r["guest_ends"]), "a SIGBUS")
        r = numavm.analyse(results(smp, extra=["E t=60.00 what=stop g=a end=ok",
                                                 "E t=60.00 what=stop g=b end=ok"]), SCN)
        self.assertEqual(numavm.died_cell(r["guest_ends"]), "0")
        r = numavm.analyse(results(smp, extra=["E t=60.00 what=stop g=a", "E t=60.00 what=stop g=b"]), SCN)
        self.assertIsNone(r["guest_ends"])
        self.assertEqual(numavm.died_cell(r["guest_ends"]), "-")

    def test_stalls_felt_beside_the_agents_own(self):
        """The stalls the guests' threads felt come from each guest's last
        G line (cumulative since its start), summed over guests: the p99
        as its bucket's upper bound, the longest, the MiB that took 128 and
        512 ms or more. Beside them, what the agent's log says of its jobs.
        A run without the reading has none (old runs); its table is empty."""
        smp = [(0, "a", [1000, 0], "0:100", "0-3", "0-1", "0-3", "0-1"),
               (2, "a", [1000, 0], "0:100", "0-3", "0-1", "0-3", "0-1"),
               (2, "b", [1000, 0], "0:100", "0-3", "0-1", "0-3", "0-1")]
        log = ["L numaorchd[info]: guest docker-x: memory job 1 done: 12.0 MiB moved off nodes 1 onto 2 in "
               "1.07 s (11 MiB/s), 3 chunks, longest stall 94.9 ms, p99 80.5 ms",
               "L numaorchd[info]: guest docker-y: memory job 2 partial: 54.0 MiB moved off nodes 0 onto 1 in "
               "1.44 s (37 MiB/s), 0 chunks, longest stall 0.0 ms, p99 - ms: "]
        text = results(smp, extra=log)
        # a at t=0 had fewer; its last line (t=2) counts: 990 MiB under
        # 1 ms, 5 of 64-128 ms, 3 of 128-256, 2 of 512-1024; b 1000 under
        # 1 ms. Of 2000 MiB the 99th percentile (1980th) is under 1 ms.
        stall = {(0, "a"): " stall=20.0:10,0,0,0,0,0,0,0,0,0,0,0,0,0",
                 (2, "a"): " stall=700.5:990,0,0,0,0,0,0,5,3,0,2,0,0,0",
                 (2, "b"): " stall=0.9:1000,0,0,0,0,0,0,0,0,0,0,0,0,0"}
        out = []
        for line in text.splitlines():
            if line.startswith("G "):
                d = dict(kv.split("=", 1) for kv in line.split()[1:])
                line += stall[(int(float(d["t"])), d["g"])]
            out.append(line)
        r = numavm.analyse("\n".join(out) + "\n", SCN)
        self.assertEqual(r["felt_stall"], {"max_ms": 700.5, "p99_ms": 1.0, "mib": 2000, "over_128": 5,
                                           "over_512": 2})
        self.assertEqual(r["agent_stall"], {"jobs": 2, "max_ms": 94.9, "p99_ms": 80.5})
        t = "\n".join(numavm.stall_table([r]))
        self.assertIn("| numaorchd | off | <= 1 | 700 | 5 | 2 | 2000 | 2 | 80 | 95 |", t)
        # Most MiB slow: the p99 is in the slow bucket.
        out2 = [l.replace(" stall=0.9:1000,0,0,0,0,0,0,0,0,0,0,0,0,0", " stall=900.0:0,0,0,0,0,0,0,0,0,0,1000,0,0,0")
                for l in out]
        self.assertEqual(numavm.analyse("\n".join(out2) + "\n", SCN)["felt_stall"]["p99_ms"], 1024.0)
        r = numavm.analyse(results(smp), SCN)
        self.assertIsNone(r["felt_stall"])
        self.assertIsNone(r["agent_stall"])
        self.assertEqual(numavm.stall_table([r]), [])

    def test_failed_run_is_an_error(self):
        with self.assertRaises(RuntimeError):
            numavm.analyse("H nodes=2 duration=1\nERROR guest a exited\nEND rc=1\n", SCN)


class DecisionLog(unittest.TestCase):
    SAMPLES = [
        (0, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
        (2, "a", [1000, 0], "1:100", "2-3", "-", "2-3", "0-1"),   # cpus written, mems migrating
        (4, "a", [0, 1000], "1:100", "2-3", "1", "2-3", "1"),
        (6, "a", [0, 1000], "1:100", "2-3", "1", "2-3", "1")]

    def problems(self, samples, decisions):
        r = numavm.parse_results(results(samples, decisions))
        return numavm.check_decisions(r, REAL0)

    def test_agreeing_log(self):
        d = moved(A, 3.0, 2500, ("0-3", "0-1"), ("2-3", "1"))
        self.assertEqual(self.problems(self.SAMPLES, [d]), [])

    def test_change_without_record(self):
        p = self.problems(self.SAMPLES, [])
        self.assertTrue(p and "outside any moved record" in p[0], p)

    def test_record_with_other_target(self):
        d = moved(A, 3.0, 2500, ("0-3", "0-1"), ("0-1", "0"))
        p = self.problems(self.SAMPLES, [d])
        self.assertTrue(any("moved record says cpus 0-1 mems 0" in x for x in p), p)

    def test_record_with_other_origin(self):
        samples = [(0, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
                   (2, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
                   (4, "a", [0, 1000], "1:100", "2-3", "1", "2-3", "1")]
        d = moved(A, 3.5, 500, ("0-1", "0"), ("2-3", "1"))
        p = self.problems(samples, [d])
        self.assertTrue(any("moved record's from 0-1/0" in x for x in p), p)

    def test_two_moves_between_samples(self):
        # Two cycles 1.5 s apart, both between the samples at 2 and 4: the
        # second move's origin is the first's target, which no sample saw.
        samples = [(0, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
                   (2, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1"),
                   (4.5, "a", [0, 1000], "1:100", "3", "1", "3", "1")]
        d1 = moved(A, 2.6, 100, ("0-3", "0-1"), ("2-3", "0-1"))
        d2 = moved(A, 4.1, 100, ("2-3", "0-1"), ("3", "1"))
        self.assertEqual(self.problems(samples, [d1, d2]), [])
        # ... and a second move whose origin is not what the first left
        d2 = moved(A, 4.1, 100, ("0-1", "0-1"), ("3", "1"))
        p = self.problems(samples, [d1, d2])
        self.assertTrue(any("the move before it left 2-3/0-1" in x for x in p), p)

    def test_mems_never_written_are_the_effective_ones(self):
        # Soft binding with the memory already on the target: only cpus are
        # written, cpuset.mems stays empty (inherits 0-1); the record says
        # so with mems_after. Without it, the record's to.mems 1 is wrong.
        samples = [(0, "a", [0, 1000], "1:100", "-", "-", "0-3", "0-1"),
                   (4, "a", [0, 1000], "1:100", "2-3", "-", "2-3", "0-1")]
        d = moved(A, 2.0, 100, ("0-3", "0-1"), ("2-3", "1"))
        d["mems_after"] = "0-1"
        self.assertEqual(self.problems(samples, [d]), [])
        del d["mems_after"]
        p = self.problems(samples, [d])
        self.assertTrue(any("moved record says cpus 2-3 mems 1, the cgroup has 2-3/-" in x for x in p), p)

    def test_start_binding_released(self):
        # A start placement bound a's mems to node 1; the mems_released
        # record widens them to 0-1 (cpus unchanged: its "to" has none).
        samples = [(0, "a", [0, 1000], "1:100", "2-3", "1", "2-3", "1"),
                   (4, "a", [0, 1000], "1:100", "2-3", "0-1", "2-3", "0-1")]
        d = moved(A, 2.0, 1, ("2-3", "1"), ("2-3", "0-1"))
        d.update(decision="mems_released", mems_after="0-1")
        del d["to"]["cpus"]
        self.assertEqual(self.problems(samples, [d]), [])
        self.assertTrue(any("outside any moved record" in x for x in self.problems(samples, [])))

    def test_late_guest_is_explained(self):
        # What check-numa prints for a guest that never got local: its
        # samples and every record about it, nothing about the others.
        d = moved(A, 3.0, 2500, ("0-3", "0-1"), ("2-3", "1"))
        d.update(reason="consolidate", migrate_mib=320.0, message="cpus 0-3 -> 2-3", detail="node 1 util 0.5")
        r = numavm.parse_results(results(self.SAMPLES + [(0, "b", [1000, 0], "1:100", "-", "-", "0-3", "0-1")],
                                         [d], extra=["L numaorchd[warn]: something odd"]))
        text = numavm.explain_late(r, REAL0, {"a"})
        self.assertIn("a: t  threads", text)
        self.assertIn("t=  0.0  1:100", text)
        self.assertIn("2-3/1  1.00", text)                  # the sample after the move, local
        self.assertIn("decision t=3.0 moved (consolidate) -> cpus 2-3 mems 1, 320 MiB, 2.5 s: cpus 0-3 -> 2-3", text)
        self.assertIn("agent warnings (1", text)
        self.assertNotIn("b: t", text)

    def test_failed_record_and_unknown_guest(self):
        p = self.problems(self.SAMPLES[:1], [{"decision": "failed", "message": "EINVAL", "guest": "docker-" + A},
                                             moved("c" * 64, 1.0, 10, ("0-3", "0-1"), ("2-3", "1"))])
        self.assertTrue(any("failed move" in x for x in p), p)
        self.assertTrue(any("unknown guest" in x for x in p), p)


class Parts(unittest.TestCase):
    def test_cpio_newc(self):
        # (every run used to leave its /tmp/tmpXXXXXXXX/a.cpio behind)
        d = tempfile.mkdtemp(prefix="numaorch-cpio-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "a.cpio")
        c = numavm.Cpio(path)
        c.file("bin/x", b"hello", 0o755)
        c.symlink("bin/y", "x")
        c.file("etc/z", b"", 0o644)
        c.close()
        with open(path, "rb") as f:
            data = f.read()
        self.assertTrue(data.startswith(b"070701"))
        self.assertIn(b"bin/x\0", data)
        self.assertIn(b"TRAILER!!!\0", data)
        # Every header starts on a 4-byte boundary: walk them.
        off, names = 0, []
        while True:
            self.assertEqual(data[off:off + 6], b"070701")
            fsize, nsize = int(data[off + 54:off + 62], 16), int(data[off + 94:off + 102], 16)
            name = data[off + 110:off + 110 + nsize - 1].decode()
            names.append(name)
            off += 110 + nsize
            off += (4 - off % 4) % 4
            off += fsize + (4 - fsize % 4) % 4
            if name == "TRAILER!!!":
                break
        self.assertEqual(names, ["bin", "bin/x", "bin/y", "etc", "etc/z", "TRAILER!!!"])
        if subprocess.run(["which", "busybox"], capture_output=True).returncode == 0:
            p = subprocess.run(["busybox", "cpio", "-t"], input=data, capture_output=True)
            self.assertEqual(p.stdout.decode().split(), names[:-1])

    def test_scenarios_parse_and_qemu_command(self):
        for name in numavm.all_scenarios():
            scn = numavm.load_scenario(name)
            self.assertTrue(scn["description"], name)
            self.assertGreater(scn["duration"], 0)
        scn = numavm.load_scenario("misplaced")
        cmd = numavm.qemu_cmd(scn, "x=1", "file:c", "r")
        s = " ".join(cmd)
        self.assertIn("-smp 8,sockets=4,cores=2,threads=1", s)
        self.assertIn("-numa node,nodeid=3,cpus=6-7,memdev=mem3", s)
        self.assertIn("-numa dist,src=2,dst=3,val=20", s)
        self.assertIn("tcg,thread=multi", s)
        self.assertEqual(cmd.count("-serial"), 2)
        # The SMT shape: two nodes of two cores with two threads each.
        s = " ".join(numavm.qemu_cmd(numavm.load_scenario("smt"), "x=1", "file:c", "r"))
        self.assertIn("-smp 8,sockets=2,cores=2,threads=2", s)
        self.assertIn("-numa node,nodeid=1,cpus=4-7,memdev=mem1", s)

    def test_twosocket_shape(self):
        """Distances 10/12/32 in socket pairs, a memory-only node 4 (a
        memdev, no cpus=), its memory in -m, a PCI expander bridge on
        node 1 with a virtio device behind it."""
        scn = numavm.load_scenario("twosocket")
        cmd = numavm.qemu_cmd(scn, "x=1", "file:c", "r")
        s = " ".join(cmd)
        self.assertIn("-m 3584M", s)
        self.assertIn("-smp 8,sockets=4,cores=2,threads=1", s)
        self.assertIn("-numa node,nodeid=4,memdev=mem4", s)
        self.assertIn("memory-backend-ram,id=mem4,size=512M", s)
        self.assertIn("-numa dist,src=0,dst=1,val=12", s)
        self.assertIn("-numa dist,src=1,dst=2,val=32", s)
        self.assertIn("-numa dist,src=2,dst=3,val=12", s)
        self.assertIn("-numa dist,src=3,dst=4,val=40", s)
        # symmetric: one direction each, QEMU fills the other
        self.assertNotIn("-numa dist,src=1,dst=0,", s)
        self.assertEqual(sum(1 for a in cmd if a.startswith("dist,")), 10)
        self.assertIn("-device pxb,id=pxb0,bus=pci.0,bus_nr=32,numa_node=1", s)
        self.assertIn("-device virtio-rng-pci,bus=pxb0,addr=0x0", s)

    def test_shape_itests_exist(self):
        """make check-numa's shape checks are shape_check lines of the
        in-VM script, and each one's VM is a scenario with its shape."""
        with open(os.path.join(numavm.HERE, "guest", "test_cgroup_v2.sh")) as f:
            text = f.read()
        for vm, itests in numavm.SHAPE_STAGES:
            for name in itests:
                self.assertRegex(text, r"\nshape_check %s \w+\n" % name)
                self.assertIn("\ntest_%s() {" % name, text)
        scn = dict(numavm.SHAPE_STAGES)
        tw = numavm.load_scenario("twosocket")
        self.assertTrue(tw["distances"] and tw["memory_only"] and tw["pxb"])
        self.assertIn("twosocket", scn)
        self.assertGreater(numavm.load_scenario("smt3")["threads"], 1)
        llc = numavm.load_scenario("llc2")
        self.assertIn("llc2", scn)
        self.assertIn("-smp 16,sockets=2,dies=2,cores=2,threads=2",
                      " ".join(numavm.qemu_cmd(llc, "", "c", "r")))

    def test_distance_keys(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "x.scn")

        def scn(body):
            with open(path, "w") as f:
                f.write("description x\nnodes 2\n" + body)
            return numavm.load_scenario(path)
        # Without `distances`, `distance` between every pair, memory-only
        # nodes included.
        self.assertEqual(numavm.node_distances(scn("distance 21\nmemory_only 64\n")),
                         [[10, 21, 21], [21, 10, 21], [21, 21, 10]])
        # A matrix that is not symmetric gives both directions.
        s = " ".join(numavm.qemu_cmd(scn("distances 10 20\ndistances 30 10\n"), "x", "file:c", "r"))
        self.assertIn("dist,src=0,dst=1,val=20", s)
        self.assertIn("dist,src=1,dst=0,val=30", s)
        for bad in ("distances 10 20\n",                                  # one row of two
                    "distances 10 20 20\ndistances 20 10 20\n",          # three columns
                    "distances 10 20\ndistances 20 11\n",                # diagonal
                    "distances 10 10\ndistances 10 10\n",                # 10 off it
                    "distances 10 256\ndistances 256 10\n",
                    "memory_only 64\ndistances 10 20\ndistances 20 10\n",  # node 2 has no row
                    "memory_only 0\n",
                    "pxb 2\n", "pxb -1\n"):
            with self.assertRaises(SystemExit, msg=bad):
                scn(bad)

    def test_setting_placers(self):
        """`run`'s placer: the named ones, and numaorchd[+kernel] with
        SECTION.KEY=VALUE settings in what numavm-run accepts — nothing
        that could start another line of its drop-in."""
        for ok in ("numaorchd", "numaorchd+kernel:auto", "numaorchd:policy.min_free_mib=64",
                   "numaorchd+kernel:memory.kernel_balancing=migrate,policy.mem_headroom=0.05"):
            self.assertEqual(numavm.run_placer(ok), ok)
        for bad in ("numaorchd:", "numaorchd:min_free_mib=64", "numaorchd:policy.min_free_mib=",
                    "numaorchd:policy.x=1,", "numaorchd:policy.x=a b", "numaorchd:policy.x=[a]",
                    "numad:policy.x=1", "numaorchd:policy.x=1\n[api]", "numaorchd:policy.x=1\n"):
            with self.assertRaises(numavm.argparse.ArgumentTypeError, msg=bad):
                numavm.run_placer(bad)



class PodsAndBalancing(unittest.TestCase):
    """Guests shaped as runtimes shape them (pods with container cgroups
    carrying their own cpuset, widened later), the cgroup v1 run and the
    kernel's balancing as a column of its own."""

    def scn_file(self, body):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "x.scn")
        with open(path, "w") as f:
            f.write("description x\n" + body)
        return path

    def test_pod_keys_parse_and_bad_ones_are_refused(self):
        scn = numavm.load_scenario(self.scn_file(
            "cgroup v1\nguest p kind=kubepods containers=2 ctr_cpuset=own driver=cgroupfs threads=3 "
            "mib=64 widen=all cpus=nodes:0 mems=0\nguest d kind=docker widen=no\n"))
        self.assertEqual(scn["cgroup"], "v1")
        self.assertEqual(len(scn["guests"]), 2)
        for bad in ("guest p kind=docker containers=2 threads=2",      # docker is flat
                    "guest p kind=kubepods containers=3 threads=2",    # a container needs a thread
                    "guest p kind=kubepods containers=0",
                    "guest p kind=kubepods ctr_cpuset=mine",
                    "guest p kind=kubepods driver=cgroupv1",
                    "guest p kind=docker driver=cgroupfs",
                    "guest p kind=kubepods widen=some",
                    "guest p kind=kubepods contaners=2",
                    "cgroup v3"):
            with self.assertRaises(SystemExit, msg=bad):
                numavm.load_scenario(self.scn_file(bad + "\n"))

    def test_new_scenarios(self):
        co = numavm.load_scenario("crowded-open")
        self.assertEqual(len(co["guests"]), 6)
        kinds = [numavm.parse_guest("x", g)[1]["kind"] for g in co["guests"]]
        self.assertEqual(kinds, ["kubepods", "docker"] * 3)
        for g in co["guests"]:
            keys = numavm.parse_guest("x", g)[1]
            self.assertEqual((keys["mib"], keys["touch"], keys["widen"], keys["cpus"], keys["mems"]),
                             ("128", "0", "all", "nodes:0", "0"))
            if keys["kind"] == "kubepods":
                self.assertEqual(keys["ctr_cpuset"], "own")
        self.assertEqual(co["pages"], "thp")
        big = numavm.load_scenario("big-interleaved-pod")
        keys = numavm.parse_guest("x", big["guests"][0])[1]
        self.assertEqual((keys["threads"], keys["touch"], keys["containers"], keys["ctr_cpuset"]),
                         ("3", "interleave:0-3", "2", "own"))
        self.assertIn("THP", big["description"])
        self.assertIn("THP", co["description"])

    def test_command_line_and_run_names(self):
        scn = numavm.load_scenario("crowded-open")
        self.assertEqual(numavm.run_append(scn, "numaorchd"),
                         "numavm.mode=run numavm.scenario=crowded-open numavm.placer=numaorchd")
        self.assertIn(" numavm.balancing=on", numavm.run_append(scn, "numaorchd", "on"))
        self.assertNotIn("balancing", numavm.run_append(scn, "numaorchd", "placer"))
        self.assertIn(" numavm.cgroup=v1", numavm.run_append(scn, "kernel", None, "v1"))
        self.assertIn(" numavm.cgroup=v1", numavm.run_append(dict(scn, cgroup="v1"), "kernel"))
        self.assertEqual(numavm.run_name(scn, "numaorchd"), "crowded-open.numaorchd")
        self.assertEqual(numavm.run_name(scn, "numaorchd", "on"), "crowded-open.numaorchd.balancing-on")
        # Already on by itself: the same run as without the flag.
        self.assertEqual(numavm.run_name(scn, "kernel", "on"), "crowded-open.kernel")
        self.assertEqual(numavm.run_name(scn, "numaorchd+kernel", "on"), "crowded-open.numaorchd+kernel")
        self.assertEqual(numavm.run_name(scn, "numad", "on", "v1"), "crowded-open.numad.balancing-on.v1")
        self.assertEqual(numavm.run_name(dict(scn, cgroup="v1"), "numad", None, "v1"), "crowded-open.numad")
        self.assertEqual([numavm.placer_balancing(p) for p in ("none", "kernel", "numad", "numaorchd",
                                                               "numaorchd+kernel:auto", "numaorchd:a.b=1")],
                         ["off", "on", "off", "off", "on", "off"])

    def test_bench_matrix_has_a_balancing_on_column(self):
        m = numavm.bench_matrix()
        self.assertEqual(m[:len(numavm.PLACERS)], [(p, None) for p in numavm.PLACERS])
        self.assertEqual(m[len(numavm.PLACERS):], [("numad", "on")])
        self.assertEqual(numavm.bench_matrix(["numad", "numaorchd", "kernel"], ["on"]),
                         [("numad", "on"), ("numaorchd", "on")])
        self.assertEqual(numavm.bench_matrix(["numaorchd"], ["placer"]), [("numaorchd", None)])

    def test_analysis_reads_balancing_and_cgroup(self):
        text = results(A_MOVES_B_STAYS).replace(
            "pid=9 real=%.3f" % REAL0, "pid=9 real=%.3f balancing=on" % REAL0).replace(
            "pages=thp", "pages=thp cgroup=v1", 1)
        r = numavm.analyse(text, SCN)
        self.assertEqual((r["balancing"], r["balancing_forced"], r["cgroup"]), ("on", True, "v1"))
        r = numavm.analyse(results(A_MOVES_B_STAYS), SCN)     # an older run says neither
        self.assertEqual((r["balancing"], r["balancing_forced"], r["cgroup"]), ("off", False, "v2"))

    def test_pod_ids_in_both_drivers(self):
        r = numavm.parse_results(
            "H guest=p cgroup=/kubepods/burstable/pod0a1b2c3d-0000-1111-2222-333344445555 kind=kubepods\n"
            "H guest=s cgroup=/kubepods.slice/kubepods-burstable.slice/"
            "kubepods-burstable-pod0a1b2c3d_0000_1111_2222_999944445555.slice kind=kubepods\n"
            "H guest=l cgroup=/lxc.payload.pod9 kind=lxc\nEND rc=0\n")
        m = numavm.guest_id_map(r)
        self.assertEqual(m["0a1b2c3d-0000-1111-2222-333344445555"], "p")
        self.assertEqual(m["0a1b2c3d-0000-1111-2222-999944445555"], "s")
        self.assertEqual(m["pod9"], "l")

    def test_pod_of_containers_is_local_per_container(self):
        """Container 0 (two threads) on node 0 with its 900 MiB there,
        container 1 (one thread) on node 1 with its 450 MiB there: every
        thread's own memory is local, though the pod's memory is on both
        nodes (pod-level: (2 x 0.67 + 0.33) / 3)."""
        s = {"mem": [900, 450], "thr": [(0, 100), (0, 100), (1, 100)], "parts": [(2, [900, 0]), (1, [0, 450])]}
        self.assertEqual(numavm.locality(s), (1.0, 1.0))
        s["parts"] = None
        self.assertAlmostEqual(numavm.locality(s)[1], (2 * 900 / 1350 + 450 / 1350) / 3)
        # Parts that do not match the threads: the pod-level figure.
        s["parts"] = [(1, [900, 0]), (1, [0, 450])]
        self.assertAlmostEqual(numavm.locality(s)[1], (2 * 900 / 1350 + 450 / 1350) / 3)
        # Start interleaved (450/450 and 225/225), end as above after the
        # moves: what had to move is each container's half off its own
        # threads' node (450 + 225), not the pod's memory off both nodes (0).
        g = ["G t=%.2f g=p mem=%s thr=%s cpus=0-3 mems=0-1 ccpus=- cmems=- prog=0 oom=0 ready=1 parts=%s"
             % (t, m, th, parts) for t, m, th, parts in (
                 (0, "675,675", "0:100,0:100,1:100", "2:450,450;1:225,225"),
                 (2, "900,450", "0:100,0:100,1:100", "2:900,0;1:0,450"))]
        r = numavm.analyse(results([], extra=g), SCN)
        self.assertEqual(r["t90"], {"p": 2.0})
        self.assertAlmostEqual(r["needed_mib"], round(675 / 1024, 1))
        self.assertEqual(numavm.parse_results(results([], extra=g))["samples"][1]["parts"],
                         [(2, [900, 0]), (1, [0, 450])])

    def test_report_has_the_balancing_column_and_its_target(self):
        base = numavm.analyse(results(A_MOVES_B_STAYS), SCN)
        rows = [dict(base, placer="kernel", balancing="on", t90_all=10.0),
                dict(base, placer="numad", balancing="off", t90_all=None),
                dict(base, placer="numad", balancing="on", balancing_forced=True, t90_all=None),
                dict(base, placer="numaorchd", balancing="off", t90_all=4.0),
                dict(base, placer="numaorchd", balancing="on", balancing_forced=True, t90_all=8.0)]
        off = numavm.target_line(rows)
        on = numavm.target_line(rows, "on")
        self.assertIn("t90: met (numaorchd 4 s vs best peer 10 s", off)
        self.assertTrue(on.startswith("Target for numaorchd with kernel.numa_balancing = 1 (numaorchd)"), on)
        self.assertIn("t90: NOT met (numaorchd 8 s vs best peer 10 s", on)
        # numaorchd+kernel stands for numaorchd in the balancing-on column.
        rows[-1] = dict(base, placer="numaorchd+kernel", balancing="on", t90_all=5.0)
        self.assertIn("numaorchd+kernel): t90: met (numaorchd 5 s", numavm.target_line(rows, "on"))
        self.assertIn("not evaluated", numavm.target_line(rows[:1], "on"))
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        old = numavm.RESULTS, numavm.plot
        numavm.RESULTS, numavm.plot = d, (lambda name, rs: None)
        try:
            for r in rows:
                r["scenario"] = "crowded-open"
                r["series"] = []
            numavm.report(rows, cmdline="test")
        finally:
            numavm.RESULTS, numavm.plot = old
        with open(os.path.join(d, "REPORT.md")) as f:
            rep = f.read()
        self.assertIn("| placer | balancing | t90 s |", rep)
        self.assertIn("| numad | on (forced) | never |", rep)
        self.assertIn("| numad | off | never |", rep)
        self.assertIn("Target for numaorchd with kernel.numa_balancing = 1", rep)


class DeviceLocality(unittest.TestCase):
    """The device reading beside the old ones: guests whose H line names
    the device's node (device_node=, as numavm-run reads it from sysfs)."""

    def dev_results(self, a_thr_node, a_mem, with_device=True):
        extra = ()
        text = results([(t, g, mem, thr, "-", "-", "0-3", "0-1")
                        for t in (0, 2, 52, 56, 60)
                        for g, mem, thr in (("a", a_mem, "%d:100" % a_thr_node), ("b", [0, 1000], "1:100"))],
                       extra=extra)
        if with_device:
            text = text.replace("kind=docker threads=1 mib=320\nH guest=b",
                                "kind=docker threads=1 mib=320 device=b:259:0 device_node=1 device_rules=v1\nH guest=b", 1)
        return text

    def test_local_by_memory_but_away_from_its_device(self):
        # a: thread and memory on node 0 (true locality 100 %), its device on node 1.
        r = numavm.analyse(self.dev_results(0, [1000, 0]), SCN)
        self.assertEqual(r["wloc_end"], 1.0)
        d = r["device_local"]
        self.assertEqual(d["guests"], {"a": {"node": 1, "threads_end": 0.0, "mem_end": 0.0}})
        self.assertEqual((d["threads_end"], d["mem_end"]), (0.0, 0.0))
        self.assertEqual((d["threads_last_min"], d["mem_last_min"]), (0.0, 0.0))
        # beside its device: the same true locality, device local 100 %
        r2 = numavm.analyse(self.dev_results(1, [0, 1000]), SCN)
        self.assertEqual(r2["wloc_end"], r["wloc_end"])
        self.assertEqual((r2["device_local"]["threads_end"], r2["device_local"]["mem_end"]), (1.0, 1.0))
        # thread there, three quarters of the memory
        r3 = numavm.analyse(self.dev_results(1, [250, 750]), SCN)
        self.assertEqual((r3["device_local"]["threads_end"], r3["device_local"]["mem_end"]), (1.0, 0.75))

    def test_runs_without_devices_have_none_and_no_table(self):
        r = numavm.analyse(self.dev_results(0, [1000, 0], with_device=False), SCN)
        self.assertIsNone(r["device_local"])
        self.assertEqual(numavm.device_table([r]), [])
        # metrics.json of runs before the reading existed: no key at all
        old = {k: v for k, v in r.items() if k != "device_local"}
        self.assertEqual(numavm.device_table([old]), [])

    def test_report_table_only_for_device_scenarios(self):
        a = numavm.analyse(self.dev_results(0, [1000, 0]), SCN)
        b = numavm.analyse(self.dev_results(1, [0, 1000]), SCN)
        rows = [dict(a, placer="kernel", balancing="on"), dict(b, placer="numaorchd", balancing="off")]
        t = "\n".join(numavm.device_table(rows))
        self.assertIn("a on node 1", t)
        self.assertIn("| kernel | on | 0% | 0% | 0% | 0% | a 0%/0% |", t)
        self.assertIn("| numaorchd | off | 100% | 100% | 100% | 100% | a 100%/100% |", t)

    def test_scenario_keys_and_qemu_command(self):
        scn = numavm.load_scenario("device-misplaced")
        self.assertEqual(scn["cgroup"], "v1")
        self.assertEqual(scn["nvme"], [1])
        s = " ".join(numavm.qemu_cmd(scn, "x=1", "file:c", "r"))
        self.assertIn("-device pxb,id=pxb0,bus=pci.0,bus_nr=32,numa_node=1", s)
        self.assertIn("-device nvme,serial=numavm0,drive=nvm0,bus=pxb0,addr=0x1", s)
        self.assertIn("-blockdev driver=null-co,node-name=nvm0,", s)
        # twosocket's shape is what it was: no NVMe
        self.assertNotIn("nvme", " ".join(numavm.qemu_cmd(numavm.load_scenario("twosocket"), "x=1", "file:c", "r")))
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        for body, why in (("pxb 1\nnvme 2\n", "nvme"), ("pxb 1\nnvme 1\nguest g device=2\n", "device=N"),
                          ("guest g device=1\n", "device=N")):
            p = os.path.join(d, "x.scn")
            with open(p, "w") as f:
                f.write("description x\n" + body)
            with self.assertRaises(SystemExit) as cm:
                numavm.load_scenario(p)
            self.assertIn(why, str(cm.exception))


class CaptureAppend(unittest.TestCase):
    def test_hugepages_go_on_the_command_line(self):
        self.assertEqual(numavm.capture_append(numavm.load_scenario("hugetlb-host")),
                         "numavm.mode=script numavm.script=capture_fixture numavm.hugepages=40,24,16,0")
        self.assertEqual(numavm.capture_append(numavm.load_scenario("twosocket")),
                         "numavm.mode=script numavm.script=capture_fixture")


class Capture(unittest.TestCase):
    """numavm.py capture: the lines of guest/capture_fixture.sh back into files."""

    def test_files_round_trip(self):
        text = ("numavm noise\nF /sys/devices/system/node/node0/cpulist\n| 0-1\nE\n"
                "F /sys/fs/cgroup/x/cgroup.procs\nE\n"
                "F /proc/stat\n| cpu  1 2\n|\n| cpu0 1 2\nE\nEND rc=0\n")
        files = numavm.parse_capture(text)
        self.assertEqual(files, {"/sys/devices/system/node/node0/cpulist": "0-1\n",
                                 "/sys/fs/cgroup/x/cgroup.procs": "",
                                 "/proc/stat": "cpu  1 2\n\ncpu0 1 2\n"})
        with tempfile.TemporaryDirectory() as d:
            dest = os.path.join(d, "vm")
            self.assertEqual(numavm.write_capture(text, dest), 3)
            with open(os.path.join(dest, "proc", "stat")) as f:
                self.assertEqual(f.read(), "cpu  1 2\n\ncpu0 1 2\n")
            # a new capture replaces the tree and keeps the goldens
            with open(os.path.join(dest, "expected-topology.json"), "w") as f:
                f.write("{}")
            numavm.write_capture("F /sys/devices/system/node/node0/cpulist\n| 0-3\nE\n", dest)
            self.assertFalse(os.path.exists(os.path.join(dest, "proc", "stat")))
            self.assertTrue(os.path.exists(os.path.join(dest, "expected-topology.json")))

    def test_cut_short_or_strange_is_an_error(self):
        with self.assertRaises(ValueError):
            numavm.parse_capture("F /proc/stat\n| cpu 1\n")
        with self.assertRaises(ValueError):
            numavm.parse_capture("F /proc/stat\nnot a content line\nE\n")
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(RuntimeError):
                numavm.write_capture("F /proc/stat\n| cpu 1\nE\n", os.path.join(d, "x"))
            with self.assertRaises(ValueError):
                numavm.write_capture("F /sys/devices/system/node/node0/cpulist\n| 0\nE\n"
                                     "F /sys/../../etc/x\n| y\nE\n", os.path.join(d, "x"))


class Demo(unittest.TestCase):
    """make demo's view (demo.py): what it computes from the runner's lines
    and that a frame fits 80x24."""

    def test_frame_local_time_and_memory_moved(self):
        import demo
        text = results(A_MOVES_B_STAYS)
        r = numavm.parse_results(text)
        times = demo.complete_times(r, 2)
        self.assertEqual(times, [0.0, 2.0, 4.0])
        self.assertEqual(demo.all_local_at(r, ["a", "b"], times), 4.0)
        self.assertEqual(demo.migrated_kib(r, 2), 500)
        self.assertEqual(demo.migrated_kib(r, 4), 950)
        lines = demo.render(r, 4.0, ["a", "b"], demo.node_of_cpus(r), 4.0, 60)
        self.assertLessEqual(len(lines), 24)
        self.assertTrue(all(len(l) <= 80 for l in lines), lines)
        row = [l for l in lines if l.startswith("a ")][0].split()
        # guest, "node", threads' nodes, cpuset nodes, local, MiB per node
        self.assertEqual(row, ["a", "node", "1", "1", "95%", "0", "0"])
        self.assertIn("all local (>= 90%) since t=4 s", lines[-1])
        lines = demo.render(r, 2.0, ["a", "b"], demo.node_of_cpus(r), 4.0, 60)
        self.assertIn("not all local yet", lines[-1])

    def test_a_start_not_misplaced_fails_loudly(self):
        # make demo ran 67 s showing every guest local at t = 0 and said
        # nothing was wrong: a guest already local at the first sample is
        # named, and main() then exits 1.
        import demo
        r = numavm.parse_results(results(A_MOVES_B_STAYS))
        times = demo.complete_times(r, 2)
        msg = demo.misplaced_at_start(r, ["a", "b"], times)
        self.assertIn("b 100% local", msg)
        self.assertNotIn("a ", msg.split(":", 1)[1])
        only_a = [x for x in A_MOVES_B_STAYS if x[1] == "a"]
        r = numavm.parse_results(results(only_a))
        self.assertIsNone(demo.misplaced_at_start(r, ["a"], demo.complete_times(r, 1)))
        self.assertIn("no complete sample", demo.misplaced_at_start(r, ["a"], []))

    def test_demo_scenario_binds_memory_away_from_cpus(self):
        # The misplacement is built: each guest's mems bound to a node
        # that holds none of its CPUs while it first-touches, then lifted.
        scn = numavm.load_scenario("demo")
        self.assertTrue(scn["guests"])
        for line in scn["guests"]:
            name, keys = numavm.parse_guest("demo.scn", line)
            self.assertEqual(keys.get("widen"), "mems", name)
            cpu_nodes = keys["cpus"].split(":", 1)[1].split(",")
            self.assertNotIn(keys["mems"], cpu_nodes, name)

    def test_half_written_line_is_left_for_later(self):
        # make demo reads results.txt while QEMU writes it; a line cut
        # short once crashed the view (KeyError: 'thr').
        import demo
        text = results([(0, "a", [1000, 0], "1:100", "-", "-", "0-3", "0-1")])
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "results.txt")
            with open(p, "w") as f:
                f.write(text + "G t=2.00 g=a mem=1000,0")
            r = numavm.parse_results(demo.read_results(p, False))
            self.assertEqual(len(r["samples"]), 1)
            with self.assertRaises(KeyError):
                numavm.parse_results(demo.read_results(p, True))


class BenchMigrateRatios(unittest.TestCase):
    """bench_migrate_ratios.py: the pairs' summary, and old files' output
    untouched by pair lines."""
    NORMAL = [
        "R pages=thp-busy case=raw mib=64 s=1.6 mibs=40.0 calls=4 guest_gap_p99_ms=1 guest_gap_max_ms=2",
        "R pages=thp-busy case=mover workers=2 on=target mib=64 s=2 mibs=30.0 stall_p50_ms<=100 "
        "guest_gap_p99_ms=60.5 guest_gap_max_ms=90.1 thp_mib_before=64 thp_mib_after=64",
        "R pages=thp-busy case=mover workers=4 on=target mib=64 s=2 mibs=36.0 "
        "guest_gap_p99_ms=1 guest_gap_max_ms=2 thp_mib_before=64 thp_mib_after=64",
        "R pages=thp-busy case=raw_last mib=64 s=1.6 mibs=20.0 calls=4 guest_gap_p99_ms=1 guest_gap_max_ms=2",
    ]
    # Pair 4's mover is missing (a run cut short): left out. Pair 2's raw
    # (100) is above every normal raw and its mover (90) above every normal
    # mover: neither may leak into best_raw / best_mover.
    PAIRS = [
        "R pages=thp-busy case=raw_pair pair=1 mib=64 s=1 mibs=40.0",
        "R pages=thp-busy case=mover_pair pair=1 workers=2 on=target mib=64 s=1 mibs=20.0",
        "R pages=thp-busy case=mover_pair pair=2 workers=2 on=target mib=64 s=1 mibs=90.0",
        "R pages=thp-busy case=raw_pair pair=2 mib=64 s=1 mibs=100.0",
        "R pages=thp-busy case=raw_pair pair=3 mib=64 s=1 mibs=30.0",
        "R pages=thp-busy case=mover_pair pair=3 workers=2 on=target mib=64 s=1 mibs=36.0",
        "R pages=thp-busy case=raw_pair pair=4 mib=64 s=1 mibs=50.0",
        "T pages=thp-busy cases_s=30.0 pairs=4 pairs_s=40.0",
    ]

    def run_script(self, lines):
        import contextlib
        import io
        import bench_migrate_ratios
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("H nodes=4 cpus=8\n" + "\n".join(lines) + "\nEND rc=0\n")
        self.addCleanup(os.unlink, f.name)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            bench_migrate_ratios.main([f.name])
        return out.getvalue().splitlines()[1:], bench_migrate_ratios.blocks(f.name)

    def test_pairs_summary(self):
        import bench_migrate_ratios
        lines, blocks = self.run_script(self.NORMAL + self.PAIRS)
        p = bench_migrate_ratios.pair_summary(blocks[0]["rows"])
        self.assertEqual(p["n"], 3)
        self.assertEqual([round(x, 3) for x in p["ratios"]], [0.5, 0.9, 1.2])
        self.assertAlmostEqual(p["median"], 0.9)
        self.assertEqual((p["median_mover"], p["median_raw"]), (36.0, 40.0))
        self.assertAlmostEqual(p["of_medians"], 0.9)
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("pairs n=3: default/raw median  90 % (min-max 50-120 %)", lines[1])
        self.assertIn("median default/median raw 36.0/40.0 ( 90 %), >= 80 % in 2 of 3", lines[1])
        # the normal cases' figures are those of a file without pairs
        self.assertEqual(lines[0], self.run_script(self.NORMAL)[0][0])
        self.assertIn("best_raw=  40.0 default=  30.0 ( 75 %)", lines[0])
        self.assertIn("best_mover=  36.0 ( 90 %, 4 workers on target)", lines[0])

    def test_old_file_has_no_pairs_line(self):
        lines, blocks = self.run_script(self.NORMAL)
        self.assertEqual(len(lines), 1, lines)
        import bench_migrate_ratios
        self.assertIsNone(bench_migrate_ratios.pair_summary(blocks[0]["rows"]))


class Repeat(unittest.TestCase):
    """repeat.py's table of repeat.sh's runs: a failed run (empty JSON)
    is said, not skipped; medians over the runs that ran."""

    def test_table_and_medians(self):
        import contextlib
        import io
        import repeat
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)

        def m(t90, end):
            return {"t90_all": t90, "wloc_end": end, "wloc_mean_last_min": end - 0.05, "wloc_min_end": 0.5,
                    "moved_mib": 10.0, "needed_mib": 12.0, "placer_cpu_s": None,
                    "busy_threads_per_node_end": [1, 1]}
        for name, body in (("kernel.1", m(None, 0.833)), ("kernel.2", m(None, 0.933)), ("kernel.3", m(6.0, 0.9)),
                           ("numaorchd:policy.min_free_mib=64.1", m(None, 0.934))):
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump(body, f)
        open(os.path.join(d, "numaorchd.1.json"), "w").close()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            repeat.main(d)
        text = out.getvalue()
        self.assertIn("numaorchd.1", text)
        self.assertIn("failed: see numaorchd.1.err", text)
        self.assertRegex(text, r"kernel\.2 +never +93\.3% +88\.3% +50\.0% +10\.0 +12\.0 +- 1/1")
        self.assertIn("kernel                                       3 runs: median true end 90.0% (83.3, 93.3, 90.0), "
                      "t90 median 6.0 over 1 reached (6.0)", text)
        self.assertIn("numaorchd:policy.min_free_mib=64             1 runs: median true end 93.4% (93.4), "
                      "t90 never in every run", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)


# The smt shape as numavm-run prints it (sockets=2, cores=2, threads=2 a
# socket: CPUs 0-1, 2-3, 4-5, 6-7 are cores, each node's four one L3).
SMT_CORES = ("H cores topo=0:0:0:0-1:0-3;1:0:0:0-1:0-3;2:0:1:2-3:0-3;3:0:1:2-3:0-3;"
             "4:1:0:4-5:4-7;5:1:0:4-5:4-7;6:1:1:6-7:4-7;7:1:1:6-7:4-7")


def smt_results(samples, cores=SMT_CORES):
    """Raw runner output on the smt shape: SAMPLES are (t, guest, thr,
    tcpu[, ready]) with thr as in G lines ("node:busy,...") and tcpu the
    CPUs ("-": none, as the runner prints it when no thread was seen)."""
    lines = ["H scenario=smt-busy placer=numaorchd nodes=2 duration=60 sample=2.0 pages=thp cgroup=v2",
             "H node=0 cpus=0-3", "H node=1 cpus=4-7"]
    if cores:
        lines.append(cores)
    for g, n in (("s1", 2), ("s2", 2), ("s3", 1)):
        lines.append("H guest=%s cgroup=/system.slice/docker-%s.scope kind=docker threads=%d mib=256" % (g, g * 32, n))
    lines += ["E t=0.00 what=placer placer=numaorchd pid=9 real=%.3f balancing=off" % REAL0,
              "V t=0.00 numa_pages_migrated=0 pgmigrate_success=0 pgmigrate_fail=0 oom_kill=0"]
    for smp in samples:
        t, g, thr, tcpu = smp[:4]
        line = ("G t=%.2f g=%s mem=1000,0 thr=%s cpus=0-7 mems=0-1 ccpus=- cmems=- prog=0 oom=0 ready=%d"
                % (t, g, thr, 1 if len(smp) < 5 else smp[4]))
        if tcpu is not None:
            line += " tcpu=" + tcpu
        lines.append(line)
    lines += ["V t=60.00 numa_pages_migrated=0 pgmigrate_success=0 pgmigrate_fail=0 oom_kill=0",
              "P t=60.00 cpu_s=1.00", "END rc=0"]
    return "\n".join(lines) + "\n"


def smt_sample(t, s1, s2, s3, busy=(100, 100, 100, 100, 100), ready=1):
    """The three smt-busy guests at time T, their busy threads on CPUs S1
    (two), S2 (two) and S3 (one); BUSY each thread's %, in that order."""
    out, k = [], 0
    for g, cpus in (("s1", s1), ("s2", s2), ("s3", s3)):
        thr = ",".join("%d:%d" % (c // 4, busy[k + i]) for i, c in enumerate(cpus))
        k += len(cpus)
        out.append((t, g, thr, ",".join(map(str, cpus)), ready))
    return out


class CoreSharing(unittest.TestCase):
    """The SMT reading from tcpu= against the runner's H cores line."""

    def test_cores_line_and_tcpu_parse(self):
        r = numavm.parse_results(smt_results(smt_sample(2, (0, 1), (4, 6), (2,))))
        self.assertEqual(r["cores"][1], {"core": frozenset({0, 1}), "l3": frozenset({0, 1, 2, 3})})
        self.assertEqual(r["cores"][6]["core"], frozenset({6, 7}))
        self.assertEqual(len(r["cores"]), 8)
        self.assertEqual([s["tcpu"] for s in r["samples"]], [[0, 1], [4, 6], [2]])
        # the line is not taken for the run's header or a node
        self.assertNotIn("topo", r["header"])
        self.assertEqual(r["nodes"], {0: "0-3", 1: "4-7"})
        # a CPU whose L3 sysfs does not show
        self.assertIsNone(numavm.parse_cores("0:0:0:0:-")[0]["l3"])
        self.assertEqual(numavm.parse_cores("-"), {})

    def test_siblings_shared_own_and_any(self):
        # s1's two threads on one core (0, 1), s2 on two cores of node 1,
        # s3 alone on node 0's other core: s1 competes with itself only.
        m = numavm.analyse(smt_results([x for t in (0, 2, 4) for x in smt_sample(t, (0, 1), (4, 6), (2,))]),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual((m["core_shared"], m["own_shared"], m["shared_idle_core"], m["llc_split"]),
                         (0.4, 0.4, 0.0, 0.0))
        # five busy threads on four cores: no core was free anywhere
        self.assertEqual(m["shared_idle_core_any"], 0.0)
        # s1 on two cores, one beside s3: shared with another guest, not its own
        m = numavm.analyse(smt_results([x for t in (0, 2) for x in smt_sample(t, (0, 2), (4, 6), (3,))]),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual((m["core_shared"], m["own_shared"], m["shared_idle_core"]), (0.4, 0.0, 0.0))
        # every core separate (s3 idle): nothing shared
        m = numavm.analyse(smt_results([x for t in (0, 2) for x in smt_sample(t, (0, 2), (4, 6), (5,),
                                                                                busy=(100, 90, 100, 100, 10))]),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual((m["core_shared"], m["own_shared"]), (0.0, 0.0))

    def test_sharing_while_a_core_of_the_node_is_idle(self):
        # s1 on core 0 of node 0 with core 2-3 idle; s3 beside s2's
        # thread on node 1, whose other core s2 holds: of the four
        # threads sharing, s1's two could have had a core each.
        m = numavm.analyse(smt_results(smt_sample(0, (0, 1), (4, 6), (5,))),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual((m["core_shared"], m["own_shared"], m["shared_idle_core"]), (0.8, 0.4, 0.4))
        self.assertEqual(m["shared_idle_core_any"], 0.8)
        # four on node 0's two cores, one alone on node 1: no core of
        # node 0 idle, but one of node 1 (a node choice's sharing)
        m = numavm.analyse(smt_results(smt_sample(0, (0, 1), (2, 3), (5,))),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual((m["core_shared"], m["shared_idle_core"], m["shared_idle_core_any"]), (0.8, 0.0, 0.8))
        # two busy threads on one CPU share its core too
        m = numavm.analyse(smt_results(smt_sample(0, (0, 0), (4, 6), (2,))),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual(m["own_shared"], 0.4)

    def test_llc_split(self):
        # s2's busy threads under both L3s, s1's under node 0's: one of two
        m = numavm.analyse(smt_results(smt_sample(0, (0, 2), (3, 6), (5,))),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual(m["llc_split"], 0.5)
        # a guest with one busy thread is no multi-thread guest
        m = numavm.analyse(smt_results(smt_sample(0, (0, 2), (3, 6), (5,), busy=(100, 100, 100, 20, 100))),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual(m["llc_split"], 0.0)
        # no L3 in sysfs: no reading of it, the cores still read
        m = numavm.analyse(smt_results(smt_sample(0, (0, 2), (3, 6), (5,)),
                                       cores=SMT_CORES.replace(":0-3", ":-").replace(":4-7", ":-")),
                           {"name": "smt-busy", "duration": 60})["smt"]
        self.assertIsNone(m["llc_split"])
        self.assertEqual(m["core_shared"], 0.4)

    def test_time_weighted_mean_end_and_ready(self):
        # t=0 and t=2 (2 s each) all shared by s1 with itself, then 8 s to
        # t=10 with s1 on two cores: own-shared (2*0.4 + 2*0.4 + 8*0)/12.
        # A late guest's ready=0 samples are left out; the end is the last 10 s.
        ss = smt_sample(0, (0, 1), (4, 6), (2,)) + smt_sample(2, (0, 1), (4, 6), (2,)) + \
            smt_sample(10, (0, 2), (4, 6), (5,)) + smt_sample(52, (0, 1), (4, 6), (2,)) + \
            smt_sample(56, (0, 2), (4, 6), (5,)) + [(56, "s4", "0:100", "3", 0)]
        m = numavm.analyse(smt_results(ss), {"name": "smt-busy", "duration": 60})["smt"]
        self.assertEqual(m["samples"], 5)
        self.assertEqual(m["own_shared"], round((2 * 0.4 + 2 * 0.4 + 8 * 0 + 42 * 0.4 + 4 * 0) / 58, 4))
        self.assertEqual(m["own_shared_end"], 0.2)

    def test_runs_without_the_line_or_tcpu(self):
        ss = smt_sample(0, (0, 1), (4, 6), (2,))
        self.assertIsNone(numavm.analyse(smt_results(ss, cores=None), {"name": "smt-busy", "duration": 60})["smt"])
        old = [(t, g, thr, None) for t, g, thr, _, _ in ss]
        self.assertIsNone(numavm.analyse(smt_results(old), {"name": "smt-busy", "duration": 60})["smt"])
        # a tcpu= whose count disagrees with thr= is not read
        bad = [(0, "s1", "0:100,0:100", "0")]
        self.assertIsNone(numavm.parse_results(smt_results(bad))["samples"][0]["tcpu"])

    def test_report_columns_only_for_smt_scenarios(self):
        new = numavm.analyse(smt_results(smt_sample(0, (0, 1), (4, 6), (2,)) + smt_sample(52, (0, 2), (4, 6), (3,))),
                             {"name": "smt-busy", "duration": 60})
        old = numavm.analyse(smt_results(smt_sample(0, (0, 1), (4, 6), (2,)), cores=None),
                             {"name": "smt-busy", "duration": 60})
        old.pop("smt")
        rows = [dict(new, placer="numaorchd", balancing="off"), dict(old, placer="kernel", balancing="on")]
        other = dict(numavm.analyse(results(A_MOVES_B_STAYS), SCN), placer="numaorchd", balancing="off",
                     scenario="misplaced")
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        saved = numavm.RESULTS, numavm.plot
        numavm.RESULTS, numavm.plot = d, (lambda name, rs: None)
        try:
            for r in rows + [other]:
                r["series"] = []
            numavm.report(rows + [other], cmdline="test")
        finally:
            numavm.RESULTS, numavm.plot = saved
        with open(os.path.join(d, "REPORT.md")) as f:
            rep = f.read()
        smt_part, _, misplaced_part = rep.partition("## misplaced")
        self.assertIn("**core-shared**", rep)
        self.assertIn("| work MiB/s | core-shared | own-shared | LLC-split |", smt_part)
        # own-shared 40% for the first 2 s of 54, none over the last 10 s
        self.assertIn(" | 40% / 40% | 1% / 0% | 0% / 0% |", smt_part)
        self.assertIn("| kernel | on |", smt_part)
        self.assertTrue(any(l.startswith("| kernel | on |") and l.endswith(" | - | - | - |")
                            for l in smt_part.splitlines()), smt_part)
        self.assertNotIn("core-shared |", misplaced_part)

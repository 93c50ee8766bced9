"""The real numaorchd binary end to end on a fixture host (--root): a
2-node topology tree and a cgroup v2 tree with every runtime, composed in a
temporary directory. Needs no root: writes go to the fixture's files, and
the daemon's test build (build/numaorchd-test: the shipped daemon plus the
test hooks) records each write in .numaorch-writes."""
import json
import os
import shutil
import subprocess
import unittest

import itlib

FIX = os.path.join(itlib.REPO, "tests", "fixtures")


def nodes(text):
    """The set of ids in a list like "0-2,5"."""
    out = set()
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


class FixtureRoot(itlib.DaemonTest):
    def setUp(self):
        if not os.path.exists(itlib.NUMAORCHD_TEST):
            self.skipTest("build/numaorchd-test missing (make build/numaorchd-test)")
        super().setUp()
        self.root = os.path.join(self.tmp, "host")
        shutil.copytree(os.path.join(FIX, "host-2node", "sys"), os.path.join(self.root, "sys"))
        shutil.copytree(os.path.join(FIX, "host-2node", "proc"), os.path.join(self.root, "proc"))
        shutil.copytree(os.path.join(FIX, "cg-v2", "sys", "fs", "cgroup"),
                        os.path.join(self.root, "sys", "fs", "cgroup"))
        shutil.copytree(os.path.join(FIX, "cg-v2", "run"), os.path.join(self.root, "run"))
        self.writes = os.path.join(self.root, "sys", "fs", "cgroup", ".numaorch-writes")
        itlib.write(self.writes, "")
        self.conf = itlib.config_file(self.tmp, "[agent]\nsample = 0.05\n")

    def run_once(self, *args):
        p = subprocess.run(self.numaorchd("--config", self.conf, "--root", self.root, "--once", "--json", *args,
                                          binary=itlib.NUMAORCHD_TEST), capture_output=True, text=True, timeout=60)
        return p, (json.loads(p.stdout) if p.stdout.strip() else None)

    def written(self):
        with open(self.writes) as f:
            return [l.split(" ", 2) for l in f.read().splitlines()]

    def test_dry_run_writes_nothing(self):
        p, rep = self.run_once("--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreater(len(rep["snapshot"]["guests"]), 5)
        self.assertEqual(len(rep["snapshot"]["nodes"]), 2)
        self.assertEqual(self.written(), [])

    def test_moves_land_in_the_files_and_stay_in_scope(self):
        p, rep = self.run_once("--scope", "/system.slice")
        self.assertEqual(p.returncode, 0, p.stderr)
        for g in rep["snapshot"]["guests"]:
            self.assertTrue(g["cgroup"].startswith("/system.slice/"), g["cgroup"])
        for rel, _, _ in self.written():
            self.assertTrue(rel.startswith("/system.slice/"), rel)

        p, rep = self.run_once()
        self.assertEqual(p.returncode, 0, p.stderr)
        moves = [i for i in rep["plan"]["items"] if i["kind"] == "move"]
        self.assertTrue(moves, "the fixture has misplaced guests: expected moves")
        guests = {g["id"]: g for g in rep["snapshot"]["guests"]}
        done = {r["guest"]: r for r in rep["results"]}
        for m in moves:
            g = guests[m["guest"]]
            self.assertEqual(done[m["guest"]]["outcome"], "moved", done[m["guest"]])
            d = os.path.join(self.root, "sys", "fs", "cgroup", g["cgroup"].lstrip("/"))
            self.assertEqual(itlib.read(os.path.join(d, "cpuset.cpus")), m["to_cpus"])
            # Soft memory binding: the mems may have been left as they were
            # (memory already there; "" = inherit) or widened; they always
            # hold the target.
            mems = itlib.read(os.path.join(d, "cpuset.mems"))
            if mems:
                self.assertLessEqual(nodes(m["to_mems"]), nodes(mems), (m, mems))
            else:
                # left as it was ("" = inherit): only right if the memory
                # is already on the target (a guest with none is, trivially)
                on = {int(n) for n, b in g["mem_bytes_by_node"].items() if b > 0}
                self.assertLessEqual(on, nodes(m["to_mems"]), (m, g["mem_bytes_by_node"]))
            self.assertTrue(m["to_cpus"] and m["to_mems"], "never an empty cpuset")
        # max_moves (4) counts the moves that migrate memory
        migrating = [m for m in moves if m.get("migrate_bytes", 0) > 0.01 * guests[m["guest"]]["mem_total_bytes"]]
        self.assertLessEqual(len(migrating), 4, "max_moves per cycle")

    def test_cpus_of_every_move_before_any_memory(self):
        """Two guests pinned to the other node, both with memory to migrate:
        both cpuset.cpus are written before either cpuset.mems (the
        memory of one never holds back the CPUs of the next)."""
        a11b = "docker-a11bfa5a170e98c1ec8531b5331854fe682a59ad0f58be7722c180b1f5e8e419"
        d861 = "docker-861aff256de973d0666f19d1cefd33194d8b5fe2ed95ffe3e52ab1fc12e562ae"
        cg = os.path.join(self.root, "sys", "fs", "cgroup", "system.slice")
        itlib.write(os.path.join(cg, d861 + ".scope", "memory.numa_stat"),
                    "anon N0=209715200 N1=0\nfile N0=0 N1=0\n")
        state = os.path.join(self.tmp, "state")
        os.mkdir(state)
        itlib.write(os.path.join(state, "guest-policies.json"), json.dumps({
            "format": "numaorch-guest-policies", "version": 1,
            "guests": {a11b: {"mode": "pinned", "nodes": "1"}, d861: {"mode": "pinned", "nodes": "1"}}}))
        p, rep = self.run_once("--scope", "/system.slice", "--state-dir", state)
        self.assertEqual(p.returncode, 0, p.stderr)
        moves = {i["guest"]: i for i in rep["plan"]["items"] if i["kind"] == "move"}
        self.assertIn(a11b, moves, rep["plan"])
        self.assertIn(d861, moves, rep["plan"])
        for g in (a11b, d861):
            self.assertGreater(moves[g]["migrate_bytes"], 4 << 20, moves[g])
        w = [(rel.rsplit("/", 1)[-1], f) for rel, f, _ in self.written()]
        cpus = [i for i, (rel, f) in enumerate(w) if f == "cpuset.cpus" and rel in (a11b + ".scope", d861 + ".scope")]
        mems = [i for i, (rel, f) in enumerate(w) if f == "cpuset.mems" and rel in (a11b + ".scope", d861 + ".scope")]
        self.assertEqual(len(cpus), 2, w)
        self.assertEqual(len(mems), 2, w)
        self.assertLess(max(cpus), min(mems), w)

    def test_kernel_balancing_defer_leaves_memory_to_the_kernel(self):
        """kernel.numa_balancing = 1 and kernel_balancing = defer: a move
        with memory to migrate gets its CPUs and wide mems, and the record
        says the kernel moves the memory; with balancing 0, or migrate, the
        agent migrates it."""
        a11b = "docker-a11bfa5a170e98c1ec8531b5331854fe682a59ad0f58be7722c180b1f5e8e419"
        os.makedirs(os.path.join(self.root, "proc", "sys", "kernel"), exist_ok=True)
        bal = os.path.join(self.root, "proc", "sys", "kernel", "numa_balancing")
        pristine = os.path.join(self.tmp, "pristine")
        shutil.copytree(self.root, pristine)

        def once(balancing, setting):
            shutil.rmtree(self.root)
            shutil.copytree(pristine, self.root)
            itlib.write(bal, "%d\n" % balancing)
            conf = itlib.config_file(self.tmp, "[agent]\nsample = 0.05\n[memory]\nkernel_balancing = %s\n" % setting,
                                     name="kb.conf")
            p = subprocess.run(self.numaorchd("--config", conf, "--root", self.root, "--once", "--json",
                                              "--scope", "/system.slice"), capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            rep = json.loads(p.stdout)
            moves = {i["guest"]: i for i in rep["plan"]["items"] if i["kind"] == "move"}
            self.assertIn(a11b, moves, rep["plan"])
            self.assertGreater(moves[a11b]["migrate_bytes"], 2 << 20)
            return {r["guest"]: r for r in rep["results"]}[a11b]

        r = once(1, "defer")
        self.assertEqual(r["outcome"], "moved", r)
        self.assertIn("left to the kernel's NUMA balancing", r["message"], r)
        for balancing, setting in ((0, "defer"), (1, "migrate")):
            r = once(balancing, setting)
            self.assertEqual(r["outcome"], "moved", r)
            self.assertNotIn("kernel's NUMA balancing", r["message"], (balancing, setting, r))

    def test_malformed_topology_is_a_clear_error(self):
        itlib.write(os.path.join(self.root, "sys", "devices", "system", "node", "node1", "distance"),
                    "10 banana\n")
        p, _ = self.run_once()
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read the host topology", p.stderr)
        self.assertIn("Invalid argument", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""GET /v1/topology from the real numaorchd on a fixture host (no root
needed): the answer validates against api/openapi.yaml and against the
NodeResourceTopology v1alpha2 CRD's own schema (tests/fixtures/k8s-nrt/,
its source named there), holds no field that schema does not know (an
API server would drop it without a word), and each figure is the one the
agent shows elsewhere (/v1/nodes, /v1/guests). numaorchctl topology: its
table and --json."""
import json
import os
import re
import shutil
import unittest

import apilib
import itlib

REASON = apilib.skip_reason() or (None if os.path.exists(apilib.NUMAORCHCTL) else
                                  "build/numaorchctl missing (run make)")
CRD_SCHEMA = os.path.join(apilib.FIX, "k8s-nrt", "v1alpha2-schema.yaml")
NODE_NAME = "worker-7.example"

_SUFFIX = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}


def qbytes(q):
    m = re.fullmatch(r"([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei)?", q)
    assert m, "not a canonical byte quantity: %r" % q
    return int(m.group(1)) * _SUFFIX[m.group(2) or ""]


def qmillis(q):
    m = re.fullmatch(r"([0-9]+)(m?)", q)
    assert m, "not a canonical CPU quantity: %r" % q
    return int(m.group(1)) * (1 if m.group(2) else 1000)


def node_list(s):
    """"0-1,3" -> {0, 1, 3}"""
    out = set()
    for part in filter(None, s.split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def by_name(items):
    return {i["name"]: i for i in items}


def unknown_fields(obj, schema, path="$"):
    """Fields of OBJ that SCHEMA (a structural CRD schema) does not declare."""
    out = []
    if path == "$.metadata":
        return out  # ObjectMeta: the API server's own rules, not the CRD's schema
    if isinstance(obj, dict):
        props = schema.get("properties", {})
        for k, v in obj.items():
            if k not in props:
                out.append("%s.%s" % (path, k))
            else:
                out += unknown_fields(v, props[k], "%s.%s" % (path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += unknown_fields(v, schema.get("items", {}), "%s[%d]" % (path, i))
    return out


@unittest.skipIf(REASON, REASON or "")
class Topology(apilib.ClassDaemon):
    # setUpClass/tearDownClass (one daemon; it must exit 0): apilib.ClassDaemon

    @classmethod
    def prepare_root(cls, root):
        """A guest that runs on node 1 (CPUs 1,3) with memory on both
        nodes: its memory on node 0 is remote there, on node 1 local."""
        cg = os.path.join(root, "sys", "fs", "cgroup")
        d = os.path.join(cg, "lxc.payload.away")
        shutil.copytree(os.path.join(cg, "lxc.payload.db"), d)
        for f, v in (("cpuset.cpus", "1,3"), ("cpuset.cpus.effective", "1,3"),
                     ("cpuset.mems", "0-1"), ("cpuset.mems.effective", "0-1")):
            itlib.write(os.path.join(d, f), v + "\n")
        itlib.write(os.path.join(d, "memory.numa_stat"),
                    "anon N0=%d N1=%d\nfile N0=0 N1=0\n" % (48 << 20, 16 << 20))

    @classmethod
    def setUpClass(cls):
        # The DaemonSet gives the node's name so; the daemon reads it per request.
        old = os.environ.get("NODE_NAME")
        os.environ["NODE_NAME"] = NODE_NAME
        try:
            super().setUpClass()
        finally:
            if old is None:
                del os.environ["NODE_NAME"]
            else:
                os.environ["NODE_NAME"] = old

    def topology(self):
        r = self.d.get("/v1/topology")
        self.assertEqual(r.status, 200, r)
        return r

    def test_valid_against_openapi_and_the_crd_schema(self):
        try:
            import jsonschema
            import yaml
            chk = apilib.SpecChecker()
        except ImportError as e:
            self.skipTest("python3-jsonschema / python3-yaml missing: %s" % e)
        r = self.topology()
        chk.check("GET", "/v1/topology", r)
        with open(CRD_SCHEMA) as f:
            crd = yaml.safe_load(f)
        obj = r.json()
        errs = sorted(jsonschema.Draft4Validator(crd).iter_errors(obj), key=lambda e: list(e.path))
        self.assertEqual([], ["%s: %s" % (list(e.path), e.message) for e in errs])
        self.assertEqual([], unknown_fields(obj, crd))
        # And a broken object fails it: the schema is really applied.
        bad = json.loads(r.body)
        bad["zones"][0]["resources"][0]["capacity"] = "4 CPUs"
        del bad["zones"][1]["type"]
        self.assertEqual(len(list(jsonschema.Draft4Validator(crd).iter_errors(bad))), 2)

    def test_figures_are_the_agents_own(self):
        obj = self.topology().json()
        nodes = {n["id"]: n for n in self.d.get("/v1/nodes").json()["nodes"]}
        guests = self.d.get("/v1/guests").json()["guests"]
        self.assertEqual(obj["apiVersion"], "topology.node.k8s.io/v1alpha2")
        self.assertEqual(obj["kind"], "NodeResourceTopology")
        self.assertEqual(obj["metadata"], {"name": NODE_NAME})
        self.assertEqual(obj["topologyPolicies"], [])
        self.assertEqual([z["name"] for z in obj["zones"]], ["node-%d" % i for i in sorted(nodes)])
        top = {a["name"]: a["value"] for a in obj["attributes"]}
        unmeasured = sum(1 for g in guests if g["mem_total_bytes"] is None)
        self.assertGreater(unmeasured, 0)  # the fixture's docker-861: malformed numa_stat
        self.assertEqual(top.get("numaorch.io/guests-memory-unmeasured"), str(unmeasured))
        self.assertRegex(top["numaorch.io/measured-at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        remote_seen = 0
        for z in obj["zones"]:
            nid = int(z["name"].split("-")[1])
            n = nodes[nid]
            self.assertEqual(z["type"], "Node")
            res = by_name(z["resources"])
            self.assertEqual({k: res["cpu"][k] for k in ("capacity", "allocatable", "available")},
                             dict.fromkeys(("capacity", "allocatable", "available"), str(n["nr_cpus"])))
            hp = {h["page_size_bytes"]: h for h in n.get("hugepages", [])}
            huge = sum(h["total"] * p for p, h in hp.items())
            self.assertEqual(qbytes(res["memory"]["capacity"]), n["mem_total_bytes"])
            self.assertEqual(qbytes(res["memory"]["allocatable"]), n["mem_total_bytes"] - huge)
            self.assertEqual(qbytes(res["memory"]["available"]),
                             min(n["mem_free_bytes"], n["mem_total_bytes"] - huge))
            pools = {qbytes(k[len("hugepages-"):]): v for k, v in res.items() if k.startswith("hugepages-")}
            self.assertEqual(sorted(pools), sorted(hp))
            for p, h in hp.items():
                self.assertEqual(qbytes(pools[p]["capacity"]), h["total"] * p)
                self.assertEqual(qbytes(pools[p]["allocatable"]), h["total"] * p)
                self.assertEqual(qbytes(pools[p]["available"]), h["free"] * p)
            self.assertEqual({c["name"]: c["value"] for c in z["costs"]},
                             {"node-%s" % k: v for k, v in n["distance"].items()})
            attrs = {a["name"]: a["value"] for a in z["attributes"]}
            # Load: shown exactly when /v1/nodes has it, never a 0 for unknown.
            if n["load_cpus"] is None:
                self.assertNotIn("numaorch.io/cpu-used", attrs)
                self.assertNotIn("numaorch.io/cpu-busy-fraction", attrs)
            else:
                self.assertEqual(qmillis(attrs["numaorch.io/cpu-used"]), round(n["load_cpus"] * 1000))
            self.assertEqual(attrs["numaorch.io/guests"], str(len(n["guests"])))
            here = [g for g in guests if g["mem_total_bytes"] is not None and
                    nid in node_list(g["cpu_nodes"])]
            away = [g for g in guests if g["mem_total_bytes"] is not None and
                    nid not in node_list(g["cpu_nodes"])]
            local = sum(g["mem_bytes_by_node"][str(nid)] for g in here)
            remote = sum(g["mem_bytes_by_node"][str(nid)] for g in away)
            self.assertEqual(qbytes(attrs["numaorch.io/guest-memory-local"]), local)
            self.assertEqual(qbytes(attrs["numaorch.io/guest-memory-remote"]), remote)
            remote_seen += remote
        # lxc-away runs on node 1 with 48 MiB on node 0.
        self.assertEqual(remote_seen, 48 << 20)

    def test_cli_table_and_json(self):
        p = self.d.ctl("topology")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "node %s (topology.node.k8s.io/v1alpha2)" % NODE_NAME)
        self.assertEqual(lines[1].split(), ["ZONE", "CPUS", "MEMORY", "ALLOC", "AVAIL", "HUGEPAGES",
                                            "LOAD", "GUESTS", "LOCAL", "REMOTE", "COSTS"])
        obj = self.topology().json()
        self.assertEqual(len(lines), 2 + len(obj["zones"]), lines)
        for z, line in zip(obj["zones"], lines[2:]):
            row = line.split()
            res = by_name(z["resources"])
            attrs = {a["name"]: a["value"] for a in z["attributes"]}
            self.assertEqual(row[:5], [z["name"], res["cpu"]["capacity"], res["memory"]["capacity"],
                                       res["memory"]["allocatable"], res["memory"]["available"]])
            self.assertEqual(row[6:10], [attrs.get("numaorch.io/cpu-used", "-"), attrs["numaorch.io/guests"],
                                         attrs["numaorch.io/guest-memory-local"],
                                         attrs["numaorch.io/guest-memory-remote"]])
            self.assertEqual(row[10], ",".join(str(c["value"]) for c in z["costs"]))
        zone0 = lines[2].split()
        self.assertEqual(zone0[5], "2Mi:200Mi/1Gi,1Gi:0/0")  # the fixture's pools
        self.assertEqual(zone0[9], "48Mi")                   # lxc-away's memory on node 0
        j = json.loads(self.d.ctl("topology", "--json").stdout)
        self.assertEqual(j["kind"], "NodeResourceTopology")
        self.assertEqual(len(j["zones"]), 2)
        p = self.d.ctl("topology", "extra")
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    unittest.main()

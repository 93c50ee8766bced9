"""deploy/grafana/numaorch-dashboard.json and deploy/prometheus/numaorch-rules.yml
against the real numaorchd: every metric they query is one the agent
exports (its live /metrics on a fixture host), the rules pass
`promtool check rules` and their unit tests (`promtool test rules`), and a
real Prometheus scraping the agent answers every dashboard query without
an error and with data."""
import json
import os
import re
import shutil
import socket
import subprocess
import time
import unittest
import urllib.parse
import urllib.request

import apilib
import itlib

DASHBOARD = os.path.join(itlib.REPO, "deploy", "grafana", "numaorch-dashboard.json")
RULES = os.path.join(itlib.REPO, "deploy", "prometheus", "numaorch-rules.yml")
RULES_TEST = os.path.join(itlib.REPO, "tests", "prometheus", "numaorch-rules.test.yml")
METRIC = re.compile(r"\bnumaorch_[a-z0-9_]+")
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")


def dashboard_exprs():
    """Every PromQL expression of the dashboard: panel targets (rows too)
    and query variables."""
    with open(DASHBOARD) as f:
        d = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append((p["title"], t["expr"]))
            walk(p.get("panels", []))
    walk(d["panels"])
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        if v.get("type") == "query":
            out.append(("$" + v["name"], q["query"] if isinstance(q, dict) else q))
    return d, out


def rules_exprs():
    import yaml
    with open(RULES) as f:
        r = yaml.safe_load(f)
    return [(rule["alert"], rule["expr"]) for g in r["groups"] for rule in g["rules"]]


def exported(metrics_text):
    """Metric names in the exposition text: families and their samples."""
    names = set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, 1)[0])
    return names


def grafana_to_promql(expr):
    """What Grafana sends for the variables the dashboard uses."""
    return (expr.replace("$instance", ".*").replace("$__rate_interval", "1m")
            .replace("$__range", "5m"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@unittest.skipIf(apilib.skip_reason(), apilib.skip_reason() or "")
class Dashboards(apilib.ClassDaemon):
    def metrics(self):
        r = self.d.get("/metrics")
        self.assertEqual(r.status, 200, r)
        return r.body.decode()

    def test_dashboard_shape(self):
        d, exprs = dashboard_exprs()
        self.assertEqual(d["uid"], "numaorch")
        titles = [p["title"] for p in d["panels"]]
        for want in ("CPU busy per node", "Free memory per node", "Guests' locality over time",
                     "Moves by outcome", "Memory migrated", "Cycle time by phase", "libvirt connection"):
            self.assertIn(want, titles)
        heat = [p for p in d["panels"] if p["title"] == "Guests' locality over time"][0]
        self.assertEqual(heat["type"], "heatmap")
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids must be unique")
        self.assertGreater(len(exprs), 15)

    def test_every_metric_queried_is_exported(self):
        have = exported(self.metrics())
        _, exprs = dashboard_exprs()
        missing = []
        src = open(os.path.join(itlib.REPO, "api", "api_metrics.c")).read()
        for where, e in exprs + rules_exprs():
            names = METRIC.findall(e)
            if where != "NumaorchDown":
                self.assertTrue(names, "%s: %r queries no numaorch metric" % (where, e))
            for n in names:
                # Only an agent with a memory mover exports these, and a
                # fixture root has none: they must at least be families
                # api_metrics.c writes.
                if n.startswith("numaorch_mover_") and n not in have:
                    fam = re.sub(r"_(bucket|sum|count)$", "", n)
                    self.assertIn('prom_family(p, "%s"' % fam, src, "%s: %s" % (where, n))
                    continue
                if n not in have:
                    missing.append("%s: %s" % (where, n))
        self.assertEqual(missing, [], "queried but not exported by numaorchd")

    @unittest.skipIf(not PROMTOOL, "promtool missing (Debian: prometheus)")
    def test_promtool_check_and_test_rules(self):
        p = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS: 5 rules found", p.stdout)
        p = subprocess.run([PROMTOOL, "test", "rules", os.path.basename(RULES_TEST)], capture_output=True,
                           text=True, timeout=60, cwd=os.path.dirname(RULES_TEST))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    @unittest.skipIf(not PROMETHEUS, "prometheus missing (Debian: prometheus)")
    def test_prometheus_answers_every_dashboard_query(self):
        tmp = os.path.join(self.tmp, "prom")
        os.makedirs(tmp)
        port = free_port()
        itlib.write(os.path.join(tmp, "prometheus.yml"), """
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: [ "%s" ]
scrape_configs:
  - job_name: numaorch
    authorization: { credentials_file: "%s" }
    static_configs: [ { targets: [ "127.0.0.1:%d" ] } ]
""" % (RULES, self.d.token_file, self.d.port))
        log = open(os.path.join(tmp, "log"), "w")
        proc = subprocess.Popen([PROMETHEUS, "--config.file", os.path.join(tmp, "prometheus.yml"),
                                 "--storage.tsdb.path", os.path.join(tmp, "data"),
                                 "--web.listen-address", "127.0.0.1:%d" % port], stdout=log, stderr=log)
        self.addCleanup(lambda: (proc.terminate(), proc.wait(20), log.close()))

        def query(q):
            url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": q}))
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    return json.load(r)
            except urllib.error.HTTPError as e:
                return json.load(e)

        # rates need two scrapes a few seconds apart: wait for them
        deadline = time.time() + 60
        res = None
        while time.time() < deadline:
            self.assertIsNone(proc.poll(), "prometheus exited: " + apilib.slurp(os.path.join(tmp, "log")))
            try:
                res = query("count_over_time(numaorch_build_info[1m])")
                if res.get("data", {}).get("result") and float(res["data"]["result"][0]["value"][1]) >= 4:
                    break
            except (ConnectionError, OSError):
                pass
            time.sleep(0.5)
        else:
            self.fail("prometheus never scraped numaorchd 4 times: %r\n%s" %
                      (res, apilib.slurp(os.path.join(tmp, "log"))))
        _, exprs = dashboard_exprs()
        # queries whose answer is empty on this host, and why
        may_be_empty = {
            "Guests below the locality target": "every fixture guest is above the target",
            "Mover: memory moved per second, by cause": "a fixture root has no mover",
            "Mover: jobs": "a fixture root has no mover",
            "Mover: longest page stall (p99)": "a fixture root has no mover",
        }
        for where, e in exprs:
            if where.startswith("$"):
                e = "numaorch_build_info"  # label_values() is Grafana's, not PromQL
            r = query(grafana_to_promql(e))
            self.assertEqual(r.get("status"), "success", "%s: %s: %r" % (where, e, r))
            if where not in may_be_empty:
                self.assertTrue(r["data"]["result"], "%s: %s: no data" % (where, e))

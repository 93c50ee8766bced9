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
import signal
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
                     "Moves by outcome", "Memory migrated", "Cycle time by phase (mean)", "libvirt connection",
                     "Conflicts with other placers"):
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
        for where, e in exprs + rules_exprs():
            names = METRIC.findall(e)
            if where != "NumaorchDown":
                self.assertTrue(names, "%s: %r queries no numaorch metric" % (where, e))
            for n in names:
                if n not in have:
                    missing.append("%s: %s" % (where, n))
        self.assertEqual(missing, [], "queried but not exported by numaorchd")

    @unittest.skipIf(not PROMTOOL, "promtool missing (Debian: prometheus)")
    def test_promtool_check_and_test_rules(self):
        p = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS: 6 rules found", p.stdout)
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
        # Every family is exported from the start (the mover's at 0 without
        # a mover): no panel may read "no data" on a fresh agent.
        for where, e in exprs:
            if where.startswith("$"):
                e = "numaorch_build_info"  # label_values() is Grafana's, not PromQL
            r = query(grafana_to_promql(e))
            self.assertEqual(r.get("status"), "success", "%s: %s: %r" % (where, e, r))
            self.assertTrue(r["data"]["result"], "%s: %s: no data" % (where, e))


def promtool_check_metrics(test, body):
    """`promtool check metrics` on an exposition text: no lint (names, units,
    counters' _total, histograms' buckets)."""
    if not PROMTOOL:
        test.skipTest("promtool missing (Debian: prometheus): metrics format not checked")
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True, timeout=60)
    test.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())


@unittest.skipIf(apilib.skip_reason(), apilib.skip_reason() or "")
class FreshAgent(unittest.TestCase):
    """Each metric the dashboard and the rules query is on a fresh agent's
    first /metrics, in advise and in enforce mode, before anything moved or
    any request but the readiness probe: a series that appears only once
    something happens reads "no data" on panels and never fires alerts."""

    def fresh_metrics(self, conf):
        tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        d = apilib.Daemon(tmp, apilib.compose_root(tmp), conf="[agent]\nsample = 0.05\n" + conf).start()
        try:
            r = d.get("/metrics")
            self.assertEqual(r.status, 200, r)
        finally:
            self.assertEqual(d.stop(), 0, d.logtext())
        return r.body

    def check_mode(self, conf):
        body = self.fresh_metrics(conf)
        have = exported(body.decode())
        _, exprs = dashboard_exprs()
        missing = sorted({"%s: %s" % (where, n) for where, e in exprs + rules_exprs()
                          for n in METRIC.findall(e) if n not in have})
        self.assertEqual(missing, [], "queried but absent from a fresh agent's /metrics")
        text = body.decode()
        # histograms and counters as Prometheus expects them
        self.assertIn("# TYPE numaorch_cycle_duration_seconds histogram", text)
        self.assertIn('numaorch_cycle_duration_seconds_bucket{phase="total",le="+Inf"} 1', text)
        self.assertIn('numaorch_cycle_duration_seconds_count{phase="apply"} 1', text)
        self.assertIn("# TYPE numaorch_guest_cpu_seconds_total counter", text)
        self.assertIn("# TYPE process_cpu_seconds_total counter", text)
        self.assertNotIn("numaorch_guest_cpu_usage_cpus", text)
        for fam in ("numaorch_mover_moved_bytes_total", "numaorch_mover_jobs", "numaorch_mover_jobs_ended_total",
                    "numaorch_mover_chunk_stall_seconds_count", "numaorch_api_requests_total"):
            self.assertRegex(text, r"(?m)^%s(\{[^}]*\})? 0$" % fam, "%s is not exported at 0" % fam)
        promtool_check_metrics(self, body)
        return text

    def test_advise_mode(self):
        text = self.check_mode("mode = advise\n")
        self.assertIn("numaorch_moves_total 0", text)

    def test_enforce_mode(self):
        self.check_mode("mode = enforce\n")

    def test_enforce_dry_run(self):
        self.check_mode("mode = enforce\ndry_run = yes\n")


def guest_series(text, fam):
    return sorted(re.findall(r'(?m)^%s\{guest="([^"]+)"' % fam, text))


@unittest.skipIf(apilib.skip_reason(), apilib.skip_reason() or "")
class GuestMetricsLimit(unittest.TestCase):
    """[api] guest_metrics: off, all, top N by memory, read again on SIGHUP;
    the counts over every guest stay whatever it says."""

    def test_top_n_off_all_and_reload(self):
        tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        base = "[agent]\nsample = 0.05\n"
        d = apilib.Daemon(tmp, apilib.compose_root(tmp), conf=base + "[api]\nguest_metrics = top 3\n").start()
        self.addCleanup(d.stop)
        guests = d.get("/v1/guests").json()["guests"]
        self.assertGreater(len(guests), 3, "the fixture needs more guests than the limit")
        mem = {g["id"]: g["mem_total_bytes"] or 0 for g in guests}  # null: not measured
        biggest = sorted(mem, key=lambda i: (-mem[i], i))[:3]

        text = d.get("/metrics").body.decode()
        for fam in ("numaorch_guest_info", "numaorch_guest_locality_ratio", "numaorch_guest_mem_in_cpuset_ratio",
                    "numaorch_guest_cpu_seconds_total"):
            self.assertEqual(guest_series(text, fam), sorted(biggest), fam)
        self.assertEqual(sorted(set(guest_series(text, "numaorch_guest_memory_bytes"))), sorted(biggest))
        self.assertIn("numaorch_guest_metrics_guests 3\n", text)
        self.assertIn('numaorch_guests{kind="container"} %d\n' % len(guests), text)
        self.assertRegex(text, r"(?m)^numaorch_guests_below_locality_target \d+$")

        def reload(value):
            off = len(d.logtext())
            itlib.config_file(tmp, base + "[api]\nguest_metrics = %s\n[libvirt]\nenabled = no\n" % value)
            d.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 20
            while "configuration reloaded" not in d.logtext()[off:] and time.time() < deadline:
                time.sleep(0.05)
            return d.get("/metrics").body.decode()

        text = reload("off")
        self.assertEqual(guest_series(text, "numaorch_guest_locality_ratio"), [])
        self.assertEqual(guest_series(text, "numaorch_guest_memory_bytes"), [])
        self.assertIn("# TYPE numaorch_guest_locality_ratio gauge", text)
        self.assertIn("numaorch_guest_metrics_guests 0\n", text)
        self.assertIn('numaorch_guests{kind="container"} %d\n' % len(guests), text)
        text = reload("all")
        # every guest, but none whose memory was not measured (no ratio it did not read)
        measured = [g["id"] for g in guests if g["locality"] is not None]
        self.assertEqual(guest_series(text, "numaorch_guest_locality_ratio"), sorted(measured))
        self.assertEqual(guest_series(text, "numaorch_guest_info"), sorted(mem))
        promtool_check_metrics(self, text.encode())
        self.assertEqual(d.stop(), 0, d.logtext())

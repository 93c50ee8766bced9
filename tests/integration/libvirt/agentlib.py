"""Running the real numaorchd against a private libvirtd: its
configuration, its REST API on a unix socket, its log and decision log."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import itlib  # noqa: E402

HOOK = os.path.join(itlib.BUILD, "numaorch-libvirt-hook")


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=5):
        super().__init__("localhost", timeout=timeout)
        self.sock_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.sock_path)
        self.sock = s


def api(sock, method, path, body=None, timeout=5):
    """(status, parsed JSON or text) of one request on the unix socket."""
    c = UnixHTTP(sock, timeout)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"} if body is not None else {})
        r = c.getresponse()
        data = r.read().decode()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, data
    finally:
        c.close()


def two_node_sysfs(tmp, node1_memory=False):
    """This machine's two CPUs as two NUMA nodes: node 0 = CPU 0 with all
    the memory; node 1 = CPU 1, memory-less unless NODE1_MEMORY (then the
    agent believes node 1 has memory the kernel does not have, and libvirt
    refuses it for real: "NUMA node 1 is unavailable")."""
    return itlib.fake_topology(tmp, [
        {"cpus": "0", "mem_mib": 16384},
        {"cpus": "1", "mem_mib": 8192 if node1_memory else 0, "free_mib": 8000 if node1_memory else 0},
    ])


def config(tmp, uri, sock, interval=30, extra="", sample=0.3):
    """An agent configuration for the tests: decisions not held back by the
    machine's own load (max_util 100, no CPU floor, vCPUs expected 5%
    busy at start), a long cool-down so only the event under test moves a
    guest, its state and API socket in TMP."""
    text = """[agent]
interval = {interval}
sample = {sample}
log_level = debug
state_dir = {tmp}/state
[policy]
max_util = 100
min_cpu = 0
cooldown = 3600
[api]
socket = {sock}
[libvirt]
uri = {uri}
place_vcpu_load = 5
keepalive_interval = 1
keepalive_count = 2
{extra}
""".format(interval=interval, tmp=tmp, uri=uri, sock=sock, extra=extra, sample=sample)
    p = os.path.join(tmp, "numaorchd.conf")
    os.makedirs(os.path.join(tmp, "state"), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
    return p


class Daemon:
    """numaorchd in the background, its stderr in a file."""

    def __init__(self, tmp, conf, sysfs, sock, scope="/machine"):
        self.tmp = tmp
        self.sock = sock
        self.declog = os.path.join(tmp, "decisions.jsonl")
        self.logpath = os.path.join(tmp, "numaorchd.log")
        # (the configuration names the same private state directory)
        self.args = itlib.numaorchd("--config", conf, "--sysfs", sysfs, "--scope", scope,
                                    "--decision-log", self.declog, state_dir=os.path.join(tmp, "state"))
        self.proc = None
        self.logf = None

    def start(self, timeout=60):
        self.logf = open(self.logpath, "a")
        self.proc = subprocess.Popen(self.args, stdout=self.logf, stderr=subprocess.STDOUT)
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("numaorchd exited %d:\n%s" % (self.proc.returncode, self.log()))
            if os.path.exists(self.sock) and self.first_cycle_done():
                return self
            time.sleep(0.05)
        raise RuntimeError("numaorchd did not come up:\n%s" % self.log())

    def first_cycle_done(self):
        try:
            st, _ = api(self.sock, "GET", "/v1/guests")
            return st == 200
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.logf:
            self.logf.close()
            self.logf = None

    def log(self):
        try:
            with open(self.logpath) as f:
                return f.read()
        except OSError:
            return ""

    def decisions(self):
        """The guests' decision records (not the cycles' own)."""
        if not os.path.exists(self.declog):
            return []
        with open(self.declog) as f:
            return [r for r in (json.loads(l) for l in f if l.strip()) if r.get("decision") != "cycle"]

    def libvirt_status(self):
        """GET /v1/status's "libvirt" object."""
        st, doc = api(self.sock, "GET", "/v1/status")
        if st != 200:
            raise RuntimeError("GET /v1/status: %s %s" % (st, doc))
        return doc["libvirt"]

    def cycles(self):
        st, doc = api(self.sock, "GET", "/v1/status")
        if st != 200:
            raise RuntimeError("GET /v1/status: %s %s" % (st, doc))
        return doc["cycles"]

    def wait_cycles(self, n, timeout=60):
        """Wait until N more cycles have run (however slow the machine)."""
        want = self.cycles() + n
        end = time.time() + timeout
        while self.cycles() < want:
            if time.time() > end:
                raise AssertionError("fewer than %d cycles in %d s:\n%s" % (n, timeout, self.log()[-3000:]))
            time.sleep(0.1)

    def wait_libvirt_state(self, state, timeout=30):
        end = time.time() + timeout
        while True:
            lv = self.libvirt_status()
            if lv["state"] == state or time.time() > end:
                return lv
            time.sleep(0.1)

    def guests(self):
        st, doc = api(self.sock, "GET", "/v1/guests?kind=vm")
        if st != 200:
            raise RuntimeError("GET /v1/guests: %s %s" % (st, doc))
        return doc["guests"] if isinstance(doc, dict) else doc

    def wait_decision(self, pred, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            for d in self.decisions():
                if pred(d):
                    return d
            time.sleep(0.02)
        return None

    def wait_log(self, regex, timeout=30, start=0):
        """The first match of REGEX in the log after offset START."""
        end = time.time() + timeout
        rx = re.compile(regex)
        while time.time() < end:
            m = rx.search(self.log(), start)
            if m:
                return m
            time.sleep(0.02)
        return None


def iso_to_epoch(s):
    """'2026-11-30T09:08:27.102Z' (the decision log) -> seconds."""
    import calendar
    base, frac = s.rstrip("Z").split(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) + int(frac) / 1000.0


class EventWatch:
    """`virsh event --loop --all --timestamp`: libvirt's own record of when
    each event was emitted, independent of the agent."""
    RX = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\+0000: event '(\S+)' for domain '([^']+)': ?(.*)$")

    def __init__(self, lv):
        self.path = lv.path("events.txt")
        self.f = open(self.path, "w")
        self.proc = subprocess.Popen(["virsh", "-c", lv.uri, "event", "--loop", "--all", "--timestamp"],
                                     stdout=self.f, stderr=subprocess.STDOUT)
        time.sleep(0.5)  # registered before anything happens

    def events(self):
        import calendar
        out = []
        with open(self.path) as f:
            for line in f:
                m = self.RX.match(line.strip())
                if m:
                    base, frac = m.group(1).split(".")
                    t = calendar.timegm(time.strptime(base, "%Y-%m-%d %H:%M:%S")) + int(frac) / 1000.0
                    out.append((t, m.group(2), m.group(3), m.group(4)))
        return out

    def when(self, domain, what, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            for t, kind, dom, detail in self.events():
                if kind == "lifecycle" and dom == domain and detail.startswith(what):
                    return t
            time.sleep(0.02)
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.f.close()

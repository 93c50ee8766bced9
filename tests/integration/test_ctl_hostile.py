"""numaorchctl against a hostile or broken server (issue 45): a small HTTP
server on a unix socket answers what a compromised agent or a proxy
might, and the real numaorchctl must neither obey escape sequences in
what it prints, nor page, wait or grow without end, nor send values its
own arithmetic broke."""
import calendar
import json
import os
import resource
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler

import apilib

REASON = None if os.path.exists(apilib.NUMAORCHCTL) else "build/numaorchctl missing (run make)"
TIME = "/usr/bin/time"
TMUX = shutil.which("tmux")
ESC_TITLE = "\033]2;PWNED\007\033[2J"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        u = urllib.parse.urlsplit(self.path)
        srv = self.server
        srv.requests.append((self.command, self.path, body))
        route = srv.routes.get(u.path)
        if route is None:
            r = (404, "application/problem+json", json.dumps(
                {"title": "Not Found", "status": 404, "detail": "no route " + u.path}))
        elif callable(route):
            r = route(self.command, u, body)
            if r is None:  # the route wants the connection left silent
                srv.silent.wait(60)
                return
        else:
            r = route
        status, ctype, out = r[:3]
        sized = len(r) < 4 or r[3]  # (status, type, body, False): no Content-Length, then close
        if isinstance(out, str):
            out = out.encode("utf-8", "surrogateescape")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if sized:
            self.send_header("Content-Length", str(len(out)))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # numaorchctl hanging up (a time-out, a cap) is what some tests want

    def get_request(self):
        sock, _ = super().get_request()
        return sock, ("hostile", 0)


class Hostile:
    """The server: ROUTES maps a path to (status, content type, body) or to
    a function (method, split url, body) -> that, or None to stay silent."""

    def __init__(self, tmp, routes):
        self.sock = os.path.join(tmp, "hostile.sock")
        self.srv = _Server(self.sock, _Handler)
        self.srv.routes = routes
        self.srv.requests = []
        self.srv.silent = threading.Event()
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    @property
    def requests(self):
        return self.srv.requests

    def close(self):
        self.srv.silent.set()
        self.srv.shutdown()
        self.srv.server_close()

    def ctl_rss(self, *args, timeout=60):
        """numaorchctl ARGS under /usr/bin/time (a small parent: a child of
        this process would count its RSS from before exec): (exit status,
        stderr, peak RSS in KiB)."""
        p = subprocess.run([TIME, "-f", "rss %M", apilib.NUMAORCHCTL, "--socket", self.sock] + list(args),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
        err, _, rss = p.stderr.rstrip().rpartition(b"\n")
        return p.returncode, err, int(rss.split()[-1])

    def ctl(self, *args, timeout=60, env=None):
        return subprocess.run([apilib.NUMAORCHCTL, "--socket", self.sock] + list(args), capture_output=True,
                              timeout=timeout, env=env)


def jreply(obj, status=200):
    return (status, "application/json", json.dumps(obj))


@unittest.skipIf(REASON, REASON or "")
class HostileServer(unittest.TestCase):
    def serve(self, routes):
        tmp = tempfile.mkdtemp(prefix="numaorch-hostile-")
        self.addCleanup(shutil.rmtree, tmp, True)
        h = Hostile(tmp, routes)
        self.addCleanup(h.close)
        return h

    def assert_clean(self, out, what):
        """No byte of OUT drives a terminal: valid UTF-8 with no C0 control
        but newline, no DEL, no C1 control."""
        text = out.decode("utf-8")  # raises on invalid UTF-8
        bad = [c for c in text if (ord(c) < 0x20 and c not in "\n") or 0x7f <= ord(c) < 0xa0]
        self.assertEqual(bad, [], "%s: %r" % (what, text[:300]))

    def test_server_text_is_escaped_everywhere(self):
        evil = ESC_TITLE + "\u009b31m\x7f"
        guest = {"id": "g" + evil, "kind": "container", "runtime": "lxc" + evil, "cpus": "0", "mems": "0",
                 "cpu_use": 0.5, "mem_total_bytes": 1 << 20, "locality": 0.5, "cpu_nodes": "0",
                 "mem_bytes_by_node": {"0" + evil: 1 << 21}, "cgroup": "/x" + evil, "name": evil,
                 "policy": {"mode": "auto" + evil, "source": "api" + evil},
                 "last_decision": {"id": 1, "decision": "skip", "reason": evil, "detail": evil}}
        dec = {"id": 1, "time": "2026-12-06T10:00:00Z", "guest": guest["id"], "decision": "move" + evil,
               "reason": evil, "detail": evil, "from": {"nodes": "0"}, "to": {"nodes": "1" + evil}}
        h = self.serve({
            "/v1/status": (500, "text/plain", ESC_TITLE.encode() + b" \xff\xfe raw"),
            "/v1/nodes": (502, "text/html", "<h1>\033[2J\u009b bad gateway</h1>"),
            "/v1/health": (503, "application/problem+json",
                           json.dumps({"title": "Unavailable" + evil, "detail": "down" + evil})),
            "/v1/guests": jreply({"guests": [guest], "next": None}),
            "/v1/guests/x": jreply(guest),
            "/v1/decisions": jreply({"decisions": [dec], "last_id": 1}),
            "/v1/migrations": jreply({"mover": True, "migrations": []}),
            "/metrics": (200, "text/plain; version=0.0.4", "# HELP x \033[2J\nx{guest=\"\033]2;PWNED\007\"} 1\n"),
        })
        for args, code in ((("status",), 1), (("nodes",), 1), (("health",), 7), (("guests",), 0),
                           (("--json", "guests"), 0), (("guest", "x"), 0), (("decisions",), 0),
                           (("--json", "decisions", "--limit", "1"), 0), (("metrics",), 0)):
            p = h.ctl(*args)
            self.assertEqual(p.returncode, code, (args, p.stderr))
            self.assert_clean(p.stdout, " ".join(args) + " (stdout)")
            self.assert_clean(p.stderr, " ".join(args) + " (stderr)")
        p = h.ctl("status")
        self.assertIn(b"HTTP 500: \\x1b]2;PWNED\\x07\\x1b[2J \\xff\\xfe raw", p.stderr)
        # --json keeps the value: the escapes are JSON's own
        p = h.ctl("--json", "guests")
        self.assertEqual(json.loads(p.stdout)["guests"][0]["id"], guest["id"])
        # /metrics keeps its lines
        p = h.ctl("metrics")
        self.assertEqual(p.stdout.count(b"\n"), 2, p.stdout)
        # top: a guests list it cannot finish (no /v1/nodes) and one it can
        p = h.ctl("top", "--once")
        self.assert_clean(p.stderr, "top --once (stderr)")
        h.srv.routes["/v1/status"] = jreply({"version": evil, "mode": evil, "last_cycle": {"seq": 1}})
        h.srv.routes["/v1/nodes"] = jreply({"nodes": [{"id": 0, "nr_cpus": 2, "guests": [guest["id"]]}]})
        p = h.ctl("top", "--once")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assert_clean(p.stdout, "top --once")
        self.assertIn(b"g\\x1b]2;PWNED", p.stdout)

    def test_pages_are_capped(self):
        # A server that always sends "next": guests and guest-policies
        # stop after 1000 pages, as top does, and say why.
        def forever(key):
            def route(method, u, body):
                after = urllib.parse.parse_qs(u.query).get("after", ["0"])[0]
                nxt = str(int(after) + 1)
                return jreply({key: [{"id": nxt, "guest": nxt}], "next": nxt})
            return route
        h = self.serve({"/v1/guests": forever("guests"), "/v1/guest-policies": forever("policies")})
        for cmd, path in (("guests", "/v1/guests"), ("guest-policies", "/v1/guest-policies")):
            del h.requests[:]
            try:
                p = h.ctl(cmd, timeout=60)
            except subprocess.TimeoutExpired:
                self.fail("numaorchctl %s still paging after 60 s (%d requests)" % (cmd, len(h.requests)))
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(b"GET %s: more than 1000 pages" % path.encode(), p.stderr)
            self.assertEqual(len(h.requests), 1000)
            self.assertEqual(p.stdout, b"")

    def test_timeout_is_never_none(self):
        # A server that accepts and never answers: --timeout 0.0001 was
        # 0 ms, which libcurl reads as no time-out (it waited forever).
        h = self.serve({"/v1/health": lambda method, u, body: None})
        t0 = time.monotonic()
        try:
            p = h.ctl("--timeout", "0.0001", "health", timeout=20)
        except subprocess.TimeoutExpired:
            self.fail("numaorchctl --timeout 0.0001 still waiting after 20 s")
        self.assertEqual(p.returncode, 3, p.stderr)
        p = h.ctl("--timeout", "0.5", "health", timeout=20)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(b"timed out", p.stderr)
        print("\n  two silent replies given up in %.2f s" % (time.monotonic() - t0))
        del h.requests[:]
        for bad in ("0", "-1", "0x0", "nan", "inf", "1e9", "86401", "", "5s"):
            p = h.ctl("--timeout", bad, "health", timeout=20)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
            self.assertIn(b"--timeout: must be seconds, more than 0 and at most 86400", p.stderr)
        self.assertEqual(h.requests, [])

    def test_numbers_out_of_range_are_usage_errors(self):
        # advise 1 1e300T sent memory_mib -9223372036854775808, decisions
        # --since 1e300d a date of year -219246472: exit 2, nothing sent.
        h = self.serve({"/v1/placements": jreply({"ok": False, "detail": "no"}),
                        "/v1/decisions": jreply({"decisions": [], "last_id": 0})})
        for args, msg in ((("advise", "1", "1e300T"), b"MEMORY must be at most 1099511627776 MiB (1 EiB)"),
                          (("advise", "1", "1e300"), b"MEMORY must be at most"),
                          (("advise", "1", "2000000T"), b"MEMORY must be at most"),
                          (("advise", "1", "nan"), b"MEMORY must be MiB"),
                          (("advise", "99999999999999999999", "1G"), b"VCPUS must be an integer 1..2147483647"),
                          (("advise", "4294967297", "1G"), b"VCPUS must be an integer"),
                          (("decisions", "--since", "1e300d"), b"AGO must be 0 or more s, m, h or d"),
                          (("decisions", "--since", "100000d"), b"back to 1970 at most"),
                          (("decisions", "--since", "nans"), b"AGO must be"),
                          (("decisions", "--since", "-5m"), b"AGO must be")):
            p = h.ctl(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(msg, p.stderr, args)
        self.assertEqual(h.requests, [])
        # what is in range still goes, converted
        self.assertEqual(h.ctl("advise", "2", "1T").returncode, 8)
        self.assertEqual(json.loads(h.requests[-1][2]), {"vcpus": 2, "memory_mib": 1048576})
        self.assertEqual(h.ctl("decisions", "--since", "1d").returncode, 0)
        since = urllib.parse.parse_qs(urllib.parse.urlsplit(h.requests[-1][1]).query)["since"][0]
        self.assertAlmostEqual(calendar.timegm(time.strptime(since, "%Y-%m-%dT%H:%M:%SZ")),
                               time.time() - 86400, delta=60)

    @unittest.skipUnless(os.access(TIME, os.X_OK), "no /usr/bin/time to read the peak RSS")
    def test_reply_size_is_capped(self):
        # Replies up to 256 MiB were taken, and a JSON reply is parsed
        # into a tree several times its size (an 8 MiB page peaked at
        # 117 MB RSS). JSON replies are capped at 16 MiB, /metrics at 64:
        # refused on their Content-Length, or cut where the count passes.
        g = {"kind": "container", "runtime": "lxc", "cpus": "0-3", "mems": "0", "cpu_use": 0.5,
             "mem_total_bytes": 1 << 20, "locality": 0.5, "policy": {"mode": "auto", "source": "default"}}
        n = (17 << 20) // (len(json.dumps(g)) + 20)
        big = json.dumps({"guests": [dict(g, id="g%07d" % k) for k in range(n)], "next": None}).encode()
        self.assertGreater(len(big), 16 << 20)
        line = b"numaorch_guest_locality_ratio{guest=\"%s\"} 1\n" % (b"m" * 60)
        h = self.serve({"/v1/guests": (200, "application/json", big),
                        "/v1/guest-policies": (200, "application/json", big, False),
                        "/metrics": (200, "text/plain", line * ((65 << 20) // len(line))),
                        "/v1/status": jreply({"version": "x", "mode": "enforce", "last_cycle": {"seq": 1}}),
                        "/v1/nodes": jreply({"nodes": []})})
        for args in (("guests",), ("--json", "guests"), ("guest-policies",), ("metrics",), ("top", "--once")):
            rc, err, rss = h.ctl_rss(*args)
            print("\n  numaorchctl %s: exit %d, peak RSS %d KiB" % (" ".join(args), rc, rss))
            self.assertEqual(rc, 1, (args, err))
            self.assertRegex(err, rb"the reply is larger than (16|64) MiB", args)
            # nothing parsed: what curl, TLS and the C library take
            self.assertLess(rss, 48 << 10, args)
        # /metrics may be larger than JSON: 20 MiB goes through, whole
        h.srv.routes["/metrics"] = (200, "text/plain", line * ((20 << 20) // len(line)))
        p = h.ctl("metrics")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout), len(line) * ((20 << 20) // len(line)))

    @unittest.skipIf(not TMUX, "tmux missing (Debian: tmux; make test-deps installs it)")
    def test_live_top_does_not_grow(self):
        # Live top kept an escaped copy of an id per sort comparison until
        # exit (26 -> 68 MB in 10 s): its RSS must stay flat over refreshes.
        n = 2000
        guests = [{"id": "g\033[1m%05d" % k, "runtime": "lxc\033", "locality": (k % 97) / 97.0, "cpu_use": 0.1,
                   "mem_total_bytes": 1e8, "mem_bytes_by_node": {"0": 1e8}, "cpu_nodes": "0"} for k in range(n)]
        decs = [{"id": k + 1, "guest": g["id"], "time": "2026-12-06T10:00:00Z", "decision": "skip\033",
                 "reason": "r\033", "detail": "d\033"} for k, g in enumerate(guests)]
        pages = [json.dumps({"guests": guests[a:a + 1000], "next": str(a + 1000) if a + 1000 < n else None})
                 for a in range(0, n, 1000)]

        def guests_route(method, u, body):
            a = int(urllib.parse.parse_qs(u.query).get("after", ["0"])[0])
            return (200, "application/json", pages[a // 1000])
        h = self.serve({"/v1/status": jreply({"version": "x", "mode": "enforce", "last_cycle": {"seq": 1}}),
                        "/v1/nodes": jreply({"nodes": [{"id": 0, "nr_cpus": 2}]}),
                        "/v1/guests": guests_route,
                        "/v1/decisions": jreply({"decisions": decs, "last_id": n}),
                        "/v1/migrations": jreply({"mover": True, "migrations": []})})
        sock = "numaorch-hostile-top-%d" % os.getpid()

        def tmux(*a, check=True):
            return subprocess.run([TMUX, "-L", sock, "-f", "/dev/null"] + list(a), capture_output=True, text=True,
                                  timeout=20, check=check, env=dict(os.environ, LC_ALL="C.UTF-8", TERM="xterm"))
        tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "top",
             "exec %s --socket %s top --delay 0.1 --sort name" % (apilib.NUMAORCHCTL, h.sock))
        self.addCleanup(lambda: tmux("kill-server", check=False))
        pid = int(tmux("display-message", "-p", "-t", "top", "#{pane_pid}").stdout)

        def rss_kib():
            with open("/proc/%d/status" % pid) as f:
                return int([l for l in f if l.startswith("VmRSS:")][0].split()[1])

        def refreshes():
            return sum(1 for r in h.requests if r[1] == "/v1/status")
        deadline = time.time() + 30
        while time.time() < deadline and refreshes() < 5:
            time.sleep(0.1)
        first, r0 = rss_kib(), refreshes()
        deadline = time.time() + 60
        while time.time() < deadline and refreshes() < r0 + 30:
            time.sleep(0.2)
        last, r1 = rss_kib(), refreshes()
        print("\n  live top, %d escaped ids: RSS %d KiB after %d refreshes, %d KiB after %d" % (n, first, r0, last, r1))
        self.assertGreaterEqual(r1, r0 + 30, "top refreshed only %d times" % (r1 - r0))
        self.assertLess(last - first, 2048)
        tmux("send-keys", "-t", "top", "q")

    def test_decisions_follow_does_not_grow(self):
        # decisions --follow runs for as long as the operator watches: the
        # escaped copies of what it printed were kept until exit.
        evil = "\033[1m" + "x" * 200

        def decisions(method, u, body):
            since = int(urllib.parse.parse_qs(u.query).get("since", ["0"])[0])
            recs = [{"id": since + k + 1, "time": "2026-12-06T10:00:00Z", "guest": "g" + evil, "decision": "skip",
                     "reason": "r" + evil, "skip_reason": "s" + evil, "detail": "d" + evil,
                     "from": {"nodes": "0" + evil}, "to": {"nodes": "1" + evil}} for k in range(1000)]
            return jreply({"decisions": recs, "last_id": since + 1000})
        h = self.serve({"/v1/decisions": decisions})
        p = subprocess.Popen([apilib.NUMAORCHCTL, "--socket", h.sock, "decisions", "--follow"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)

        def rss_kib():
            with open("/proc/%d/status" % p.pid) as f:
                return int([l for l in f if l.startswith("VmRSS:")][0].split()[1])

        def wait_polls(k):
            deadline = time.time() + 30
            while time.time() < deadline and len(h.requests) < k:
                time.sleep(0.05)
            self.assertGreaterEqual(len(h.requests), k)
        wait_polls(3)
        first = rss_kib()
        wait_polls(9)
        last = rss_kib()
        print("\n  decisions --follow: RSS %d KiB after 3 polls, %d KiB after 9" % (first, last))
        self.assertLess(last - first, 2048)


if __name__ == "__main__":
    unittest.main(verbosity=2)

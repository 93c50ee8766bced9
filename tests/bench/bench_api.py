"""make bench-api: the REST API under load.

A generated 8-node host with 1000 Docker guests (bench_cycle --generate),
the real numaorchd on it with its API on TCP (bearer token) and a unix
socket, a cycle every second (--interval 1) plus a POST /v1/rebalance (dry
run) on the socket every --rebalance-every seconds (0: back to back, the
engine never idle), and wrk on GET /v1/status and GET /v1/guests over TCP.
Reports requests/s and p50/p99 latency; fails if any request errs or if
/v1/status's p99 exceeds 5 ms.

  tests/bench/bench_api.sh [--duration S] [--connections N] [--threads N]
                           [--rebalance-every S]
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(REPO, "build")
NUMAORCHD = os.path.join(BUILD, "numaorchd")
BENCH_CYCLE = os.path.join(BUILD, "bench", "bench_cycle")
TOKEN = "bench-api-token-0123456789abcdef"
P99_TARGET_MS = 5.0


def unix_request(path, method, target, body=None):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    s.connect(path)
    data = body.encode() if body else b""
    head = "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" % (method, target)
    if body:
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
    s.sendall(head.encode() + b"\r\n" + data)
    out = b""
    while True:
        c = s.recv(1 << 20)
        if not c:
            break
        out += c
    s.close()
    status = int(out.split(b" ", 2)[1])
    return status, out.split(b"\r\n\r\n", 1)[1]


def to_ms(v):
    m = re.match(r"([\d.]+)(us|ms|s)$", v)
    n = float(m.group(1))
    return {"us": n / 1000, "ms": n, "s": n * 1000}[m.group(2)]


def parse_wrk(text):
    out = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),
           "requests": int(re.search(r"(\d+) requests in", text).group(1)),
           "non2xx": 0, "socket_errors": 0}
    for pct in ("50", "99"):
        out["p" + pct] = to_ms(re.search(r"^\s+%s%%\s+(\S+)" % pct, text, re.M).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        out["non2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        out["socket_errors"] = sum(int(x) for x in m.groups())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--guests", type=int, default=1000)
    ap.add_argument("--rebalance-every", type=float, default=1.0)
    a = ap.parse_args()

    wrk = shutil.which("wrk")
    if not wrk:
        print("bench-api: wrk is not installed (Debian package wrk; make test-deps installs it)")
        return 2
    for b in (NUMAORCHD, BENCH_CYCLE):
        if not os.path.exists(b):
            print("bench-api: %s missing (run make all build/bench/bench_cycle)" % b)
            return 2

    tmp = tempfile.mkdtemp(prefix="numaorch-bench-api.")
    proc = None
    stop = threading.Event()
    try:
        root = os.path.join(tmp, "host")
        subprocess.run([BENCH_CYCLE, "--generate", root, str(a.guests)], check=True)
        tokf = os.path.join(tmp, "token")
        with open(tokf, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(tokf, 0o600)
        conf = os.path.join(tmp, "numaorchd.conf")
        with open(conf, "w") as f:
            f.write("[agent]\nsample = 0.1\nlog_level = warn\n[libvirt]\nenabled = no\n")
        sock = os.path.join(tmp, "api.sock")
        log = open(os.path.join(tmp, "numaorchd.log"), "w+")
        # --- the daemon: cycles every 2 s on its own
        proc = subprocess.Popen([NUMAORCHD, "--config", conf, "--root", root, "--interval", "1",
                                 "--socket", sock, "--state-dir", os.path.join(tmp, "state"),
                                 "--listen", "127.0.0.1:0", "--token-file", tokf, "--log-level", "info"],
                                stdout=log, stderr=log)
        port = None
        deadline = time.time() + 60
        while time.time() < deadline and not port:
            if proc.poll() is not None:
                log.seek(0)
                print(log.read())
                return 1
            log.seek(0)
            m = re.search(r"\(port (\d+)\)", log.read())
            port = int(m.group(1)) if m else None
            time.sleep(0.05)
        while time.time() < deadline:
            st, body = unix_request(sock, "GET", "/v1/health")
            if st == 200 and json.loads(body)["ready"]:
                break
            time.sleep(0.1)
        st, body = unix_request(sock, "GET", "/v1/status")
        status = json.loads(body)
        cycles0 = status["cycles"]
        print("numaorch API benchmark: %d guests on %d nodes, wrk -t%d -c%d -d%ds over TCP with a bearer token,"
              % (status["guests"]["total"], status["host"]["nodes"], a.threads, a.connections, a.duration))
        print("a cycle every 1 s, and POST /v1/rebalance (dry run) on the unix socket %s"
              % ("back to back" if a.rebalance_every <= 0 else "every %g s" % a.rebalance_every))

        # --- rebalances, back to back, for the whole run
        rebalances = {"n": 0, "errors": 0, "ms": []}

        def rebalance_loop():
            while not stop.is_set():
                t0 = time.time()
                try:
                    st, _ = unix_request(sock, "POST", "/v1/rebalance", '{"dry_run": true}')
                except OSError:
                    st = 0
                rebalances["n"] += 1
                rebalances["ms"].append((time.time() - t0) * 1000)
                if st != 200:
                    rebalances["errors"] += 1
                if a.rebalance_every > 0:
                    stop.wait(max(0.0, a.rebalance_every - (time.time() - t0)))

        t = threading.Thread(target=rebalance_loop)
        t.start()
        results = {}
        for route in ("/v1/status", "/v1/guests"):
            p = subprocess.run([wrk, "-t%d" % a.threads, "-c%d" % a.connections, "-d%ds" % a.duration,
                                "--latency", "-H", "Authorization: Bearer " + TOKEN,
                                "http://127.0.0.1:%d%s" % (port, route)],
                               capture_output=True, text=True, timeout=a.duration + 120)
            if p.returncode != 0:
                print(p.stdout, p.stderr)
                return 1
            results[route] = parse_wrk(p.stdout)
        stop.set()
        t.join()
        st, body = unix_request(sock, "GET", "/v1/status")
        status = json.loads(body)
        st, gl = unix_request(sock, "GET", "/v1/guests")
        size = len(gl)

        print()
        print("%-12s %10s %10s %10s %10s %8s" % ("route", "requests", "req/s", "p50 ms", "p99 ms", "errors"))
        ok = True
        for route, r in results.items():
            errs = r["non2xx"] + r["socket_errors"]
            print("%-12s %10d %10.0f %10.2f %10.2f %8d" % (route, r["requests"], r["rps"], r["p50"], r["p99"], errs))
            ok = ok and errs == 0
        ms = sorted(rebalances["ms"]) or [0]
        print("rebalances: %d in the run (p50 %.0f ms each), %d errors; cycles run: %d; last cycle %.0f ms; "
              "GET /v1/guests body %d KiB"
              % (rebalances["n"], ms[len(ms) // 2], rebalances["errors"], status["cycles"] - cycles0,
                 status["last_cycle"]["duration_s"] * 1000, size // 1024))
        p99 = results["/v1/status"]["p99"]
        if p99 > P99_TARGET_MS:
            print("FAIL: /v1/status p99 %.2f ms > %.1f ms" % (p99, P99_TARGET_MS))
            ok = False
        if rebalances["errors"]:
            ok = False
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1
    finally:
        stop.set()
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, True)


if __name__ == "__main__":
    sys.exit(main())

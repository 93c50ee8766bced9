#!/usr/bin/env python3
"""What a per-guest policy change costs as a client sees it: the real
numaorchd on a fixture host with N stored policies (1k, 10k, 65k), 90
sequential PUT /v1/guests/ID/policy over the unix socket (within the
per-client burst of 100 changes the API allows: more would measure the
rate limit's 429s), and the daemon's RSS (VmRSS) after start and after
the PUTs.

    python3 tests/bench/bench_gpolstore_api.py [NUMAORCHD]

Run it under the shared lock (flock /tmp/numaorch-heavy.lock ...): the
timings are fsync- and CPU-bound.
"""
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import apilib  # noqa: E402
import itlib   # noqa: E402

BIN = sys.argv[1] if len(sys.argv) > 1 else itlib.NUMAORCHD
PUTS = 90


class D(apilib.Daemon):
    def args(self):
        return [BIN] + super().args()[1:]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    return -1


def main():
    print("numaorchd: %s" % BIN)
    print("%8s %10s %10s %10s %10s %12s %12s" % ("records", "put mean", "p50", "p99", "max", "RSS start",
                                                "RSS after"))
    for n in (1000, 10000, 65000):
        tmp = itlib.mktemp()
        try:
            root = apilib.compose_root(tmp)
            d = D(tmp, root)
            os.makedirs(d.state, mode=0o750)
            with open(os.path.join(d.state, "guest-policies.json"), "w") as f:
                f.write('{"format": "numaorch-guest-policies", "version": 1, "guests": {')
                f.write(", ".join('"docker-%060d": {"mode": "pinned", "nodes": "1", '
                                  '"set": "2026-12-01T00:00:00Z"}' % i for i in range(n)))
                f.write("}}\n")
            os.chmod(os.path.join(d.state, "guest-policies.json"), 0o640)
            d.start()
            r0 = rss_kib(d.proc.pid)
            t = []
            for i in range(PUTS):
                gid = "docker-%060d" % ((i * 7919) % n)
                body = {"mode": "ignore"} if i % 2 else {"mode": "pinned", "nodes": "0"}
                body["provision"] = True  # ids of guests not on the fixture host
                t0 = time.perf_counter()
                r = d.request("PUT", "/v1/guests/%s/policy" % gid, body)
                t.append((time.perf_counter() - t0) * 1e3)
                if r.status != 200:
                    raise SystemExit("PUT %s: %r" % (gid, r))
            r1 = rss_kib(d.proc.pid)
            if d.stop() != 0:
                raise SystemExit("numaorchd did not stop cleanly")
            t.sort()
            print("%8d %8.2fms %8.2fms %8.2fms %8.2fms %9d KiB %9d KiB" % (
                n, statistics.mean(t), t[len(t) // 2], t[len(t) * 99 // 100], t[-1], r0, r1))
        finally:
            shutil.rmtree(tmp, True)


if __name__ == "__main__":
    main()

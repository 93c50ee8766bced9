#!/usr/bin/env python3
"""Benchmark numaorchd's libvirt source on a private libvirtd (needs root):

  1. start event -> placement applied: N starts (default 10) of a 1-vCPU
     domain pinned (metadata) alternately to node 0 and node 1, so every
     start is a real move; libvirt's own event time (virsh event
     --timestamp) against the decision record's time, which is written
     after the last libvirt call returned. Also the agent's own figure.
  2. the agent's CPU per cycle with D (default 10) running domains: its
     utime+stime over a number of 1 s cycles, and the cycle durations it
     logs.

    sudo python3 tests/integration/libvirt/bench.py [--starts 10] [--domains 10]
"""
import argparse
import os
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lvenv  # noqa: E402
from agentlib import HOOK, Daemon, EventWatch, config, iso_to_epoch, two_node_sysfs  # noqa: E402


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--domains", type=int, default=10)
    ap.add_argument("--cycles", type=int, default=30)
    a = ap.parse_args()
    why = lvenv.missing_prerequisite()
    if why:
        print("bench: skipped: " + why)
        return 0
    tmp = tempfile.mkdtemp(prefix="numaorch-lvbench-")
    os.chmod(tmp, 0o755)
    sock = os.path.join(tmp, "api.sock")
    lv = lvenv.PrivateLibvirt(hook_binary=HOOK, agent_socket=sock)
    d = ev = None
    try:
        lv.setup()
        sysfs = two_node_sysfs(tmp)
        d = Daemon(tmp, config(tmp, lv.uri, sock, interval=30), sysfs, sock).start()
        ev = EventWatch(lv)
        lat, own = [], []
        for i in range(a.starts):
            name = "nt-bench-%d" % i
            uuid = lv.define(name, policy={"mode": "pinned", "nodes": str(i % 2)})
            lv.start(name)
            rec = d.wait_decision(lambda r: r["guest"] == "vm-" + uuid and r["reason"] == "place", timeout=10)
            t_ev = ev.when(name, "Started")
            if not rec or rec["decision"] != "moved" or t_ev is None:
                print("start %d: no placement (%s)" % (i, rec))
                continue
            lat.append(iso_to_epoch(rec["time"]) - t_ev)
            m = re.search(r"([\d.]+) s after its start was seen", rec["message"])
            if m:
                own.append(float(m.group(1)))
            lv.destroy(name, undefine=True)
        if lat:
            print("start event -> placement applied, %d starts: median %.3f s, min %.3f, max %.3f "
                  "(agent's own view, event seen -> applied: median %.3f s)"
                  % (len(lat), statistics.median(lat), min(lat), max(lat),
                     statistics.median(own) if own else float("nan")))
        d.stop()

        names = []
        for i in range(a.domains):
            n = "nt-load-%d" % i
            lv.define(n, vcpus=1 + i % 2)
            lv.start(n)
            names.append(n)
        tmp2 = tempfile.mkdtemp(prefix="numaorch-lvbench2-", dir=tmp)
        d = Daemon(tmp2, config(tmp2, lv.uri, sock, interval=1), sysfs, sock).start()
        time.sleep(3)  # placement settled, counters primed
        cpu0, t0 = proc_cpu(d.proc.pid), time.time()
        off = len(d.log())
        time.sleep(a.cycles)
        cpu1, t1 = proc_cpu(d.proc.pid), time.time()
        durs = [float(x) for x in re.findall(r"cycle \d+: \d+ guests, \d+ plan items, ([\d.]+) ms", d.log()[off:])]
        ncyc = len(durs)
        guests = len(d.guests())
        print("%d running domains (%d guests seen): %d cycles in %.1f s, agent CPU %.2f ms per cycle "
              "(%.2f%% of a CPU at interval 1 s); cycle wall time median %.2f ms"
              % (a.domains, guests, ncyc, t1 - t0, (cpu1 - cpu0) * 1000 / max(1, ncyc),
                 (cpu1 - cpu0) * 100 / (t1 - t0), statistics.median(durs) if durs else float("nan")))
        return 0
    finally:
        if ev:
            ev.stop()
        if d:
            d.stop()
        lv.cleanup()
        os.system("rm -rf '%s'" % tmp)


if __name__ == "__main__":
    sys.exit(main())

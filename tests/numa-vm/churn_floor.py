#!/usr/bin/env python3
"""churn_floor.py DIR — one line per churn run kept by churn_floor.sh
(DIR/raw.P.I/results.txt), analysed as numavm.py's report does: its t90,
the floor (its slowest late guest's first sample: once that guest had
touched its memory in runs before session 38, from its start since),
the t90 counting only samples once each guest's memory was all touched
("ready t90", the figure runs before session 38 gave), each late guest's
t90 and how long its touch took (its "ready" event less its "start"),
how many late guests were local at their first sample (t90 = their own
floor), memory moved and true locality; and, for
numaorchd's runs, each late guest's start-binding cpuset.mems write: its
seconds ("N.NN s in the write" of its "place" decision record) and the
threads its cgroup held when the placement was decided (0: it was
decided before the workload's process had joined the cgroup)."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numavm  # noqa: E402


def fmt(v):
    return numavm.fmt(v, "%.1f")


def main(d):
    for res in sorted(glob.glob(os.path.join(d, "raw.*.*", "results.txt"))):
        p, i = os.path.basename(os.path.dirname(res))[len("raw."):].rsplit(".", 1)
        text = open(res).read()
        raw = numavm.parse_results(text)
        h = raw["header"]
        r = numavm.analyse(text, {"name": h["scenario"], "duration": float(h["duration"])})
        late = sorted(g for g, gh in raw["guests"].items() if float(gh.get("start") or 0) > 0)
        touch = r["touch_s"]
        ids = numavm.guest_id_map(raw)
        writes = {}
        for dd in raw["decisions"]:
            m = dd.get("reason") == "place" and re.search(r"([0-9.]+) s in the write", dd.get("message", ""))
            g = m and numavm.decision_guest(ids, dd)
            if g in late:
                writes[g] = "%s(%s)" % (m.group(1), dd.get("threads"))
        local_first = sum(1 for g in late if r["t90"].get(g) is not None and
                          abs(r["t90"][g] - r["t90_floors"].get(g, -1)) < 0.05)
        print("%-10s %s t90 %5s floor %4s (%s)  ready t90 %5s  late %s: t90 %s  touch %s  "
              "local at first sample %d of %d  moved %6.1f MiB  true loc last min %.3f%s" % (
                  p, i, fmt(r["t90_all"]), fmt(r["t90_floor"]), r["t90_floor_guest"],
                  fmt(r.get("t90_ready_all")), "/".join(late),
                  "/".join(fmt(r["t90"].get(g)) for g in late), "/".join(fmt(touch.get(g)) for g in late),
                  local_first, len(late), r["moved_mib"], r["wloc_mean_last_min"] or 0.0,
                  "  write s(threads) " + "/".join(writes.get(g, "-") for g in late) if writes else ""))


if __name__ == "__main__":
    main(sys.argv[1])

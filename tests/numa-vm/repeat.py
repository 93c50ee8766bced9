#!/usr/bin/env python3
"""repeat.py DIR — one line per run kept by repeat.sh (DIR/P.I.json, the
metrics `numavm.py run` printed), in the report's terms: t90 and true
locality (memory on each busy thread's own node) at the end, over the
last minute and of the least local guest; memory moved and needed; the
placer's CPU seconds; busy threads per node at the end. Then each
placer's median true end and t90 over its runs: a scenario whose single
rows vary (bigguest's kernel rows: 83 % or 93 % by whether its scheduler
kept the big guest's two threads on one node) is read over several."""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numavm import fmt, fmt_s  # noqa: E402


def main(d):
    runs = {}
    for path in glob.glob(os.path.join(d, "*.json")):
        p, i = re.match(r"(.+)\.(\d+)\.json$", os.path.basename(path)).groups()
        try:
            with open(path) as f:
                m = json.load(f)
        except ValueError:
            m = None
        runs.setdefault(p, []).append((int(i), m))
    print("%-44s %6s %8s %8s %8s %8s %8s %6s %s" % ("run", "t90 s", "true end", "last min", "true min",
                                                    "moved", "needed", "CPU s", "threads/node"))
    for p in sorted(runs):
        for i, m in sorted(runs[p], key=lambda x: x[0]):
            if not m:
                print("%-44s failed: see %s.%d.err" % ("%s.%d" % (p, i), p, i))
                continue
            print("%-44s %6s %7.1f%% %7.1f%% %7.1f%% %8.1f %8.1f %6s %s" % (
                "%s.%d" % (p, i), fmt_s(m["t90_all"]), 100 * m["wloc_end"], 100 * m["wloc_mean_last_min"],
                100 * m["wloc_min_end"], m["moved_mib"], m["needed_mib"], fmt(m["placer_cpu_s"], "%.1f", "-"),
                "/".join(str(x) for x in m["busy_threads_per_node_end"])))
    print()
    for p in sorted(runs):
        ok = [m for _, m in sorted(runs[p], key=lambda x: x[0]) if m]
        if not ok:
            continue
        t90 = [m["t90_all"] for m in ok]
        reached = sorted(t for t in t90 if t is not None)
        print("%-44s %d runs: median true end %.1f%% (%s), t90 %s" % (
            p, len(ok), 100 * statistics.median(m["wloc_end"] for m in ok),
            ", ".join("%.1f" % (100 * m["wloc_end"]) for m in ok),
            "never in every run" if not reached else "median %s over %d reached (%s)" % (
                fmt(statistics.median(reached), "%.1f"), len(reached), ", ".join("%.1f" % t for t in reached))))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))

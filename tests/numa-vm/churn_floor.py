#!/usr/bin/env python3
"""churn_floor.py DIR — one line per churn run kept by churn_floor.sh:
its t90, the floor (the first sample once the last late guest had touched
its memory), each late guest's t90 and how long its touch took (its
"ready" event less its "start"), memory moved and true locality."""
import glob
import json
import os
import re
import sys


def main(d):
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        p, i = os.path.basename(f)[:-5].rsplit(".", 1)
        r = json.load(open(f))
        st, rd = {}, {}
        for line in open(os.path.join(d, "raw.%s.%s" % (p, i), "results.txt")):
            m = re.match(r"E t=([\d.]+) what=(start|ready) g=([cde])\b", line)
            if m:
                (st if m.group(2) == "start" else rd)[m.group(3)] = float(m.group(1))
        touch = {g: "%.1f" % (rd[g] - st[g]) for g in "cde" if g in rd and g in st}
        print("%-10s %s t90 %4s floor %4s (%s)  late t90 c/d/e %s  touch c/d/e %s  moved %6.1f MiB  "
              "true loc last min %.3f" % (
                  p, i, r["t90_all"] if r["t90_all"] is not None else "never", r.get("t90_floor"),
                  r.get("t90_floor_guest"), "/".join("never" if r["t90"].get(g) is None else str(r["t90"][g]) for g in "cde"),
                  "/".join(touch.get(g, "-") for g in "cde"), r["moved_mib"], r["wloc_mean_last_min"]))


if __name__ == "__main__":
    main(sys.argv[1])

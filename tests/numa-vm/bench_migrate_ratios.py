#!/usr/bin/env python3
"""The issue-13 ratios of make bench-migrate / numavm.py script bench_migrate_*
output: for each block (a `P ...` line starts one), the default mover (2
workers on the target's CPUs) and the best mover against the best raw
figure of the same block (raw or raw_last), with the default mover's
guest gaps p99/max and its guests' AnonHugePages before/after, per page
kind (4 KiB / THP, idle / busy).

    tests/numa-vm/bench_migrate_ratios.py tests/numa-vm/results/bench-migrate/s13-ab1.txt
"""
import re
import sys


def fields(line):
    return dict(re.findall(r'(\w+)(?:=|<=)(\S+)', line))


def blocks(path):
    out, cur = [], None
    for line in open(path):
        line = line.strip()
        if line.startswith("P "):
            cur = {"hdr": line[2:], "rows": []}
            out.append(cur)
        elif line.startswith("R "):
            if cur is None:
                cur = {"hdr": "", "rows": []}
                out.append(cur)
            cur["rows"].append(fields(line))
    return out


def main(paths):
    for path in paths:
        print("==", path)
        for b in blocks(path):
            kinds = []
            for r in b["rows"]:
                if r["pages"] not in kinds:
                    kinds.append(r["pages"])
            for kind in kinds:
                rows = [r for r in b["rows"] if r["pages"] == kind]
                raw = [float(r["mibs"]) for r in rows if r["case"] in ("raw", "raw_last")]
                movers = [r for r in rows if r["case"] == "mover"]
                if not raw or not movers:
                    continue
                best = max(raw)
                s = "%-18s %-9s best_raw=%6.1f" % (b["hdr"], kind, best)
                for r in movers:
                    if r["workers"] == "2" and r["on"] == "target":
                        s += " default=%6.1f (%3.0f %%) gap p99/max=%s/%s thp=%s/%s" % (
                            float(r["mibs"]), 100 * float(r["mibs"]) / best, r["guest_gap_p99_ms"],
                            r["guest_gap_max_ms"], r["thp_mib_before"], r["thp_mib_after"])
                bm = max(movers, key=lambda r: float(r["mibs"]))
                s += " best_mover=%6.1f (%3.0f %%, %s workers on %s)" % (
                    float(bm["mibs"]), 100 * float(bm["mibs"]) / best, bm["workers"], bm["on"])
                print(s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

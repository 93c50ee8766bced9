#!/usr/bin/env python3
"""The issue-13 ratios of make bench-migrate / numavm.py script bench_migrate_*
output: for each block (a `P ...` line starts one), the default mover (2
workers on the target's CPUs) and the best mover against the best raw
figure of the same block (raw or raw_last), with the default mover's
guest gaps p99/max and its guests' AnonHugePages before/after, per page
kind (4 KiB / THP, idle / busy).

Where the block has migbench --pairs lines (case=raw_pair and
case=mover_pair, pair=K), a second line per kind: over the N complete
pairs, the median of the pairs' own ratios (mover_K / raw_K) with their
min-max, and the ratio of the medians (median mover / median raw).
Files without pairs print as before.

    tests/numa-vm/bench_migrate_ratios.py tests/numa-vm/results/bench-migrate/s34-final.txt
"""
import re
import statistics
import sys


def fields(line):
    return dict(re.findall(r'(\w+)(?:=|<=)(\S+)', line))


def blocks(path):
    out, cur = [], None
    with open(path) as f:
        lines = f.read().splitlines()
    for line in lines:
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


def pair_summary(rows):
    """ROWS of one page kind: None without pairs, else n, the sorted
    ratios mover_K / raw_K of the complete pairs (a pair missing either
    side is left out: a cut-short run), their median, the medians of raw
    and of the mover and the ratio of those medians."""
    raw, mover = {}, {}
    for r in rows:
        if r.get("case") == "raw_pair":
            raw[r["pair"]] = float(r["mibs"])
        elif r.get("case") == "mover_pair":
            mover[r["pair"]] = float(r["mibs"])
    keys = sorted(set(raw) & set(mover), key=int)
    if not keys:
        return None
    ratios = sorted(mover[k] / raw[k] for k in keys)
    med_raw = statistics.median(raw[k] for k in keys)
    med_mover = statistics.median(mover[k] for k in keys)
    return {"n": len(keys), "ratios": ratios, "median": statistics.median(ratios),
            "median_raw": med_raw, "median_mover": med_mover, "of_medians": med_mover / med_raw}


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
                if raw and movers:
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
                p = pair_summary(rows)
                if p:
                    print("%-18s %-9s pairs n=%d: default/raw median %3.0f %% (min-max %.0f-%.0f %%),"
                          " median default/median raw %.1f/%.1f (%3.0f %%), >= 80 %% in %d of %d" % (
                              b["hdr"], kind, p["n"], 100 * p["median"], 100 * p["ratios"][0],
                              100 * p["ratios"][-1], p["median_mover"], p["median_raw"],
                              100 * p["of_medians"], sum(x >= 0.8 for x in p["ratios"]), p["n"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

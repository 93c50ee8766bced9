#!/usr/bin/env python3
"""One line per dry-run --once of numavm.py script diag_misplaced_start's
output: the arrangement of the guests' threads, the rate window, the
plan's moves (guest->node), the MiB they migrate, the guests' cpu_demand
and each node's busy CPUs as the plan saw them; the agent's own CPU time
left out of the nodes' load (its S lines) indented below.

    tests/numa-vm/misplaced_start_summary.py OUTPUT.txt
"""
import sys, json
arr = w = None
for line in open(sys.argv[1]):
    if line.startswith("R arr="):
        p = line[6:].split(" w=")
        arr, w = p[0], p[1].strip()
    elif line.startswith("J {"):
        d = json.loads(line[2:])
        items = sorted(d["plan"]["items"], key=lambda it: it["guest"])
        mig = sum(it.get("migrate_bytes", 0) for it in items if it["kind"] == "move") / 1048576
        mv = " ".join("%s->%s" % (it["guest"][-1], it.get("to_nodes", "-")) for it in items if it["kind"] == "move")
        dem = " ".join("%.2f" % it["cpu_demand"] for it in items if it["kind"] == "move")
        busy = " ".join("%.3f" % (n["busy"] * n["nr_cpus"]) for n in d["snapshot"]["nodes"])
        print("%-9s w=%-5s moves=%d migrate=%6.1f MiB  %s  cpu_demand %s  node_busy_cpus %s" % (arr, w, sum(1 for it in items if it["kind"] == "move"), mig, mv, dem, busy))
    elif line.startswith("S "):
        print("    " + line[2:].strip())

#!/usr/bin/env python3
"""make demo — watch numaorchd do its job on a machine with one NUMA node.

Boots the testbed VM (4 NUMA nodes under QEMU/TCG, see README.md here),
starts three busy containers whose CPUs their runtime put on one node and
whose memory sits on another (scenarios/demo.scn), runs numaorchd with the
packaged configuration (deploy/numaorchd.conf), and shows second by second,
streamed out of the VM, each guest's nodes, its true locality and its
memory per node. The VM measures those itself, independently of the agent:
threads' CPUs from /proc/TID/stat, memory per node from memory.numa_stat;
locality is the testbed's wloc (the mean over busy threads of the share of
the guest's memory on the thread's node). Then a summary (time to local,
memory moved, the agent's decisions with their reasons) and a PNG timeline
in build/demo/.

    tests/numa-vm/demo.py [--png PATH]
    tests/numa-vm/demo.py --replay build/demo/results.txt   # the view and summary of a saved run

Needs what make check-numa needs (QEMU, the downloaded kernel) and gnuplot
for the PNG; skips with a reason where the testbed cannot run.
"""
import argparse
import os
import shutil
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numavm as nv  # noqa: E402

OUT = os.path.join(nv.BUILD, "demo")
SCENARIO = "demo"
# Every guest must start under this true locality: the demo is a misplacement.
MISPLACED = 0.5


def node_of_cpus(r):
    m = {}
    for n, cpus in r["nodes"].items():
        for c in nv.parse_cpulist(cpus):
            m[c] = n
    return m


def nodes_text(nodes):
    return ",".join(str(n) for n in sorted(nodes)) or "-"


def sample_view(r, s, cpu_node):
    """(threads' nodes, cpuset nodes, wloc) of one G sample."""
    busy = [n for n, b in s["thr"] if b >= 50 and n >= 0] or [n for n, b in s["thr"] if n >= 0]
    cs = {cpu_node[c] for c in nv.parse_cpulist(s["cpus"]) if c in cpu_node}
    return set(busy), cs, nv.locality(s)[1]


def complete_times(r, nguests):
    """Sample times for which every guest's line has arrived."""
    count = {}
    for s in r["samples"]:
        count[s["t"]] = count.get(s["t"], 0) + 1
    return sorted(t for t, n in count.items() if n >= nguests)


def migrated_kib(r, upto):
    """Memory that arrived on a node, per guest, summed up to time UPTO
    (what analyse() calls inflow): a lower bound of what moved."""
    by_g = {}
    for s in r["samples"]:
        if s["t"] <= upto:
            by_g.setdefault(s["g"], []).append(s)
    total = 0
    for ss in by_g.values():
        for a, b in zip(ss, ss[1:]):
            total += sum(max(0, y - x) for x, y in zip(a["mem"], b["mem"]))
    return total


def all_local_at(r, names, times):
    for t in times:
        ss = [s for s in r["samples"] if s["t"] == t]
        ws = [nv.locality(s)[1] for s in ss]
        if len(ss) == len(names) and all(w is not None and w >= nv.TARGET for w in ws):
            return t
    return None


def misplaced_at_start(r, names, times):
    """None when every guest's true locality at the first complete sample
    (t = 0, before numaorchd could act) is under MISPLACED, else a line
    saying which guest was local already: a demo that starts local shows
    nothing, and must say so rather than look like a success."""
    if not times:
        return "no complete sample at t = 0"
    local = []
    for n in names:
        s = next((x for x in r["samples"] if x["g"] == n and x["t"] == times[0]), None)
        w = nv.locality(s)[1] if s else None
        if w is None or w >= MISPLACED:
            local.append("%s %s" % (n, "not measured" if w is None else "%.0f%% local" % (100 * w)))
    return ("guests already local at t = %.0f s: %s" % (times[0], ", ".join(local))) if local else None


def render(r, t, names, cpu_node, local_at, duration):
    nn = len(r["nodes"])
    lines = ["numaorch demo: t=%3.0f s of %.0f   %d NUMA nodes x %d CPUs, numaorchd + numaorchd.conf"
             % (t, duration, nn, len(nv.parse_cpulist(r["nodes"][0])))]
    lines.append("%-8s %-10s %-8s %6s   %s" % ("", "", "", "", "memory per node (MiB)"))
    lines.append("%-8s %-10s %-8s %6s  " % ("guest", "threads on", "cpuset", "local") +
                 "".join("%7s" % ("node %d" % n if nn <= 6 else str(n)) for n in range(nn)))
    for g in names:
        s = next((x for x in r["samples"] if x["t"] == t and x["g"] == g), None)
        if not s:
            continue
        thr, cs, w = sample_view(r, s, cpu_node)
        lines.append("%-8s %-10s %-8s %6s  " % (g[:8], "node " + nodes_text(thr), nodes_text(cs),
                                               "-" if w is None else "%.0f%%" % (w * 100)) +
                     "".join("%7d" % (m // 1024) for m in s["mem"]))
    mig = migrated_kib(r, t) // 1024
    if local_at is not None and local_at <= t:
        lines.append("all local (>= 90%%) since t=%.0f s; memory moved so far %d MiB" % (local_at, mig))
    else:
        lines.append("not all local yet (target 90%%); memory moved so far %d MiB" % mig)
    return [l[:80] for l in lines]


class Screen:
    """Redraw a block in place on a terminal; elsewhere print one every
    EVERY seconds of VM time (and the last)."""

    def __init__(self, tty, every=5.0):
        self.tty, self.every, self.height, self.last_t = tty, every, 0, None

    def show(self, lines, t, force=False):
        if self.tty:
            if self.height:
                sys.stdout.write("\033[%dA" % self.height)
            sys.stdout.write("".join(l + "\033[K\n" for l in lines))
            self.height = len(lines)
        elif force or self.last_t is None or t >= self.last_t + self.every:
            sys.stdout.write("\n".join(lines) + "\n\n")
            self.last_t = t
        sys.stdout.flush()

    def say(self, text):
        if self.tty and self.height:
            self.height = 0
        print(text, flush=True)


def decision_rows(r, t_real0):
    idmap = nv.guest_id_map(r)
    rows = []
    for d in r["decisions"]:
        gid = d.get("guest", "")
        name = idmap.get(gid.split("-", 1)[1] if "-" in gid else gid, gid)
        tt = time.strptime(d["time"][:19], "%Y-%m-%dT%H:%M:%S")
        t = nv.time_gm(tt) + float("0." + d["time"][20:23]) - t_real0
        rows.append((t, name, d))
    return rows


def plot(r, names, t_real0, png):
    if not nv.have_cmd("gnuplot"):
        return "gnuplot missing (Debian: gnuplot-nox): no PNG"
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    os.makedirs(OUT, exist_ok=True)
    dat = os.path.join(OUT, "timeline.dat")
    times = sorted({s["t"] for s in r["samples"]})
    with open(dat, "w") as f:
        for t in times:
            row = ["%.2f" % t]
            for g in names:
                s = next((x for x in r["samples"] if x["t"] == t and x["g"] == g), None)
                w = nv.locality(s)[1] if s else None
                row.append("NaN" if w is None else "%.1f" % (w * 100))
            row.append("%.1f" % (migrated_kib(r, t) / 1024))
            f.write(" ".join(row) + "\n")
    moves = [(t, n, d) for t, n, d in decision_rows(r, t_real0) if d.get("decision") == "moved"]
    arrows = ["set arrow from %.2f, graph 0 to %.2f, graph 1 nohead dt 3 lc rgb 'gray'" % (t, t) for t, _, _ in moves]
    labels = ["set label '%s' at %.2f, graph 0.97 rotate by 90 right font ',8'" % (n, t + 0.4) for t, n, _ in moves]
    plots = ["'%s' using 1:%d with lines lw 2 title '%s'" % (dat, i + 2, g) for i, g in enumerate(names)]
    script = "\n".join([
        "set terminal pngcairo size 900,600 font 'sans,10'" if nv.pngcairo() else "set terminal png size 900,600",
        "set output '%s'" % png,
        "set multiplot layout 2,1 title 'make demo: numaorchd on %d NUMA nodes (QEMU TCG), scenario %s'"
        % (len(r["nodes"]), r["header"].get("scenario", SCENARIO)),
        "set xlabel 'seconds since numaorchd started'", "set grid",
        "set ylabel 'true locality (%)'", "set yrange [0:105]", "set key bottom right",
        "set arrow from graph 0, first 90 to graph 1, first 90 nohead dt 2 lc rgb 'red'",
    ] + arrows + labels + [
        "plot " + ", ".join(plots),
        "unset arrow", "unset label", "set ylabel 'memory migrated (MiB)'", "set yrange [0:*]", "set key top left",
        "plot '%s' using 1:%d with steps lw 2 title 'arrived on another node (all guests)'" % (dat, len(names) + 2),
        "unset multiplot", ""])
    p = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    return None if p.returncode == 0 else "gnuplot failed: " + p.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--png", default=os.path.join(OUT, "demo-timeline.png"))
    ap.add_argument("--replay", metavar="RESULTS", help="show a saved run's results.txt, boot nothing")
    a = ap.parse_args()
    if a.replay:
        return replay(a.replay, a.png)
    wall0 = time.time()
    try:
        nv.prepare(need_gnuplot=True)
    except nv.Skip as e:
        print("SKIP: make demo: %s" % e)
        return 0
    scn = nv.load_scenario(SCENARIO)
    os.makedirs(OUT, exist_ok=True)
    results, console = os.path.join(OUT, "results.txt"), os.path.join(OUT, "console.log")
    for p in (results, console):
        if os.path.exists(p):
            os.unlink(p)
    append = "numavm.mode=run numavm.scenario=%s numavm.placer=numaorchd" % SCENARIO
    cmd = nv.qemu_cmd(scn, append, "file:" + console, results)
    with open(os.path.join(OUT, "command.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    names = [g.split()[0] for g in scn["guests"]]
    scr = Screen(sys.stdout.isatty())
    scr.say("booting the testbed: %d NUMA nodes x %d CPUs under QEMU (TCG), Debian's kernel; "
            "then %d busy containers" % (scn["nodes"], scn["cpus_per_node"], len(names)))
    q = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + scn["duration"] + 300
    shown, said_up, t_boot, local_at, bad_start = None, False, None, None, None
    text = ""
    while True:
        done = q.poll() is not None
        if os.path.exists(results):
            text = read_results(results, done)
        r = nv.parse_results(text)
        if r["header"] and not said_up:
            said_up = True
        if not t_boot and any(e.get("what") == "placer" for e in r["events"]):
            t_boot = time.time() - wall0
            scr.say("VM up, containers ready after %.0f s; numaorchd starts now (t = 0), with "
                    "deploy/numaorchd.conf" % t_boot)
        times = complete_times(r, len(names))
        if times and shown is None:
            bad_start = misplaced_at_start(r, names, times)
            if bad_start:
                scr.say("make demo: NOT MISPLACED: %s; the demo shows nothing (demo.scn must bind the "
                        "guests' memory away from their CPUs)" % bad_start)
        if times and times[-1] != shown and r["nodes"]:
            cpu_node = node_of_cpus(r)
            local_at = all_local_at(r, names, times)
            shown = times[-1]
            scr.show(render(r, shown, names, cpu_node, local_at, scn["duration"]), shown)
        if done:
            break
        if time.time() > deadline:
            q.kill()
            q.wait()
            print("make demo: the VM did not finish in time (see %s)" % console)
            return 1
        time.sleep(0.25)
    out = q.stdout.read().decode(errors="replace")
    if q.returncode != 0 or "END rc=" not in text:
        tail = open(console, errors="replace").read()[-2000:] if os.path.exists(console) else ""
        print("make demo: the VM run failed (qemu exit %s)\n%s\n%s" % (q.returncode, out[-1000:], tail))
        return 1
    rc = summary(text, scn, names, scr, a.png, wall0, t_boot)
    if bad_start:
        print("make demo: FAILED: the run did not start misplaced (%s)" % bad_start)
        return 1
    return rc


def read_results(path, finished):
    """The runner's lines so far. QEMU writes the serial port as the guest
    prints, so until the VM has FINISHED the last line may be half written
    (a "G" line cut before its thr=): keep whole lines only."""
    with open(path, errors="replace") as f:
        text = f.read()
    return text if finished else text[:text.rfind("\n") + 1]


def summary(text, scn, names, scr, png, wall0, t_boot):
    r = nv.parse_results(text)
    res = nv.analyse(text, scn)
    times = complete_times(r, len(names))
    if times:
        scr.show(render(r, times[-1], names, node_of_cpus(r), all_local_at(r, names, times), scn["duration"]),
                 times[-1], force=True)
    t_real0 = next(float(e["real"]) for e in r["events"] if e.get("what") == "placer")
    local_at = all_local_at(r, names, times)
    wall = time.time() - wall0
    print()
    print("summary")
    print("  time to local: %s" % ("%.0f s after numaorchd started" % local_at if local_at is not None
                                    else "not within the run"))
    print("    (every guest >= 90% of its memory on its busy threads' nodes, measured in the VM;")
    print("    mean %.0f%% at t = 0)" % (100 * (res["series"][0][3] if res["series"] else 0)))
    print("  memory moved: %.0f MiB (the end state needed %.0f MiB moved)" % (res["moved_mib"], res["needed_mib"]))
    print("  decisions (numaorchd's decision log):")
    for t, name, d in decision_rows(r, t_real0):
        frm, to = d.get("from", {}), d.get("to", {})
        why = d.get("skip_reason") or d.get("reason") or ""
        print(("    t=%4.1fs %s %s (%s): nodes %s -> %s, mems %s -> %s, %.0f MiB"
               % (t, name, d.get("decision"), why, frm.get("nodes"), to.get("nodes"), frm.get("mems"),
                  to.get("mems"), d.get("migrate_mib") or 0))[:80])
        if d.get("detail"):
            print(textwrap.fill(d["detail"], 80, initial_indent="      ", subsequent_indent="      "))
    err = plot(r, names, t_real0, png)
    rel = os.path.relpath(os.path.abspath(png), nv.REPO)
    print("  timeline: %s" % (err or (png if rel.startswith("..") else rel)))
    if t_boot is not None:
        print("  wall time: %.0f s (boot and containers %.0f s, then %.0f s of numaorchd)"
              % (wall, t_boot, scn["duration"]))
    return 0


def replay(path, png):
    """The view (a block every 5 s) and the summary of a saved run."""
    text = open(path, errors="replace").read()
    r = nv.parse_results(text)
    scn = nv.load_scenario(r["header"].get("scenario", SCENARIO))
    names = [g.split()[0] for g in scn["guests"]]
    times = complete_times(r, len(names))
    scr = Screen(False)
    cpu_node = node_of_cpus(r)
    for t in times:
        scr.show(render(r, t, names, cpu_node, all_local_at(r, names, times), scn["duration"]), t)
    return summary(text, scn, names, scr, png, time.time(), None)


if __name__ == "__main__":
    sys.exit(main())

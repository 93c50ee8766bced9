#!/usr/bin/env python3
"""The layering rules of ARCHITECTURE.md, checked on the tree (make check-layers).

1. Folders: orchestrator/ is the core (model, foundation, engine, applier);
   agents/ (sources), policies/ (pure decisions) and api/ stand on it and on
   nothing else; only the daemon's main (agents/numaorchd.c) may include
   anything. An include from the core up into agents/, policies/ or api/,
   or sideways between those three, is an upward include.
2. Modules (x.c + x.h) form no include loop: if x includes y, y does not
   reach x.
3. policies/ does no I/O and reads no clock: the symbols its objects need
   (nm -u) are pure ones only (memory, strings, math, formatting into
   buffers, masks, the snapshot's pure helpers, jansson's builders).

Violations that exist today are listed in tests/tools/layers-known.txt
(issue 12 removes them). A violation not in that list fails the check; so
does a listed one that no longer exists (delete its line: the list only
shrinks).
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDERS = ("orchestrator", "agents", "policies", "api")
MAIN = {"agents/numaorchd.c"}
# who may include whom (besides itself)
ALLOWED = {"orchestrator": set(), "agents": {"orchestrator"}, "policies": {"orchestrator"},
           "api": {"orchestrator"}}
KNOWN = os.path.join(REPO, "tests", "tools", "layers-known.txt")
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

PURE = re.compile(r"^(mem(cpy|cmp|move|set|chr)|str(n?cmp|len|n?cpy|chr|rchr|str|dup|ndup|tol|toul|toull|tod|spn|cspn)"
                  r"|v?s?n?printf|qsort|bsearch|abs|labs|free|__popcount\w+|__stack_chk_fail"
                  r"|f?(max|min|abs)f?|floor|ceil|round|lround|llround|sqrt|pow|log2?|exp|isnan|isinf|nan"
                  r"|x(malloc|calloc|realloc|strdup)|mask_\w+|snap_(nodes_to_cpus|cpus_to_nodes|nr_cpu_nodes|node_index"
                  r"|cpu_node_index|nearest_mem_node|find_guest|cpumask|node_use)|fmt_nodes"
                  r"|json_(object|array|integer|real|string|null|true|false|pack|object_set_new|array_append_new"
                  r"|incref|decref|delete)|snapj_(cpumask|nodemask|real_or_null))$")


def sources():
    for d in FOLDERS:
        for f in sorted(os.listdir(os.path.join(REPO, d))):
            if f.endswith((".c", ".h")):
                yield "%s/%s" % (d, f)


def includes(rel):
    with open(os.path.join(REPO, rel), errors="replace") as f:
        text = f.read()
    out = []
    for inc in INC.findall(text):
        p = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
        if not os.path.exists(os.path.join(REPO, p)):
            p = os.path.normpath(inc)  # -I. form: "orchestrator/x.h"
        if os.path.exists(os.path.join(REPO, p)):
            out.append(p)
    return out


def module(rel):
    """x.c, x.h and x's private header x_int.h are one module."""
    m = os.path.splitext(rel)[0]
    return m[:-4] if m.endswith("_int") else m


def violations(objdir):
    found = set()
    graph = {}
    for rel in sources():
        src = rel.split("/")[0]
        for inc in includes(rel):
            dst = inc.split("/")[0]
            if rel not in MAIN and dst != src and dst in FOLDERS and dst not in ALLOWED[src]:
                found.add("upward %s -> %s" % (rel, inc))
            graph.setdefault(module(rel), set()).add(module(inc))
    # module loops: report each strongly connected set of modules once
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v, counter=[0]):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    for comp in sccs:
        found.add("loop " + " ".join(comp))
    # purity of policies/, from the objects the build made
    pdir = os.path.join(objdir, "policies")
    if os.path.isdir(pdir):
        own = set()
        need = {}
        for f in sorted(os.listdir(pdir)):
            if not f.endswith(".o"):
                continue
            out = subprocess.run(["nm", os.path.join(pdir, f)], capture_output=True, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "TDBR":
                    own.add(parts[2])
                elif len(parts) == 2 and parts[0] == "U":
                    need.setdefault(parts[1], f)
        for sym, f in sorted(need.items()):
            if sym not in own and not PURE.match(sym):
                found.add("impure policies/%s needs %s" % (f[:-2] + ".c", sym))
    else:
        print("check-layers: %s missing (run make): purity of policies/ not checked" % pdir)
    return found


def main():
    objdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build", "obj")
    found = violations(objdir)
    with open(KNOWN) as f:
        known = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    new = sorted(found - known)
    gone = sorted(known - found)
    for v in new:
        print("check-layers: NEW violation: %s" % v)
    for v in gone:
        print("check-layers: fixed, remove from %s: %s" % (os.path.relpath(KNOWN, REPO), v))
    print("check-layers: %d known violations left (issue 12), %d new, %d fixed"
          % (len(found & known), len(new), len(gone)))
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The layering rules of ARCHITECTURE.md, checked on the tree (make check-layers).

1. Folders: orchestrator/ is the core; agents/ (sources), policies/ (pure
   decisions) and api/ stand on it and on nothing else; only the daemon's
   main (agents/numaorchd.c) may include anything. An include from the core
   up into agents/, policies/ or api/, or sideways between those three, is
   an upward include. Inside the core, its sub-folders stand in one order
   (ORCH_ORDER: base, model, mover, actuator, store, engine): a file
   includes its own sub-folder and those below it; every core file is in
   one of them.
2. Modules (x.c + x.h) form no include loop: if x includes y, y does not
   reach x. (An assembly header, ASSEMBLIES, reaches nothing: see there.)
3. policies/ does no I/O and reads no clock: the symbols its objects need
   (nm -u) are pure ones only (memory, strings, math, formatting into
   buffers, masks, the snapshot's and the plan's pure helpers, jansson's
   builders), and it includes only the core's pure headers (PURE_HEADERS:
   not fs.h, clock.h, log.h, ...).
4. The engine's files (orchestrator/engine/*.c) call each other as a
   tree: from the objects' defined and needed symbols (nm), no two files
   reach each other, directly or through others.
5. No function in those folders is longer than MAX_FUNC_LINES, from the
   first line of its signature to its closing brace: a longer one is split
   into named steps, each of which reads in one sitting.

`check_layers.py --self-test` builds a small tree with one violation of
each kind (an upward include, a loop, an impure include, an object that
calls fs_read_file and clock_mono_ns, one that prints, a function one line
too long, three engine files calling each other in a circle) and fails unless all are found, and nothing else is (not a
function just at the limit, nor one with a signature over several lines).

Known violations, if any, are listed in tests/tools/layers-known.txt. A
violation not in that list fails the check; so does a listed one that no
longer exists (delete its line: the list only shrinks).
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDERS = ("orchestrator", "agents", "policies", "api")
# The core's rooms, lowest first (ARCHITECTURE.md).
ORCH_ORDER = ("base", "model", "mover", "actuator", "store", "engine")
MAIN = {"agents/numaorchd.c"}
# who may include whom (besides itself)
ALLOWED = {"orchestrator": set(), "agents": {"orchestrator"}, "policies": {"orchestrator"},
           "api": {"orchestrator"}}
KNOWN = os.path.join(REPO, "tests", "tools", "layers-known.txt")
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

PURE = re.compile(r"^(mem(cpy|cmp|move|set|chr)|str(n?cmp|len|n?cpy|chr|rchr|str|dup|ndup|tol|toul|toull|tod|spn|cspn)"
                  r"|v?sn?printf|qsort|bsearch|abs|labs|free|__popcount\w+|__stack_chk_fail"
                  # _FORTIFY_SOURCE's checked forms of the same calls (the hardened build)
                  r"|__(mem(cpy|move|set)|str(n?cpy|n?cat)|v?sn?printf)_chk"
                  r"|f?(max|min|abs)f?|floor|ceil|round|lround|llround|sqrt|pow|log2?|exp|isnan|isinf|nan"
                  r"|x(malloc|calloc|realloc|strdup)|mask_\w+|snap_(nodes_to_cpus|cpus_to_nodes|nr_cpu_nodes|node_index"
                  r"|cpu_node_index|nearest_mem_node|find_guest|cpumask|node_use)|fmt_nodes"
                  r"|plan_\w+|kflow_(judge|thread_nodes|negligible|filling)|pstate_(new|free|find|clone|note_move|note_follow|note_cooldown)|policy_config_(default|validate)|policy_reserve"
                  r"|policy_(resolve|moves_why|migrate_why|move_cooldown|job_cooldown|guest_cooldown)"
                  r"|json_(object|array|integer|real|string|null|true|false|pack|object_set_new|array_append_new"
                  r"|incref|decref|delete)|snapj_(cpumask|nodemask|real_or_null))$")


# The core headers policies/ may include: no I/O, no clock, no logging.
PURE_HEADERS = {"orchestrator/%s.h" % h for h in
                ("base/xalloc", "base/parse", "base/mask", "model/snapshot", "model/plan", "model/policy",
                 "model/pstate", "model/hold", "model/kflow")}


# The longest a function may be, in lines (rule 4).
MAX_FUNC_LINES = 150
# A line that starts a declaration: an identifier at column 0 (a
# signature's continuation lines are indented).
DECL_START = re.compile(r"^[A-Za-z_]")
FUNC_NAME = re.compile(r"(\w+)\s*\(")


def long_functions(repo, rel, limit=MAX_FUNC_LINES):
    """The functions of REL longer than LIMIT lines, as (name, lines).

    The house style puts a function's braces alone at column 0; its
    signature starts at the last line before "{" that starts at column 0.
    """
    with open(os.path.join(repo, rel), errors="replace") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            j = i - 1
            while j > 0 and not DECL_START.match(lines[j]):
                j -= 1
            k = i + 1
            while k < len(lines) and lines[k] != "}":
                k += 1
            m = FUNC_NAME.search(" ".join(lines[j:i]))
            if m and k - j + 1 > limit:
                out.append((m.group(1), k - j + 1))
            i = k
        i += 1
    return out


def sources(repo):
    for d in FOLDERS:
        dp = os.path.join(repo, d)
        for root, dirs, files in sorted(os.walk(dp)) if os.path.isdir(dp) else ():
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(root, f), repo)


def room(rel):
    """A core file's sub-folder (its rank in ORCH_ORDER), or None."""
    parts = rel.split("/")
    if parts[0] != "orchestrator":
        return None
    return ORCH_ORDER.index(parts[1]) if len(parts) == 3 and parts[1] in ORCH_ORDER else -1


def includes(repo, rel):
    with open(os.path.join(repo, rel), errors="replace") as f:
        text = f.read()
    out = []
    for inc in INC.findall(text):
        p = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
        if not os.path.exists(os.path.join(repo, p)):
            p = os.path.normpath(inc)  # -I. form: "orchestrator/x.h"
        if os.path.exists(os.path.join(repo, p)):
            out.append(p)
    return out


# Headers that assemble one struct from the parts other modules' headers
# declare (struct engine embeds each engine file's part): each file
# includes it, so its includes would close a loop with every part's
# module. It is a module of its own that reaches none: the engine's files
# are checked on their calls instead (rule 4).
ASSEMBLIES = {"orchestrator/engine/engine_int.h"}


def module(rel):
    """x.c, x.h and x's private header x_int.h are one module (but an
    assembly header is its own)."""
    if rel in ASSEMBLIES:
        return os.path.splitext(rel)[0]
    m = os.path.splitext(rel)[0]
    return m[:-4] if m.endswith("_int") else m


def loops(graph):
    """The strongly connected sets of more than one node of GRAPH (node ->
    set of nodes), each sorted (Tarjan's)."""
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
    return sccs


def nm_symbols(path):
    """The global symbols the object PATH defines, and those it needs."""
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    own, need = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            own.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            need.add(parts[1])
    return own, need


def engine_calls(repo, objdir, found):
    """The engine's files' call graph (file -> files whose symbols it
    uses), from the objects the build made; an engine .c not built is
    reported in FOUND."""
    src = os.path.join(repo, "orchestrator", "engine")
    odir = os.path.join(objdir, "orchestrator", "engine")
    owner, needs = {}, {}
    if not os.path.isdir(src):
        return {}
    if not os.path.isdir(odir):
        print("check-layers: %s missing (run make): the engine's call graph not checked" % odir)
        return {}
    for c in sorted(os.listdir(src)):
        if not c.endswith(".c"):
            continue
        o = os.path.join(odir, c[:-2] + ".o")
        if not os.path.exists(o):
            found.add("unbuilt orchestrator/engine/%s (run make)" % c)
            continue
        own, need = nm_symbols(o)
        for sym in own:
            owner[sym] = c
        needs[c] = need
    return {c: {owner[s] for s in need if s in owner and owner[s] != c} for c, need in needs.items()}


def violations(repo, objdir):
    found = set()
    graph = {}
    for rel in sources(repo):
        src = rel.split("/")[0]
        if room(rel) == -1:
            found.add("unsorted %s (not in one of orchestrator/{%s}/)" % (rel, ",".join(ORCH_ORDER)))
        for inc in includes(repo, rel):
            if room(rel) is not None and room(inc) is not None and room(inc) > room(rel) >= 0:
                found.add("upward %s -> %s" % (rel, inc))
            dst = inc.split("/")[0]
            if rel not in MAIN and dst != src and dst in FOLDERS and dst not in ALLOWED[src]:
                found.add("upward %s -> %s" % (rel, inc))
            if src == "policies" and dst == "orchestrator" and inc not in PURE_HEADERS:
                found.add("impure include %s -> %s" % (rel, inc))
            if rel not in ASSEMBLIES:
                graph.setdefault(module(rel), set()).add(module(inc))
    # module loops: report each strongly connected set of modules once
    sccs = loops(graph)
    for comp in sccs:
        found.add("loop " + " ".join(comp))
    # The engine's files call each other as a tree (a DAG): no two reach
    # each other (orchestrator/engine/README.md draws it).
    for comp in loops(engine_calls(repo, objdir, found)):
        found.add("engine call loop " + " ".join(comp))
    for rel in sources(repo):
        for name, n in long_functions(repo, rel):
            found.add("long %s %s (over %d lines)" % (rel, name, MAX_FUNC_LINES))
    # purity of policies/, from the objects the build made
    # Only the objects of today's policies/*.c: a stale object of a file
    # moved away would hide (or fake) symbols.
    pdir = os.path.join(objdir, "policies")
    if os.path.isdir(pdir):
        own = set()
        need = {}
        for c in sorted(os.listdir(os.path.join(repo, "policies"))):
            if not c.endswith(".c"):
                continue
            f = c[:-2] + ".o"
            if not os.path.exists(os.path.join(pdir, f)):
                found.add("unbuilt policies/%s (run make)" % c)
                continue
            o_own, o_need = nm_symbols(os.path.join(pdir, f))
            own |= o_own
            for sym in o_need:
                need.setdefault(sym, f)
        for sym, f in sorted(need.items()):
            if sym not in own and not PURE.match(sym):
                found.add("impure policies/%s needs %s" % (f[:-2] + ".c", sym))
    else:
        print("check-layers: %s missing (run make): purity of policies/ not checked" % pdir)
    return found


def self_test():
    """A tree with one violation of each kind: all must be found."""
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="check-layers.")
    try:
        def put(rel, text):
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        put("orchestrator/base/fs.h", "int fs_read_file(const char *p);\n")
        put("orchestrator/base/clock.h", "long clock_mono_ns(void);\n")
        put("orchestrator/base/mask.h", "")
        put("orchestrator/model/a.h", '#include "b.h"\n')
        put("orchestrator/model/b.h", '#include "a.h"\n')
        put("orchestrator/engine/up.c", '#include "../../agents/src.h"\n')
        put("orchestrator/engine/e.h", "")
        put("orchestrator/base/low.c", '#include "orchestrator/engine/e.h"\n')
        put("orchestrator/loose.h", "")
        put("agents/src.h", "")
        put("api/side.c", '#include "../policies/p.h"\n')
        put("policies/p.h", '#include "../orchestrator/base/mask.h"\n')
        put("policies/p.c", '#include "../orchestrator/base/fs.h"\n#include "../orchestrator/base/clock.h"\n'
            'int p_read(void);\nint p_read(void) { return fs_read_file("x") + (int)clock_mono_ns(); }\n')
        put("policies/q.c", "#include <stdio.h>\nint q_pure(int x);\nint q_say(int x);\n"
            "int q_pure(int x) { char b[8]; return snprintf(b, sizeof(b), \"%d\", x); }\n"
            "int q_say(int x) { return printf(\"%d\\n\", x); }\n")
        body = "".join("\tx += %d;\n" % i for i in range(MAX_FUNC_LINES - 4))
        # one line too long; just at the limit; one line too long counting
        # its signature's second line (150 without it)
        put("agents/long.c", "static int too_long(int x)\n{\n%s\tx++;\n\treturn x;\n}\n" % body)
        put("api/fits.c", "/* a comment\n * over lines */\nstatic int fits(int x)\n{\n%s\treturn x;\n}\n" % body)
        put("agents/wrapped.c", "static int wrapped(int x,\n\t\t   int y)\n{\n%s\tx++;\n}\n" % body)
        os.makedirs(os.path.join(tmp, "obj", "policies"))
        for c in ("p", "q"):
            subprocess.run(["cc", "-c", "-I" + tmp, "-o", os.path.join(tmp, "obj", "policies", c + ".o"),
                            os.path.join(tmp, "policies", c + ".c")], check=True)
        # engine files: x calls y, y calls z, z calls x (a loop of three);
        # w calls x and is called by none (outside the loop)
        put("orchestrator/engine/w.c", "int x(void);\nint w(void);\nint w(void) { return x(); }\n")
        put("orchestrator/engine/x.c", "int y(void);\nint x(void);\nint x(void) { return y(); }\n")
        put("orchestrator/engine/y.c", "int z(void);\nint y(void);\nint y(void) { return z(); }\n")
        put("orchestrator/engine/z.c", "int x(void);\nint z(void);\nint z(void) { return x() + 1; }\n")
        os.makedirs(os.path.join(tmp, "obj", "orchestrator", "engine"))
        for c in ("up", "w", "x", "y", "z"):
            subprocess.run(["cc", "-c", "-I" + tmp, "-o", os.path.join(tmp, "obj", "orchestrator", "engine", c + ".o"),
                            os.path.join(tmp, "orchestrator", "engine", c + ".c")], check=True)
        got = violations(tmp, os.path.join(tmp, "obj"))
    finally:
        shutil.rmtree(tmp)
    want = {"upward orchestrator/engine/up.c -> agents/src.h", "upward api/side.c -> policies/p.h",
            "upward orchestrator/base/low.c -> orchestrator/engine/e.h",
            "unsorted orchestrator/loose.h (not in one of orchestrator/{%s}/)" % ",".join(ORCH_ORDER),
            "loop orchestrator/model/a orchestrator/model/b",
            "impure include policies/p.c -> orchestrator/base/fs.h",
            "impure include policies/p.c -> orchestrator/base/clock.h",
            "impure policies/p.c needs fs_read_file", "impure policies/p.c needs clock_mono_ns",
            "impure policies/q.c needs printf",
            "long agents/long.c too_long (over %d lines)" % MAX_FUNC_LINES,
            "long agents/wrapped.c wrapped (over %d lines)" % MAX_FUNC_LINES,
            "engine call loop x.c y.c z.c"}
    missed = sorted(want - got)
    extra = sorted(got - want)
    for v in missed:
        print("check-layers self-test: NOT found: %s" % v)
    for v in extra:
        print("check-layers self-test: unexpected: %s" % v)
    print("check-layers self-test: %s (%d violations planted)" % ("FAILED" if missed or extra else "ok",
                                                                 len(want)))
    return 1 if missed or extra else 0


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test()
    objdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build", "obj")
    found = violations(REPO, objdir)
    with open(KNOWN) as f:
        known = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    new = sorted(found - known)
    gone = sorted(known - found)
    for v in new:
        print("check-layers: NEW violation: %s" % v)
    for v in gone:
        print("check-layers: fixed, remove from %s: %s" % (os.path.relpath(KNOWN, REPO), v))
    print("check-layers: %d known violations left, %d new, %d fixed"
          % (len(found & known), len(new), len(gone)))
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main())

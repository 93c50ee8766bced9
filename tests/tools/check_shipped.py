#!/usr/bin/env python3
"""The shipped daemon carries no test hook (make check-shipped).

The hooks that let fixture-root tests make the "kernel" refuse a cgroup
write (X.refuse) and record every write (.numaorch-writes), and the one
that lets tests make the mover relocate every page (relocate_all), live
in tests/hooks/ and are linked only into build/numaorchd-test. This check
reads both binaries: none of the hooks' markers may be in the shipped one,
and every marker must be in the test build, or the check could not tell
the two apart (and would pass on a binary that merely lost its strings).

usage: check_shipped.py SHIPPED TEST_BUILD
"""
import sys

# The hooks' format strings, their source files (named in the debug info)
# and the mover hook's switch (in the symbol table: only the hook has it).
MARKERS = (b"%s.refuse", b".numaorch-writes", b"cgwfixture_hooks", b"moverfixture_hooks",
           b"moverfx_set_relocate_all")


def main():
    shipped, test = sys.argv[1], sys.argv[2]
    with open(shipped, "rb") as f:
        s = f.read()
    with open(test, "rb") as f:
        t = f.read()
    bad = [m.decode() for m in MARKERS if m in s]
    missing = [m.decode() for m in MARKERS if m not in t]
    if missing:
        print("check-shipped: %s lacks the hook markers %s: the check cannot tell the builds apart"
              % (test, ", ".join(missing)))
        return 1
    if bad:
        print("check-shipped: FAIL: %s contains test hooks (%s)" % (shipped, ", ".join(bad)))
        return 1
    print("check-shipped: %s has none of the test hooks (%s has all %d markers)"
          % (shipped, test, len(MARKERS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""React in time: a guest that appears between two of the daemon's full
scans is placed within a few seconds, not at the next interval.

The real numaorchd runs on this machine's real cgroup v1 cpuset hierarchy
with an interval of 120 s (a fixture sysfs splits the two CPUs into two
nodes, as in test_cgroup_v1.py); after its first cycle a new cgroup with a
busy process appears under the watched parent. The cgroup watcher
(agents/cgwatch.c, inotify) must prompt a cycle that places it: its
cpuset.cpus narrowed to one node, measured here on the cgroup itself with
a deadline. Without the watcher the guest would wait for the interval and
the test fails.
"""
import os
import time
import unittest

import itlib

REASON = itlib.skip_reason_v1_two_nodes()

INTERVAL = 120
DEADLINE = itlib.REACT_DEADLINE
SLACK = itlib.REACT_SLACK


def inotify_watches(pid):
    """The inotify watches process PID holds, counted by the kernel
    (/proc/PID/fdinfo of its inotify descriptors): what it costs the host,
    independent of what the daemon says it watches."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:inotify":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                n += sum(1 for line in f if line.startswith("inotify wd:"))
        except OSError:
            pass
    return n


@unittest.skipIf(REASON, REASON or "")
class CgroupWatch(itlib.V1SandboxTest):
    def setUp(self):
        super().setUp()
        self.sysfs = self.topo_cpu_only_node1()
        # (node load is not what this test is about: the daemon reads the
        # real /proc; a fixture /proc/stat, as test_cgroup_v1 uses for --once,
        # would hide the guests' threads)

    def start_watched(self, scope=None):
        scope = scope or self.sb.rel
        conf = itlib.config_file(self.tmp, "[agent]\ninterval = %d\nsample = 0.2\n" % INTERVAL)
        return self.start_daemon("--config", conf, "--sysfs", self.sysfs, "--parent", scope, "--scope", scope,
                                 "--log-level", "debug", "--decision-log", self.agent.declog)

    def wait_placed(self, child, t0, deadline):
        """Seconds from T0 until CHILD's cpuset.cpus is one fixture node,
        or None past DEADLINE."""
        while time.monotonic() - t0 < deadline:
            cpus, _ = self.sb.cpuset(child)
            if cpus in ("0", "1"):
                return time.monotonic() - t0
            time.sleep(0.02)
        return None

    def test_new_guest_placed_between_scans(self):
        self.sb.start("ctr-old", cpus="0-1", mems="0", mib=16, busy=True)
        d, w = self.start_watched()
        w.wait_for("watching")
        first = w.wait_for("cycle 1:", timeout=60)
        # the old guest is placed by the first cycles (its move is written
        # a moment after the cycle's line); the next full scan is INTERVAL s
        # away
        placed = self.wait_placed("ctr-old", time.monotonic(), 30)
        # the message only on failure: w.text() waits up to 30 s for a
        # running daemon's stderr to close
        if placed is None:
            self.fail("the old guest was not placed:\n" + w.text())
        t0 = time.monotonic()
        self.sb.start("ctr-new", cpus="0-1", mems="0", mib=16, busy=True)
        took = self.wait_placed("ctr-new", t0, DEADLINE + SLACK)
        print("\nnew guest placed %s after its cgroup appeared (interval %d s)"
              % ("never within %.0f s" % (DEADLINE + SLACK) if took is None else "%.2f s" % took, INTERVAL))
        self.assertIsNotNone(took, "a new guest was not placed within %.1f s:\n%s"
                             % (DEADLINE + SLACK, "\n".join(w.lines[first:])))
        # the record is written after the move's memory phase, a moment
        # after cpuset.cpus changed: wait for it with a deadline
        end = time.monotonic() + 30
        moved = []
        while not moved and time.monotonic() < end:
            moved = [r for r in self.agent.decisions() if r.get("decision") == "moved"
                     and r.get("guest") == "custom-ctr-new"]
            if not moved:
                time.sleep(0.1)
        self.assertTrue(moved, self.agent.decisions())
        # a guest that leaves is noticed as well: its exit prompts a cycle
        # that no longer lists it
        n = len(w.lines)
        self.sb.remove_child("ctr-new")
        w.wait_for("1 guests", after=n - 1, timeout=DEADLINE + SLACK)
        self.stop_daemon(d, w)

    def test_scope_created_after_start_is_watched(self):
        """A configured scope that does not exist when the daemon starts
        (machine.slice before the first VM, a runtime's parent before its
        first container) is watched once it appears: a guest created in it
        is placed within the deadline, not at the next interval (or reload).
        Two levels are missing at the start, so the watcher follows the path
        down from the nearest existing ancestor.

        The scope appears first and its guest after the daemon has said it
        watches it. When both appear at once and the guest's process is
        attached before the watcher has walked the new scope, the cycle the
        scope's arrival prompts sees the guest for the first time (no CPU
        sample yet) and nothing prompts the next: it then waits for the
        interval (seen in 1 of 3 runs on 2026-12-01) — the same race a
        guest created in a watched scope has when its process attaches
        before its own directory is watched. Not fixed yet."""
        scope = self.sb.rel + "/later/parent"
        d, w = self.start_watched(scope)
        w.wait_for("watching")
        w.wait_for("cycle 1:", timeout=60)
        for c in itlib.V1_CTRLS:
            self.assertFalse(os.path.exists(self.sb.path(c, "later")))
        t0 = time.monotonic()
        self.sb.mkdir("later/parent", cpus="0-1", mems="0")
        w.wait_for("later/parent appeared: watching it", timeout=DEADLINE + SLACK)
        seen = time.monotonic() - t0
        t1 = time.monotonic()
        self.sb.start("later/parent/ctr-late", cpus="0-1", mems="0", mib=16, busy=True)
        took = self.wait_placed("later/parent/ctr-late", t1, DEADLINE + SLACK)
        print("\nscope created after the start watched %.2f s after it appeared; its guest placed %s after its cgroup "
              "appeared (interval %d s)" % (seen, "never within %.0f s" % (DEADLINE + SLACK) if took is None
                                            else "%.2f s" % took, INTERVAL))
        self.assertIsNotNone(took, "a guest in a scope created after the start was not placed within %.1f s:\n%s"
                             % (DEADLINE + SLACK, "\n".join(w.lines)))
        self.stop_daemon(d, w)

    def test_removed_guests_leave_no_watches(self):
        """Guests that come and go leave no inotify watch behind. On cgroup
        v1 an rmdir sends the removed directory no IN_IGNORED (only its
        parent an IN_DELETE), so a watcher that waits for IN_IGNORED keeps
        one kernel watch per guest that ever left: counted here in the
        kernel's own fdinfo, with a deadline."""
        d, w = self.start_watched()
        w.wait_for("watching")
        w.wait_for("cycle 1:", timeout=60)
        base = inotify_watches(d.pid)
        names = ["ctr-gone-%d" % i for i in range(5)]
        for n in names:
            self.sb.mkdir(n, cpus="0-1", mems="0")
        end = time.monotonic() + 10
        while inotify_watches(d.pid) < base + len(names) and time.monotonic() < end:
            time.sleep(0.05)
        grown = inotify_watches(d.pid)
        self.assertGreaterEqual(grown, base + len(names), "new cgroups were not watched")
        for n in names:
            self.sb.remove_child(n)
        end = time.monotonic() + 10
        while inotify_watches(d.pid) > base and time.monotonic() < end:
            time.sleep(0.05)
        left = inotify_watches(d.pid)
        print("\ninotify watches: %d at the start, %d with %d more cgroups, %d after they were removed"
              % (base, grown, len(names), left))
        self.assertEqual(left, base, "removed cgroups left %d inotify watches" % (left - base))
        self.stop_daemon(d, w)

if __name__ == "__main__":
    unittest.main()

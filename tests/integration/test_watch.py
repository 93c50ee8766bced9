"""React in time, for a guest already there: one that turns busy between
two of the daemon's cycles is placed within a few seconds, not at the next
interval.

The real numaorchd runs on this machine's real cgroup v1 cpuset hierarchy
with an interval of 120 s (a fixture sysfs splits the two CPUs into two
nodes, as in test_cgwatch.py). An idle guest (160 MiB, above the start
placement's limit, so nothing places it while it idles) spans both nodes
through the daemon's first cycles; then its process starts working
(SIGUSR1 to memhog: nothing in its cgroup changes, so the cgroup watcher
has nothing to report). The watch between cycles (agents/drift.c, `[agent]
watch`) must see its CPU counter step and prompt a cycle that places it:
its cpuset.cpus narrowed to one node, measured on the cgroup itself with a
deadline. The same run with `watch = 0` is the control: the guest then
waits for the interval, and the test says so.
"""
import os
import signal
import socket
import time
import unittest

import itlib

REASON = itlib.skip_reason_v1_two_nodes()

INTERVAL = 120
DEADLINE = itlib.REACT_DEADLINE
SLACK = itlib.REACT_SLACK
CONTROL = 8.0        # how long the control waits to see nothing happen


@unittest.skipIf(REASON, REASON or "")
class Watch(itlib.V1SandboxTest):
    def setUp(self):
        super().setUp()
        self.sysfs = self.topo_cpu_only_node1()

    def metrics(self):
        """GET /metrics over the daemon's unix socket."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(self.sock)
        s.sendall(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
        s.close()
        return out.decode(errors="replace")

    def start_watching(self, watch):
        # No cool-down: the guests' first placement (at first sight) would
        # hold them for 300 s, and whether the policy may move a guest again
        # so soon is its own question (test_policy); this test is about
        # when the agent looks.
        conf = itlib.config_file(self.tmp, "[agent]\ninterval = %d\nsample = 0.2\nwatch = %s\n"
                                 "[policy]\ncooldown = 0\n" % (INTERVAL, watch))
        self.sock = os.path.join(self.tmp, "api.sock")
        return self.start_daemon("--config", conf, "--sysfs", self.sysfs, "--parent", self.sb.rel, "--scope",
                                 self.sb.rel, "--log-level", "debug", "--decision-log", self.agent.declog,
                                 "--socket", self.sock)

    def cpusets(self):
        return {c: self.sb.cpuset(c)[0] for c in ("ctr-a", "ctr-b")}

    def spread_within(self, t0, deadline):
        """Seconds from T0 until the two guests run on different nodes, or
        None past DEADLINE."""
        while time.monotonic() - t0 < deadline:
            c = self.cpusets()
            if sorted(c.values()) == ["0", "1"]:
                return time.monotonic() - t0
            time.sleep(0.02)
        return None

    def idle_guests_then_busy(self, watch):
        """Two idle guests through the daemon's first cycles (placed
        together: idle, they fit one node), then both busy: returns
        (seconds until they run on different nodes or None, the daemon's
        log watcher, the daemon, the log line count at the signal)."""
        pa = self.sb.start("ctr-a", cpus="0-1", mems="0", mib=16)
        pb = self.sb.start("ctr-b", cpus="0-1", mems="0", mib=16)
        d, w = self.start_watching(watch)
        w.wait_for("cycle 1:", timeout=60)
        # the first-sight follow-up comes a second later; past it, and a
        # few watch passes (their references) more, nothing is due for
        # INTERVAL s
        time.sleep(4)
        before = self.cpusets()
        self.assertEqual(len(set(before.values())), 1, "the idle guests are not on one node: %s\n%s"
                         % (before, "\n".join(w.lines)))
        n = len(w.lines)
        t0 = time.monotonic()
        pa.send_signal(signal.SIGUSR1)
        pb.send_signal(signal.SIGUSR1)
        return self.spread_within(t0, DEADLINE + SLACK if watch != "0" else CONTROL), w, d, n

    def test_guests_turning_busy_are_spread_between_cycles(self):
        took, w, d, n = self.idle_guests_then_busy("1")
        print("\ntwo idle guests on one 1-CPU node turned busy: spread %s after they started working "
              "(interval %d s, watch 1 s)"
              % ("never within %.0f s" % (DEADLINE + SLACK) if took is None else "%.2f s" % took, INTERVAL))
        self.assertIsNotNone(took, "guests that turned busy were not spread within %.1f s: %s\n%s"
                             % (DEADLINE + SLACK, self.cpusets(), "\n".join(w.lines[n:])))
        # the watch said why it prompted the cycle, with the step it saw
        i = w.wait_for(": CPU use", after=n - 1, timeout=5)
        self.assertIn("a cycle on a fresh", w.lines[i])
        # and counts it (in the view the cycle publishes when it ends, a
        # moment after its cpuset writes: with a deadline)
        end = time.monotonic() + 10
        m = self.metrics()
        while "\nnumaorch_watch_cycles_total 0\n" in m and time.monotonic() < end:
            time.sleep(0.1)
            m = self.metrics()
        self.assertRegex(m, r"\nnumaorch_watch_cycles_total [1-9]")
        self.stop_daemon(d, w)

    def test_control_without_the_watch(self):
        took, w, d, n = self.idle_guests_then_busy("0")
        print("\ncontrol (watch = 0): the guests that turned busy were %s"
              % ("not spread within %.0f s" % CONTROL if took is None else "spread after %.2f s" % took))
        self.assertIsNone(took, "spread without the watch: something else prompted a cycle "
                                "(the test would prove nothing):\n" + "\n".join(w.lines[n:]))
        self.assertIn("\nnumaorch_watch_cycles_total 0\n", self.metrics())
        self.stop_daemon(d, w)


if __name__ == "__main__":
    unittest.main()

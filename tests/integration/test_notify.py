"""The service-manager protocol as systemd would see it: numaorchd on a
fixture host (no root needed) with NOTIFY_SOCKET pointing at a datagram
socket of the test and WATCHDOG_USEC set, as Type=notify + WatchdogSec=
do. It must say READY=1 once it has a snapshot (with a STATUS= summary),
ping WATCHDOG=1 well within the interval, RELOADING=1 then READY=1 around
SIGHUP, STOPPING=1 on SIGTERM; with JOURNAL_STREAM set its log lines carry
journald's <N> level prefixes."""
import os
import shutil
import signal
import socket
import subprocess
import time
import unittest

import itlib
from test_fixture_root import FIX


class Notify(itlib.DaemonTest):
    def setUp(self):
        if not os.path.exists(itlib.NUMAORCHD):
            self.skipTest("build/numaorchd missing (run make)")
        super().setUp()
        root = os.path.join(self.tmp, "host")
        shutil.copytree(os.path.join(FIX, "host-2node", "sys"), os.path.join(root, "sys"))
        shutil.copytree(os.path.join(FIX, "host-2node", "proc"), os.path.join(root, "proc"))
        shutil.copytree(os.path.join(FIX, "cg-v2", "sys", "fs", "cgroup"), os.path.join(root, "sys", "fs", "cgroup"))
        self.root = root
        self.nsock = os.path.join(self.tmp, "notify")
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(self.nsock)
        self.addCleanup(self.s.close)
        self.conf = itlib.config_file(self.tmp, "[agent]\nsample = 0.05\ninterval = 3600\n"
                                                "[api]\nsocket =\n[libvirt]\nenabled = no\n")

    def collect(self, seconds):
        out = []
        end = time.time() + seconds
        while time.time() < end:
            self.s.settimeout(max(0.01, end - time.time()))
            try:
                out.append(self.s.recv(4096).decode())
            except socket.timeout:
                break
        return out

    def test_ready_status_watchdog_reload_stop(self):
        # stderr is a pipe whose device:inode JOURNAL_STREAM names, as
        # systemd does when it connects stderr to the journal.
        rfd, wfd = os.pipe()
        st = os.fstat(wfd)
        env = dict(os.environ, NOTIFY_SOCKET=self.nsock, WATCHDOG_USEC="1000000",
                   JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
        env.pop("WATCHDOG_PID", None)
        d = subprocess.Popen(self.numaorchd("--config", self.conf, "--root", self.root, "--dry-run"),
                             env=env, stderr=wfd)
        os.close(wfd)
        d.stderr = os.fdopen(rfd)
        self.addCleanup(lambda: d.poll() is None and d.kill())
        msgs = self.collect(2.5)
        ready = [m for m in msgs if "READY=1" in m]
        self.assertTrue(ready, msgs)
        self.assertIn("STATUS=", ready[0])
        self.assertIn("guests on 2 NUMA nodes", ready[0])
        # A 1 s watchdog: pings at least every half second.
        self.assertGreaterEqual(sum("WATCHDOG=1" in m for m in msgs), 3, msgs)

        d.send_signal(signal.SIGHUP)
        msgs = self.collect(1.5)
        text = "\n".join(msgs)
        self.assertIn("RELOADING=1", text)
        self.assertIn("MONOTONIC_USEC=", text)
        self.assertGreater(text.index("READY=1"), text.index("RELOADING=1"))

        d.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait(timeout=10), 0)
        self.assertIn("STOPPING=1", "\n".join(self.collect(0.5)))
        err = d.stderr.read()
        d.stderr.close()
        lines = [l for l in err.splitlines() if l]
        self.assertTrue(lines)
        self.assertTrue(all(l[0] == "<" and l[2] == ">" for l in lines), lines[:5])
        self.assertTrue(any(l.startswith("<6>") and "starting" in l for l in lines), lines[:5])

    def test_abstract_socket_status_each_cycle_watchdog_pid(self):
        # The protocol as orchestrator/base/notify.c speaks it without
        # libsystemd: an abstract socket name ("@..."), a STATUS= line of
        # its own after every later cycle, and no watchdog pings when
        # $WATCHDOG_PID names another process.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        name = "numaorch-test-%d-%d" % (os.getpid(), int(time.time() * 1000))
        s.bind("\0" + name)
        self.addCleanup(s.close)
        conf = itlib.config_file(self.tmp, "[agent]\nsample = 0.05\ninterval = 0.2\n"
                                           "[api]\nsocket =\n[libvirt]\nenabled = no\n")
        env = dict(os.environ, NOTIFY_SOCKET="@" + name, WATCHDOG_USEC="1000000", WATCHDOG_PID="1")
        env.pop("JOURNAL_STREAM", None)
        d = subprocess.Popen(self.numaorchd("--config", conf, "--root", self.root, "--dry-run"),
                             env=env, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: d.poll() is None and d.kill())
        msgs, end = [], time.time() + 20
        while time.time() < end and not [m for m in msgs if m.startswith("STATUS=") and "cycle 3" in m]:
            s.settimeout(max(0.01, end - time.time()))
            try:
                msgs.append(s.recv(4096).decode())
            except socket.timeout:
                break
        self.assertTrue([m for m in msgs if m.startswith("READY=1")], msgs)
        self.assertTrue([m for m in msgs if m.startswith("STATUS=") and "guests on 2 NUMA nodes" in m
                         and "cycle 3" in m], msgs)
        self.assertFalse([m for m in msgs if "WATCHDOG=1" in m], msgs)
        d.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait(timeout=10), 0)

    def test_no_prefix_when_stderr_is_not_the_journal(self):
        # JOURNAL_STREAM inherited, stderr redirected elsewhere: plain lines.
        env = dict(os.environ, JOURNAL_STREAM="8:1234")
        p = subprocess.run(self.numaorchd("--config", self.conf, "--root", self.root, "--once", "--dry-run"),
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stderr.startswith("numaorchd[info]: "), p.stderr[:200])


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""numaorchctl top for real: the live view under tmux (keys sent with
send-keys, the screen read with capture-pane) and --once, against the real
numaorchd on a fixture host with 1000 extra guests."""
import os
import pty
import select
import shutil
import signal
import subprocess
import time
import unittest

import apilib
import itlib

TMUX = shutil.which("tmux")
REASON = apilib.skip_reason() or (None if os.path.exists(apilib.NUMAORCHCTL) else
                                  "build/numaorchctl missing (run make)")
MIB = 1024 * 1024
N = 1000


def add_guests(root, n):
    """N guests under /toppar (every child a guest with --parent), CPUs on
    node 0; guest k has (k % 97 + 1) MiB on node 0 and 97 MiB in all, so
    its locality is (k % 97 + 1) / 97."""
    cg = os.path.join(root, "sys", "fs", "cgroup")
    src = os.path.join(cg, "lxc.payload.db")
    par = os.path.join(cg, "toppar")
    shutil.copytree(src, par)
    # The template's files read once and written plainly per guest, as a
    # copytree's copy2 also stats each file and copies its metadata.
    files = {}
    for f in os.listdir(src):
        with open(os.path.join(src, f), "rb") as fh:
            files[f] = fh.read()
    files["cpuset.cpus"] = files["cpuset.cpus.effective"] = b"0,2\n"
    files["cgroup.procs"] = b""
    for k in range(n):
        d = os.path.join(par, "g%04d" % k)
        os.mkdir(d)
        n0 = k % 97 + 1
        files["memory.numa_stat"] = b"anon N0=%d N1=%d\nfile N0=0 N1=0\n" % (n0 * MIB, (97 - n0) * MIB)
        for f, data in files.items():
            with open(os.path.join(d, f), "wb") as fh:
                fh.write(data)


@unittest.skipIf(REASON, REASON or "")
class Top(apilib.ClassDaemon):
    # One daemon for the class (apilib.ClassDaemon), with N more guests.
    EXTRA = ("--parent", "/toppar", "--mode", "advise")

    @classmethod
    def prepare_root(cls, root):
        add_guests(root, N)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.total = cls.d.get("/v1/status").json()["guests"]["total"]

    def test_once_at_80_columns(self):
        self.assertGreaterEqual(self.total, N)
        t0 = time.time()
        p = self.d.ctl("top", "--once", env=dict(os.environ, COLUMNS="80", LC_ALL="C.UTF-8"))
        took = time.time() - t0
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].split()[1:3] == ["numaorchd", "0.1.0,"], lines[0])
        self.assertTrue(all(len(l) <= 80 for l in lines), max(lines, key=len))
        self.assertNotIn("\033", p.stdout)
        head = [i for i, l in enumerate(lines) if l.startswith("GUEST ")]
        self.assertEqual(len(head), 1, lines[:12])
        rows = lines[head[0] + 1:]
        self.assertEqual(len(rows), self.total)
        # least local first: g0000, g0097, g0194, ... (1/97 = 1%)
        self.assertEqual([rows[0].split()[0], rows[1].split()[0]], ["custom-g0000", "custom-g0097"])
        self.assertRegex(rows[0], r"\s1%\s")
        self.assertLess(took, 10, "top --once with %d guests took %.1f s" % (self.total, took))
        # the nodes panel: both nodes, their guests counted
        nodes = [l for l in lines if l.startswith("NODE ")]
        self.assertEqual(len(nodes), 1)
        i = lines.index(nodes[0])
        self.assertEqual([l.split()[0] for l in lines[i + 1:i + 3]], ["0", "1"])
        # a fixture root has no memory mover: its migration columns say "-"
        self.assertEqual(nodes[0].split()[-4:], ["MIG", "IN", "MIG", "OUT"])
        self.assertEqual([l.split()[-2:] for l in lines[i + 1:i + 3]], [["-", "-"], ["-", "-"]])
        # sort by name
        p = self.d.ctl("top", "--once", "--sort", "name", env=dict(os.environ, COLUMNS="120"))
        rows = p.stdout.splitlines()
        rows = rows[[i for i, l in enumerate(rows) if l.startswith("GUEST ")][0] + 1:]
        ids = [r.split()[0] for r in rows]
        self.assertEqual(ids, sorted(ids))
        p = self.d.ctl("top", "--once", "--sort", "bogus")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--sort: must be locality, cpu, mem, name or decision", p.stderr)

    def test_once_cannot_reach(self):
        p = subprocess.run([apilib.NUMAORCHCTL, "--socket", os.path.join(self.tmp, "nothing.sock"), "top", "--once"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertTrue(p.stderr.startswith("numaorchctl: "), p.stderr)

    def test_dumb_terminal_gets_the_plain_screen(self):
        # On a terminal (a pty) whose TERM cannot move the cursor, the live
        # view's escapes would show as text: one plain screen, as --once.
        for term in ("dumb", None):
            env = dict(os.environ, LC_ALL="C.UTF-8", COLUMNS="80")
            env.pop("TERM", None)
            if term:
                env["TERM"] = term
            pid, fd = pty.fork()
            if pid == 0:
                os.execve(apilib.NUMAORCHCTL, [apilib.NUMAORCHCTL, "--socket", self.d.sock, "top", "--delay", "0.5"],
                          env)
            out = b""
            deadline = time.time() + 30
            while time.time() < deadline:
                if not select.select([fd], [], [], 0.2)[0]:
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:  # EIO: the child is gone and the pty closed
                    break
                if not chunk:
                    break
                out += chunk
            status = None
            while status is None and time.time() < deadline + 5:
                done, st = os.waitpid(pid, os.WNOHANG)
                status = st if done else time.sleep(0.05)
            if status is None:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                self.fail("TERM=%s: top still running (a live view?); it wrote %r" % (term, out[:200]))
            os.close(fd)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0, term)
            self.assertNotIn(b"\033", out, (term, out[:200]))
            lines = out.decode().splitlines()
            head = [i for i, l in enumerate(lines) if l.startswith("GUEST ")]
            self.assertEqual(len(head), 1, (term, out[:200]))
            self.assertEqual(len(lines) - head[0] - 1, self.total, term)  # every guest, as --once

    @unittest.skipIf(not TMUX, "tmux missing (Debian: tmux; make test-deps installs it)")
    def test_live_under_tmux(self):
        sock = "numaorch-top-%d" % os.getpid()

        def tmux(*a, check=True):
            return subprocess.run([TMUX, "-L", sock, "-f", "/dev/null"] + list(a), capture_output=True, text=True,
                                  timeout=20, check=check)

        def screen():
            return tmux("capture-pane", "-p", "-t", "top").stdout.split("\n")

        def wait_for(pred, what, timeout=30):
            deadline = time.time() + timeout
            s = None
            while time.time() < deadline:
                s = screen()
                if pred(s):
                    return s
                time.sleep(0.1)
            self.fail("%s: never on the screen; last screen:\n%s" % (what, "\n".join(s or [])))

        # the shell prints top's exit status on the normal screen after it:
        # tmux's own pane_dead_status can miss it when the pty closes first
        cmd = "sh -c '%s --socket %s top --delay 0.5; echo top exited $?; exec sleep 60'" % (
            apilib.NUMAORCHCTL, self.d.sock)
        env = dict(os.environ, LC_ALL="C.UTF-8", TERM="xterm")
        subprocess.run([TMUX, "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24",
                        "-s", "top", cmd], env=env, check=True, timeout=20)
        self.addCleanup(lambda: tmux("kill-server", check=False))
        footer = "of %d guests" % self.total
        s = wait_for(lambda s: any(footer in l for l in s), footer)
        s = [l for l in s if l != ""] if len(s) > 24 else s
        self.assertLessEqual(len(s), 25)
        self.assertTrue(all(len(l) <= 80 for l in s), max(s, key=len))
        self.assertIn("numaorchd 0.1.0", s[0])
        self.assertTrue(any(l.startswith("NODE ") for l in s), s)
        g = [i for i, l in enumerate(s) if l.startswith("GUEST ")]
        self.assertEqual(len(g), 1, s)
        self.assertEqual([s[g[0] + 1].split()[0], s[g[0] + 2].split()[0]], ["custom-g0000", "custom-g0097"])
        self.assertIn("sort locality", [l for l in s if footer in l][0])
        # sort keys
        tmux("send-keys", "-t", "top", "n")
        s = wait_for(lambda s: any("sort name" in l for l in s), "sort name")
        g = [i for i, l in enumerate(s) if l.startswith("GUEST ")][0]
        # by locality the second row was g0097; by name it is g0001
        self.assertEqual([s[g + 1].split()[0], s[g + 2].split()[0]], ["custom-g0000", "custom-g0001"])
        tmux("send-keys", "-t", "top", "m")
        wait_for(lambda s: any("sort mem" in l for l in s), "sort mem")
        # scrolling
        tmux("send-keys", "-t", "top", "Down")
        wait_for(lambda s: any(("2-" in l and footer in l) for l in s), "scrolled to row 2")
        # refresh: a new cycle shows up without a key
        seq = self.d.get("/v1/status").json()["last_cycle"]["seq"]
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True})
        self.assertEqual(r.status, 200, r)
        wait_for(lambda s: "cycle %d:" % (seq + 1) in s[0], "cycle %d" % (seq + 1))
        # a wider terminal: the decision's detail appears
        tmux("resize-window", "-t", "top", "-x", "160", "-y", "40")
        s = wait_for(lambda s: any(len(l) > 100 for l in s), "a 160-column screen")
        self.assertTrue(all(len(l) <= 160 for l in s))
        # q quits, exit 0, the terminal restored (alternate screen left)
        tmux("send-keys", "-t", "top", "q")
        s = wait_for(lambda s: any(l.startswith("top exited ") for l in s), "top's exit")
        self.assertIn("top exited 0", s)
        self.assertEqual(tmux("display-message", "-p", "-t", "top", "#{alternate_on}").stdout.strip(), "0")
        self.assertFalse(any("GUEST " in l for l in s), s)

    @unittest.skipIf(not TMUX, "tmux missing (Debian: tmux; make test-deps installs it)")
    def test_live_keeps_the_last_data_when_the_agent_goes(self):
        # a second agent of its own, stopped under the view
        tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        d = apilib.Daemon(tmp, apilib.compose_root(tmp)).start()
        self.addCleanup(d.stop)
        sock = "numaorch-top2-%d" % os.getpid()

        def tmux(*a, check=True):
            return subprocess.run([TMUX, "-L", sock, "-f", "/dev/null"] + list(a), capture_output=True, text=True,
                                  timeout=20, check=check, env=dict(os.environ, LC_ALL="C.UTF-8", TERM="xterm"))
        tmux("new-session", "-d", "-x", "80", "-y", "24", "-s", "top",
             "%s --socket %s top --delay 0.2" % (apilib.NUMAORCHCTL, d.sock))
        self.addCleanup(lambda: tmux("kill-server", check=False))
        deadline = time.time() + 30
        while time.time() < deadline and "of 9 guests" not in tmux("capture-pane", "-p", "-t", "top").stdout:
            time.sleep(0.1)
        self.assertIn("of 9 guests", tmux("capture-pane", "-p", "-t", "top").stdout)
        self.assertEqual(d.stop(), 0)
        deadline = time.time() + 30
        out = ""
        while time.time() < deadline:
            out = tmux("capture-pane", "-p", "-t", "top").stdout
            if "refresh failed" in out:
                break
            time.sleep(0.1)
        self.assertIn("refresh failed", out)
        self.assertIn("of 9 guests", out)
        tmux("send-keys", "-t", "top", "q")


if __name__ == "__main__":
    unittest.main()

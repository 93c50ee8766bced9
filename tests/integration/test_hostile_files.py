"""Hostile files against the real numaorchd (issue 14), on a fixture host
(no root needed for most): a configuration, drop-in or token file that is
a directory or a FIFO is a clear error at start, in --check-config and at
SIGHUP (the old configuration stays, the engine never blocks); the
decision log is never written through a symlink or in a directory others
can write; it is reopened on SIGHUP (logrotate); in advise mode a planned
move is recorded once, not every cycle; a warning that comes back every
cycle is logged once."""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

import apilib
import itlib

REASON = apilib.skip_reason()


wait_for = itlib.wait_for


def decisions(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in (json.loads(l) for l in f if l.strip()) if r.get("decision") != "cycle"]


@unittest.skipIf(REASON, REASON or "")
class HostileFiles(itlib.DaemonTest):
    def setUp(self):
        super().setUp()
        self.root = apilib.compose_root(self.tmp)

    def daemon(self, **kw):
        d = apilib.Daemon(self.tmp, self.root, **kw)
        self.addCleanup(d.stop)
        return d

    def check_config(self, conf, timeout=10):
        # A FIFO used to block here for ever: the timeout is the test.
        return subprocess.run(self.numaorchd("--check-config", "--config", conf), capture_output=True,
                              text=True, timeout=timeout)

    def test_config_and_dropins_must_be_regular_files(self):
        d = os.path.join(self.tmp, "confdir")
        os.mkdir(d)
        p = self.check_config(d)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertNotIn("configuration OK", p.stdout)
        self.assertIn("configuration file %s is a directory, not a regular file" % d, p.stderr)

        fifo = os.path.join(self.tmp, "conffifo")
        os.mkfifo(fifo)
        p = self.check_config(fifo)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("is a FIFO, not a regular file", p.stderr)
        # Starting with one: refused at once, too.
        p = subprocess.run(self.numaorchd("--config", fifo, "--root", self.root, "--socket", ""),
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("is a FIFO", p.stderr)

        conf = itlib.config_file(self.tmp, "[agent]\nmode = advise\n")
        os.mkdir(conf + ".d")
        os.mkfifo(os.path.join(conf + ".d", "50-x.conf"))
        p = self.check_config(conf)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("50-x.conf is a FIFO, not a regular file", p.stderr)
        os.unlink(os.path.join(conf + ".d", "50-x.conf"))
        os.mkdir(os.path.join(conf + ".d", "60-y.conf"))
        p = self.check_config(conf)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("60-y.conf is a directory", p.stderr)

    def test_long_config_line_is_an_error_not_split(self):
        # Debian's inih reads a line in 200 bytes: the tail of a longer
        # commented-out line became "mode = off".
        conf = itlib.config_file(self.tmp, "[agent]\nmode = advise\n#" + "x" * 198 + "mode = off\n")
        p = self.check_config(conf)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertNotIn("configuration OK", p.stdout)
        self.assertIn("%s:3: line longer than 198 characters" % conf, p.stderr)
        p = subprocess.run(self.numaorchd("--config", conf, "--root", self.root, "--socket", "", "--once"),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("line longer than", p.stderr)

    def test_listen_port_out_of_range_is_refused(self):
        # getaddrinfo took 99999 modulo 65536 and bound port 34463.
        conf = itlib.config_file(self.tmp, "[api]\nlisten = 127.0.0.1:99999\ntoken_file = /t\n")
        p = self.check_config(conf)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("%s:2: [api] listen: must be ADDR:PORT with a port 0..65535" % conf, p.stderr)
        d = self.daemon()
        d.extra = ["--listen", "127.0.0.1:99999"]
        p = subprocess.run(d.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--listen: must be ADDR:PORT with a port 0..65535", p.stderr)

    def test_token_file_fifo_is_refused_not_waited_on(self):
        d = self.daemon()
        os.unlink(d.token_file)
        os.mkfifo(d.token_file, 0o600)
        p = subprocess.run(d.args(), capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("token file %s is a FIFO, not a regular file" % d.token_file, p.stderr)
        p = subprocess.run(self.numaorchd("--check-config", "--config", d.conf, "--listen", "127.0.0.1:0",
                                          "--token-file", d.token_file), capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("is a FIFO", p.stderr)

    def test_reload_with_a_directory_or_fifo_keeps_the_old_config(self):
        d = self.daemon(conf="[agent]\nsample = 0.05\nmode = advise\n").start()
        self.assertEqual(d.get("/v1/status").json()["mode"], "advise")
        conf = d.conf
        os.rename(conf, conf + ".real")
        for kind in ("directory", "FIFO"):
            if kind == "directory":
                os.mkdir(conf)
            else:
                os.mkfifo(conf)
            offset = os.path.getsize(d.log)
            d.proc.send_signal(signal.SIGHUP)
            text = wait_for(lambda: "keeping the old configuration" in d.logtext(offset) and d.logtext(offset),
                            15, "the reload to be refused")
            self.assertIn("is a %s, not a regular file" % kind, text)
            self.assertNotIn("configuration reloaded", text)
            # The engine is not stuck: it still answers changes and cycles.
            self.assertEqual(d.get("/v1/status").json()["mode"], "advise")
            r = d.request("POST", "/v1/rebalance", {"dry_run": True})
            self.assertEqual(r.status, 200, r)
            h = d.get("/v1/health")
            self.assertEqual(h.status, 200, h)
            if kind == "directory":
                os.rmdir(conf)
            else:
                os.unlink(conf)
        t0 = time.time()
        self.assertEqual(d.stop(), 0)
        self.assertLess(time.time() - t0, 10)

    def test_decision_log_never_through_a_symlink_or_in_an_open_directory(self):
        victim = os.path.join(self.tmp, "victim")
        itlib.write(victim, "precious\n")
        link = os.path.join(self.tmp, "decisions.jsonl")
        os.symlink(victim, link)
        d = self.daemon()
        p = subprocess.run(d.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("decision log %s: " % link, p.stderr)
        self.assertIn("symlink", p.stderr)
        self.assertEqual(apilib.slurp(victim), "precious\n")
        os.unlink(link)

        openlog = os.path.join(self.tmp, "openlog")
        os.mkdir(openlog)
        os.chmod(openlog, 0o1777)   # like /tmp
        d2 = apilib.Daemon(self.tmp, self.root, extra=["--decision-log", os.path.join(openlog, "d.jsonl")])
        p = subprocess.run(d2.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("directory of decision log %s is writable by others (mode 1777)" % openlog, p.stderr)

    def test_api_socket_never_in_a_directory_others_can_write(self):
        # Another user who can write the socket's directory could replace
        # the stale socket the agent unlinks at start, or the socket.
        open_dir = os.path.join(self.tmp, "opensock")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o1777)   # like /tmp
        d = self.daemon()
        d.sock = os.path.join(open_dir, "api.sock")
        p = subprocess.run(d.args(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("API socket directory %s is writable by others (mode 1777)" % open_dir, p.stderr)
        self.assertFalse(os.path.exists(d.sock))
        # ... and a fresh directory made for it is fine (0755, ours).
        d.sock = os.path.join(self.tmp, "new", "sub", "api.sock")
        d.start()
        self.assertEqual(d.get("/v1/health").status, 200)
        self.assertEqual(os.stat(os.path.dirname(d.sock)).st_mode & 0o777, 0o755)

    def test_decision_log_reopened_on_sighup_for_logrotate(self):
        d = self.daemon(conf="[agent]\nsample = 0.05\nmode = advise\n").start()
        path = os.path.join(self.tmp, "decisions.jsonl")
        self.assertEqual(d.request("POST", "/v1/rebalance", {}).status, 200)
        before = wait_for(lambda: decisions(path), 10, "records in the decision log")
        os.rename(path, path + ".1")     # what logrotate does
        offset = os.path.getsize(d.log)
        d.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "configuration reloaded" in d.logtext(offset), 15, "the reload")
        self.assertTrue(os.path.exists(path), "the decision log was not reopened")
        self.assertEqual(d.request("POST", "/v1/rebalance", {}).status, 200)
        after = wait_for(lambda: decisions(path), 10, "records in the new file")
        self.assertEqual(len(decisions(path + ".1")), len(before))
        self.assertGreater(min(r["id"] for r in after), max(r["id"] for r in before))
        self.assertEqual(d.stop(), 0)

    def test_policy_after_sighup_is_the_new_one_at_once(self):
        # The interval is an hour: GET /v1/policy used to show the old
        # policy until the next cycle. A PUT's value is the operator's and
        # survives the reload (issue 44); the file's new values show at once.
        d = self.daemon(conf="[agent]\nsample = 0.05\nmode = advise\n[policy]\nmax_moves = 3\n").start()
        pol = d.get("/v1/policy").json()
        self.assertEqual(pol["max_moves"], 3)
        cycles = d.get("/v1/status").json()["cycles"]
        self.assertEqual(d.request("PUT", "/v1/policy", {"max_util": 85}).status, 200)
        self.assertEqual(d.get("/v1/policy").json()["max_util"], 85)
        for want in (7, 9):
            with open(d.conf, "w") as f:
                f.write("[agent]\nsample = 0.05\nmode = advise\n[policy]\nmax_moves = %d\n"
                        "[libvirt]\nenabled = no\n" % want)
            offset = os.path.getsize(d.log)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "configuration reloaded" in d.logtext(offset), 15, "the reload")
            pol = d.get("/v1/policy").json()
            self.assertEqual((pol["max_moves"], pol["max_util"]), (want, 85))
            st = d.get("/v1/status").json()
            self.assertEqual(st["in_force"]["max_moves"], want)
        self.assertEqual(d.get("/v1/status").json()["cycles"], cycles, "a cycle ran: the test proves nothing")
        self.assertEqual(d.stop(), 0)

    def test_broken_stderr_pipe_does_not_kill_the_daemon(self):
        # `numaorchd ... 2>&1 | head -n 1`: the reader goes after one line.
        d = self.daemon(conf="[agent]\nsample = 0.05\nmode = advise\n")
        p = subprocess.Popen(d.args(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        self.assertTrue(p.stderr.readline())
        p.stderr.close()
        wait_for(lambda: os.path.exists(d.sock) or p.poll() is not None, 60, "the API socket")
        d.proc = p
        wait_for(lambda: p.poll() is not None or d.get("/v1/health").json()["ready"], 60, "the first cycle")
        # Each of these logs lines into the closed pipe.
        for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGHUP):
            p.send_signal(sig)
            time.sleep(0.3)
            self.assertIsNone(p.poll(), "numaorchd died (rc %s) logging to a closed pipe" % p.returncode)
        self.assertEqual(d.request("POST", "/v1/rebalance", {}).status, 200)
        self.assertEqual(d.get("/v1/health").status, 200)
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=30), 0)
        d.proc = None

    def test_decision_log_reopened_on_sigusr1_without_a_reload(self):
        # logrotate's postrotate sends SIGUSR1: the file is reopened, the
        # configuration is not re-read (no migration stopped).
        d = self.daemon(conf="[agent]\nsample = 0.05\nmode = advise\n").start()
        path = os.path.join(self.tmp, "decisions.jsonl")
        self.assertEqual(d.request("POST", "/v1/rebalance", {}).status, 200)
        before = wait_for(lambda: decisions(path), 10, "records in the decision log")
        os.rename(path, path + ".1")
        offset = os.path.getsize(d.log)
        d.proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: "decision log reopened" in d.logtext(offset), 15, "the reopen")
        self.assertTrue(d.alive())
        self.assertTrue(os.path.exists(path), "the decision log was not reopened")
        self.assertNotIn("configuration reloaded", d.logtext(offset))
        self.assertEqual(d.request("POST", "/v1/rebalance", {}).status, 200)
        after = wait_for(lambda: decisions(path), 10, "records in the new file")
        self.assertEqual(len(decisions(path + ".1")), len(before))
        self.assertGreater(min(r["id"] for r in after), max(r["id"] for r in before))
        self.assertEqual(d.stop(), 0)

    def test_advise_mode_records_a_move_once_and_warnings_once(self):
        # The fixture plans moves and has a malformed memory.numa_stat,
        # the same every cycle.
        d = self.daemon(conf="[agent]\nsample = 0.05\nmode = advise\n",
                        extra=["--interval", "0.1"]).start()
        wait_for(lambda: d.get("/v1/status").json()["cycles"] >= 12, 60, "12 cycles")
        self.assertEqual(d.stop(), 0)
        recs = decisions(os.path.join(self.tmp, "decisions.jsonl"))
        advised = [r["guest"] for r in recs if r["decision"] == "advised"]
        self.assertTrue(advised, recs[:3])
        dups = sorted({g for g in advised if advised.count(g) > 1})
        self.assertEqual(dups, [], "advised again every cycle: %s" % {g: advised.count(g) for g in dups})
        log = d.logtext()
        # The shipped mode says what it means and the one command out of it.
        self.assertEqual(log.count("to let it act: numaorchctl policy set mode=enforce"), 1, log[:2000])
        for g in set(advised):
            self.assertEqual(log.count("would move %s " % g), 1, g)
        warn = "memory.numa_stat: malformed, memory not measured"
        self.assertIn(warn, log)
        first = [l for l in log.splitlines() if warn in l]
        self.assertLessEqual(len(first), 2, first)   # once, and once more with the count at 10 cycles
        self.assertTrue(any("(the same in each of the last 10 cycles)" in l for l in first), first)


if __name__ == "__main__":
    unittest.main(verbosity=2)

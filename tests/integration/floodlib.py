"""A bounded connection flood against the real daemon, loopback and unix
socket only: FloodHolder keeps N connections open on one listener (each
sends a request's first line, then one header line a second, and never
finishes: the slow-loris pattern; or nothing at all: idle), reopening
every one the server drops, for as long as it runs. Used by
test_api_flood.py; the numbers it collects (connections held, reopens)
go into the test's output."""
import errno
import os
import resource
import selectors
import socket
import threading
import time


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= need


class FloodHolder(threading.Thread):
    def __init__(self, family, addr, n, mode="slow", source=None, duration=30.0):
        super().__init__(daemon=True)
        self.family, self.addr, self.n, self.mode, self.source = family, addr, n, mode, source
        self.duration = duration
        self.stop_ev = threading.Event()
        self.sel = selectors.DefaultSelector()
        self.socks = {}          # sock -> [state, last_send]
        self.opened = 0
        self.dropped = 0
        self.connect_errors = 0
        self.max_held = 0
        self.samples = []        # connected sockets, sampled

    def held(self):
        return sum(1 for st in self.socks.values() if st[0] == "up")

    def _open(self):
        s = socket.socket(self.family, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            if self.source:
                s.bind((self.source, 0))
            s.connect(self.addr)
        except BlockingIOError:
            pass
        except OSError as e:
            if e.errno not in (errno.EINPROGRESS, errno.EAGAIN):
                self.connect_errors += 1
                s.close()
                return False
            if e.errno == errno.EAGAIN and self.family == socket.AF_UNIX:
                # The backlog is full: count it, retry later.
                self.connect_errors += 1
                s.close()
                return False
        self.opened += 1
        self.socks[s] = ["connecting", 0.0]
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
        return True

    def _close(self, s):
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        self.socks.pop(s, None)
        s.close()

    def run(self):
        end = time.monotonic() + self.duration
        while not self.stop_ev.is_set() and time.monotonic() < end:
            missing = self.n - len(self.socks)
            for _ in range(min(missing, 200)):
                if not self._open():
                    break
            now = time.monotonic()
            for key, ev in self.sel.select(timeout=0.05):
                s = key.fileobj
                st = self.socks.get(s)
                if st is None:
                    continue
                if ev & selectors.EVENT_READ:
                    try:
                        data = s.recv(4096)
                    except OSError:
                        data = b""
                    if not data:
                        if st[0] == "up":
                            self.dropped += 1
                        else:
                            self.connect_errors += 1
                        self._close(s)
                        continue
                if st[0] == "connecting" and ev & selectors.EVENT_WRITE:
                    if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                        self.connect_errors += 1
                        self._close(s)
                        continue
                    st[0] = "up"
                    self.sel.modify(s, selectors.EVENT_READ)
                    if self.mode == "slow":
                        try:
                            s.send(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n")
                        except OSError:
                            self.dropped += 1
                            self._close(s)
                            continue
                    st[1] = now
            if self.mode == "slow":
                for s, st in list(self.socks.items()):
                    if st[0] == "up" and now - st[1] >= 1.0:
                        st[1] = now
                        try:
                            s.send(b"X-Slow: 1\r\n")
                        except OSError:
                            self.dropped += 1
                            self._close(s)
            h = self.held()
            self.max_held = max(self.max_held, h)
            self.samples.append(h)
        for s in list(self.socks):
            self._close(s)

    def stop(self):
        self.stop_ev.set()
        self.join(30)


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return int(out["Threads"]), int(out["VmRSS"].split()[0])


def open_sockets(pid):
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
        except OSError:
            pass
    return n


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))
    return xs[k]

"""Helpers for the REST API tests: a fixture host (no root needed), the real
numaorchd started on a private unix socket and a TCP port, and a raw
HTTP/1.1 client that sends exactly the bytes a test wants (bad paths,
non-UTF-8, wrong lengths) — urllib and http.client refuse or "fix" those.
"""
import json
import os
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import time
import unittest

import itlib

FIX = os.path.join(itlib.REPO, "tests", "fixtures")
NUMAORCHCTL = os.path.join(itlib.BUILD, "numaorchctl")
OPENAPI = os.path.join(itlib.REPO, "api", "openapi.yaml")
TOKEN = "t0k3n-for-the-api-tests-0123456789abcdef"


def skip_reason(test_build=False):
    """None if the daemon (TEST_BUILD: its test build) is built, else why not."""
    if not os.path.exists(itlib.NUMAORCHD):
        return "build/numaorchd missing (run make)"
    if test_build and not os.path.exists(itlib.NUMAORCHD_TEST):
        return "build/numaorchd-test missing (make build/numaorchd-test)"
    return None


def compose_root(tmp):
    """A 2-node host with a cgroup v2 tree holding every runtime; the test
    build of the daemon (itlib.NUMAORCHD_TEST) logs its writes in
    sys/fs/cgroup/.numaorch-writes."""
    root = os.path.join(tmp, "host")
    shutil.copytree(os.path.join(FIX, "host-2node", "sys"), os.path.join(root, "sys"))
    shutil.copytree(os.path.join(FIX, "host-2node", "proc"), os.path.join(root, "proc"))
    shutil.copytree(os.path.join(FIX, "cg-v2", "sys", "fs", "cgroup"), os.path.join(root, "sys", "fs", "cgroup"))
    shutil.copytree(os.path.join(FIX, "cg-v2", "run"), os.path.join(root, "run"))
    itlib.write(os.path.join(root, "sys", "fs", "cgroup", ".numaorch-writes"), "")
    # a cpuset.cpus written shows in cpuset.cpus.effective, as the kernel
    # shows it (tests/hooks/cgwfixture_hooks.c)
    itlib.write(os.path.join(root, "sys", "fs", "cgroup", ".numaorch-effective"), "")
    return root


class Resp:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case names
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<%d %s %r>" % (self.status, self.headers.get("content-type"), self.body[:300])


def _read_response(sock, head_only=False):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed before the response headers: %r" % buf)
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    proto, code, *reason = lines[0].split(" ", 2)
    headers = {}
    for l in lines[1:]:
        k, v = l.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    if head_only:
        return Resp(int(code), " ".join(reason), headers, b"")
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        body = rest[:n]
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += sock.recv(65536)
            size, rest = rest.split(b"\r\n", 1)
            n = int(size.split(b";")[0], 16)
            while len(rest) < n + 2:
                rest += sock.recv(65536)
            body += rest[:n]
            rest = rest[n + 2:]
            if n == 0:
                break
    else:
        body = rest
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return Resp(int(code), " ".join(reason), headers, body)


class Daemon:
    """The real numaorchd on a fixture root, with its API on a unix socket
    and on 127.0.0.1 with a bearer token (and TLS when tls=(cert, key)).
    binary=itlib.NUMAORCHD_TEST runs the test build (its writes logged)."""

    def __init__(self, tmp, root, tls=None, extra=(), conf="[agent]\nsample = 0.05\n",
                 binary=None):
        self.tmp = tmp
        self.root = root
        self.sock = os.path.join(tmp, "run", "api.sock")
        self.state = os.path.join(tmp, "state")
        self.token_file = os.path.join(tmp, "token")
        self.log = os.path.join(tmp, "numaorchd.log")
        self.conf = itlib.config_file(tmp, conf + "[libvirt]\nenabled = no\n")
        self.tls = tls
        self.extra = list(extra)
        self.binary = binary or itlib.NUMAORCHD
        self.proc = None
        self.port = None
        if not os.path.exists(self.token_file):
            itlib.write(self.token_file, TOKEN + "\n")
            os.chmod(self.token_file, 0o600)

    def args(self):
        a = itlib.numaorchd("--config", self.conf, "--root", self.root, "--socket", self.sock,
                            "--listen", "127.0.0.1:0", "--token-file", self.token_file,
                            "--interval", "3600", "--decision-log", os.path.join(self.tmp, "decisions.jsonl"),
                            state_dir=self.state, binary=self.binary)
        if self.tls:
            a += ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]]
        return a + self.extra

    def start(self, wait_ready=True):
        self.logf = open(self.log, "a")
        # Only this run's lines count: an earlier run's are in the same file.
        offset = os.path.getsize(self.log)
        self.proc = subprocess.Popen(self.args(), stdout=self.logf, stderr=self.logf)
        # Start-up includes the first cycle's CPU sample (1 s by default)
        # and, on a new or busy machine, much more: a deadline, not a bet.
        deadline = time.time() + 60
        self.port = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("numaorchd exited %d:\n%s" % (self.proc.returncode, self.logtext()))
            text = self.logtext(offset)
            for line in text.splitlines():
                if "API listening on http" in line and "(port " in line:
                    self.port = int(line.split("(port ")[1].split(")")[0])
            if self.port and "API listening on unix socket" in text:
                break
            time.sleep(0.02)
        if not self.port:
            raise RuntimeError("numaorchd did not start its API:\n" + self.logtext())
        if wait_ready:
            r = None
            while time.time() < deadline:
                r = self.get("/v1/health")
                if r.status == 200 and r.json()["ready"]:
                    return self
                time.sleep(0.02)
            raise RuntimeError("numaorchd never finished its first cycle (last health answer %r):\n%s"
                               % (r, self.logtext(offset)))
        return self

    def quiesce(self, quiet=1.5, timeout=15):
        """Wait until no cycle has run for QUIET seconds: a cycle an
        earlier request prompted (a guest-policy change, an event) has
        run by then, since a prompted cycle starts no later than a second
        after the last one ended. For a test that counts cycles, writes or
        log lines a pending cycle would add to."""
        deadline = time.time() + timeout
        last, since = None, time.time()
        while time.time() < deadline:
            n = self.get("/v1/status").json()["cycles"]
            if n != last:
                last, since = n, time.time()
            elif time.time() - since >= quiet:
                return
            time.sleep(0.1)
        raise AssertionError("numaorchd still cycling after %s s (cycles %s)" % (timeout, last))

    def logtext(self, offset=0):
        with open(self.log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.logf.close()
        rc = self.proc.returncode if self.proc else None
        self.proc = None
        return rc

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    # --- raw HTTP -----------------------------------------------------
    def connect(self, tcp=False, timeout=10):
        if tcp:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
            if self.tls:
                ctx = ssl.create_default_context(cafile=self.tls[0])
                s = ctx.wrap_socket(s, server_hostname="localhost")
            return s
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.sock)
        return s

    def raw(self, data, tcp=False, head_only=False, timeout=10):
        """Send DATA (bytes: a whole request) on a new connection."""
        s = self.connect(tcp, timeout)
        try:
            s.sendall(data)
            return _read_response(s, head_only)
        finally:
            s.close()

    def request(self, method, target, body=None, tcp=False, token=TOKEN, headers=None,
                content_type="application/json", timeout=30):
        if isinstance(target, str):
            target = target.encode()
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        h = {"Host": "localhost", "Connection": "close"}
        if tcp and token is not None:
            h["Authorization"] = "Bearer " + token
        if body is not None:
            h["Content-Length"] = str(len(body))
            if content_type:
                h["Content-Type"] = content_type
        h.update(headers or {})
        head = method.encode() + b" " + target + b" HTTP/1.1\r\n"
        for k, v in h.items():
            if v is not None:
                head += k.encode() + b": " + (v if isinstance(v, bytes) else v.encode()) + b"\r\n"
        return self.raw(head + b"\r\n" + (body or b""), tcp=tcp, head_only=method == "HEAD", timeout=timeout)

    def get(self, target, **kw):
        return self.request("GET", target, **kw)

    def ctl(self, *args, tcp=False, token_file=None, timeout=60, env=None):
        cmd = [NUMAORCHCTL]
        if tcp:
            cmd += ["--url", "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port),
                    "--token-file", token_file or self.token_file]
            if self.tls:
                cmd += ["--cacert", self.tls[0]]
        else:
            cmd += ["--socket", self.sock]
        return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout,
                              env=env)


class ClassDaemon(unittest.TestCase):
    """Base for test classes sharing one numaorchd on a fresh fixture root
    (cls.tmp, cls.root, cls.d); it must stop cleanly (exit 0) at the end.
    A subclass sets EXTRA (more daemon arguments), BINARY (the test build,
    itlib.NUMAORCHD_TEST, to see the writes) and overrides prepare_root()
    to add to the fixture before the daemon starts."""

    EXTRA = ()
    BINARY = None

    @classmethod
    def prepare_root(cls, root):
        pass

    @classmethod
    def setUpClass(cls):
        cls.tmp = itlib.mktemp()
        try:
            cls.root = compose_root(cls.tmp)
            cls.prepare_root(cls.root)
            cls.d = Daemon(cls.tmp, cls.root, extra=cls.EXTRA, binary=cls.BINARY).start()
        except BaseException:
            shutil.rmtree(cls.tmp, True)
            raise

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        shutil.rmtree(cls.tmp, True)
        if rc != 0:
            raise AssertionError("numaorchd did not stop cleanly (%s)" % rc)


def openapi_routes():
    """{(METHOD, path)} from api/openapi.yaml, with PyYAML (python3-yaml)."""
    import yaml
    with open(OPENAPI) as f:
        spec = yaml.safe_load(f)
    out = set()
    for path, item in spec["paths"].items():
        for m in item:
            if m in ("get", "put", "post", "delete", "patch", "head", "options"):
                out.add((m.upper(), path))
    return spec, out


def served_routes():
    p = subprocess.run([itlib.NUMAORCHD, "--list-routes"], capture_output=True, text=True, timeout=10)
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    return {tuple(l.split(" ", 1)) for l in p.stdout.splitlines() if l.strip()}


def stored_policies(state_dir):
    """{guest: record} as the store on disk holds them: the base file
    (guest-policies.json) with its journal (guest-policies.journal, one
    {"id", "policy"} line per change since) replayed over it. A last line
    without its newline was cut short by a crash and never acknowledged."""
    with open(os.path.join(state_dir, "guest-policies.json")) as f:
        doc = json.load(f)
    assert doc["format"] == "numaorch-guest-policies" and doc["version"] == 1, doc
    out = dict(doc["guests"])
    jpath = os.path.join(state_dir, "guest-policies.journal")
    if os.path.exists(jpath):
        with open(jpath) as f:
            text = f.read()
        for line in text.split("\n")[:-1]:
            rec = json.loads(line)
            if rec["policy"] is None:
                out.pop(rec["id"], None)
            else:
                out[rec["id"]] = rec["policy"]
    return out


def slurp(path):
    with open(path) as f:
        return f.read()


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


# --- responses against api/openapi.yaml ---------------------------------
def _to_json_schema(o):
    """OpenAPI 3.0 schema objects -> JSON Schema draft 4: `nullable: true`
    becomes anyOf [null, the rest]; everything else is the same keyword."""
    if isinstance(o, list):
        return [_to_json_schema(x) for x in o]
    if not isinstance(o, dict):
        return o
    o = {k: _to_json_schema(v) for k, v in o.items()}
    if o.pop("nullable", False):
        return {"anyOf": [{"type": "null"}, o]}
    return o


class SpecChecker:
    """Validates live responses against the schema the spec gives for
    (method, path template, status, content type); python3-jsonschema."""

    def __init__(self):
        import jsonschema
        import yaml
        with open(OPENAPI) as f:
            self.spec = yaml.safe_load(f)
        self.root = _to_json_schema(self.spec)
        self.jsonschema = jsonschema
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.resolver = jsonschema.RefResolver.from_schema(self.root)
        self.checked = set()

    def _deref(self, o):
        while isinstance(o, dict) and "$ref" in o:
            _, o = self.resolver.resolve(o["$ref"])
        return o

    def check(self, method, template, r):
        """Raise AssertionError if response R does not match the spec."""
        op = self.spec["paths"][template][method.lower() if method != "HEAD" else "get"]
        responses = op["responses"]
        key = str(r.status) if str(r.status) in responses else "default"
        if key not in responses:
            raise AssertionError("%s %s: status %d is not documented (%s)" % (method, template, r.status,
                                                                              sorted(responses)))
        resp = self._deref(_to_json_schema(responses[key]))
        content = resp.get("content")
        ctype = r.headers.get("content-type", "").split(";")[0].strip()
        if method == "HEAD" or r.status == 204:
            self.checked.add((method, template, r.status))
            return
        if not content:
            if r.body:
                raise AssertionError("%s %s %d: body given where the spec has none: %r"
                                     % (method, template, r.status, r.body[:200]))
            return
        if ctype not in content:
            raise AssertionError("%s %s %d: content type %r, spec has %s"
                                 % (method, template, r.status, ctype, sorted(content)))
        schema = content[ctype].get("schema")
        if schema is not None and ctype.endswith("json"):
            body = json.loads(r.body)
            v = self.jsonschema.Draft4Validator(schema, resolver=self.resolver)
            errs = sorted(v.iter_errors(body), key=lambda e: list(e.path))
            if errs:
                raise AssertionError("%s %s %d: the response does not match its schema:\n%s\nbody: %s" % (
                    method, template, r.status,
                    "\n".join("  at /%s: %s" % ("/".join(map(str, e.path)), e.message[:300]) for e in errs[:10]),
                    r.body[:600]))
        self.checked.add((method, template, r.status))

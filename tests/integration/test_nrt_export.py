"""numaorch-nrt-export against the real numaorchd on a fixture host and a
fake Kubernetes API server (no root needed).

The fake (FakeAPIServer, below) speaks what a real API server does for a
custom resource: HTTPS with a certificate made here by openssl, a bearer
token checked on every request (401 with a Status object otherwise), the
resource's path, JSON content on writes (415 otherwise), 404 for an object
that does not exist, 201 on a create (409 AlreadyExists if it does), 200
on an update whose metadata.resourceVersion is the stored one (409
Conflict otherwise), resourceVersion incremented on each write. Every body
written is validated against the NodeResourceTopology v1alpha2 CRD schema
the repository holds (tests/fixtures/k8s-nrt/, as test_api_topology.py
does): an invalid body is refused with 422 and recorded, and each test
ends by asserting none was.

The exporter then: creates the object; updates it when the agent's
reading changes (a guest appears) and not while it does not; re-reads and
retries once after a 409, and after a second one backs off and tries
again later; refuses a server its CA does not vouch for; with a wrong
token logs the server's answer once, keeps running and retrying, and uses
the new token once the file is replaced (as the kubelet rotates a
projected token); exits promptly and cleanly on SIGTERM.
"""
import http.server
import json
import os
import shutil
import signal
import ssl
import subprocess
import threading
import time
import unittest

import apilib
import itlib

EXPORTER = os.path.join(itlib.BUILD, "numaorch-nrt-export")
CRD_SCHEMA = os.path.join(apilib.FIX, "k8s-nrt", "v1alpha2-schema.yaml")
COLLECTION = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
NODE = "worker-3.example"
GOOD_TOKEN = "eyJhbGciOiJSUzI1NiJ9.service-account-token-0123456789"


def _reason():
    r = apilib.skip_reason()
    if r:
        return r
    if not os.path.exists(EXPORTER):
        return "build/numaorch-nrt-export missing (run make)"
    if not shutil.which("openssl"):
        return "openssl not installed: cannot make the fake API server's certificate"
    try:
        import jsonschema  # noqa: F401
        import yaml  # noqa: F401
    except ImportError as e:
        return "python3-jsonschema / python3-yaml missing: %s" % e
    return None


REASON = _reason()


def make_cert(tmp, name):
    cert, key = os.path.join(tmp, name + ".crt"), os.path.join(tmp, name + ".key")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=kubernetes",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("openssl: " + p.stderr)
    return cert, key


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class FakeAPIServer:
    """The noderesourcetopologies resource of a Kubernetes API server."""

    def __init__(self, cert, key):
        import yaml
        with open(CRD_SCHEMA) as f:
            self.schema = yaml.safe_load(f)
        self.lock = threading.Lock()
        self.token = GOOD_TOKEN
        self.objects = {}
        self.rv = 100
        self.log = []          # (method, path, status, token)
        self.invalid = []      # what a body failed validation with
        self.conflicts = 0     # how many next writes another writer races (409)
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                fake.handle(self)

            do_POST = do_PUT = do_DELETE = do_GET

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = "https://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- what a real API server checks ------------------------------------
    def validate(self, obj):
        import jsonschema
        from test_api_topology import unknown_fields
        errs = ["%s: %s" % (list(e.path), e.message)
                for e in jsonschema.Draft4Validator(self.schema).iter_errors(obj)]
        errs += ["unknown field %s" % f for f in unknown_fields(obj, self.schema)]
        meta = obj.get("metadata", {}) if isinstance(obj, dict) else {}
        if obj.get("apiVersion") != "topology.node.k8s.io/v1alpha2" or obj.get("kind") != "NodeResourceTopology":
            errs.append("apiVersion/kind %r/%r" % (obj.get("apiVersion"), obj.get("kind")))
        if not meta.get("name"):
            errs.append("metadata.name missing")
        return errs

    def handle(self, h):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        auth = h.headers.get("Authorization", "")
        tok = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        with self.lock:
            code, reply = self.route(h, body, tok)
            self.log.append((h.command, h.path, code, tok))
        data = json.dumps(reply).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        try:
            h.wfile.write(data)
        except (OSError, ssl.SSLError):
            pass  # the client gave up (a test stopping the exporter mid-request)

    def route(self, h, body, tok):
        if tok != self.token:
            return 401, status(401, "Unauthorized", "Unauthorized")
        path = h.path.split("?")[0]
        name = path[len(COLLECTION) + 1:] if path.startswith(COLLECTION + "/") else None
        if path != COLLECTION and not name:
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        if h.command in ("POST", "PUT"):
            if h.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
                return 415, status(415, "UnsupportedMediaType", "unsupported media type")
            try:
                obj = json.loads(body)
            except ValueError as e:
                return 400, status(400, "BadRequest", "not JSON: %s" % e)
            errs = self.validate(obj)
            if errs:
                self.invalid.append(errs)
                return 422, status(422, "Invalid", "; ".join(errs))
        if h.command == "GET" and name:
            if name not in self.objects:
                return 404, status(404, "NotFound",
                                   'noderesourcetopologies.topology.node.k8s.io "%s" not found' % name)
            return 200, self.objects[name]
        if h.command == "POST" and path == COLLECTION:
            name = obj["metadata"]["name"]
            if self.conflicts or name in self.objects:
                self.conflicts = max(0, self.conflicts - 1)
                return 409, status(409, "AlreadyExists",
                                   'noderesourcetopologies.topology.node.k8s.io "%s" already exists' % name)
            if obj["metadata"].get("resourceVersion"):
                return 400, status(400, "BadRequest", "resourceVersion should not be set on objects to be created")
            return 201, self.store(name, obj)
        if h.command == "PUT" and name:
            if obj["metadata"]["name"] != name:
                return 400, status(400, "BadRequest", "the name of the object does not match the name on the URL")
            if name not in self.objects:
                return 404, status(404, "NotFound", "not found")
            if self.conflicts:
                # Another writer got there first.
                self.conflicts -= 1
                self.store(name, dict(self.objects[name]))
            if obj["metadata"].get("resourceVersion") != self.objects[name]["metadata"]["resourceVersion"]:
                return 409, status(409, "Conflict",
                                   'Operation cannot be fulfilled on noderesourcetopologies.topology.node.k8s.io '
                                   '"%s": the object has been modified; please apply your changes to the latest '
                                   'version and try again' % name)
            return 200, self.store(name, obj)
        return 405, status(405, "MethodNotAllowed", "the server does not allow this method")

    def store(self, name, obj):
        self.rv += 1
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[name] = obj
        return obj

    def writes(self):
        with self.lock:
            return [e for e in self.log if e[0] in ("POST", "PUT")]

    def get(self, name):
        with self.lock:
            return json.loads(json.dumps(self.objects.get(name)))


def wait_for(what, cond, timeout=30):
    return itlib.wait_for(cond, timeout, what)


def zone_guests(obj):
    return sum(int(a["value"]) for z in obj["zones"] for a in z["attributes"] if a["name"] == "numaorch.io/guests")


@unittest.skipIf(REASON, REASON or "")
class NrtExport(apilib.ClassDaemon):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cert, cls.key = make_cert(cls.tmp, "apiserver")

    def setUp(self):
        self.api = FakeAPIServer(self.cert, self.key)
        self.addCleanup(self.api.stop)
        self.sa = os.path.join(self.tmp, "sa-%s" % self._testMethodName)
        os.makedirs(self.sa)
        self.token_file = os.path.join(self.sa, "token")
        itlib.write(self.token_file, GOOD_TOKEN)
        self.exp = None

    def tearDown(self):
        if self.exp and self.exp.poll() is None:
            self.exp.kill()
            self.exp.wait()
        # Every body the exporter wrote passed the CRD schema.
        self.assertEqual(self.api.invalid, [])

    def start(self, *extra, cacert=None):
        self.explog = os.path.join(self.sa, "exporter.log")
        env = dict(os.environ, NODE_NAME=NODE)
        env.pop("KUBERNETES_SERVICE_HOST", None)
        f = open(self.explog, "a")
        self.addCleanup(f.close)
        self.exp = subprocess.Popen([EXPORTER, "--socket", self.d.sock, "--server", self.api.url,
                                     "--token-file", self.token_file, "--cacert", cacert or self.cert,
                                     "--interval", "1", "--backoff-max", "2", "--timeout", "5"] + list(extra),
                                    stdout=f, stderr=f, env=env)
        return self.exp

    def log(self):
        with open(self.explog) as f:
            return f.read()

    def wait_log(self, text, timeout=15):
        return wait_for("%r in the exporter's log" % text, lambda: text in self.log(), timeout)

    def alive(self):
        self.assertIsNone(self.exp.poll(), "the exporter exited:\n" + self.log())

    def add_guest(self, name):
        cg = os.path.join(self.root, "sys", "fs", "cgroup")
        shutil.copytree(os.path.join(cg, "lxc.payload.db"), os.path.join(cg, name))
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True})
        self.assertEqual(r.status, 200, r)

    def test_created_then_updated_on_change_only(self):
        self.d.quiesce()
        self.start()
        obj = wait_for("the object created", lambda: self.api.get(NODE))
        self.assertEqual([(m, s) for m, _, s, _ in self.api.writes()], [("POST", 201)])
        self.assertEqual(self.api.log[0][:3], ("GET", COLLECTION + "/" + NODE, 404))
        self.assertEqual(obj["metadata"]["name"], NODE)
        self.assertEqual(obj["metadata"]["labels"], {"app.kubernetes.io/managed-by": "numaorch-nrt-export"})
        self.assertNotIn("ownerReferences", obj["metadata"])
        agent = self.d.get("/v1/topology").json()
        self.assertEqual(obj["zones"], agent["zones"])
        self.wait_log("created (first), resourceVersion %s" % obj["metadata"]["resourceVersion"])
        # Nothing changes on the host: nothing is written, though the agent is read every second.
        time.sleep(3.5)
        self.assertEqual(len(self.api.writes()), 1, self.api.log)
        # A guest appears: the zones' attributes change, the object follows with a PUT.
        before = zone_guests(obj)
        self.add_guest("lxc.payload.nrt-new")
        obj2 = wait_for("the object updated", lambda: (lambda o: o if zone_guests(o) != before else None)
                        (self.api.get(NODE)))
        self.assertEqual(zone_guests(obj2), before + 1)
        self.assertEqual(self.api.writes()[-1][:3], ("PUT", COLLECTION + "/" + NODE, 200))
        self.assertGreater(int(obj2["metadata"]["resourceVersion"]), int(obj["metadata"]["resourceVersion"]))
        self.wait_log("updated (changed)")
        self.alive()

    def test_conflict_read_again_and_retried(self):
        # An object already there (a previous run's), and another writer
        # racing the exporter's first PUT: 409, GET again, PUT again.
        agent = self.d.get("/v1/topology").json()
        agent["metadata"] = {"name": NODE}
        self.api.store(NODE, agent)
        self.api.conflicts = 1
        self.start()
        wait_for("an update", lambda: any(s == 200 for m, _, s, _ in self.api.writes()))
        self.assertEqual([(m, s) for m, _, s, _ in self.api.log][:4],
                         [("GET", 200), ("PUT", 409), ("GET", 200), ("PUT", 200)])
        self.wait_log("updated (first)")
        self.assertIn("reading it again", self.log())
        self.assertNotIn("error", self.log())
        # Two conflicts in a row: that round fails (logged with the
        # server's message), the exporter waits and succeeds later.
        self.api.conflicts = 2
        n = len(self.api.log)
        self.add_guest("lxc.payload.nrt-race")
        wait_for("a later update", lambda: [s for m, _, s, _ in self.api.log[n:] if m == "PUT"][-1:] == [200])
        self.assertEqual([(m, s) for m, _, s, _ in self.api.log[n:n + 6]],
                         [("GET", 200), ("PUT", 409), ("GET", 200), ("PUT", 409), ("GET", 200), ("PUT", 200)])
        self.assertIn("error: PUT noderesourcetopologies/%s: 409: Operation cannot be fulfilled" % NODE, self.log())
        self.wait_log("updated (retry)")
        self.alive()

    def test_wrong_token_then_rotated(self):
        itlib.write(self.token_file, "an-expired-token")
        self.start()
        wait_for("two refused attempts", lambda: sum(1 for e in self.api.log if e[2] == 401) >= 2)
        self.alive()
        self.assertIsNone(self.api.get(NODE))
        errors = [l for l in self.log().splitlines() if "error:" in l]
        # Clear, and said once while it repeats.
        self.assertEqual(len(errors), 1, self.log())
        self.assertIn("GET noderesourcetopologies/%s: 401: Unauthorized" % NODE, errors[0])
        self.assertIn("refused the token", errors[0])
        # Rotated as the kubelet does: a new file takes the old one's name.
        new = os.path.join(self.sa, "..token.new")
        itlib.write(new, GOOD_TOKEN + "\n")
        os.replace(new, self.token_file)
        wait_for("the object created with the new token", lambda: self.api.get(NODE), timeout=15)
        self.assertEqual(self.api.writes()[-1][3], GOOD_TOKEN)
        self.wait_log("created (retry)")
        self.assertIn("token file %s changed" % self.token_file, self.log())
        self.assertNotIn(GOOD_TOKEN, self.log())
        self.alive()

    def test_server_not_vouched_for_by_the_ca(self):
        other, _ = make_cert(self.sa, "other-ca")
        self.start(cacert=other)
        wait_for("the TLS failure logged", lambda: "error:" in self.log())
        self.assertIn("cannot talk to the API server at %s" % self.api.url, self.log())
        self.assertEqual(self.api.log, [])  # no request got through
        time.sleep(1.5)
        self.alive()

    def test_sigterm_exits_promptly(self):
        self.start("--interval", "60")
        wait_for("the object created", lambda: self.api.get(NODE))
        self.wait_log("created (first)")
        t = time.time()
        self.exp.send_signal(signal.SIGTERM)
        self.assertEqual(self.exp.wait(timeout=10), 0)
        self.assertLess(time.time() - t, 2)
        self.assertIn("stopping", self.log())

    def test_once_and_usage(self):
        base = [EXPORTER, "--socket", self.d.sock, "--token-file", self.token_file, "--cacert", self.cert]
        env = dict(os.environ, NODE_NAME=NODE)
        for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
            env.pop(k, None)
        p = subprocess.run(base + ["--server", self.api.url, "--once"], env=env, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("created (first)", p.stderr)
        self.assertIsNotNone(self.api.get(NODE))
        itlib.write(self.token_file, "revoked")
        p = subprocess.run(base + ["--server", self.api.url, "--once"], env=env, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("401: Unauthorized", p.stderr)
        # In a pod the server comes from the service's environment.
        p = subprocess.run(base + ["--once"], capture_output=True, text=True, timeout=30,
                           env=dict(env, KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(self.api.port)))
        self.assertIn("API server %s " % self.api.url, p.stderr)
        for args, extra_env, want in (([], {"NODE_NAME": ""}, "no node name"),
                                      ([], {}, "no API server"),
                                      (["--server", "http://127.0.0.1:1"], {}, "only https"),
                                      (["--server", self.api.url, "--interval", "0"], {}, "not a number")):
            p = subprocess.run(base + args, env=dict(env, **extra_env), capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 64, (args, p.stderr))
            self.assertIn(want, p.stderr)

    def test_the_fake_refuses_what_a_real_server_would(self):
        """The fake's own checks bite (else the tests above prove little)."""
        import http.client
        ctx = ssl.create_default_context(cafile=self.cert)
        good = self.d.get("/v1/topology").json()
        good["metadata"] = {"name": NODE}
        bad = json.loads(json.dumps(good))
        del bad["zones"][0]["type"]
        cases = ((GOOD_TOKEN, "application/json", good, 201), ("nope", "application/json", good, 401),
                 (GOOD_TOKEN, "text/plain", good, 415), (GOOD_TOKEN, "application/json", bad, 422),
                 (GOOD_TOKEN, "application/json", good, 409))
        for tok, ct, obj, want in cases:
            c = http.client.HTTPSConnection("127.0.0.1", self.api.port, context=ctx, timeout=10)
            c.request("POST", COLLECTION, json.dumps(obj), {"Authorization": "Bearer " + tok, "Content-Type": ct})
            self.assertEqual(c.getresponse().status, want, (tok, ct))
            c.close()
        self.assertEqual(len(self.api.invalid), 1)
        self.api.invalid = []  # expected here; tearDown checks the others


if __name__ == "__main__":
    unittest.main()

"""What the package and the cluster manifests ship, checked without
installing anything: man pages render without warnings, unit files pass
systemd-analyze verify, the Kubernetes manifests hold what the agent needs
and their configuration is one numaorchd accepts."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import unittest

import itlib

DEPLOY = os.path.join(itlib.REPO, "deploy")


FONT_MACRO = re.compile(r"^\.(B|I|BR|RB|IR|RI|BI|IB|SM|SB)\b\s*(.*)$")


def man_text(line):
    """The text a man(7) line prints (font macros' arguments joined, font
    and glyph escapes dropped); None for other requests and macros."""
    m = FONT_MACRO.match(line)
    if m:
        t = "".join(a or b for a, b in re.findall(r'"((?:[^"]|"")*)"|(\S+)', m.group(2)))
    elif line.startswith("."):
        return None
    else:
        t = line
    t = re.sub(r"\\\(..|\\\[[^\]]*\]", "", t)
    t = re.sub(r"\\f[BIRP]", "", t)
    return t.replace("\\-", "-").replace("\\ ", " ").replace("\\&", "")


def broken_tags(path):
    """.TP tags whose brackets do not close on their line, or whose
    description starts with an option bracket: a synopsis cut in two."""
    with open(path) as f:
        lines = f.read().split("\n")
    out = []
    for i, line in enumerate(lines[:-1]):
        if line.split()[:1] not in ([".TP"], [".TQ"]):
            continue
        tag = man_text(lines[i + 1])
        if tag is None:
            continue
        if tag.count("[") != tag.count("]") or tag.count("(") != tag.count(")"):
            out.append("%s:%d: tag %r: its brackets do not close on its line" % (path, i + 2, tag))
            continue
        body = man_text(lines[i + 2]) if i + 2 < len(lines) else None
        if body is not None and body.lstrip().startswith("["):
            out.append("%s:%d: tag %r goes on in its description: %r" % (path, i + 2, tag, body))
    return out


class ManPages(unittest.TestCase):
    def pages(self):
        d = os.path.join(DEPLOY, "man")
        return [os.path.join(d, f) for f in sorted(os.listdir(d)) if re.search(r"\.[1-8]$", f)]

    def test_render_without_warnings(self):
        if not shutil.which("groff"):
            self.skipTest("groff is not installed")
        self.assertTrue(self.pages())
        for page in self.pages():
            with self.subTest(page=os.path.basename(page)):
                p = subprocess.run(["groff", "-ww", "-man", "-Tutf8", page], capture_output=True, text=True)
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                if shutil.which("man"):
                    p = subprocess.run(["man", "-l", page], capture_output=True, text=True,
                                       env=dict(os.environ, MANWIDTH="80", MAN_KEEP_STDERR="1"))
                    self.assertEqual((p.returncode, p.stderr), (0, ""))

    def test_mandoc_lint(self):
        if not shutil.which("mandoc"):
            self.skipTest("mandoc is not installed (Debian: mandoc)")
        for page in self.pages():
            with self.subTest(page=os.path.basename(page)):
                # warnings and worse; STYLE notes (long source lines) are not errors
                p = subprocess.run(["mandoc", "-T", "lint", "-W", "warning", page], capture_output=True, text=True)
                self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))

    def test_tags_on_one_line(self):
        # A .TP tag is the one line after .TP: a synopsis spread over
        # several font-macro lines renders with its first part as the tag
        # and the rest run into the description (numaorchctl(1)'s guests,
        # decisions, advise and event did). groff and mandoc accept that.
        broken = [b for page in self.pages() for b in broken_tags(page)]
        self.assertEqual(broken, [], "\n".join(broken))
        # the checker finds the fault it looks for
        bad = os.path.join(tempfile.mkdtemp(prefix="numaorch-man-"), "bad.1")
        self.addCleanup(shutil.rmtree, os.path.dirname(bad), True)
        with open(bad, "w") as f:
            f.write('.TH BAD 1\n.SH X\n.TP\n.BR guests " [" \\-\\-kind\n.IR K ]\nText.\n'
                    '.TP\n.BI advise " VCPUS"\n.RB [ \\-\\-reserve\n.IR S ]\nText.\n'
                    '.TP\n\\fBok\\fR [\\fB\\-\\-x\\fR \\fIY\\fR]\nText.\n')
        self.assertEqual(len(broken_tags(bad)), 2, broken_tags(bad))

    def test_every_flag_is_documented(self):
        # numaorchd --help and numaorchd(8) list the same long options.
        if not os.path.exists(itlib.NUMAORCHD):
            self.skipTest("build/numaorchd missing")
        helptext = subprocess.run([itlib.NUMAORCHD, "--help"], capture_output=True, text=True).stdout
        flags = set(re.findall(r"--([a-z][a-z-]+)", helptext))
        with open(os.path.join(DEPLOY, "man", "numaorchd.8")) as f:
            man = f.read().replace("\\-", "-")
        missing = sorted(f for f in flags if "--" + f not in man)
        self.assertEqual(missing, [], "flags missing from numaorchd(8)")

    def test_every_exporter_flag_is_documented(self):
        # numaorch-nrt-export --help and numaorch-nrt-export(8) likewise.
        exe = os.path.join(itlib.BUILD, "numaorch-nrt-export")
        if not os.path.exists(exe):
            self.skipTest("build/numaorch-nrt-export missing")
        helptext = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
        flags = set(re.findall(r"--([a-z][a-z-]+)", helptext))
        self.assertIn("token-file", flags)
        with open(os.path.join(DEPLOY, "man", "numaorch-nrt-export.8")) as f:
            man = f.read().replace("\\-", "-")
        missing = sorted(f for f in flags if "--" + f not in man)
        self.assertEqual(missing, [], "flags missing from numaorch-nrt-export(8)")


class Units(unittest.TestCase):
    def test_systemd_analyze_verify(self):
        if not shutil.which("systemd-analyze"):
            self.skipTest("systemd-analyze is not installed (Debian: systemd)")
        for b in (itlib.NUMAORCHD, os.path.join(itlib.BUILD, "numaorchctl")):
            if not os.path.exists(b):
                self.skipTest("%s missing (run make)" % b)
        tmp = tempfile.mkdtemp(prefix="numaorch-units-")
        self.addCleanup(shutil.rmtree, tmp, True)
        # Verify the units as shipped, with their binaries pointing at this
        # build (systemd-analyze checks that ExecStart= programs exist).
        units = []
        for f in sorted(os.listdir(os.path.join(DEPLOY, "systemd"))):
            with open(os.path.join(DEPLOY, "systemd", f)) as src:
                text = src.read()
            text = text.replace("/usr/sbin/numaorchd", itlib.NUMAORCHD)
            text = text.replace("/usr/bin/numaorchctl", os.path.join(itlib.BUILD, "numaorchctl"))
            # Documentation=man: needs the pages installed; the installed
            # package's units are verified with them by tests/deb.
            text = re.sub(r"(?m)^Documentation=.*$", "", text)
            path = os.path.join(tmp, f)
            with open(path, "w") as out:
                out.write(text)
            units.append(path)
        p = subprocess.run(["systemd-analyze", "verify"] + units, capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stderr.strip()), (0, ""))


class BashCompletion(unittest.TestCase):
    """deploy/bash-completion/numaorchctl sourced in a real bash: commands,
    flags and fixed values for a few prefixes, and guest ids asked of a
    real numaorchd through the socket the command line names."""
    SCRIPT = os.path.join(DEPLOY, "bash-completion", "numaorchctl")

    def complete(self, *words, path=None):
        script = ('source "$0" || exit 9; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
                  'COMP_LINE="$*"; _numaorchctl; printf "%s\\n" "${COMPREPLY[@]}"')
        env = dict(os.environ, PATH=(path + ":" if path else "") + os.environ.get("PATH", ""))
        p = subprocess.run(["bash", "-c", script, self.SCRIPT] + list(words), capture_output=True, text=True,
                           env=env, timeout=30)
        self.assertEqual((p.returncode, p.stderr), (0, ""), words)
        return [w for w in p.stdout.split("\n") if w]

    def test_commands_flags_values(self):
        if not shutil.which("bash"):
            self.skipTest("bash is not installed")
        cases = [
            (["numaorchctl", ""], None),
            (["numaorchctl", "gu"], ["guests", "guest", "guest-policy", "guest-policies"]),
            (["numaorchctl", "mi"], ["migrations"]),
            (["numaorchctl", "--j"], ["--json"]),
            (["numaorchctl", "--socket", "/run/x.sock", "st"], ["status"]),
            (["numaorchctl", "guests", "--"], ["--kind", "--runtime", "--node"]),
            (["numaorchctl", "guests", "--kind", ""], ["container", "vm"]),
            (["numaorchctl", "guests", "--runtime", "ku"], ["kubernetes"]),
            (["numaorchctl", "decisions", "--f"], ["--follow"]),
            (["numaorchctl", "rebalance", "--d"], ["--dry-run"]),
            (["numaorchctl", "policy", ""], ["get", "set", "reset"]),
            (["numaorchctl", "policy", "set", "max_"], ["max_util=", "max_moves=", "max_migrate_mib="]),
            (["numaorchctl", "schedule", "c"], ["clear"]),
            (["numaorchctl", "event", "st"], ["started", "stopped"]),
            (["numaorchctl", "event", "started", "vm1", "--"], ["--uuid", "--source"]),
            (["numaorchctl", "advise", "2", "4G", "--r"], ["--reserve"]),
            (["numaorchctl", "top", "--sort", "l"], ["locality"]),
            (["numaorchctl", "migrations", ""], ["cancel"]),
            (["numaorchctl", "status", "--js"], ["--json"]),
        ]
        for words, want in cases:
            got = self.complete(*words)
            if want is None:  # every command
                for c in ("status", "nodes", "guests", "guest", "policy", "schedule", "guest-policy",
                          "guest-policies", "rebalance", "decisions", "advise", "event", "top", "migrations",
                          "health", "metrics"):
                    self.assertIn(c, got)
            else:
                self.assertEqual(got, want, words)
        # every command numaorchctl --help lists is offered
        ctl = os.path.join(itlib.BUILD, "numaorchctl")
        if os.path.exists(ctl):
            helptext = subprocess.run([ctl, "--help"], capture_output=True, text=True).stdout
            listed = set(re.findall(r"(?m)^  ([a-z][a-z-]+)", helptext.split("Options:")[0]))
            self.assertTrue(listed)
            self.assertEqual(sorted(listed - set(self.complete("numaorchctl", ""))), [])
            # and every long option
            longs = set(re.findall(r"(--[a-z][a-z-]+)", helptext))
            offered = set()
            for words in (["numaorchctl", "--"], ["numaorchctl", "guests", "--"], ["numaorchctl", "decisions", "--"],
                          ["numaorchctl", "rebalance", "--"], ["numaorchctl", "top", "--"],
                          ["numaorchctl", "advise", "1", "1", "--"], ["numaorchctl", "event", "started", "d", "--"],
                          ["numaorchctl", "guest-policy", "g", "auto", "--"]):
                offered |= set(self.complete(*words))
            self.assertEqual(sorted(longs - offered), [])

    def test_guest_ids_from_the_agent(self):
        import apilib
        if apilib.skip_reason() or not os.path.exists(apilib.NUMAORCHCTL):
            self.skipTest(apilib.skip_reason() or "build/numaorchctl missing")
        tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        d = apilib.Daemon(tmp, apilib.compose_root(tmp)).start()
        self.addCleanup(d.stop)
        build = itlib.BUILD
        self.assertEqual(self.complete("numaorchctl", "--socket", d.sock, "guest", "run", path=build), ["runc-ctr1"])
        self.assertEqual(self.complete("numaorchctl", "-s", d.sock, "guest-policy", "lx", path=build), ["lxc-db"])
        self.assertEqual(self.complete("numaorchctl", "--socket=" + d.sock, "decisions", "--guest", "nsp",
                                       path=build), ["nspawn-web-01"])
        ids = self.complete("numaorchctl", "--socket", d.sock, "guest", "", path=build)
        self.assertEqual(sorted(ids), sorted(g["id"] for g in d.get("/v1/guests").json()["guests"]))
        # no agent there: no ids, no error, quickly
        self.assertEqual(self.complete("numaorchctl", "--socket", os.path.join(tmp, "none.sock"), "guest", "",
                                       path=build), [])


class Hardening(unittest.TestCase):
    """What make install ships is built as dpkg-buildflags' hardening=+all
    builds a package: PIE, full RELRO (BIND_NOW), stack protector,
    fortified libc calls. The libvirt hook, which libvirtd runs as root at
    every domain start, was linked without LDFLAGS (no BIND_NOW in the .deb)."""

    def test_installed_binaries(self):
        if not shutil.which("readelf"):
            self.skipTest("readelf is not installed (Debian: binutils)")
        bins = [("numaorchd", True), ("numaorchctl", True), ("numaorch-libvirt-hook", True),
                ("numaorch-nrt-export", True), ("numaorch-libvirt.so", False)]
        for name, exe in bins:
            path = os.path.join(itlib.BUILD, name)
            if not os.path.exists(path):
                self.skipTest("%s missing (run make)" % path)
            with self.subTest(binary=name):
                def elf(*flags):
                    return subprocess.run(["readelf", "-W"] + list(flags) + [path], capture_output=True,
                                          text=True, check=True).stdout
                if exe:
                    self.assertRegex(elf("-h"), r"Type:\s+DYN", "not a position-independent executable")
                self.assertIn("GNU_RELRO", elf("-l"))
                self.assertRegex(elf("-d"), r"\(BIND_NOW\)|\(FLAGS\)\s+BIND_NOW|FLAGS_1\)\s+Flags:.*\bNOW\b",
                                 "no BIND_NOW")
                syms = elf("--dyn-syms")
                self.assertIn("__stack_chk_fail", syms)
                self.assertRegex(syms, r"__\w+_chk@", "no fortified libc call")


class FirstInstall(unittest.TestCase):
    """The packages' postinsts, run by sh with stand-ins for addgroup and
    numaorchd (nothing is installed): a first install of numaorch says the
    agent starts in advise mode and the one command that lets it act, and
    nothing of libvirt (a container host has none); numaorch-libvirt's says
    that libvirtd must restart for the hook; an upgrade says nothing."""

    def postinst(self, package, *args):
        tmp = tempfile.mkdtemp(prefix="numaorch-postinst-")
        self.addCleanup(shutil.rmtree, tmp, True)
        for stub in ("addgroup", "numaorchd", "deb-systemd-invoke"):
            path = os.path.join(tmp, stub)
            with open(path, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(path, 0o755)
        env = dict(os.environ, PATH=tmp + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        return subprocess.run(["sh", os.path.join(DEPLOY, "debian", package + ".postinst")] + list(args),
                              capture_output=True, text=True, env=env)

    def test_first_install_says_advise_and_what_to_restart(self):
        with open(os.path.join(DEPLOY, "numaorchd.conf")) as f:
            self.assertIn("\nmode = advise\n", f.read())
        p = self.postinst("numaorch", "configure", "")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("numaorchd starts in advise mode", p.stdout)
        self.assertIn("numaorchctl policy set mode=enforce", p.stdout)
        self.assertNotIn("libvirt", p.stdout)
        p = self.postinst("numaorch-libvirt", "configure", "")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("restart libvirtd to load the hook", p.stdout)
        for package in ("numaorch", "numaorch-libvirt"):
            p = self.postinst(package, "configure", "0.1.0")
            self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)


class Logrotate(unittest.TestCase):
    """deploy/logrotate/numaorchd: installed by make install (so by the
    .deb), rotates what the man page suggests, and signals the daemon to
    reopen rather than truncating under it."""

    def test_installed_and_well_formed(self):
        p = subprocess.run(["make", "-n", "-C", itlib.REPO, "install", "DESTDIR=/nonexistent"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("deploy/logrotate/numaorchd /nonexistent/etc/logrotate.d/numaorchd", p.stdout)
        with open(os.path.join(DEPLOY, "logrotate", "numaorchd")) as f:
            text = f.read()
        self.assertIn("/var/log/numaorch/*.jsonl {", text)
        self.assertNotIn("copytruncate", text)
        # SIGUSR1 reopens the log without a reload (which would stop
        # running migrations at a chunk boundary).
        self.assertIn("systemctl kill --kill-who=main --signal=USR1 numaorchd.service", text)
        self.assertIn("pkill -USR1 -x numaorchd", text)
        self.assertNotIn("reload", text.split("postrotate")[1])
        with open(os.path.join(DEPLOY, "systemd", "numaorchd.service")) as f:
            self.assertIn("LogsDirectory=numaorch", f.read())
        if not shutil.which("logrotate"):
            self.skipTest("logrotate is not installed: its parse of the file is not checked")
        tmp = tempfile.mkdtemp(prefix="numaorch-lr-")
        self.addCleanup(shutil.rmtree, tmp, True)
        p = subprocess.run(["logrotate", "--debug", "--state", os.path.join(tmp, "state"),
                            os.path.join(DEPLOY, "logrotate", "numaorchd")], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("error", p.stderr.lower())


K8S = os.path.join(DEPLOY, "kubernetes")


def yaml_docs(path):
    import yaml
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kustomization(d):
    return yaml_docs(os.path.join(K8S, d, "kustomization.yaml"))[0]


def dropins(d):
    """The files of D's configMapGenerator for numaorchd-config: {name: text}."""
    out = {}
    for gen in kustomization(d).get("configMapGenerator", []):
        if gen["name"] == "numaorchd-config":
            for name in gen["files"]:
                with open(os.path.join(K8S, d, name)) as f:
                    out[name] = f.read()
    return out


def conf_value(text, section, key):
    """KEY's last value in [SECTION] of an INI text, or None."""
    cur, val = None, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            cur = line.strip("[]")
        elif cur == section and "=" in line and not line.startswith("#"):
            k, v = (x.strip() for x in line.split("=", 1))
            if k == key:
                val = v
    return val


def openapi_port():
    import yaml
    with open(os.path.join(itlib.REPO, "api", "openapi.yaml")) as f:
        spec = yaml.safe_load(f)
    return int([s for s in spec["servers"] if "variables" in s][0]["variables"]["port"]["default"])


def readme_openssl(cwd):
    """Run the certificate command deploy/kubernetes/README.md gives, in CWD."""
    with open(os.path.join(K8S, "README.md")) as f:
        cmd = [l.strip() for l in f.read().splitlines() if l.strip().startswith("openssl req ")]
    assert len(cmd) == 1, cmd
    return subprocess.run(["sh", "-c", cmd[0]], cwd=cwd, capture_output=True, text=True, timeout=60)


# The opt-ins are Kustomize Components (components/metrics, components/nrt),
# each with an overlay of its own on the base (metrics, nrt) and one
# overlay with both (metrics-nrt).
COMPONENTS = {"metrics": "components/metrics", "nrt": "components/nrt"}
OVERLAYS = {"metrics": ["metrics"], "nrt": ["nrt"], "metrics-nrt": ["metrics", "nrt"]}


class Kubernetes(unittest.TestCase):
    """deploy/kubernetes/: the Kustomize base, the metrics and nrt
    components and the overlays made of them, read with PyYAML (every
    reference checked by hand) and, where kubectl or kustomize is installed
    (neither is a Debian package), built by it."""

    def setUp(self):
        try:
            import yaml  # noqa: F401
        except ImportError:
            self.skipTest("python3 has no yaml module (Debian: python3-yaml)")

    def load(self, name):
        return yaml_docs(os.path.join(K8S, name))

    def base(self):
        docs = {}
        for r in kustomization("base")["resources"]:
            for d in self.load(os.path.join("base", r)):
                docs[d["kind"]] = d
        return docs

    def component(self, name):
        docs = {}
        for r in kustomization(COMPONENTS[name])["resources"]:
            for d in self.load(os.path.join(COMPONENTS[name], r)):
                docs[d["kind"]] = d
        return docs

    def metrics(self):
        return self.component("metrics")

    def nrt(self):
        return self.component("nrt")

    def test_daemonset(self):
        docs = self.base()
        ds = docs["DaemonSet"]["spec"]["template"]["spec"]
        self.assertTrue(ds["hostPID"])
        c = ds["containers"][0]
        self.assertTrue(c["securityContext"]["privileged"])
        probe = c["readinessProbe"]["exec"]["command"]
        self.assertEqual(probe[-1], "health")
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        for need in ("/sys/fs/cgroup", "/sys/devices/system", "/run/numaorch"):
            self.assertIn(need, mounts)
        host = {v["name"]: v.get("hostPath", {}).get("path") for v in ds["volumes"]}
        self.assertEqual(host["run-numaorch"], "/run/numaorch")
        # the configuration as a directory of drop-ins, never a subPath copy
        vols = {v["name"]: v for v in ds["volumes"]}
        by_path = {m["mountPath"]: m for m in c["volumeMounts"]}
        self.assertEqual([m for m in c["volumeMounts"] if "subPath" in m or "subPathExpr" in m], [])
        cfg = by_path["/etc/numaorch/numaorchd.conf.d"]
        self.assertEqual(vols[cfg["name"]]["configMap"]["name"], "numaorchd-config")
        self.assertEqual(c["command"][-2:], ["--config", "/etc/numaorch/numaorchd.conf"])
        # the kubelet's checkpoints and the pods' names, read only
        for path in ("/var/lib/kubelet", "/var/log/pods"):
            self.assertTrue(by_path[path].get("readOnly"), path)
            self.assertEqual(vols[by_path[path]["name"]]["hostPath"]["path"], path)
        # nodes Node Feature Discovery labels as NUMA
        self.assertEqual(ds["nodeSelector"], {"feature.node.kubernetes.io/memory-numa": "true"})
        # no port on the node's address
        self.assertFalse(ds.get("hostNetwork", False))
        self.assertNotIn("ports", c)

    def test_kustomizations_reference_what_exists(self):
        for d in ["base"] + list(OVERLAYS) + list(COMPONENTS.values()):
            k = kustomization(d)
            if d in COMPONENTS.values():
                # a Component takes the namespace of the overlay using it
                self.assertEqual((k["apiVersion"], k["kind"]), ("kustomize.config.k8s.io/v1alpha1", "Component"))
                self.assertNotIn("namespace", k)
            else:
                self.assertEqual(k["kind"], "Kustomization")
                self.assertEqual(k["namespace"], "numaorch")
            if d in OVERLAYS:
                # each overlay: the base and its components, nothing else
                self.assertEqual(k["resources"], ["../base"], d)
                self.assertEqual(k["components"], ["../" + COMPONENTS[c] for c in OVERLAYS[d]], d)
                self.assertNotIn("patches", k)
                self.assertNotIn("configMapGenerator", k)
            for r in k["resources"]:
                path = os.path.join(K8S, d, r)
                self.assertTrue(os.path.isfile(path) or os.path.isfile(os.path.join(path, "kustomization.yaml")),
                                "%s: resource %s" % (d, r))
            for gen in k.get("configMapGenerator", []):
                for name in gen["files"]:
                    self.assertTrue(os.path.isfile(os.path.join(K8S, d, name)), "%s: %s" % (d, name))
            for patch in k.get("patches", []):
                self.assertTrue(os.path.isfile(os.path.join(K8S, d, patch["path"])))
        base = self.base()
        ds = base["DaemonSet"]
        pod = ds["spec"]["template"]
        c = pod["spec"]["containers"][0]
        # the generator makes the ConfigMap the DaemonSet mounts; images maps its image
        self.assertEqual([g["name"] for g in kustomization("base")["configMapGenerator"]], ["numaorchd-config"])
        self.assertEqual([i["name"] for i in kustomization("base")["images"]], [c["image"]])
        version = subprocess.run(["dpkg-parsechangelog", "-l", os.path.join(DEPLOY, "debian", "changelog"),
                                  "-S", "Version"], capture_output=True, text=True).stdout.strip()
        if version:
            self.assertEqual(kustomization("base")["images"][0]["newTag"], version)
        self.assertEqual(ds["spec"]["selector"]["matchLabels"].items() - pod["metadata"]["labels"].items(), set())
        # the components merge into that ConfigMap and patch that DaemonSet
        m = kustomization(COMPONENTS["metrics"])
        self.assertEqual([(g["name"], g["behavior"]) for g in m["configMapGenerator"]], [("numaorchd-config", "merge")])
        for d in COMPONENTS.values():
            for patch in kustomization(d)["patches"]:
                doc = self.load(os.path.join(d, patch["path"]))[0]
                self.assertEqual((doc["kind"], doc["metadata"]["name"]), ("DaemonSet", ds["metadata"]["name"]))

    def test_configmap_is_a_valid_config(self):
        """The package's numaorchd.conf with the base's drop-ins, and with
        the metrics overlay's too, as the pod reads them: numaorchd
        --check-config accepts both. The base serves no TCP."""
        if not os.path.exists(itlib.NUMAORCHD):
            self.skipTest("build/numaorchd missing")
        tmp = tempfile.mkdtemp(prefix="numaorch-k8s-")
        self.addCleanup(shutil.rmtree, tmp, True)
        base = dropins("base")
        self.assertTrue(base)
        self.assertIn(conf_value("".join(base.values()), "api", "listen"), (None, ""))
        # The token and the certificate come from Secrets in the pod; stand
        # them in here (--check-config reads them: they must exist and not
        # be world-readable).
        token = os.path.join(tmp, "token")
        itlib.write(token, "0123456789abcdef0123456789abcdef\n")
        os.chmod(token, 0o400)
        metrics = dict(base)
        for name, text in dropins(COMPONENTS["metrics"]).items():
            self.assertNotIn(name, base)
            new = text.replace("/etc/numaorch/token/token", token)
            self.assertNotEqual(new, text)
            if shutil.which("openssl"):
                p = readme_openssl(tmp)
                self.assertEqual(p.returncode, 0, p.stderr)
                os.chmod(os.path.join(tmp, "tls.key"), 0o400)
                new = new.replace("/etc/numaorch/tls/", tmp + "/")
            else:
                new = "\n".join(l for l in new.splitlines() if not l.startswith("tls_"))
            metrics[name] = new
        for label, files in (("base", base), ("metrics", metrics)):
            with self.subTest(kustomization=label):
                conf = os.path.join(tmp, label, "numaorchd.conf")
                os.makedirs(conf + ".d")
                shutil.copy(os.path.join(DEPLOY, "numaorchd.conf"), conf)
                for name, text in files.items():
                    itlib.write(os.path.join(conf + ".d", name), text)
                p = subprocess.run(itlib.numaorchd("--check-config", "--config", conf,
                                                   state_dir=os.path.join(tmp, "state")),
                                   capture_output=True, text=True)
                self.assertEqual((p.returncode, p.stdout.strip()), (0, "configuration OK"), p.stderr)

    def test_metrics_overlay(self):
        """One port everywhere (api/openapi.yaml's), TLS and the token from
        the Secrets the DaemonSet mounts, and every selector matching."""
        port = openapi_port()
        base, docs = self.base(), self.metrics()
        conf = "".join(dropins(COMPONENTS["metrics"]).values())
        self.assertEqual(conf_value(conf, "api", "listen"), "0.0.0.0:%d" % port)
        patch = self.load(os.path.join(COMPONENTS["metrics"],
                                       kustomization(COMPONENTS["metrics"])["patches"][0]["path"]))[0]
        pspec = patch["spec"]["template"]["spec"]
        c = pspec["containers"][0]
        cport = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(cport, {"metrics": port})
        svc = docs["Service"]
        self.assertEqual(svc["spec"]["selector"].items() - base["DaemonSet"]["spec"]["template"]["metadata"]
                         ["labels"].items(), set())
        sport = svc["spec"]["ports"][0]
        self.assertEqual((sport["port"], sport["targetPort"]), (port, "metrics"))
        sm = docs["ServiceMonitor"]
        self.assertEqual(sm["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(sm["spec"]["selector"]["matchLabels"].items() - svc["metadata"]["labels"].items(), set())
        ep = sm["spec"]["endpoints"][0]
        self.assertEqual((ep["port"], ep["path"], ep["scheme"]), (sport["name"], "/metrics", "https"))
        self.assertEqual(ep["tlsConfig"]["serverName"], "%s.numaorch.svc" % svc["metadata"]["name"])
        # the Secrets: the ones mounted where the configuration reads them
        vols = {v["name"]: v for v in pspec["volumes"]}
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        secret_at = {mounts[n]: v["secret"] for n, v in vols.items()}
        for key, secret_name, file in (("token_file", ep["authorization"]["credentials"]["name"], "token"),
                                       ("tls_cert", ep["tlsConfig"]["ca"]["secret"]["name"], "tls.crt"),
                                       ("tls_key", ep["tlsConfig"]["ca"]["secret"]["name"], "tls.key")):
            path = conf_value(conf, "api", key)
            sec = secret_at[os.path.dirname(path)]
            self.assertEqual((sec["secretName"], os.path.basename(path)), (secret_name, file))
            self.assertEqual(sec["defaultMode"], 0o400)
        self.assertEqual(ep["authorization"]["credentials"]["key"], "token")
        # only the monitoring namespace reaches the port
        np = docs["NetworkPolicy"]["spec"]
        self.assertEqual(np["policyTypes"], ["Ingress"])
        self.assertEqual([p["port"] for rule in np["ingress"] for p in rule["ports"]], [port])
        # the README says how to make both Secrets, and the certificate names the Service
        with open(os.path.join(K8S, "README.md")) as f:
            readme = f.read()
        self.assertIn("create secret generic numaorchd-token", readme)
        self.assertIn("create secret tls numaorchd-tls", readme)
        self.assertIn("subjectAltName=DNS:" + ep["tlsConfig"]["serverName"], readme)

    def test_metrics_over_tls_as_the_servicemonitor_scrapes(self):
        """numaorchd with a certificate made by the README's command, scraped
        as the ServiceMonitor does: the Service's name checked against the
        certificate, the token required for /metrics, not for /v1/health."""
        import ssl
        import apilib
        if apilib.skip_reason() or not shutil.which("openssl"):
            self.skipTest(apilib.skip_reason() or "openssl not installed")
        tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        p = readme_openssl(tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        os.chmod(key, 0o400)
        d = apilib.Daemon(tmp, apilib.compose_root(tmp), tls=(cert, key)).start()
        self.addCleanup(d.stop)
        ep = self.metrics()["ServiceMonitor"]["spec"]["endpoints"][0]

        def get(path, token):
            ctx = ssl.create_default_context(cafile=cert)
            with socket.create_connection(("127.0.0.1", d.port), timeout=30) as raw:
                with ctx.wrap_socket(raw, server_hostname=ep["tlsConfig"]["serverName"]) as s:
                    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n"
                               % (path, "Authorization: Bearer %s\r\n" % token if token else "")).encode())
                    return apilib._read_response(s)
        r = get(ep["path"], apilib.TOKEN)
        self.assertEqual(r.status, 200)
        self.assertIn(b"numaorch_", r.body)
        self.assertEqual(get(ep["path"], None).status, 401)
        self.assertEqual(get("/v1/health", None).status, 200)

    def test_nrt_overlay(self):
        """deploy/kubernetes/nrt/: numaorch-nrt-export as a second container
        of the agent's pod, on the agent's socket volume, with the node's
        name, its own service account's token mounted in it alone (not in
        the privileged agent), allowed exactly get/create/update on the
        resource the program writes."""
        base, docs = self.base(), self.nrt()
        agent = base["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
        patch = self.load(os.path.join(COMPONENTS["nrt"], kustomization(COMPONENTS["nrt"])["patches"][0]["path"]))[0]
        pod = patch["spec"]["template"]["spec"]
        sa = docs["ServiceAccount"]
        self.assertEqual(pod["serviceAccountName"], sa["metadata"]["name"])
        self.assertIs(pod["automountServiceAccountToken"], False)
        self.assertIs(sa["automountServiceAccountToken"], False)
        (c,) = pod["containers"]
        self.assertNotEqual(c["name"], agent["name"])
        self.assertEqual(c["image"], agent["image"])  # the image ships numaorch-client
        with open(os.path.join(DEPLOY, "debian", "numaorch-client.install")) as f:
            self.assertIn(c["command"][0].lstrip("/"), f.read().split())
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName")
        # The socket it reads is where the agent serves it, on the same volume.
        sock = c["command"][c["command"].index("--socket") + 1]
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        agent_mounts = {m["mountPath"]: m["name"] for m in agent["volumeMounts"]}
        self.assertEqual(mounts[os.path.dirname(sock)], agent_mounts[os.path.dirname(sock)])
        self.assertEqual(os.path.dirname(sock), "/run/numaorch")
        # The token, CA and namespace where the program looks by default, in this container only.
        sapath = "/var/run/secrets/kubernetes.io/serviceaccount"
        vols = {v["name"]: v for v in pod["volumes"]}
        srcs = vols[mounts[sapath]]["projected"]["sources"]
        self.assertEqual(sorted(k for s in srcs for k in s), ["configMap", "downwardAPI", "serviceAccountToken"])
        self.assertEqual([s["serviceAccountToken"]["path"] for s in srcs if "serviceAccountToken" in s], ["token"])
        self.assertEqual([i["path"] for s in srcs if "configMap" in s for i in s["configMap"]["items"]], ["ca.crt"])
        self.assertNotIn(sapath, agent_mounts)
        sc = c["securityContext"]
        self.assertFalse(sc.get("privileged", False))
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        # RBAC: exactly what the program does, on the path it writes.
        role, binding = docs["ClusterRole"], docs["ClusterRoleBinding"]
        (rule,) = role["rules"]
        self.assertEqual((rule["apiGroups"], rule["resources"], sorted(rule["verbs"])),
                         (["topology.node.k8s.io"], ["noderesourcetopologies"], ["create", "get", "update"]))
        with open(os.path.join(itlib.REPO, "api", "nrtx.h")) as f:
            self.assertIn('"/apis/%s/v1alpha2/%s"' % (rule["apiGroups"][0], rule["resources"][0]), f.read())
        self.assertEqual(binding["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                              "name": role["metadata"]["name"]})
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                                "namespace": kustomization("nrt")["namespace"]}])
        # Its container takes the agent's image, mapped as the base maps it.
        self.assertEqual(kustomization(COMPONENTS["nrt"])["images"], kustomization("base")["images"])

    def test_kustomize_build(self):
        """The real kustomize (kubectl's, or the standalone one), where
        installed: the DaemonSet mounts the ConfigMap by its hashed name, the
        metrics overlays' ConfigMap holds both drop-ins, and metrics-nrt is
        the metrics overlay and the nrt overlay together: every object of
        each, the pod with both containers, both patches' volumes, the
        listener's port and the exporter's service account."""
        if shutil.which("kustomize"):
            build = ["kustomize", "build"]
        elif shutil.which("kubectl") and subprocess.run(["kubectl", "kustomize", "--help"],
                                                        capture_output=True).returncode == 0:
            build = ["kubectl", "kustomize"]
        else:
            self.skipTest("neither kustomize nor kubectl is installed (no Debian package has them): "
                          "test_kustomizations_reference_what_exists checks the references")
        import yaml
        built = {}
        for d, files in (("base", ["10-cluster.conf"]), ("metrics", ["10-cluster.conf", "50-metrics.conf"]),
                         ("nrt", ["10-cluster.conf"]), ("metrics-nrt", ["10-cluster.conf", "50-metrics.conf"])):
            with self.subTest(kustomization=d):
                p = subprocess.run(build + [os.path.join(K8S, d)], capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                docs = [x for x in yaml.safe_load_all(p.stdout) if x]
                built[d] = docs
                by = {(x["kind"], x["metadata"]["name"].rsplit("-", 1)[0] if x["kind"] == "ConfigMap"
                       else x["metadata"]["name"]): x for x in docs}
                cm = by[("ConfigMap", "numaorchd-config")]
                self.assertEqual(sorted(cm["data"]), files)
                ds = by[("DaemonSet", "numaorchd")]["spec"]["template"]["spec"]
                names = [v["configMap"]["name"] for v in ds["volumes"] if "configMap" in v]
                self.assertEqual(names, [cm["metadata"]["name"]])
                for c in ds["containers"]:
                    self.assertRegex(c["image"], r"^localhost/numaorch:", c["name"])
                self.assertEqual(len(ds["containers"]), 2 if "nrt" in d else 1)
                if "nrt" in d:
                    # kubectl exec/logs without -c: the agent, not the exporter
                    self.assertEqual(by[("DaemonSet", "numaorchd")]["spec"]["template"]["metadata"]["annotations"]
                                     ["kubectl.kubernetes.io/default-container"], "numaorchd")
                    self.assertIn("numaorchd", [c["name"] for c in ds["containers"]])
                for x in docs:
                    # Cluster-scoped kinds have no namespace.
                    if x["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
                        self.assertEqual(x["metadata"].get("namespace"), "numaorch", x["kind"])

        if "metrics-nrt" not in built:
            return

        def objects(d):
            return {(x["kind"], x["metadata"]["name"]) for x in built[d] if x["kind"] != "ConfigMap"}
        self.assertEqual(objects("metrics-nrt"), objects("metrics") | objects("nrt"))
        pods = {d: next(x for x in built[d] if x["kind"] == "DaemonSet")["spec"]["template"]["spec"]
                for d in ("metrics", "nrt", "metrics-nrt")}
        both = pods["metrics-nrt"]
        agent = {c["name"]: c for c in both["containers"]}["numaorchd"]
        self.assertEqual(agent, {c["name"]: c for c in pods["metrics"]["containers"]}["numaorchd"])
        self.assertEqual({v["name"] for v in both["volumes"]},
                         {v["name"] for d in ("metrics", "nrt") for v in pods[d]["volumes"]})
        self.assertEqual(both["serviceAccountName"], pods["nrt"]["serviceAccountName"])
        self.assertEqual([c for c in both["containers"] if c["name"] != "numaorchd"],
                         [c for c in pods["nrt"]["containers"] if c["name"] != "numaorchd"])

    def test_prometheus_scrape(self):
        cfg = self.load("prometheus-scrape.yaml")[0]
        job = cfg["scrape_configs"][0]
        self.assertEqual(job["metrics_path"], "/metrics")
        self.assertEqual(job["authorization"]["type"], "Bearer")
        self.assertEqual(job["scheme"], "https")
        sm = self.metrics()["ServiceMonitor"]["spec"]["endpoints"][0]
        self.assertEqual(job["tls_config"]["server_name"], sm["tlsConfig"]["serverName"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""What the package and the cluster manifests ship, checked without
installing anything: man pages render without warnings, unit files pass
systemd-analyze verify, the Kubernetes manifests hold what the agent needs
and their configuration is one numaorchd accepts."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import itlib

DEPLOY = os.path.join(itlib.REPO, "deploy")


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


class FirstInstall(unittest.TestCase):
    """The package's postinst, run by sh with stand-ins for addgroup and
    numaorchd (nothing is installed): a first install says the agent
    starts in advise mode, the one command that lets it act, and that
    libvirtd must restart for the hook; an upgrade says nothing."""

    def postinst(self, *args):
        tmp = tempfile.mkdtemp(prefix="numaorch-postinst-")
        self.addCleanup(shutil.rmtree, tmp, True)
        for stub in ("addgroup", "numaorchd"):
            path = os.path.join(tmp, stub)
            with open(path, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(path, 0o755)
        env = dict(os.environ, PATH=tmp + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        return subprocess.run(["sh", os.path.join(DEPLOY, "debian", "numaorch.postinst")] + list(args),
                              capture_output=True, text=True, env=env)

    def test_first_install_says_advise_and_what_to_restart(self):
        with open(os.path.join(DEPLOY, "numaorchd.conf")) as f:
            self.assertIn("\nmode = advise\n", f.read())
        p = self.postinst("configure", "")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("numaorchd starts in advise mode", p.stdout)
        self.assertIn("numaorchctl policy set mode=enforce", p.stdout)
        self.assertIn("restart libvirtd to load the hook", p.stdout)
        p = self.postinst("configure", "0.1.0")
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
        self.assertIn("systemctl reload numaorchd.service", text)
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


class Kubernetes(unittest.TestCase):
    def setUp(self):
        try:
            import yaml  # noqa: F401
        except ImportError:
            self.skipTest("python3 has no yaml module (Debian: python3-yaml)")

    def load(self, name):
        import yaml
        with open(os.path.join(DEPLOY, "kubernetes", name)) as f:
            return [d for d in yaml.safe_load_all(f) if d]

    def test_daemonset(self):
        docs = {d["kind"]: d for d in self.load("numaorchd.yaml")}
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

    def test_configmap_is_a_valid_config(self):
        if not os.path.exists(itlib.NUMAORCHD):
            self.skipTest("build/numaorchd missing")
        docs = {d["kind"]: d for d in self.load("numaorchd.yaml")}
        tmp = tempfile.mkdtemp(prefix="numaorch-k8s-")
        self.addCleanup(shutil.rmtree, tmp, True)
        # The token comes from a Secret in the pod; stand one in here
        # (--check-config reads it: it must exist and not be world-readable).
        token = os.path.join(tmp, "token")
        itlib.write(token, "0123456789abcdef0123456789abcdef\n")
        os.chmod(token, 0o400)
        text = docs["ConfigMap"]["data"]["numaorchd.conf"].replace("/etc/numaorch/token/token", token)
        self.assertNotEqual(text, docs["ConfigMap"]["data"]["numaorchd.conf"])
        conf = itlib.config_file(tmp, text)
        p = subprocess.run(itlib.numaorchd("--check-config", "--config", conf, state_dir=os.path.join(tmp, "state")),
                           capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "configuration OK"), p.stderr)

    def test_prometheus_scrape(self):
        cfg = self.load("prometheus-scrape.yaml")[0]
        job = cfg["scrape_configs"][0]
        self.assertEqual(job["metrics_path"], "/metrics")
        self.assertEqual(job["authorization"]["type"], "Bearer")


if __name__ == "__main__":
    unittest.main(verbosity=2)

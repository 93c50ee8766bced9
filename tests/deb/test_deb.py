"""The Debian packages' whole life on this machine: build them (make deb,
with lintian): numaorch (the agent, needing no libvirt, libxml2 or
libcurl), numaorch-libvirt (the module and the hook) and numaorch-client
(numaorchctl). Install the agent alone, then the other two, each file in
its package; run the installed numaorchd with the packaged configuration
(no systemd here: started directly, in dry-run so nothing on the machine
is moved) and query it with the installed numaorchctl through the
packaged socket path, verify the installed units with systemd-analyze,
upgrade to a newer build keeping the operator's configuration and the
state directory, then purge and check that nothing is left behind. Needs
root; skips (saying why) otherwise, and when a numaorch package is
already installed (it would not be ours to remove)."""
import glob
import grp
import json
import os
import shutil
import signal
import stat
import subprocess
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEB_DIR = os.path.join(REPO, "build", "deb")
PACKAGES = ("numaorch", "numaorch-libvirt", "numaorch-client")
# What each package ships (beyond its /usr/share/doc); every one of these
# in exactly its package.
SHIPS = {
    "numaorch": ("/usr/sbin/numaorchd", "/etc/numaorch/numaorchd.conf", "/etc/numaorch/numaorchd.conf.d",
                 "/etc/logrotate.d/numaorchd", "/lib/systemd/system/numaorchd.service",
                 "/lib/systemd/system/numaorch-rebalance.timer",
                 "/lib/systemd/system/numaorch-rebalance.service",
                 "/usr/share/man/man8/numaorchd.8.gz", "/usr/share/man/man5/numaorchd.conf.5.gz",
                 "/usr/share/numaorch/grafana/numaorch-dashboard.json",
                 "/usr/share/numaorch/prometheus/numaorch-rules.yml"),
    "numaorch-libvirt": ("/usr/lib/numaorch/numaorch-libvirt.so", "/usr/libexec/numaorch/libvirt-hook",
                         "/etc/libvirt/hooks/qemu.d/numaorch"),
    "numaorch-client": ("/usr/bin/numaorchctl", "/usr/share/man/man1/numaorchctl.1.gz",
                        "/usr/share/bash-completion/completions/numaorchctl", "/usr/bin/numaorch-nrt-export",
                        "/usr/share/man/man8/numaorch-nrt-export.8.gz"),
}
# Debian's packages of what the agent must not need (a container host
# has no libvirt): libvirt's, its XML parser's, and the CLI's HTTP client's.
NOT_FOR_THE_AGENT = ("libvirt0", "libxml2", "libcurl4", "libcurl3-gnutls", "libcurl3-nss")


def run(*cmd, check=True, **kw):
    p = subprocess.run(list(cmd), capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def installed_version(package="numaorch"):
    p = run("dpkg-query", "-W", "-f=${Status} ${Version}", package, check=False)
    if p.returncode != 0 or not p.stdout.startswith("install ok installed"):
        return None
    return p.stdout.split()[-1]


def skip_reason():
    if os.geteuid() != 0:
        return "needs root to install a package"
    if not shutil.which("dpkg"):
        return "not a dpkg system"
    if any(installed_version(p) for p in PACKAGES):
        return "a numaorch package is already installed here; not touching it"
    return None


@unittest.skipIf(skip_reason(), skip_reason() or "")
class DebianPackage(unittest.TestCase):
    def setUp(self):
        self.addCleanup(self.purge_quietly)
        self.daemon = None

    def purge_quietly(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        known = [p for p in PACKAGES if run("dpkg-query", "-W", p, check=False).returncode == 0]
        if known:
            run("dpkg", "--purge", *known, check=False)

    built = None

    def build(self):
        """make deb, once per run: {package: its .deb}."""
        if DebianPackage.built is None:
            run("make", "-C", REPO, "deb")
            debs = {}
            for pkg in PACKAGES:
                found = glob.glob(os.path.join(DEB_DIR, "%s_*_*.deb" % pkg))
                self.assertEqual(len(found), 1, (pkg, found))
                debs[pkg] = found[0]
            DebianPackage.built = debs
        return DebianPackage.built

    def one_package(self, debs):
        """The layout before the split: one numaorch of the same version
        shipping the agent, the module, the hook and the CLI (the three
        packages' files and md5sums under numaorch's control files)."""
        tmp = os.path.join(REPO, "build", "deb-onepackage")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        root = os.path.join(tmp, "root")
        run("dpkg-deb", "-R", debs["numaorch"], root)
        for pkg in ("numaorch-libvirt", "numaorch-client"):
            run("dpkg-deb", "-x", debs[pkg], root)
            ctl = os.path.join(tmp, pkg)
            run("dpkg-deb", "-e", debs[pkg], ctl)
            with open(os.path.join(ctl, "md5sums")) as f, \
                    open(os.path.join(root, "DEBIAN", "md5sums"), "a") as out:
                out.write(f.read())
        with open(os.path.join(root, "DEBIAN", "control")) as f:
            control = [l for l in f.read().splitlines() if not l.startswith(("Recommends:", "Suggests:"))]
        with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
            f.write("\n".join(control) + "\n")
        deb = os.path.join(tmp, "numaorch-one.deb")
        run("dpkg-deb", "--root-owner-group", "-b", root, deb)
        return deb

    def field(self, deb, name):
        return run("dpkg-deb", "-f", deb, name).stdout.strip()

    def depends_closure(self, depends):
        """The packages a Depends line pulls in, recursively (apt's
        cache, no network); None without apt-cache."""
        if not shutil.which("apt-cache"):
            return None
        names = [alt.split()[0].split(":")[0] for dep in depends.split(",") for alt in dep.split("|")]
        p = run("apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                "--no-breaks", "--no-replaces", "--no-enhances", "--no-pre-depends", *names)
        return {l.strip().split(":")[0] for l in p.stdout.splitlines() if l and not l.startswith(" ")}

    def build_upgrade(self, version):
        """The same tree, packaged with a newer version."""
        src = [d for d in glob.glob(os.path.join(DEB_DIR, "numaorch-*")) if os.path.isdir(d)][0]
        up = os.path.join(REPO, "build", "deb-upgrade")
        shutil.rmtree(up, ignore_errors=True)
        dst = os.path.join(up, "numaorch-" + version)
        shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("build"))
        for d in PACKAGES + ("tmp",):
            shutil.rmtree(os.path.join(dst, "debian", d), ignore_errors=True)
        chl = os.path.join(dst, "debian", "changelog")
        with open(chl) as f:
            old = f.read()
        with open(chl, "w") as f:
            f.write("numaorch (%s) unstable; urgency=medium\n\n  * Upgrade test build.\n\n"
                    " -- numaorch developers <numaorch-devel@lists.numaorch.org>  "
                    "Mon, 30 Nov 2026 10:00:00 +0000\n\n%s" % (version, old))
        run("dpkg-buildpackage", "-us", "-uc", "-b", cwd=dst)
        return [glob.glob(os.path.join(up, "%s_%s_*.deb" % (pkg, version)))[0] for pkg in PACKAGES]

    def start_daemon(self):
        # The packaged configuration, as the unit would run it, plus
        # --dry-run: this machine's own containers are not ours to move.
        self.daemon = subprocess.Popen(["/usr/sbin/numaorchd", "--config", "/etc/numaorch/numaorchd.conf",
                                        "--dry-run"], stderr=subprocess.PIPE, text=True)
        sock = "/run/numaorch/api.sock"
        deadline = time.time() + 90
        while time.time() < deadline:
            # Up and ready: the first cycle has published a snapshot.
            if os.path.exists(sock) and run("numaorchctl", "status", check=False).returncode == 0:
                return sock
            if self.daemon.poll() is not None:
                self.fail("installed numaorchd exited: %s" % self.daemon.stderr.read())
            time.sleep(0.1)
        self.fail("installed numaorchd never became healthy")

    def stop_daemon(self):
        self.daemon.send_signal(signal.SIGTERM)
        rc = self.daemon.wait(timeout=20)
        err = self.daemon.stderr.read()
        self.daemon.stderr.close()
        self.assertEqual(rc, 0, err)
        return err

    def test_install_run_upgrade_purge(self):
        debs = self.build()

        # lintian ran inside make deb (errors and warnings fail it); once more
        # here so a silent change to the Makefile cannot drop it.
        if shutil.which("lintian"):
            p = run("lintian", "--fail-on", "error,warning", *debs.values(), check=False)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

        # What each package depends on: the agent on none of libvirt,
        # libxml2, libcurl, not even through its own dependencies; the
        # module on the agent of its build and on libvirt; the CLI on
        # what numaorchctl links, nothing of the agent's.
        agent = self.field(debs["numaorch"], "Depends")
        for lib in NOT_FOR_THE_AGENT:
            self.assertNotRegex(agent, r"(^|[ ,|])%s\b" % lib, agent)
        closure = self.depends_closure(agent)
        if closure is not None:
            self.assertEqual(closure & set(NOT_FOR_THE_AGENT), set(), agent)
        self.assertIn("numaorch-client", self.field(debs["numaorch"], "Recommends"))
        module = self.field(debs["numaorch-libvirt"], "Depends")
        version = self.field(debs["numaorch"], "Version")
        self.assertIn("numaorch (= %s)" % version, module)
        for lib in ("libvirt0", "libxml2"):
            self.assertRegex(module, r"(^|[ ,|])%s\b" % lib, module)
        client = self.field(debs["numaorch-client"], "Depends")
        self.assertRegex(client, r"(^|[ ,|])libcurl4\b", client)
        self.assertRegex(client, r"(^|[ ,|])libjansson4\b", client)
        for not_cli in ("numaorch", "libvirt0", "libxml2", "libnuma1", "libmicrohttpd12", "libcgroup2"):
            self.assertNotRegex(client, r"(^|[ ,|])%s\b" % not_cli, client)

        # The agent alone, as on a container host: it installs, configures
        # (libvirt enabled in the shipped configuration, module absent: a
        # warning, not a failure) and says nothing of libvirt.
        p = run("dpkg", "-i", debs["numaorch"])
        # A first install moves nothing until told, and says how.
        self.assertIn("numaorchd starts in advise mode", p.stdout)
        self.assertIn("numaorchctl policy set mode=enforce", p.stdout)
        self.assertNotIn("libvirtd", p.stdout)
        self.assertIsNotNone(installed_version("numaorch"))
        for lib in ("libvirt", "libxml2", "libcurl"):
            self.assertNotIn(lib, run("objdump", "-p", "/usr/sbin/numaorchd").stdout)
        self.assertFalse(os.path.exists("/usr/lib/numaorch/numaorch-libvirt.so"))
        self.assertFalse(os.path.lexists("/etc/libvirt/hooks/qemu.d/numaorch"))
        self.assertFalse(os.path.exists("/usr/bin/numaorchctl"))
        p = run("numaorchd", "--check-config", "--config", "/etc/numaorch/numaorchd.conf")
        self.assertIn("not installed", p.stderr)

        # Then the module and the CLI; the module's first install says
        # what to restart for the hook.
        p = run("dpkg", "-i", debs["numaorch-libvirt"], debs["numaorch-client"])
        self.assertIn("restart libvirtd to load the hook", p.stdout)
        with open("/etc/numaorch/numaorchd.conf") as f:
            self.assertIn("\nmode = advise\n", f.read())
        # Each file in its package, and in no other.
        for pkg in PACKAGES:
            files = [l for l in run("dpkg", "-L", pkg).stdout.splitlines() if l.strip()]
            for path in SHIPS[pkg]:
                self.assertIn(path, files, pkg)
                self.assertTrue(os.path.exists(path), path)
            for other in PACKAGES:
                if other != pkg:
                    for path in SHIPS[other]:
                        self.assertNotIn(path, files, "%s ships %s's %s" % (pkg, other, path))
        # The dashboard and the rules as in the tree, whole: an operator
        # imports them from here.
        for inst, src in (("/usr/share/numaorch/grafana/numaorch-dashboard.json",
                           "deploy/grafana/numaorch-dashboard.json"),
                          ("/usr/share/numaorch/prometheus/numaorch-rules.yml",
                           "deploy/prometheus/numaorch-rules.yml")):
            with open(inst, "rb") as a, open(os.path.join(REPO, src), "rb") as b:
                self.assertEqual(a.read(), b.read(), inst)
        with open("/usr/share/numaorch/grafana/numaorch-dashboard.json") as f:
            self.assertIn("panels", json.load(f))
        if shutil.which("promtool"):
            p = run("promtool", "check", "rules", "/usr/share/numaorch/prometheus/numaorch-rules.yml", check=False)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # libvirt runs every executable in qemu.d; the hook lives in libexec.
        self.assertEqual(os.readlink("/etc/libvirt/hooks/qemu.d/numaorch"), "/usr/libexec/numaorch/libvirt-hook")
        self.assertTrue(os.access("/etc/libvirt/hooks/qemu.d/numaorch", os.X_OK))
        grp.getgrnam("numaorch")
        conffiles = run("dpkg-query", "-W", "-f=${Conffiles}", "numaorch").stdout
        self.assertIn("/etc/numaorch/numaorchd.conf", conffiles)

        if shutil.which("systemd-analyze"):
            p = run("systemd-analyze", "verify", "/lib/systemd/system/numaorchd.service",
                    "/lib/systemd/system/numaorch-rebalance.service",
                    "/lib/systemd/system/numaorch-rebalance.timer", check=False)
            self.assertEqual((p.returncode, p.stderr.strip()), (0, ""))
        for page in ("/usr/share/man/man8/numaorchd.8.gz", "/usr/share/man/man5/numaorchd.conf.5.gz",
                     "/usr/share/man/man1/numaorchctl.1.gz", "/usr/share/man/man8/numaorch-nrt-export.8.gz"):
            p = run("man", "-l", page, check=False, env=dict(os.environ, MANWIDTH="80", MAN_KEEP_STDERR="1"))
            self.assertEqual((p.returncode, p.stderr), (0, ""), page)
        p = run("numaorchd", "--check-config", "--config", "/etc/numaorch/numaorchd.conf")
        self.assertEqual(p.stdout.strip(), "configuration OK")

        sock = self.start_daemon()
        # The packaged config has [libvirt] enabled = yes: the installed
        # daemon found its installed module (it links no libvirt itself).
        with open("/proc/%d/maps" % self.daemon.pid) as f:
            self.assertIn("/usr/lib/numaorch/numaorch-libvirt.so", f.read())
        self.assertNotIn("libvirt.so", run("ldd", "/usr/sbin/numaorchd").stdout)
        st = os.stat(sock)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
        self.assertEqual(st.st_gid, grp.getgrnam("numaorch").gr_gid)
        p = run("numaorchctl", "status")
        self.assertIn("numaorchd", p.stdout)
        self.assertIn("mode advise", p.stdout)
        status = json.loads(run("numaorchctl", "--json", "status").stdout)
        self.assertIn("version", status)
        run("numaorchctl", "nodes")
        run("numaorchctl", "guests")
        # The one documented command, kept across a restart (the state
        # directory's settings file); this run stays --dry-run.
        run("numaorchctl", "policy", "set", "mode=enforce")
        self.stop_daemon()
        self.start_daemon()
        self.assertIn("mode enforce", run("numaorchctl", "status").stdout)
        self.assertTrue(os.path.exists("/var/lib/numaorch/settings.json"))
        self.stop_daemon()

        # Upgrade, all three: the operator's configuration and the state stay.
        with open("/etc/numaorch/numaorchd.conf", "a") as f:
            f.write("\n# operator's change\n[policy]\ncooldown = 123\n")
        os.makedirs("/var/lib/numaorch", exist_ok=True)
        with open("/var/lib/numaorch/operator-marker", "w") as f:
            f.write("kept\n")
        up = self.build_upgrade("0.1.0+upgradetest1")
        p = run("dpkg", "-i", "--force-confold", *up)
        # Said on the first install only.
        self.assertNotIn("starts in advise mode", p.stdout)
        self.assertNotIn("restart libvirtd", p.stdout)
        for pkg in PACKAGES:
            self.assertEqual(installed_version(pkg), "0.1.0+upgradetest1", pkg)
        with open("/etc/numaorch/numaorchd.conf") as f:
            self.assertIn("cooldown = 123", f.read())
        self.assertTrue(os.path.exists("/var/lib/numaorch/operator-marker"))
        self.start_daemon()
        self.stop_daemon()

        # Purge: nothing the package or the agent wrote is left.
        files = [l for pkg in PACKAGES for l in run("dpkg", "-L", pkg).stdout.splitlines() if l.strip()]
        run("dpkg", "--purge", *PACKAGES)
        for pkg in PACKAGES:
            self.assertIsNone(installed_version(pkg), pkg)
        left = [f for f in files if f.startswith(("/etc/numaorch", "/usr/sbin/numaorchd", "/usr/bin/numaorchctl",
                                                  "/lib/systemd/system/numaorch", "/etc/libvirt/hooks/qemu.d/numaorch",
                                                  "/usr/libexec/numaorch", "/usr/lib/numaorch",
                                                  "/usr/share/man", "/usr/share/doc/numaorch",
                                                  "/usr/share/bash-completion/completions/numaorchctl",
                                                  "/usr/share/numaorch"))
                and os.path.lexists(f) and not os.path.isdir(f)]
        self.assertEqual(left, [])
        for d in ("/etc/numaorch", "/var/lib/numaorch", "/run/numaorch", "/usr/share/doc/numaorch",
                  "/usr/share/doc/numaorch-libvirt", "/usr/share/doc/numaorch-client",
                  "/usr/share/numaorch", "/usr/lib/numaorch", "/usr/libexec/numaorch"):
            self.assertFalse(os.path.exists(d), d)

    def test_upgrade_from_one_package(self):
        """From the one-package layout to the three, in the order that
        needs numaorch-libvirt's and numaorch-client's Replaces (each
        unpacked while the old numaorch still owns its files)."""
        debs = self.build()
        old = self.one_package(debs)
        run("dpkg", "-i", old)
        self.assertIn("numaorch:", run("dpkg", "-S", "/usr/bin/numaorchctl").stdout)
        run("dpkg", "-i", debs["numaorch-client"], debs["numaorch-libvirt"], debs["numaorch"])
        for pkg in PACKAGES:
            self.assertIsNotNone(installed_version(pkg), pkg)
            for path in SHIPS[pkg]:
                self.assertTrue(os.path.lexists(path), path)
                owner = run("dpkg", "-S", path).stdout.split(":")[0]
                self.assertEqual(owner, pkg, path)
        self.assertEqual(os.readlink("/etc/libvirt/hooks/qemu.d/numaorch"), "/usr/libexec/numaorch/libvirt-hook")
        run("numaorchctl", "--help")
        run("dpkg", "--purge", *PACKAGES)
        for path in (p for paths in SHIPS.values() for p in paths):
            self.assertFalse(os.path.lexists(path), path)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""The libvirt module (numaorch-libvirt.so) on the live host: numaorchd
does not link libvirt; it loads the module only when [libvirt] enabled,
refuses a wrong or missing module with a clear warning and goes on
managing containers. The daemon runs on the real cgroupfs, dry-run, its
scope a cgroup that does not exist, so it finds no guest and writes nothing.

That libvirt stays out of the process is the point (about 7 MiB of RSS on
a container host), so it is checked in /proc/PID/maps, not assumed."""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

import itlib

MODULE = os.path.join(itlib.BUILD, "numaorch-libvirt.so")


def skip_reason():
    if not os.path.exists(itlib.NUMAORCHD) or not os.path.exists(MODULE):
        return "build/numaorchd or build/numaorch-libvirt.so missing (run make)"
    if not os.path.exists("/proc/self/maps"):
        return "no procfs"
    return None


REASON = skip_reason()


@unittest.skipIf(REASON, REASON or "")
class VmPlugin(itlib.DaemonTest):
    def setUp(self):
        super().setUp()
        self.sock = os.path.join(self.tmp, "api.sock")

    def libvirt_status(self):
        """GET /v1/status's "libvirt", through numaorchctl on the socket."""
        p = subprocess.run([os.path.join(itlib.BUILD, "numaorchctl"), "--socket", self.sock, "--json", "status"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)["libvirt"]

    def start(self, libvirt):
        """numaorchd on the live host, scope a parent that does not exist
        (no guest; nothing can be written), every 0.2 s; returns it once
        it has run a cycle."""
        conf = itlib.config_file(self.tmp, "[agent]\ninterval = 0.2\nsample = 0.05\ndry_run = yes\n"
                                           "[scope]\ncgroup = /numaorch-it-none\n"
                                           "[api]\nsocket = %s\n[libvirt]\n" % self.sock + libvirt)
        err = open(os.path.join(self.tmp, "stderr"), "w+")
        self.addCleanup(err.close)
        d = subprocess.Popen(self.numaorchd("--config", conf, "--log-level", "debug"),
                             stderr=err, stdin=subprocess.DEVNULL)
        self.addCleanup(lambda: d.poll() is None and d.kill())
        end = time.time() + 20
        while time.time() < end and d.poll() is None:
            with open(err.name) as f:
                if "cycle" in f.read():
                    break
            time.sleep(0.1)
        self.assertIsNone(d.poll(), self.stderr())
        return d

    def stderr(self):
        with open(os.path.join(self.tmp, "stderr")) as f:
            return f.read()

    def mapped(self, d):
        with open("/proc/%d/maps" % d.pid) as f:
            return {line.split()[-1] for line in f if "/" in line}

    def stop(self, d):
        d.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait(timeout=15), 0, self.stderr())

    def test_disabled_loads_no_libvirt(self):
        d = self.start("enabled = no\n")
        libs = {os.path.basename(p) for p in self.mapped(d)}
        self.assertEqual(self.libvirt_status()["state"], "disabled")
        self.stop(d)
        self.assertFalse([l for l in libs if l.startswith(("libvirt", "libxml2", "numaorch-libvirt"))], libs)

    def test_enabled_loads_the_module_beside_the_daemon(self):
        # No libvirtd needs to answer: the module loads, its connection
        # attempts fail and are retried in the background.
        d = self.start("enabled = yes\nuri = qemu:///system\n")
        maps = self.mapped(d)
        self.stop(d)
        self.assertIn(os.path.realpath(MODULE), {os.path.realpath(p) for p in maps}, self.stderr())
        self.assertTrue(any(os.path.basename(p).startswith("libvirt.so") for p in maps))

    def test_daemon_exports_only_what_the_module_imports(self):
        # The daemon's dynamic symbol table is the module's ABI with the
        # core, nothing more (it once exported all 284 core functions to
        # the module's ~55 libraries: xmalloc, problem, parse_u64, ...).
        if not shutil.which("nm"):
            self.skipTest("nm (binutils) is not installed")
        def syms(path, flag):
            out = subprocess.run(["nm", "-D", flag, path], capture_output=True, text=True,
                                 check=True, timeout=30).stdout
            return {l.split()[-1] for l in out.splitlines() if l.strip()}
        exported = {s for s in syms(itlib.NUMAORCHD, "--defined-only") if "@" not in s}
        wanted = syms(MODULE, "--undefined-only")
        self.assertTrue(exported, "the daemon exports nothing: the module could not load")
        self.assertEqual(exported - wanted, set(), "exported but not used by the module")
        self.assertLess(len(exported), 60, sorted(exported))

    def test_missing_module_is_a_warning_and_containers_go_on(self):
        d = self.start("enabled = yes\nmodule = %s/nothing-here.so\n" % self.tmp)
        time.sleep(0.5)
        lv = self.libvirt_status()
        human = subprocess.run([os.path.join(itlib.BUILD, "numaorchctl"), "--socket", self.sock, "status"],
                               capture_output=True, text=True, timeout=30).stdout
        self.stop(d)
        self.assertIn("libvirt:     unavailable (cannot load %s/nothing-here.so" % self.tmp, human)
        self.assertEqual(lv["state"], "unavailable", lv)
        self.assertIn("cannot load %s/nothing-here.so" % self.tmp, lv["reason"])
        err = self.stderr()
        self.assertIn("libvirt VM source disabled: cannot load %s/nothing-here.so" % self.tmp, err)
        self.assertGreaterEqual(err.count("cycle"), 2, err)

    def test_foreign_shared_object_is_refused(self):
        # A real shared object that is not numaorch's module.
        libz = None
        for line in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines():
            if "libz.so.1 " in line:
                libz = line.split("=>")[-1].strip()
                break
        if not libz:
            self.skipTest("no libz.so.1 to stand in for a foreign module")
        # The file itself: a symlink is refused before anything is read.
        d = self.start("enabled = yes\nmodule = %s\n" % os.path.realpath(libz))
        self.stop(d)
        self.assertIn("has no numaorch_vmplugin table: not a numaorch module", self.stderr())

    def test_module_anyone_could_replace_is_refused(self):
        # The module runs as root in the daemon: one that another user
        # could write, or plant, is not loaded (and said so), nor through
        # a symlink; the real module copied to a safe place loads, by
        # the open file that was checked.
        other = 65534  # nobody
        safe = os.path.join(self.tmp, "safe")
        os.mkdir(safe, 0o755)
        good = os.path.join(safe, "numaorch-libvirt.so")
        shutil.copy(MODULE, good)
        os.chmod(good, 0o755)
        open_dir = os.path.join(self.tmp, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        shutil.copy(MODULE, os.path.join(open_dir, "numaorch-libvirt.so"))
        link = os.path.join(safe, "link.so")
        os.symlink(good, link)
        cases = [
            ("group-writable", good, 0o775, None, "it is writable by its group (mode 0775): refusing to run its code"),
            ("world-writable", good, 0o757, None, "it is writable by others (mode 0757): refusing to run its code"),
            ("another owner", good, 0o755, other, "it is owned by uid %d, not by root" % other),
            ("open directory", os.path.join(open_dir, "numaorch-libvirt.so"), 0o755, None,
             "is writable by others (mode 0777): refusing to use it"),
            ("symlink", link, 0o755, None, "a symlink: refused"),
        ]
        if os.geteuid() != 0:
            cases = [c for c in cases if c[3] is None]
        for what, path, mode, owner, want in cases:
            with self.subTest(what):
                os.chmod(good, mode)
                os.chown(good, owner if owner is not None else os.geteuid(), -1)
                d = self.start("enabled = yes\nmodule = %s\n" % path)
                lv = self.libvirt_status()
                maps = self.mapped(d)
                self.stop(d)
                self.assertEqual(lv["state"], "unavailable", lv)
                self.assertIn("cannot load %s: " % path, lv["reason"])
                self.assertIn(want, self.stderr())
                self.assertNotIn(os.path.realpath(path), {os.path.realpath(p) for p in maps})
                conf = itlib.config_file(self.tmp, "[libvirt]\nenabled = yes\nmodule = %s\n" % path)
                p = subprocess.run(self.numaorchd("--check-config", "--config", conf),
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn(want, p.stderr)
        os.chmod(good, 0o755)
        os.chown(good, os.geteuid(), -1)
        d = self.start("enabled = yes\nmodule = %s\n" % good)
        lv = self.libvirt_status()
        maps = self.mapped(d)
        self.stop(d)
        self.assertNotEqual(lv["state"], "unavailable", (lv, self.stderr()))
        self.assertIn(good, maps)

    def test_check_config_warns_of_a_missing_module(self):
        # Not an error (containers are managed without it), but said.
        conf = itlib.config_file(self.tmp, "[libvirt]\nmodule = %s/nothing-here.so\n" % self.tmp)
        p = subprocess.run(self.numaorchd("--check-config", "--config", conf),
                           capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "configuration OK"), p.stderr)
        self.assertIn("warning: [libvirt] enabled = yes, but cannot load %s/nothing-here.so" % self.tmp, p.stderr)
        # the module beside build/numaorchd is found: no warning
        conf = itlib.config_file(self.tmp, "[libvirt]\nenabled = yes\n")
        p = subprocess.run(self.numaorchd("--check-config", "--config", conf),
                           capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stderr), (0, ""))

    def test_relative_module_path_is_a_config_error(self):
        conf = itlib.config_file(self.tmp, "[libvirt]\nmodule = numaorch-libvirt.so\n")
        p = subprocess.run(self.numaorchd("--check-config", "--config", conf),
                           capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("[libvirt] module: must be an absolute path", p.stderr)


if __name__ == "__main__":
    unittest.main()

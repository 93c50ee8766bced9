"""A container's devices from this machine's real cgroup v1 devices
controller (issue 43): a sandbox container whose devices.list allows the
generic null and one real char or block device of this machine, and one
that inherits "a *:* rwm". The agent reads its real devices.list and
resolves the device through the real /sys/dev/{char,block}/MAJ:MIN/device
to its PCI function's numa_node (the fixture sysfs that splits the CPUs
into nodes links its dev/ to the real /sys/dev); the one allowed every
device is "all", on no node.
"""
import json
import os
import unittest

import itlib

CG_DEVICES = os.path.join(itlib.CGROOT, "devices")
# What every container gets, which says nothing about where it belongs
# (agents/devcg.c); pts is the whole major 136.
GENERIC = {("char", 1, 3), ("char", 1, 5), ("char", 1, 7), ("char", 1, 8), ("char", 1, 9), ("char", 5, 0),
           ("char", 5, 1), ("char", 5, 2), ("char", 10, 200), ("char", 10, 229)}


def numa_node_of(devlink):
    """The numa_node the agent finds from DEVLINK (a /sys/dev/X/M:m/device):
    the nearest directory up with one, at most 6 levels; None: none."""
    p = devlink
    for _ in range(6):
        f = os.path.join(p, "numa_node")
        if os.path.exists(f):
            return int(itlib.read(f))
        p = os.path.join(p, "..")
    return None


def real_device():
    """A real (kind, major, minor, node) of this machine whose sysfs has a
    bus device with a numa_node behind it, or None."""
    for kind in ("char", "block"):
        base = os.path.join("/sys/dev", kind)
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            maj, _, mi = name.partition(":")
            if not (maj.isdigit() and mi.isdigit()):
                continue
            maj, mi = int(maj), int(mi)
            if (kind, maj, mi) in GENERIC or (kind == "char" and maj == 136):
                continue
            link = os.path.join(base, name, "device")
            if not os.path.exists(link):
                continue
            node = numa_node_of(link)
            if node is not None:
                return kind, maj, mi, node
    return None


def skip_reason():
    r = itlib.skip_reason_v1()
    if r:
        return r
    if not os.path.exists(os.path.join(CG_DEVICES, "devices.list")):
        return "no cgroup v1 devices hierarchy at %s" % CG_DEVICES
    if len(os.sched_getaffinity(0)) < 2:
        return "needs 2 CPUs to split into two fixture nodes"
    if real_device() is None:
        return "no char or block device here whose /sys/dev/*/MAJ:MIN/device reaches a numa_node"
    return None


REASON = skip_reason()


@unittest.skipIf(REASON, REASON or "")
class DevicesV1(itlib.V1SandboxTest):
    def devices_cgroup(self, child, rules):
        """CHILD's cgroup in the devices hierarchy under the sandbox, its
        rules RULES (None: inherited, every device), its memhog moved in."""
        path = os.path.join(CG_DEVICES, self.sb.name, child)
        os.makedirs(path, exist_ok=True)
        self.addCleanup(self.rm_devices, path)
        if rules is not None:
            itlib.write(os.path.join(path, "devices.deny"), "a")
            for r in rules:
                itlib.write(os.path.join(path, "devices.allow"), r)
        for pid in itlib.read(os.path.join(self.sb.path("cpuset", child), "cgroup.procs")).split():
            itlib.write(os.path.join(path, "cgroup.procs"), pid)
        return path

    def rm_devices(self, path):
        # Cleanups run last-added first: the sandbox's, which kills the
        # processes, runs after this one, so they go back to the root first.
        try:
            for pid in itlib.read(os.path.join(path, "cgroup.procs")).split():
                try:
                    itlib.write(os.path.join(CG_DEVICES, "cgroup.procs"), pid)
                except OSError:
                    pass  # gone
        except FileNotFoundError:
            return
        for d in (path, os.path.dirname(path)):
            try:
                os.rmdir(d)
            except OSError:
                pass  # the other child still there, or gone

    def test_real_device_and_all(self):
        kind, maj, mi, node = real_device()
        print("\n  device %s %d:%d on node %d (sysfs)" % (kind, maj, mi, node))
        sysfs = self.topo_cpu_only_node1()
        os.symlink("/sys/dev", os.path.join(sysfs, "dev"))
        self.sb.start("ctr-a", cpus="0-1", mems="0", mib=16)
        self.sb.start("ctr-b", cpus="0-1", mems="0", mib=16)
        a = self.devices_cgroup("ctr-a", ["c 1:3 rwm", "c 136:* rwm", "%s %d:%d r" % (kind[0], maj, mi)])
        self.devices_cgroup("ctr-b", None)
        print("  ctr-a devices.list: %s" % itlib.read(os.path.join(a, "devices.list")).replace("\n", "; "))
        quiet = self.fake_load({0: 0.1, 1: 0.1})
        p = self.agent.once("--sysfs", sysfs, "--procfs", quiet, "--parent", self.sb.rel, "--scope",
                            self.sb.rel, "--json", "--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        guests = {g["id"]: g for g in json.loads(p.stdout)["snapshot"]["guests"]}
        dev_a = guests["custom-ctr-a"].get("devices")
        self.assertIsNotNone(dev_a, guests["custom-ctr-a"])
        self.assertEqual(dev_a["count"], 1, dev_a)
        self.assertEqual(dev_a["nodes"], str(node) if node >= 0 else "", dev_a)
        self.assertNotIn("all", dev_a)
        dev_b = guests["custom-ctr-b"].get("devices")
        self.assertEqual(dev_b, {"count": 0, "nodes": "", "all": True})


if __name__ == "__main__":
    unittest.main()

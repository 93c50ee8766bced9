"""A guest's devices on a fixture host (issue 43): the kubelet's
device-plugin checkpoint gives two pods of tests/fixtures/cg-v2 a device
each (tests/fixtures/kubelet/device-plugins), one by the node the
checkpoint names, one by its PCI address, whose node is in the fixture's
sysfs. Both are shown with their devices' nodes; placement goes near the
device, and a per-guest devices = require makes the best-effort pod
(all its memory on node 1) go to its device's node 0."""
import os
import shutil
import unittest

import apilib
import itlib

REASON = apilib.skip_reason() or (None if os.path.exists(apilib.NUMAORCHCTL) else
                                  "build/numaorchctl missing (run make)")

BESTEFFORT = "kubernetes-0f9e8d7c-6b5a-4c3d-8e2f-a1b2c3d4e5f6"   # device 0000:3b:00.1, node 0 by sysfs
BURSTABLE = "kubernetes-8c3e0f1a-5b6d-4e2f-9a7c-1d2e3f4a5b6c"    # device nic-vf3, node 1 by the checkpoint
CKPT = os.path.join(apilib.FIX, "kubelet", "device-plugins", "kubelet_internal_checkpoint")


@unittest.skipIf(REASON, REASON or "")
class KubeletDevices(unittest.TestCase):
    CONF = "[agent]\nmode = advise\nsample = 0.05\n[policy]\nmax_moves = 100\n"

    @classmethod
    def setUpClass(cls):
        cls.tmp = itlib.mktemp()
        try:
            cls.root = apilib.compose_root(cls.tmp)
            d = os.path.join(cls.root, "var", "lib", "kubelet", "device-plugins")
            os.makedirs(d)
            shutil.copyfile(CKPT, os.path.join(d, "kubelet_internal_checkpoint"))
            pci = os.path.join(cls.root, "sys", "bus", "pci", "devices", "0000:3b:00.1")
            os.makedirs(pci)
            itlib.write(os.path.join(pci, "numa_node"), "0\n")
            cls.d = apilib.Daemon(cls.tmp, cls.root, binary=itlib.NUMAORCHD_TEST,
                                  conf=cls.CONF).start()
        except BaseException:
            shutil.rmtree(cls.tmp, True)
            raise

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        shutil.rmtree(cls.tmp, True)
        if rc != 0:
            raise AssertionError("numaorchd exited %d" % rc)

    def plan(self):
        r = self.d.request("POST", "/v1/rebalance", {"dry_run": True, "verbose": True})
        self.assertEqual(r.status, 200, r.body)
        return {i["guest"]: i for i in r.json()["plan"]["items"]}

    def test_shown(self):
        guests = {g["id"]: g for g in self.d.get("/v1/guests?runtime=kubernetes").json()["guests"]}
        # "local": whether its CPUs are on a device's node (both pods may
        # run on every node: yes)
        self.assertEqual(guests[BURSTABLE]["devices"], {"count": 1, "nodes": "1", "local": True})
        self.assertEqual(guests[BESTEFFORT]["devices"], {"count": 1, "nodes": "0", "local": True})
        g = self.d.get("/v1/guests/" + BESTEFFORT).json()
        self.assertEqual(g["devices"], {"count": 1, "nodes": "0", "local": True})
        self.assertNotIn("owner", g)    # devices make no pod the kubelet's
        self.assertIn("devices:   1, on nodes 0", self.d.ctl("guest", BESTEFFORT).stdout)

    def test_metrics(self):
        """Each pod's device node, and whether its CPUs are there, in
        /metrics (only guests with devices: bounded by them) and in the
        guest's JSON."""
        text = self.d.get("/metrics").body.decode()
        self.assertIn('numaorch_guest_device_node{guest="%s",node="1"} 1\n' % BURSTABLE, text)
        self.assertIn('numaorch_guest_device_node{guest="%s",node="0"} 1\n' % BESTEFFORT, text)
        guests = {g["id"]: g for g in self.d.get("/v1/guests").json()["guests"]}
        with_dev = [i for i, g in guests.items() if "devices" in g]
        self.assertEqual(sorted(with_dev), sorted([BURSTABLE, BESTEFFORT]))
        for gid in with_dev:
            local = guests[gid]["devices"].get("local")
            self.assertIsNotNone(local, guests[gid])
            self.assertIn('numaorch_guest_device_local{guest="%s"} %d\n' % (gid, int(local)), text)
            one = self.d.get("/v1/guests/" + gid).json()
            self.assertEqual(one["devices"].get("local"), local)
        # no guest without devices has a device series
        series = [l for l in text.splitlines() if l.startswith("numaorch_guest_device_")]
        self.assertTrue(all(BURSTABLE in l or BESTEFFORT in l for l in series), series)
        out = self.d.ctl("guest", BESTEFFORT).stdout
        self.assertRegex(out, r"devices:   1, on nodes 0 \(its CPUs there\)")

    def test_placed_near_device(self):
        """The burstable pod (most of its memory on node 1) goes to node 1,
        its device's, and the plan says so; the best-effort pod, all its
        32 MiB on node 1 but its CPUs on both nodes (not local), moves
        anyway and goes to node 0, its device's, its memory following:
        under prefer a moving guest goes to its device where it fits."""
        plan = self.plan()
        it = plan[BURSTABLE]
        self.assertEqual((it["kind"], it["to_nodes"]), ("move", "1"), it)
        self.assertIn("near its device on node 1", it["detail"])
        it = plan[BESTEFFORT]
        self.assertEqual((it["kind"], it["to_nodes"]), ("move", "0"), it)
        self.assertIn("near its device on node 0", it["detail"])
        self.assertNotIn("required", it["detail"])

    def test_require(self):
        """devices = require through the API: the best-effort pod is planned
        onto node 0, its device's node, and the policy shows it."""
        r = self.d.request("PUT", "/v1/guests/%s/policy" % BESTEFFORT, {"mode": "auto", "devices": "require"})
        self.assertEqual(r.status, 200, r.body)
        self.addCleanup(self.d.request, "DELETE", "/v1/guests/%s/policy" % BESTEFFORT)
        self.assertEqual(r.json()["devices"], "require")
        self.assertEqual(self.d.request("PUT", "/v1/guests/%s/policy" % BESTEFFORT,
                                        {"mode": "auto", "devices": "always"}).status, 400)
        self.d.request("POST", "/v1/rebalance", {"dry_run": True})    # the snapshot takes the override
        it = self.plan()[BESTEFFORT]
        self.assertEqual((it["kind"], it["to_nodes"]), ("move", "0"), it)
        self.assertIn("near its device on node 0 (required)", it["detail"])
        g = self.d.get("/v1/guests/" + BESTEFFORT).json()
        self.assertEqual(g["policy"]["devices"], "require")


@unittest.skipIf(REASON, REASON or "")
class HostDefaultRequire(KubeletDevices):
    """[policy] devices = require in the daemon's config: every guest the
    API leaves without a policy takes it (the best-effort pod goes to its
    device's node with no PUT, its policy shown as the default's), a
    guest's own policy still wins, and advice that does not say is given
    under it."""
    CONF = "[agent]\nmode = advise\nsample = 0.05\n[policy]\nmax_moves = 100\ndevices = require\n"

    def test_placed_near_device(self):
        it = self.plan()[BESTEFFORT]
        self.assertEqual((it["kind"], it["to_nodes"]), ("move", "0"), it)
        self.assertIn("near its device on node 0 (required)", it["detail"])
        pol = self.d.get("/v1/guests/" + BESTEFFORT).json()["policy"]
        self.assertEqual((pol["devices"], pol["source"]), ("require", "default"), pol)

    def test_require(self):
        r = self.d.request("PUT", "/v1/guests/%s/policy" % BESTEFFORT, {"mode": "auto", "devices": "prefer"})
        self.assertEqual(r.status, 200, r.body)
        self.addCleanup(self.d.request, "DELETE", "/v1/guests/%s/policy" % BESTEFFORT)
        self.d.request("POST", "/v1/rebalance", {"dry_run": True})    # the snapshot takes the override
        it = self.plan()[BESTEFFORT]
        self.assertIn("near its device on node 0", it["detail"])
        self.assertNotIn("required", it["detail"])

    def test_advice(self):
        """Advice for a guest with a device on node 0 whose request does
        not say what it weighs is given under the host's require; the
        request's "ignore" wins."""
        r = self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64, "device_nodes": [0]})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["nodes"], "0", r.body)
        self.assertIn("(required)", r.json()["detail"])
        r = self.d.request("POST", "/v1/placements", {"vcpus": 1, "memory_mib": 64, "device_nodes": [0],
                                                      "devices": "ignore"})
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("device", r.json()["detail"])


if __name__ == "__main__":
    unittest.main()

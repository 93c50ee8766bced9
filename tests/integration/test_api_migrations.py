"""GET /v1/migrations, DELETE /v1/migrations/{id}, numaorchctl migrations,
and kernel.numa_balancing in /v1/status and /metrics, over real HTTP to the
real numaorchd on a fixture host (no root needed). A fixture root has no
memory mover (its memory is files): the jobs themselves are tested on real
processes by test_mover.py."""
import os
import shutil
import unittest

import apilib
import itlib

REASON = apilib.skip_reason()


@unittest.skipIf(REASON, REASON or "")
class Migrations(unittest.TestCase):
    def start(self, balancing, conf=""):
        tmp = itlib.mktemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        root = apilib.compose_root(tmp)
        if balancing is not None:
            os.makedirs(os.path.join(root, "proc", "sys", "kernel"), exist_ok=True)
            itlib.write(os.path.join(root, "proc", "sys", "kernel", "numa_balancing"), "%d\n" % balancing)
        d = apilib.Daemon(tmp, root, conf="[agent]\nsample = 0.05\n" + conf).start()
        self.addCleanup(d.stop)
        return d

    def test_no_mover_on_a_fixture_root(self):
        d = self.start(1)
        r = d.get("/v1/migrations")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json(), {"mover": False, "migrations": []})
        r = d.request("DELETE", "/v1/migrations/1")
        self.assertEqual(r.status, 404, r)
        self.assertIn("mover is not running", r.json()["detail"])
        r = d.request("DELETE", "/v1/migrations/abc")
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["field"], "id")
        p = d.ctl("migrations")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no memory mover", p.stdout)
        p = d.ctl("migrations", "cancel", "x1")
        self.assertEqual(p.returncode, 2, p.stderr)
        p = d.ctl("migrations", "cancel", "7")
        self.assertEqual(p.returncode, 4, (p.stdout, p.stderr))

    def test_kernel_balancing_shown(self):
        d = self.start(1, "[memory]\nkernel_balancing = defer\n")
        st = d.get("/v1/status").json()["kernel_balancing"]
        self.assertEqual(st["numa_balancing"], 1)
        self.assertTrue(st["kernel_migrates"])
        self.assertEqual(st["setting"], "defer")
        self.assertIn("kernel.numa_balancing = 1: the kernel migrates memory on fault too; numaorchd works "
                      "beside it (kernel_balancing = defer", d.logtext())
        m = d.get("/metrics").body.decode()
        self.assertIn("\nnumaorch_kernel_numa_balancing 1\n", m)
        self.assertIn("\nnumaorch_memory_deferred_total ", m)

    def test_kernel_balancing_absent(self):
        d = self.start(None)
        st = d.get("/v1/status").json()["kernel_balancing"]
        self.assertIsNone(st["numa_balancing"])
        self.assertFalse(st["kernel_migrates"])
        self.assertEqual(st["setting"], "migrate")
        self.assertIn("numaorch_kernel_numa_balancing -1", d.get("/metrics").body.decode())


if __name__ == "__main__":
    unittest.main()

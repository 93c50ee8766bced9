"""No integration test may start numaorchd on the host's state directory
(/var/lib/numaorch): a test once left a cool-down there that broke later
runs, and --once reads the operator's per-guest policies from it. Every
command line that runs the daemon is built by itlib.numaorchd(), which
puts a private --state-dir first; this test finds command lines written by
hand (a list starting with the binary) in the test sources. Only --help
and --list-routes, which read and write no state, may skip it."""
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# [itlib.NUMAORCHD, ...] / [NUMAORCHD_TEST, ...] / [self.binary, ...]
BY_HAND = re.compile(r"\[\s*(?:itlib\.)?(?:NUMAORCHD(?:_TEST)?|self\.binary)\s*,(?P<rest>[^\]]*)")
NO_STATE = ('"--help"', '"--list-routes"')


class PrivateState(unittest.TestCase):
    def test_every_daemon_command_line_gets_a_private_state_dir(self):
        found = []
        for dirpath, _, files in os.walk(HERE):
            for f in sorted(files):
                if not f.endswith(".py") or f == os.path.basename(__file__):
                    continue
                path = os.path.join(dirpath, f)
                with open(path) as src:
                    text = src.read()
                for m in BY_HAND.finditer(text):
                    if any(a in m.group("rest").split(",")[0] for a in NO_STATE):
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    found.append("%s:%d: %s" % (os.path.relpath(path, HERE), line, m.group(0).splitlines()[0]))
        self.assertEqual(found, [], "daemon command lines built by hand (use itlib.numaorchd()):\n"
                         + "\n".join(found))


if __name__ == "__main__":
    unittest.main()

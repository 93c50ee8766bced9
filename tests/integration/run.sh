#!/bin/sh
# Integration tests: the real numaorchd against real cgroups. Tests that
# need root or a cgroup v1 cpuset skip with the reason printed.
set -eu
cd "$(dirname "$0")"
exec python3 -m unittest discover -s . -p 'test_*.py' -v

#!/bin/sh
# make bench-migrate: how fast memory moves between nodes in this VM —
# raw move_pages(2), numaorchd's mover with 1, 2 and 4 workers, and a
# cgroup v2 cpuset.mems write, for 4 KiB and THP memory (guest/migbench.c).
#   tests/numa-vm/numavm.py script bench_migrate
echo "H nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
/bin/migbench --mib 256
echo "END rc=$?"

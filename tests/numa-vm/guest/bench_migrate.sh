#!/bin/sh
# make bench-migrate: how fast memory moves between nodes in this VM —
# raw move_pages(2), numaorchd's mover with 1, 2 and 4 workers, and a
# cgroup v2 cpuset.mems write, for 4 KiB and THP memory (guest/migbench.c).
# Then, per page kind, pairs of raw and the default mover alternating
# (migbench --pairs): one figure of each cannot say whether the mover
# reaches 80 % of raw on a host whose load swings 4x within a minute.
# Busy THP, the case in doubt, gets the most; busy 4 KiB three: its
# single figure read 70 % once (s14-pairs2) where its pairs, measured
# alone (bench_migrate_busy4k, s14-busy4k), were 107-129 % — three
# pairs cost ~90 s there. The whole run takes about 8-9 min (the T lines
# say what each kind cost).
#   tests/numa-vm/numavm.py script bench_migrate
echo "H nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
/bin/migbench --mib 256 --pairs thp=3,4k=3,thp-busy=7,4k-busy=3
echo "END rc=$?"

#!/bin/sh
# make bench-migrate's busy 4 KiB guests only, with three raw/mover pairs
# (migbench --pairs; make bench-migrate runs none there, ~40-50 s a pair),
# so busy 4 KiB's ratio is stated from pairs too.
#   tests/numa-vm/numavm.py script bench_migrate_busy4k
echo "H nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
/bin/migbench --only busy --pages 4k --pairs 4k-busy=3
echo "END rc=$?"

#!/bin/sh
# make bench-migrate's busy THP guests only, three times in one
# boot: the busy cases are where the mover's calls matter, and the shared
# host's run-to-run variance is large, so repeats in one run compare.
#   tests/numa-vm/numavm.py script bench_migrate_busy
echo "H nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
/bin/migbench --only busy --pages thp --repeat 3
echo "END rc=$?"

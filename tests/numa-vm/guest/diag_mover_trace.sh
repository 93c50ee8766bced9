#!/bin/sh
# Diagnostics: make bench-migrate's busy THP cases with each of the
# mover's calls logged (move calls, queries, census; debug level).
#   tests/numa-vm/numavm.py script diag_mover_trace
echo "H nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
/bin/migbench --only busy --pages thp --trace
echo "END rc=$?"

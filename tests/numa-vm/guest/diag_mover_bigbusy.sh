#!/bin/sh
# Diagnostics: make bench-migrate's busy THP cases with bigger guests
# (4 x 64 MiB, not 4 x 16), each of the mover's calls logged: whether a
# guest bigger than one 16 MiB call keeps up with raw move_pages' 64 MiB
# calls.
#   tests/numa-vm/numavm.py script diag_mover_bigbusy
echo "H nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
/bin/migbench --only busy --pages thp --busy-mib 256 --trace
echo "END rc=$?"

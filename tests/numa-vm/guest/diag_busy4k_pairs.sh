#!/bin/sh
# Diagnostics: make bench-migrate's busy 4 KiB cases and pairs alone, the
# mover's debug log less its per-call lines (migbench prints an F line
# with its frames if it crashes).
#   tests/numa-vm/numavm.py script diag_busy4k_pairs
echo "H nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
/bin/migbench --busy-mib 64 --only busy --pages 4k --pairs 4k-busy=3 --trace > /tmp/out 2>&1
rc=$?
grep -v "mover: job [0-9]* pid [0-9]* t=.*: move [0-9]* entries" /tmp/out
echo "END rc=$rc"

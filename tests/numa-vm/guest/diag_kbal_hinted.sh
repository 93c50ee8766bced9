#!/bin/sh
# Diagnostics: what move_pages(2) - the mover's query and move calls - sees
# of pages the kernel's NUMA balancing has marked for a hinting fault
# (migbench --hinted: a busy guest scanned for 3 s, then stopped).
#   tests/numa-vm/numavm.py script diag_kbal_hinted
uname -r
/bin/migbench --hinted --busy-mib 64
echo "END rc=$?"

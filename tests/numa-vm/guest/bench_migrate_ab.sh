#!/bin/sh
# make bench-migrate's busy THP guests, a base build of the mover and this
# one alternating in one boot (three rounds, base first in each): the
# shared host's load drifts more between runs than a change of the
# mover's overhead moves the figures, so before and after compare here.
#   NUMAVM_MIGBENCH_BASE=/path/to/base/migbench \
#     tests/numa-vm/numavm.py script bench_migrate_ab
echo "H nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
if [ ! -x /bin/migbench-base ]; then
	echo "SKIP: no /bin/migbench-base (set NUMAVM_MIGBENCH_BASE to a migbench built from the base tree)"
	echo "END rc=0"
	exit 0
fi
rc=0
for rep in 1 2 3; do
	echo "P rep=$rep build=base"
	/bin/migbench-base --only busy --pages thp || rc=$?
	echo "P rep=$rep build=this"
	/bin/migbench --only busy --pages thp || rc=$?
done
echo "END rc=$rc"

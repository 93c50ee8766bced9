#!/bin/sh
# Diagnostics, not a test: the misplaced layout (web1/web2's memory on
# node 0, db1/db2's on node 1, one busy thread each), the threads started
# on a different arrangement of nodes each round and then set free, and a
# dry-run numaorchd --once each round: the snapshot and plan it decides on
# (J lines, one JSON document each), once per first-cycle rate window
# ([agent] sample; W=SECONDS on the R line), the arrangement set anew
# before each, and the agent's own CPU time it left out of each node's
# load (S lines, from its debug log). tests/numa-vm/numavm.py script diag_misplaced_start
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
. /tests/lib_misplaced.sh
misplaced_guests
mkdir -p /var/lib/numaorch /run/numaorch
cpus_of() { cat /sys/devices/system/node/node$1/cpulist; }
# Start arrangements: guest i's threads on node ARR[i] (web1 web2 db1 db2).
for w in 1 0.5 0.25; do
	sed "s/^sample = .*/sample = $w/" /etc/numaorch/numaorchd.conf > /tmp/numaorchd-$w.conf
done
for arr in "1 2 3 1" "0 1 3 0" "2 2 3 3" "1 0 0 1" "3 3 2 2" "0 0 1 1" "1 1 0 0" "2 0 3 1"; do
for w in 1 0.5 0.25; do
	i=0
	for n in $arr; do
		i=$((i + 1))
		eval p=\$pid$i
		for t in /proc/$p/task/*; do taskset -p -c "$(cpus_of $n)" ${t##*/} >/dev/null 2>&1; done
	done
	sleep 1.5
	for i in 1 2 3 4; do
		eval p=\$pid$i
		for t in /proc/$p/task/*; do taskset -p -c 0-7 ${t##*/} >/dev/null 2>&1; done
	done
	echo "R arr=$arr w=$w"
	/bin/numaorchd --once --dry-run --json --log-level debug --config /tmp/numaorchd-$w.conf 2>/tmp/once.err |
		tr -d '\n' | sed 's/^/J /'
	echo
	# the agent's own CPU time taken off the nodes' load (S lines)
	grep "the agent's own" /tmp/once.err | sed 's/^/S /'
done
done
echo "END rc=0"

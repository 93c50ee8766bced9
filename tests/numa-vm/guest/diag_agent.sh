#!/bin/sh
# Diagnostics, not a test: one numaorchd cycle on the misplaced layout,
# every log line stamped with the VM's uptime, to see where a cycle's
# time goes. tests/numa-vm/numavm.py script diag_agent
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
up() { cut -d' ' -f1 /proc/uptime; }
. /tests/lib_misplaced.sh
misplaced_guests
sleep 2
mkdir -p /var/lib/numaorch /run/numaorch
/bin/numaorchd --once --log-level debug --config /etc/numaorch/numaorchd.conf 2>&1 | while read -r l; do echo "$(up) $l"; done &
# Where the time goes: kernel stacks of the tasks in D state.
for k in $(seq 1 60); do
	sleep 0.5
	for f in $(grep -l "^State:.*D" /proc/[0-9]*/status 2>/dev/null); do
		p=${f%/status}
		echo "$(up) STACK $(cat $p/comm): $(head -8 $p/stack | awk '{print $2}' | tr '\n' ' ')"
	done
done
wait
for i in 1 2 3 4; do cat $CG/system.slice/docker-$(printf '%064d' $i).scope/memory.numa_stat | head -1; done
echo "END rc=0"

#!/bin/sh
# Diagnostics, not a test: numaorchd's start placement of a guest that
# starts while the agent runs (churn's late guests, whose "place" records
# took 3.2-7.6 s with under 1 MiB migrated), with the agent's debug log
# and the kernel stacks of tasks in D state stamped with the VM's uptime,
# to see what the engine waits for inside the apply.
#   tests/numa-vm/numavm.py script diag_start_place_agent
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
. /tests/lib_late_guests.sh
late_slices
late_base
sleep 5
stacks() {  # SECONDS
	n=$(awk -v s=$1 'BEGIN{print int(s * 4)}')
	for k in $(seq 1 $n); do
		sleep 0.25
		# numaorchd's threads only: a walk of every task under TCG
		# slowed the guests' touch 5x (first run)
		for f in $(grep -l "^State:.*D" /proc/$(pidof numaorchd)/task/[0-9]*/status 2>/dev/null); do
			p=${f%/status}
			echo "$(up) STACK $(cat $p/comm) $(basename $p): $(head -10 $p/stack | awk '{print $2}' | tr '\n' ' ')"
		done
	done
}
start $CG/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod00000000_0000_0000_0000_000000000001.slice 0 d
stacks 8
ready d
start $CG/machine.slice/libpod-$(printf '%064d' 3).scope 0 c
stacks 6
ready c
sleep 2
kill $(pidof numaorchd)
sleep 1
for g in d c; do echo "$g $(awk '$1=="anon"' $CG/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod00000000_0000_0000_0000_000000000001.slice/memory.numa_stat $CG/machine.slice/libpod-$(printf '%064d' 3).scope/memory.numa_stat 2>/dev/null | head -2 | tr '\n' ' ')"; done
echo "END rc=0"

#!/bin/sh
# Diagnostics, not a test: the misplaced layout (four busy 320 MiB THP
# guests, memory first touched on nodes 0, 0, 1, 1, threads free) with the
# kernel's NUMA balancing switched on as numaorchd starts (the packaged
# config, kernel_balancing as shipped), every log line at debug level and
# stamped with the VM's uptime: what the mover's calls answer while the
# kernel migrates the same pages on fault.
#   tests/numa-vm/numavm.py script diag_kbal_race
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
up() { cut -d' ' -f1 /proc/uptime; }
. /tests/lib_misplaced.sh
misplaced_guests
sleep 1
mkdir -p /var/lib/numaorch /run/numaorch
echo 1 > /proc/sys/kernel/numa_balancing
/bin/numaorchd --log-level debug --interval 2 --config /etc/numaorch/numaorchd.conf 2>&1 | while read -r l; do echo "$(up) $l"; done &
for k in $(seq 1 12); do
	sleep 1
	for i in 1 2 3 4; do
		d=$CG/system.slice/docker-$(printf '%064d' $i).scope
		echo "$(up) S g$i cpus=$(cat $d/cpuset.cpus) $(head -1 $d/memory.numa_stat) migrated=$(awk '$1=="pgmigrate_success"{print $2}' /proc/vmstat)"
	done
done
kill $(pidof numaorchd) 2>/dev/null
sleep 1
echo "END rc=0"

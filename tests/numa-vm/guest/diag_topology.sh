#!/bin/sh
# Diagnostics: what the VM looks like (numactl -H, cgroup v2 controllers).
#   tests/numa-vm/numavm.py script diag_topology --vm vm8nodes
numactl -H
cat /sys/fs/cgroup/cgroup.subtree_control
# Cores and caches (numavm.py script diag_topology --vm smt: SMT siblings).
for c in /sys/devices/system/cpu/cpu[0-9]*; do
	echo "${c##*/}: siblings $(cat $c/topology/thread_siblings_list 2>/dev/null) core_id $(cat $c/topology/core_id 2>/dev/null)" \
		"llc $(cat $c/cache/index3/shared_cpu_list 2>/dev/null)"
done
grep -m1 -o ' ht \| nosmt' /proc/cpuinfo /proc/cmdline
echo "END rc=0"

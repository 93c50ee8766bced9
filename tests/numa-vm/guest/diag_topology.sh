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
# Distances and memory-only nodes (--vm twosocket), PCI devices' nodes.
for nd in /sys/devices/system/node/node[0-9]*; do
	echo "${nd##*/}: cpulist '$(cat $nd/cpulist)' distance $(cat $nd/distance)"
done
for d in /sys/bus/pci/devices/*; do
	echo "pci ${d##*/}: $(cat $d/vendor):$(cat $d/device) class $(cat $d/class) numa_node $(cat $d/numa_node 2>/dev/null)"
done
grep -m1 -o ' ht \| nosmt' /proc/cpuinfo /proc/cmdline
echo "END rc=0"

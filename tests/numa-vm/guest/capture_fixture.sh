#!/bin/sh
# Capture a fixture tree from the testbed's real multi-node kernel
# (tests/numa-vm/numavm.py capture NAME): the NUMA topology under
# /sys/devices/system/node and cpu (with each CPU's core and caches and
# each node's hugetlb pools), the PCI functions' nodes, /proc/stat,
# /proc/meminfo, and a cgroup
# v2 subtree holding two real containers-to-be (a docker-named and a
# kubepods-named cgroup, each with a guestload process). Every file goes out as
#   F <path>
#   | <line>            (one per line of the file)
#   E
# and numavm.py writes the tree under tests/fixtures/NAME/.
CG=/sys/fs/cgroup
D=$CG/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope
K=$CG/kubepods.slice/kubepods-pod11112222_3333_4444_5555_666677778888.slice
mkdir -p $CG/system.slice $CG/kubepods.slice
echo "+cpuset +memory +cpu +pids" > $CG/system.slice/cgroup.subtree_control
echo "+cpuset +memory +cpu +pids" > $CG/kubepods.slice/cgroup.subtree_control
mkdir -p $D $K
# docker: may run anywhere, its memory first touched on node 0 (preferred,
# not bound: the kernel's NUMA balancing may move it to where its thread
# runs before the capture); kubepods: CPUs of node 1, memory on node 1.
n1=$(cat /sys/devices/system/node/node1/cpulist)
echo "$n1" > $K/cpuset.cpus
echo 1 > $K/cpuset.mems
start() { # CGROUP NODE
	sh -c "echo \$\$ > $1/cgroup.procs; exec /bin/guestload --mib 24 --threads 1 --touch $2 --pages 4k" \
		> /tmp/ready.$2 2>&1 &
	i=0
	while [ "$(cat /tmp/ready.$2 2>/dev/null)" != ready ] && [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1))
	done
}
start $D 0
start $K 1
sleep 1

emit() {
	[ -f "$1" ] || return 0
	echo "F $1"
	sed 's/^/| /' "$1" 2>/dev/null
	echo "E"
}
for f in /sys/devices/system/node/online /sys/devices/system/node/possible \
	 /sys/devices/system/node/has_cpu /sys/devices/system/node/has_memory \
	 /sys/devices/system/cpu/online /sys/devices/system/cpu/possible /proc/stat /proc/meminfo; do
	emit $f
done
for n in /sys/devices/system/node/node[0-9]*; do
	for f in cpulist distance meminfo; do
		emit $n/$f
	done
	# The hugetlb pools, per page size (issue 43).
	for h in $n/hugepages/hugepages-*; do
		for f in nr_hugepages free_hugepages surplus_hugepages; do
			emit $h/$f
		done
	done
done
# Each CPU's core and caches (SMT siblings, the last-level cache), which
# the agent's topology reader takes from these files.
for c in /sys/devices/system/cpu/cpu[0-9]*; do
	for f in core_cpus_list thread_siblings_list core_id physical_package_id die_id; do
		emit $c/topology/$f
	done
	for i in $c/cache/index[0-9]*; do
		for f in level type shared_cpu_list; do
			emit $i/$f
		done
	done
done
# PCI functions and the node the firmware gave each (an expander bridge's
# _PXM): the device locality the agent reads from /sys/bus/pci/devices.
for d in /sys/bus/pci/devices/*; do
	for f in numa_node class vendor device; do
		emit $d/$f
	done
done
# The cgroup files the container source and the cgroup detection read.
CGF="cgroup.controllers cgroup.subtree_control cgroup.type cgroup.procs cgroup.threads cgroup.freeze
     cgroup.events cpuset.cpus cpuset.mems cpuset.cpus.effective cpuset.mems.effective cpu.stat
     memory.numa_stat memory.current memory.max pids.current pids.max"
for d in $CG $CG/system.slice $D $CG/kubepods.slice $K; do
	for f in $CGF; do
		emit $d/$f
	done
done
echo "END rc=0"

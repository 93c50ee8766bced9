#!/bin/sh
# Capture a fixture tree from the testbed's real multi-node kernel
# (tests/numa-vm/numavm.py capture NAME): the NUMA topology under
# /sys/devices/system/node and cpu (with each CPU's core and caches and
# each node's hugetlb pools), the PCI functions' nodes, /proc/stat,
# /proc/meminfo, and a cgroup
# v2 subtree holding two real containers-to-be (a docker-named and a
# kubepods-named cgroup, each with a guestload process). With
# numavm.hugepages=LIST on the kernel command line (the --vm scenario's
# `hugepages`), each node's 2 MiB pool is reserved first, the hugetlb
# controller is enabled, and the two guests hold huge pages while the
# files are read (HUGE_D MiB on node 0, HUGE_K MiB on node 1): their
# cgroups' hugetlb.*.numa_stat and their processes' status and numa_maps
# go out too. Every file goes out as
#   F <path>
#   | <line>            (one per line of the file)
#   E
# and numavm.py writes the tree under tests/fixtures/NAME/.
CG=/sys/fs/cgroup
D=$CG/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope
K=$CG/kubepods.slice/kubepods-pod11112222_3333_4444_5555_666677778888.slice
hp=
for w in $(cat /proc/cmdline); do
	case "$w" in numavm.hugepages=*) hp=${w#numavm.hugepages=} ;; esac
done
HUGE_D=32 HUGE_K=20
ctl="+cpuset +memory +cpu +pids"
if [ -n "$hp" ]; then
	n=0
	for c in $(echo "$hp" | tr ',' ' '); do
		echo "$c" > /sys/devices/system/node/node$n/hugepages/hugepages-2048kB/nr_hugepages
		n=$((n + 1))
	done
	ctl="$ctl +hugetlb"
	echo "+hugetlb" > $CG/cgroup.subtree_control
fi
mkdir -p $CG/system.slice $CG/kubepods.slice
echo "$ctl" > $CG/system.slice/cgroup.subtree_control
echo "$ctl" > $CG/kubepods.slice/cgroup.subtree_control
mkdir -p $D $K
# docker: may run anywhere, its memory first touched on node 0 (preferred,
# not bound: the kernel's NUMA balancing may move it to where its thread
# runs before the capture); kubepods: CPUs of node 1, memory on node 1.
n1=$(cat /sys/devices/system/node/node1/cpulist)
echo "$n1" > $K/cpuset.cpus
echo 1 > $K/cpuset.mems
start() { # CGROUP NODE HUGETLB_MIB
	h=
	[ -n "$hp" ] && h="--hugetlb $3"
	sh -c "echo \$\$ > $1/cgroup.procs; exec /bin/guestload --mib 24 --threads 1 --touch $2 --pages 4k $h" \
		> /tmp/ready.$2 2>&1 &
	i=0
	want=ready
	[ -n "$hp" ] && want=hugetlb-ok
	while ! grep -qx $want /tmp/ready.$2 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1))
	done
}
start $D 0 $HUGE_D
start $K 1 $HUGE_K
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
	# The hugetlb controller's per-node use (Linux 5.16 on), per size.
	for f in $d/hugetlb.*.numa_stat $d/hugetlb.*.current; do
		emit $f
	done
done
# The guests' processes: what the agent reads where no hugetlb numa_stat
# is (HugetlbPages in status, then numa_maps' huge mappings).
if [ -n "$hp" ]; then
	for p in $(cat $D/cgroup.procs $K/cgroup.procs); do
		emit /proc/$p/status
		emit /proc/$p/numa_maps
	done
fi
echo "END rc=0"

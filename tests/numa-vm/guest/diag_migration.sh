#!/bin/sh
# Diagnostics, not a test: how long cgroup v2 cpuset writes take on this
# VM (TCG) with four busy 320 MiB guests, by page size, frozen or not.
#   tests/numa-vm/numavm.py script diag_migration
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
up() { cut -d' ' -f1 /proc/uptime; }
node_cpus() { cat /sys/devices/system/node/node$1/cpulist; }
mem_on() { awk -v n="N$2=" '$1=="anon"{for(i=2;i<=NF;i++) if(index($i,n)==1) s+=substr($i,length(n)+1)} END{print int(s/1048576)}' $CG/$1/memory.numa_stat; }
mkdir -p $CG/d; echo "+cpuset +memory" > $CG/d/cgroup.subtree_control
guest() {  # NAME TOUCH ARGS: runs anywhere, memory first touched on TOUCH
	mkdir $CG/d/$1
	sh -c "echo \$\$ > $CG/d/$1/cgroup.procs; exec /bin/guestload --mib 320 --threads 1 --touch $2 $3" > /tmp/$1.r &
	while ! grep -q ready /tmp/$1.r; do sleep 0.2; done
}
timed() { # LABEL FILE VALUE
	t0=$(up); echo $3 > $2; t1=$(up)
	echo "$1: $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s"
}
for pages in thp 4k; do
	for i in 0 1 2 3; do guest $pages$i $i "--pages $pages"; done
	sleep 2
	grep anon_thp $CG/d/${pages}0/memory.stat
	timed "$pages 4 busy: cpus all->node0" $CG/d/${pages}0/cpuset.cpus "$(node_cpus 0)"
	timed "$pages 4 busy: mems (inherit)->0, nothing to move" $CG/d/${pages}0/cpuset.mems 0
	timed "$pages 4 busy: mems 0->0-3 widen" $CG/d/${pages}0/cpuset.mems 0-3
	timed "$pages 4 busy: mems 0-3->0, nothing to move" $CG/d/${pages}0/cpuset.mems 0
	echo 1 > $CG/d/${pages}1/cgroup.freeze
	timed "$pages 4 busy, frozen: mems (inherit)->1, nothing to move" $CG/d/${pages}1/cpuset.mems 1
	echo 0 > $CG/d/${pages}1/cgroup.freeze
	timed "$pages 4 busy: cpus all->node2" $CG/d/${pages}3/cpuset.cpus "$(node_cpus 2)"
	timed "$pages 4 busy: mems (inherit)->2, 320 MiB from node 3" $CG/d/${pages}3/cpuset.mems 2
	echo "  on node 2 after: $(mem_on d/${pages}3 2) MiB"
	echo 1 > $CG/d/${pages}2/cgroup.freeze
	timed "$pages 4 busy, frozen: mems (inherit)->3, 320 MiB from node 2" $CG/d/${pages}2/cpuset.mems 3
	echo 0 > $CG/d/${pages}2/cgroup.freeze
	echo "  on node 3 after: $(mem_on d/${pages}2 3) MiB"
	for i in 0 1 2 3; do kill $(cat $CG/d/$pages$i/cgroup.procs); done
	sleep 1
	for i in 0 1 2 3; do rmdir $CG/d/$pages$i; done
done
echo "END rc=0"

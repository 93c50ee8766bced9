#!/bin/sh
# Diagnostics, not a test: with four busy THP guests, which way of
# changing a guest's memory nodes is fast under TCG?
#   tests/numa-vm/numavm.py script diag_migration2
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
up() { cut -d' ' -f1 /proc/uptime; }
node_cpus() { cat /sys/devices/system/node/node$1/cpulist; }
mem_on() { awk -v n="N$2=" '$1=="anon"{for(i=2;i<=NF;i++) if(index($i,n)==1) s+=substr($i,length(n)+1)} END{print int(s/1048576)}' $CG/$1/memory.numa_stat; }
mkdir -p $CG/d; echo "+cpuset +memory" > $CG/d/cgroup.subtree_control
guest() {
	mkdir $CG/d/$1
	sh -c "echo \$\$ > $CG/d/$1/cgroup.procs; exec /bin/guestload --mib 320 --threads 1 --touch $2" > /tmp/$1.r &
	while ! grep -q ready /tmp/$1.r; do sleep 0.2; done
}
timed() { t0=$(up); echo $3 > $2; t1=$(up); echo "$1: $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s"; }
for i in 0 1 2 3; do guest g$i $i; done
sleep 2
grep -E "anon_thp|^anon " $CG/d/g0/memory.stat
timed "g0 mems inherit->0-3 (same as effective)" $CG/d/g0/cpuset.mems 0-3
timed "g0 mems 0-3->0 (nothing to move)" $CG/d/g0/cpuset.mems 0
timed "g1 mems inherit->1 (nothing to move)" $CG/d/g1/cpuset.mems 1
timed "g1 mems 1->0-3" $CG/d/g1/cpuset.mems 0-3
timed "g1 mems 0-3->1 again" $CG/d/g1/cpuset.mems 1
pid=$(head -1 $CG/d/g2/cgroup.procs)
t0=$(up); migratepages $pid 2 3; t1=$(up)
echo "g2 migratepages 2->3 (320 MiB, busy): $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s, on 3: $(mem_on d/g2 3) MiB"
timed "g2 then mems inherit->0-3" $CG/d/g2/cpuset.mems 0-3
timed "g2 then mems 0-3->3" $CG/d/g2/cpuset.mems 3
timed "g3 mems inherit->0-3" $CG/d/g3/cpuset.mems 0-3
timed "g3 mems 0-3->0 (320 MiB from 3)" $CG/d/g3/cpuset.mems 0
echo "  on 0: $(mem_on d/g3 0) MiB"
echo "END rc=0"

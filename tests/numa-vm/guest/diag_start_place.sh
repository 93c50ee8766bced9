#!/bin/sh
# Diagnostics, not a test: how long a start placement's cpuset.mems write
# takes when the guest is touching its memory at that moment (churn's late
# guests: numaorchd's "place" records took 3.2-7.6 s, the engine waiting
# inside the write, while /proc/vmstat counted under 1 MiB migrated).
# Two busy 320 MiB guests run, as in churn; each case starts a third
# (320 MiB THP, first touch preferred on node 0), waits DELAY, writes its
# cpuset.cpus to node 2's CPUs then cpuset.mems to 2, and prints both
# writes' times, pgmigrate_success/fail over the mems write and when the
# guest was ready.
#   tests/numa-vm/numavm.py script diag_start_place
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
up() { cut -d' ' -f1 /proc/uptime; }
vm() { awk -v k=$1 '$1==k{print $2}' /proc/vmstat; }
mkdir -p $CG/d; echo "+cpuset +memory" > $CG/d/cgroup.subtree_control
busy() {  # NAME TOUCH
	mkdir $CG/d/$1
	sh -c "echo \$\$ > $CG/d/$1/cgroup.procs; exec /bin/guestload --mib 320 --threads 1 --touch $2" > /tmp/$1.r &
	while ! grep -q ready /tmp/$1.r; do sleep 0.2; done
}
busy a 0
busy b 1
sleep 2
i=0
for delay in 0 0.05 0.3 1 2; do
	i=$((i + 1))
	g=new$i
	mkdir $CG/d/$g
	t0=$(up)
	sh -c "echo \$\$ > $CG/d/$g/cgroup.procs; exec /bin/guestload --mib 320 --threads 1 --touch 0" > /tmp/$g.r &
	sleep $delay
	ta=$(up); echo 4-5 > $CG/d/$g/cpuset.cpus; tb=$(up)
	s0=$(vm pgmigrate_success); f0=$(vm pgmigrate_fail)
	echo 2 > $CG/d/$g/cpuset.mems; tc=$(up)
	s1=$(vm pgmigrate_success); f1=$(vm pgmigrate_fail)
	while ! grep -q ready /tmp/$g.r; do sleep 0.05; done
	td=$(up)
	awk -v d=$delay -v t0=$t0 -v ta=$ta -v tb=$tb -v tc=$tc -v td=$td -v s=$((s1 - s0)) -v f=$((f1 - f0)) \
		-v n2="$(awk '$1=="anon"{print $0}' $CG/d/$g/memory.numa_stat)" 'BEGIN{
		printf "R delay=%s cpus_write_s=%.2f mems_write_s=%.2f pgmigrate_success=%d pgmigrate_fail=%d ready_after_s=%.2f %s\n",
			d, tb-ta, tc-tb, s, f, td-t0, n2 }'
	kill $(cat $CG/d/$g/cgroup.procs)
	sleep 1
	rmdir $CG/d/$g
done
kill $(cat $CG/d/a/cgroup.procs) $(cat $CG/d/b/cgroup.procs)
echo "END rc=0"

#!/bin/sh
# Diagnostics, not a test: what a cgroup v2 cpuset.mems write costs when
# there is nothing of the guest's own to move, against how many vCPUs are
# busy (8 vCPUs on the host's 2 cores) and whether the guest's pages are
# shared with the busy tasks. cgroup v2 migrates on every mems change with
# MPOL_MF_MOVE_ALL, shared pages too, and the writer waits for it
# (cpuset_write_resmask flushes cpuset_migrate_mm_wq: diag_bindwrite's
# stacks). Two idle one-process guests: "shared" runs busybox sleep (its
# text mapped by every busybox shell, the busy loops among them),
# "private" a copy of busybox in /tmp (its text in no one else's
# mappings). Per write: seconds, and /proc/vmstat's pgmigrate_success and
# pgmigrate_fail over it.
#   tests/numa-vm/numavm.py script diag_mems_write
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
up() { cut -d' ' -f1 /proc/uptime; }
vm() { awk -v k=$1 '$1==k{print $2}' /proc/vmstat; }
mkdir -p $CG/d
echo "+cpuset +memory" > $CG/d/cgroup.subtree_control
mkdir -p /tmp/private; cp /bin/busybox /tmp/private/busybox
for g in shared private; do mkdir $CG/d/$g; done
sh -c "echo \$\$ > $CG/d/shared/cgroup.procs; exec /bin/busybox sleep 100000" &
sh -c "echo \$\$ > $CG/d/private/cgroup.procs; exec /tmp/private/busybox sleep 100000" &
sleep 1
for g in shared private; do echo "GUEST $g pids=$(cat $CG/d/$g/cgroup.procs | tr "\n" " ")"; done
wtime() {  # LABEL
	for g in shared private; do
		for m in 2 0-3 1 0-3; do
			s0=$(vm pgmigrate_success) f0=$(vm pgmigrate_fail) t0=$(up)
			echo $m > $CG/d/$g/cpuset.mems
			t1=$(up)
			echo "WRITE $1 guest=$g mems=$m s=$(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') migrated=$(($(vm pgmigrate_success) - s0)) failed=$(($(vm pgmigrate_fail) - f0))"
		done
	done
}
wtime "busy_vcpus=0"
loops=
for i in 1 2 3 4 5 6 7 8; do
	sh -c 'while :; do :; done' &
	loops="$loops $!"
	case $i in 4|8) sleep 1; wtime "busy_vcpus=$i" ;; esac
done
kill $loops
echo "END rc=0"

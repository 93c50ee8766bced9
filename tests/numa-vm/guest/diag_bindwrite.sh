#!/bin/sh
# Diagnostics, not a test: what a start binding's cpuset.mems write waits
# for. churn's late guests are placed as they start; the mover worker's
# mems write then took 0.51, 7.93 and 3.22 s with 0 pages migrated in it
# (run at 179ffce: /proc/vmstat's pgmigrate_success did not move), and the
# guest's touch of 320 MiB took 8.2 s against 4.5 s.
# churn's layout (two busy guests, then late guests touching on node 0,
# one of them a kubepods pod), the daemon with its debug log, and every
# 0.25 s while a late guest starts the kernel's stacks of the tasks in D
# state (sysrq w: the kernel walks its tasks itself, where a shell walk of
# /proc under TCG slowed the guests 5x), stamped with the VM's uptime.
#   tests/numa-vm/numavm.py script diag_bindwrite
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
# The stacks go to the ring buffer only: a serial console under TCG
# would time the printing, not the write.
dmesg -n 1
dmesg -c > /dev/null
. /tests/lib_late_guests.sh
late_slices
# blocked SECONDS: sysrq w every 0.25 s, then the ring buffer's stacks
# of the tasks in D state ("K [uptime] ..." lines; "? " frames, offsets
# and register dumps left out).
blocked() {
	n=$(awk -v s=$1 'BEGIN{print int(s * 4)}')
	for k in $(seq 1 $n); do
		sleep 0.25
		echo w > /proc/sysrq-trigger
	done
	dmesg -c | grep -v -e ' ? ' -e 'R[A-Z0-9][A-Z0-9]: ' -e '<TASK>' -e '</TASK>' -e 'Call Trace' |
		sed -e 's/+0x[0-9a-f]*\/0x[0-9a-f]*//' -e 's/^/K /'
}
late_base
sleep 6
grep -E "^(pgmigrate_success|thp_migration_success)" /proc/vmstat | tr '\n' ' '; echo
start $CG/machine.slice/libpod-$(printf '%064d' 3).scope 0 c
blocked 9
ready c
grep -E "^(pgmigrate_success|thp_migration_success)" /proc/vmstat | tr '\n' ' '; echo
sleep 3
start $CG/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod00000000_0000_0000_0000_000000000001.slice 0 d
blocked 10
ready d
grep -E "^(pgmigrate_success|thp_migration_success)" /proc/vmstat | tr '\n' ' '; echo
sleep 3
start $CG/system.slice/docker-$(printf '%064d' 5).scope 0 e
blocked 10
ready e
grep -E "^(pgmigrate_success|thp_migration_success)" /proc/vmstat | tr '\n' ' '; echo
sleep 2
kill $(pidof numaorchd)
sleep 1
echo "END rc=0"

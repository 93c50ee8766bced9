#!/bin/sh
# Diagnostics, not a test: does a busy thread's CPU time run at the wall
# clock's rate in the testbed's TCG kernel? One busy one-thread guest per
# node (4), then 2 and 8 of them; each guest's cgroup usage_usec over
# 5 s of /proc/uptime, and the kernel's clocksource and TSC messages.
# tests/numa-vm/numavm.py script --vm misplaced diag_clock
CG=/sys/fs/cgroup
echo "C clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) available=$(cat /sys/devices/system/clocksource/clocksource0/available_clocksource)"
dmesg | grep -i -E "tsc|clocksource|sched_clock" | sed 's/^/K /'
echo "+cpu +cpuset" > $CG/cgroup.subtree_control 2>/dev/null
for n in 1 4 8; do
	pids=""
	for i in $(seq 1 $n); do
		mkdir -p $CG/clk$i
		sh -c "echo \$\$ > $CG/clk$i/cgroup.procs; exec /bin/guestload --mib 16 --threads 1 --pages 4k" > /tmp/clk$i.r 2>&1 &
		pids="$pids $!"
	done
	sleep 3
	for w in 5 1 0.25; do
		u0=$(cat /proc/uptime); a0=""
		for i in $(seq 1 $n); do a0="$a0 $(sed -n 's/^usage_usec //p' $CG/clk$i/cpu.stat)"; done
		sleep $w
		u1=$(cat /proc/uptime); a1=""
		for i in $(seq 1 $n); do a1="$a1 $(sed -n 's/^usage_usec //p' $CG/clk$i/cpu.stat)"; done
		echo "R guests=$n w=$w uptime=${u0%% *}..${u1%% *} usage0=$a0 usage1=$a1"
		set -- $a1; for x in $a0; do echo "U guests=$n w=$w cpu_per_wall=$(awk -v a=$x -v b=$1 -v t0=${u0%% *} -v t1=${u1%% *} 'BEGIN { printf "%.3f", (b - a) / 1e6 / (t1 - t0) }')"; shift; done
	done
	for p in $pids; do kill $p; done
	wait 2>/dev/null
	for i in $(seq 1 $n); do rmdir $CG/clk$i 2>/dev/null; done
done
echo "END rc=0"

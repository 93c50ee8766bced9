#!/bin/sh
# Diagnostics, not a test: how long a 320 MiB one-thread guestload takes
# to touch its memory (THP) under churn's conditions, one factor at a
# time, to see why churn's guest d touches in ~3 s under the kernel's
# balancing and ~5 s with no placer or numaorchd (results/churn-floor).
# Each case prints the touch's seconds and the vmstat THP/compaction
# counters it moved.
#   tests/numa-vm/numavm.py script diag_touch --vm churn
CG=/sys/fs/cgroup
up() { cut -d' ' -f1 /proc/uptime; }
snap() { grep -E "^(thp_fault_alloc|thp_fault_fallback|compact_stall|numa_hint_faults|pgmigrate_success|numa_pte_updates) " /proc/vmstat > /tmp/vm.$1; }
delta() { paste /tmp/vm.$1 /tmp/vm.$2 | awk '{printf "%s=%d ", $1, $4-$2}'; }
# touch TAG CPUS TOUCH: a guestload on CPUS (taskset), first touching
# under --touch TOUCH (- for none); prints its seconds to ready, then
# ends it.
touch_one() {
	snap a
	t0=$(up)
	if [ "$3" = - ]; then tflag=""; else tflag="--touch $3"; fi
	taskset -c $2 /bin/guestload --mib 320 --threads 1 $tflag > /tmp/$1.r 2>/tmp/$1.e &
	p=$!
	while ! grep -q ready /tmp/$1.r; do sleep 0.02; done
	t1=$(up)
	snap b
	echo "CASE $1 cpus=$2 touch=$3 bal=$(cat /proc/sys/kernel/numa_balancing) secs=$(echo "$t0 $t1" | awk '{printf "%.2f", $2-$1}') $(delta a b)"
	kill $p; wait $p 2>/dev/null
	sleep 1
}
busy_start() {  # three busy guests like churn's a, b, c (a, c first touched on node 0)
	taskset -c 0 /bin/guestload --mib 320 --threads 1 --touch 0 > /tmp/ga.r &
	GA=$!
	taskset -c 2 /bin/guestload --mib 320 --threads 1 --touch 1 > /tmp/gb.r &
	GB=$!
	taskset -c 6 /bin/guestload --mib 320 --threads 1 --touch 0 > /tmp/gc.r &
	GC=$!
	for g in ga gb gc; do while ! grep -q ready /tmp/$g.r; do sleep 0.05; done; done
	echo "$(up) busy guests ready"
}
busy_stop() { kill $GA $GB $GC; wait 2>/dev/null; sleep 1; }

echo 0 > /proc/sys/kernel/numa_balancing
echo "== idle host"
for r in 1 2; do touch_one idle$r 4 -; done
for r in 1 2; do touch_one idle0p$r 4 0; done
echo 1 > /proc/sys/kernel/numa_balancing
for r in 1 2; do touch_one idlebal$r 4 -; done
echo 0 > /proc/sys/kernel/numa_balancing
echo "== three busy guests (CPUs 0, 2, 6; memory on nodes 0, 1, 0)"
busy_start
for r in 1 2 3; do touch_one busy$r 4 -; done
for r in 1 2 3; do touch_one busyfree$r 0-7 0; done
for r in 1 2 3; do touch_one busyp0$r 4 0; done
echo 1 > /proc/sys/kernel/numa_balancing
sleep 3
for r in 1 2 3; do touch_one busybal$r 4 -; done
for r in 1 2 3; do touch_one busybalfree$r 0-7 0; done
busy_stop
echo 0 > /proc/sys/kernel/numa_balancing
echo "END rc=0"

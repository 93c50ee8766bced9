#!/bin/sh
# Diagnostics, not a test: where numaorchd's first ~2 s go between its
# spawn and its first cpuset write (the misplaced row's first decisions
# came 2.13-2.21 s after the spawn, so its t90 reads the 4 s sample).
# Per round, stamped with the VM's uptime: the process start (exec and
# dynamic linking, with --version, against numactl's as a peer), and a
# daemon over the misplaced layout with its debug log.
#   tests/numa-vm/numavm.py script diag_daemon_start
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
up() { cut -d' ' -f1 /proc/uptime; }
ms() { awk -v a=$1 -v b=$2 'BEGIN{printf "%.0f", (b - a) * 1000}'; }
for k in 1 2 3; do
	a=$(up); /bin/numaorchd --version >/dev/null 2>&1; b=$(up)
	/usr/bin/numactl --show >/dev/null 2>&1; c=$(up)
	/bin/busybox true; d=$(up)
	echo "EXEC round=$k numaorchd_version_ms=$(ms $a $b) numactl_show_ms=$(ms $b $c) busybox_true_ms=$(ms $c $d)"
done
LD_DEBUG=statistics /bin/numaorchd --version 2>&1 >/dev/null | sed 's/^/LDSTAT /' | tr -s ' \t' ' '
. /tests/lib_misplaced.sh
misplaced_guests
mkdir -p /var/lib/numaorch /run/numaorch
for k in 1 2; do
	# Threads back on every CPU, bindings wide, so each round decides anew.
	for i in 1 2 3 4; do
		d=$CG/system.slice/docker-$(printf '%064d' $i).scope
		echo 0-7 > $d/cpuset.cpus; echo 0-3 > $d/cpuset.mems
	done
	rm -rf /var/lib/numaorch/*
	sleep 2
	echo "$(up) SPAWN round=$k"
	/bin/numaorchd --log-level debug --config /etc/numaorch/numaorchd.conf 2>&1 | while read -r l; do echo "$(up) $l"; done &
	sleep 6
	kill $(pidof numaorchd); sleep 1
done
echo "END rc=0"

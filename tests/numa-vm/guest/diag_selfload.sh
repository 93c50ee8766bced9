#!/bin/sh
# Diagnostics, not a test: how much of the nodes' measured load is the
# agent's own (agents/selfload.c), at its start and while its mover
# works. Three busy one-thread guests, 256 MiB each, first touched on
# node 0, which has CPUs for two: the agent moves one elsewhere and its
# mover migrates that guest's memory from its workers on the target's
# CPUs. The daemon runs at a 5 s interval with its debug log; its lines
# "the agent's own CPU s by node" say what each snapshot left out.
#   tests/numa-vm/numavm.py script diag_selfload
CG=/sys/fs/cgroup
echo 0 > /proc/sys/kernel/numa_balancing
. /tests/lib_late_guests.sh
mkdir -p $CG/system.slice
echo "+cpuset +memory +cpu" > $CG/system.slice/cgroup.subtree_control
for i in 1 2 3; do
	d=$CG/system.slice/docker-$(printf '%064d' $i).scope
	mkdir $d
	sh -c "echo \$\$ > $d/cgroup.procs; exec /bin/guestload --mib 256 --threads 1 --touch 0" > /tmp/g$i.r &
done
for i in 1 2 3; do ready g$i; done
sed -e "s/^interval = .*/interval = 5/" /etc/numaorch/numaorchd.conf > /tmp/numaorchd.conf
mkdir -p /var/lib/numaorch /run/numaorch
echo "$(up) SPAWN"
/bin/numaorchd --log-level debug --config /tmp/numaorchd.conf 2>&1 |
	grep -E "agent's own|moved|memory job|cycle [0-9]+:" | while read -r l; do echo "$(up) $l"; done &
sleep 40
kill $(pidof numaorchd)
sleep 1
echo "END rc=0"

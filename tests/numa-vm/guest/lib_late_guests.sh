# Sourced by diagnostics (not run by itself): churn's kinds of guests,
# started one at a time. late_slices makes the parents (system.slice,
# kubepods' burstable slice, machine.slice) with cpuset, memory and cpu
# delegated; start DIR TOUCH TAG starts a 320 MiB one-thread guestload in
# the new cgroup DIR, first touching on node TOUCH, its report in
# /tmp/TAG.r; ready TAG waits until it has touched all of it. Lines are
# stamped with the VM's uptime (up).
up() { cut -d' ' -f1 /proc/uptime; }
late_slices() {
	for s in system.slice kubepods.slice kubepods.slice/kubepods-burstable.slice machine.slice; do
		mkdir -p $CG/$s
		echo "+cpuset +memory +cpu" > $CG/$s/cgroup.subtree_control
	done
}
start() {  # DIR TOUCH TAG
	mkdir $1
	echo "$(up) START $3 $1"
	sh -c "echo \$\$ > $1/cgroup.procs; exec /bin/guestload --mib 320 --threads 1 --touch $2" > /tmp/$3.r &
}
ready() { while ! grep -q ready /tmp/$1.r; do sleep 0.05; done; echo "$(up) READY $1"; }
# late_base: churn's first two guests (a touching on node 0, b on node 1)
# started and ready, then numaorchd with its debug log, each line stamped.
late_base() {
	start $CG/system.slice/docker-$(printf '%064d' 1).scope 0 a
	start $CG/system.slice/docker-$(printf '%064d' 2).scope 1 b
	ready a
	ready b
	mkdir -p /var/lib/numaorch /run/numaorch
	/bin/numaorchd --log-level debug --config /etc/numaorch/numaorchd.conf 2>&1 |
		while read -r l; do echo "$(up) $l"; done &
}

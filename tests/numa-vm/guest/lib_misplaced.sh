# Sourced by diagnostics (not run by itself): the misplaced scenario's
# four guests in docker scopes under system.slice — web1/web2's 320 MiB
# first touched on node 0, db1/db2's on node 1, one busy thread each —
# started and waited for (their reports in /tmp/rN; pids in pid1..pid4).
# PAGES: extra guestload arguments (e.g. --pages 4k).
misplaced_guests() {
	mkdir -p $CG/system.slice
	echo "+cpuset +memory +cpu" > $CG/system.slice/cgroup.subtree_control
	i=0
	for touch in 0 0 1 1; do
		i=$((i + 1))
		d=$CG/system.slice/docker-$(printf '%064d' $i).scope
		mkdir $d
		sh -c "echo \$\$ > $d/cgroup.procs; exec /bin/guestload --mib 320 --threads 1 --touch $touch ${PAGES:-}" > /tmp/r$i &
		eval pid$i=$!
	done
	for i in 1 2 3 4; do while ! grep -q ready /tmp/r$i; do sleep 0.2; done; done
}

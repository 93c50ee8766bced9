# Sourced by test_vm_mover.sh (its helpers, libvirtd up, node 0 crowded).
# ---- 8. a hugepage-backed domain (<memoryBacking><hugepages/>) -----------
# Issue 43's "VM started by libvirt with <hugepages/> inside the testbed".
# 40 free 2 MiB pages on node 0 only; a 64 MiB domain backed by them
# (QEMU's guest RAM on /dev/hugepages, preallocated: 32 pages), numatune
# restrictive 0, its vCPU pinned to node 1 while node 0's CPUs spin.
#   a. no free huge page on node 1 (or 2, 3): the agent shows the domain's
#      huge pages (GET /v1/guests/ID, numaorchctl guests, /metrics) and a
#      remote locality, and in 4 cycles moves none of them: every pool
#      and QEMU's numa_maps as before, a record for the domain;
#   b. 40 pages reserved on node 1: its memory goes to its vCPU through
#      the mover; the kernel's pools change by exactly its 32 pages (no
#      surplus page made anywhere) and its huge pages are on node 1.
# Checked from the kernel (the pools' sysfs files, QEMU's numa_maps).
HP=/sys/devices/system/node
HUGE=   # new_domain: <hugepages/> when set
hp() { cat $HP/node$1/hugepages/hugepages-2048kB/$2; }
hp_set() { echo $2 > $HP/node$1/hugepages/hugepages-2048kB/nr_hugepages; }
hp_all() { for nd in 0 1 2 3; do printf '%s:%s/%s/%s ' $nd $(hp $nd nr_hugepages) $(hp $nd free_hugepages) $(hp $nd surplus_hugepages); done; }
# MiB of QEMU's hugetlb mappings (numa_maps "huge") on node N
huge_mib() {
	awk -v n="N$1=" '/ huge /{ps=2048; for(i=2;i<=NF;i++) if($i ~ /^kernelpagesize_kB=/) ps=substr($i,19)
		for(i=2;i<=NF;i++) if(index($i,n)==1) s+=substr($i,length(n)+1)*ps} END{printf "%d", s/1024}' /proc/$qpid/numa_maps
}

hugepage_domain_case() {
	[ -d $HP/node1/hugepages/hugepages-2048kB ] || { result "hugepages: 2 MiB pools per node" 1 "no $HP/node1/hugepages/hugepages-2048kB"; return; }
	for nd in 0 1 2 3; do hp_set $nd 0; done
	hp_set 0 40
	[ "$(hp 0 nr_hugepages)" = 40 ] || { result "hugepages: 40 pages reserved on node 0" 1 "pools $(hp_all)"; return; }
	HUGE=1
	new_domain vmhuge 64 1
	HUGE=
	pin_away
	pools0=$(hp_all) h0=$(huge_mib 0)
	say "hugepages: pools $pools0 (node:total/free/surplus); QEMU's huge mappings: $h0 MiB on node 0"
	grep ' huge ' /proc/$qpid/numa_maps | cut -c1-200 | sed 's/^/#   /'
	[ "$h0" = 64 ] && [ "$(hp 0 free_hugepages)" = 8 ]
	result "hugepages: the domain's 64 MiB are 32 huge pages of node 0's pool (QEMU's numa_maps $h0 MiB huge on node 0; pools $pools0)" $? \
		"$(grep ' huge ' /proc/$qpid/numa_maps | head -2)"
	uuid=$($VIRSH domuuid $VM) gid=vm-$uuid
	start_agent huge ""
	# four cycles (interval 2 s) with no free page off node 0
	sleep 10
	$CTL --json guest $gid > $T/hg 2>&1
	$CTL guests > $T/hgs 2>&1
	$CTL metrics > $T/hm 2>&1
	loc=$(sed -n 's/^ *"locality": \([0-9.e-]*\),*$/\1/p' $T/hg | head -1)
	grep -q '"hugetlb_total_bytes": 67108864' $T/hg && grep -q '"hugetlb_page_size_bytes": 2097152' $T/hg &&
		awk -v l="$loc" 'BEGIN{exit !(l != "" && l < 0.3)}'
	result "hugepages: GET /v1/guests/$gid has its 64 MiB of 2 MiB huge pages and locality $loc (its vCPU on node 1)" $? \
		"$(grep -i 'huge\|locality\|mem_source' $T/hg | tr -s ' ' | tr '\n' ' ' | cut -c1-500)"
	grep -q "numaorch_guest_hugetlb_bytes{guest=\"$gid\",node=\"0\",size=\"2048kB\"} 67108864" $T/hm &&
		grep -q 'numaorch_node_hugepages{node="0",size="2048kB",state="free"} 8' $T/hm &&
		grep -q 'numaorch_node_hugepages{node="1",size="2048kB",state="free"} 0' $T/hm && grep -q '(64 MiB huge)' $T/hgs
	result "hugepages: /metrics has its huge pages on node 0 and the pools (free 8 on node 0, 0 on node 1); numaorchctl guests shows '(64 MiB huge)'" $? \
		"$(grep 'hugetlb\|hugepages{node="[01]",size="2048kB",state="free"' $T/hm | tr '\n' ' '); $(grep -i huge $T/hgs)"
	rec=$(grep "\"guest\":\"$gid\"" $A/dec | tail -1)
	[ "$(hp_all)" = "$pools0" ] && [ "$(huge_mib 0)" = 64 ] && [ -n "$rec" ] &&
		! grep -q '"decision":"memory_\(arrived\|partial\)"' $A/dec
	result "hugepages: no free page on nodes 1-3: none of its huge pages moved in 4 cycles (pools $(hp_all), $(huge_mib 0) MiB on node 0)" $? \
		"records: $(grep -o '"decision":"[a-z_]*"' $A/dec | tr '\n' ' '); last: $(echo "$rec" | cut -c1-500)"
	say "its last record: $(echo "$rec" | sed -n 's/.*"detail":"\([^"]*\)".*/\1/p' | cut -c1-400)"

	hp_set 1 40
	[ "$(hp 1 free_hugepages)" = 40 ] || say "node 1 pool: $(hp_all)"
	t=$(up) got=
	while awk -v a="$t" -v b="$(up)" 'BEGIN{exit !(b-a < 240)}'; do
		kill -0 $apid 2>/dev/null || { got="agent exited"; break; }
		grep -q '"decision":"memory_arrived"' $A/dec && { got=arrived; break; }
		grep -q '"decision":"memory_\(partial\|failed\|stopped\|expired\)"' $A/dec && { got=ended; break; }
		sleep 1
	done
	took=$(awk -v a="$t" -v b="$(up)" 'BEGIN{printf "%.0f", b-a}')
	sleep 1
	say "after ${took} s: pools $(hp_all); huge MiB per node: $(for nd in 0 1 2 3; do printf 'N%s=%s ' $nd $(huge_mib $nd); done)"
	grep "\"guest\":\"$gid\"" $A/dec | tail -4 | cut -c1-600 | sed 's/^/#   /'
	[ "$got" = arrived ]
	result "hugepages: 40 free pages on node 1: its memory moved by the mover (memory_arrived within 240 s, $took s)" $? \
		"got ${got:-nothing}; $(grep -o '"decision":"[a-z_]*"' $A/dec | tr '\n' ' ')"
	[ "$(huge_mib 1)" = 64 ] && [ "$(huge_mib 0)" = 0 ] &&
		[ "$(hp_all)" = "0:40/40/0 1:40/8/0 2:0/0/0 3:0/0/0 " ]
	result "hugepages: its 32 huge pages are on node 1 and the pools changed by exactly them, no surplus page (pools $(hp_all))" $? \
		"huge MiB per node: $(for nd in 0 1 2 3; do printf 'N%s=%s ' $nd $(huge_mib $nd); done)"
	agent_tail 12
	kill -TERM $apid; wait $apid
	gone_domain
	for nd in 0 1 2 3; do hp_set $nd 0; done
}

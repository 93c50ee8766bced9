#!/bin/sh
# A libvirt domain's memory moved by numaorchd's mover on a real
# multi-node kernel (runs inside the testbed VM, booted with the libvirt
# initramfs: numavm.py check-libvirt, make check-numa-libvirt).
#
# libvirtd and QEMU run here by hand (no systemd). One tiny TCG domain
# (nested: QEMU inside the TCG VM), its RAM preallocated so there are
# bytes to move, numatune restrictive on node 0 and its vCPUs pinned to
# node 1's CPUs, while node 0's CPUs are kept busy: the agent cannot bring
# the vCPUs to the memory, so the memory must go to the vCPUs — libvirt's
# live nodeset widened, QEMU's pages moved by the mover, the nodeset
# narrowed. Checked independently of the agent: memory.numa_stat of the
# domain's cgroup and /proc/PID/numa_maps of QEMU, `virsh numatune` and
# the cgroups' cpuset.mems, then the decision record.
#
# Output: "ok N - what" / "not ok N - what: why", "# ..." diagnostics,
# then "P passed, F failed" and "END rc=R" for the host.
set -u
NUMAORCHD=/bin/numaorchd
CG=/sys/fs/cgroup
T=/tmp/vt
VM=vmbed
MIB=128
n=0 passed=0 failed=0
# libvirt's clients look for /var/run/libvirt/libvirt-sock, its daemon
# writes under /run: one directory, as on a normal system.
[ -L /var/run ] || { rmdir /var/run 2>/dev/null && ln -s /run /var/run; }
# libvirtd resolves its default QEMU user before it reads qemu.conf (which
# then says root): the user must exist.
grep -q '^libvirt-qemu:' /etc/passwd || {
	echo 'libvirt-qemu:x:64055:64055::/nonexistent:/bin/false' >> /etc/passwd
	echo 'libvirt-qemu:x:64055:' >> /etc/group
	echo 'kvm:x:64056:' >> /etc/group
}
mkdir -p $T /images /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt /etc/libvirt
echo 0 > /proc/sys/kernel/numa_balancing   # only the agent moves pages here

up() { cut -d' ' -f1 /proc/uptime; }
T0=$(up)
el() { awk -v a="$T0" -v b="$(up)" 'BEGIN{printf "%.1f", b-a}'; }
say() { echo "# [$(el)s] $*"; }
result() {   # result WHAT RC [WHY]
	n=$((n + 1))
	if [ "$2" = 0 ]; then echo "ok $n - $1"; passed=$((passed + 1))
	else echo "not ok $n - $1: ${3:-}"; failed=$((failed + 1)); fi
}
finish() {
	echo "$passed passed, $failed failed"
	[ $failed = 0 ] && echo "END rc=0" || echo "END rc=1"
	exit 0
}
abort() {   # a step the rest depends on failed: say why, show the logs, stop
	result "$1" 1 "$2"
	for f in /var/log/libvirt/libvirtd.log /var/log/libvirt/qemu/$VM.log $T/err; do
		[ -s $f ] && { echo "# --- tail $f"; tail -25 $f | sed 's/^/# /'; }
	done
	finish
}
node_cpus() { cat /sys/devices/system/node/node$1/cpulist; }

# ---- libvirtd, by hand -------------------------------------------------
# Root runs QEMU (the initramfs has no libvirt-qemu user), no DAC
# relabelling, no per-domain /dev namespace, logs to files (no virtlogd).
# cgroup v2 without systemd: libvirt makes /machine/qemu-N-NAME.libvirt-qemu
# itself; "devices" is left out (on v2 it needs a BPF program per domain).
cat > /etc/libvirt/libvirtd.conf <<EOF
unix_sock_dir = "/run/libvirt"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
EOF
cat > /etc/libvirt/qemu.conf <<EOF
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
stdio_handler = "file"
namespaces = []
cgroup_controllers = [ "cpu", "cpuset", "memory" ]
EOF
VIRSH="virsh -q -c qemu:///system"
say "starting libvirtd"
/usr/sbin/libvirtd -d -f /etc/libvirt/libvirtd.conf -p /run/libvirtd.pid 2> $T/libvirtd.err ||
	abort "libvirtd starts" "exit $?: $(cat $T/libvirtd.err)"
# With an empty capabilities cache libvirtd probes QEMU before it
# answers: ~16 s on the host, several times that under TCG. The deadline
# is generous; the time is printed.
t=$(up) ok=1
while awk -v a="$t" -v b="$(up)" 'BEGIN{exit !(b-a < 400)}'; do
	if timeout 30 $VIRSH version > $T/version 2>&1; then ok=0; break; fi
	kill -0 "$(cat /run/libvirtd.pid 2>/dev/null)" 2>/dev/null ||
		abort "libvirtd keeps running" "it exited: $(cat $T/libvirtd.err)"
	say "waiting for libvirtd: $(tail -1 $T/version | cut -c1-150); its log: $(tail -1 /var/log/libvirt/libvirtd.log 2>/dev/null | cut -c1-200)"
	sleep 5
done
[ $ok = 0 ] || abort "libvirtd answers" "no answer within 400 s: $(tail -2 $T/version)"
say "libvirtd answered after $(awk -v a="$t" -v b="$(up)" 'BEGIN{printf "%.0f", b-a}') s (capabilities probe): $(tr '\n' ' ' < $T/version)"

# ---- the domain ----------------------------------------------------------
c0=$(node_cpus 0) c1=$(node_cpus 1)
# A boot sector that loops (jmp $; 55 AA): vCPU 0 spins, so the domain
# has a busy thread whose node decides its locality.
printf '\353\376' > /images/$VM.img
dd if=/dev/zero bs=1 count=508 2>/dev/null >> /images/$VM.img
printf '\125\252' >> /images/$VM.img
cat > $T/$VM.xml <<EOF
<domain type='qemu'>
  <name>$VM</name>
  <memory unit='MiB'>$MIB</memory>
  <memoryBacking><allocation mode='immediate'/></memoryBacking>
  <vcpu placement='static' cpuset='$c0'>1</vcpu>
  <numatune><memory mode='restrictive' nodeset='0'/></numatune>
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'><driver name='qemu' type='raw'/>
      <source file='/images/$VM.img'/><target dev='hda' bus='ide'/></disk>
    <serial type='file'><source path='/images/$VM.serial'/></serial>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
$VIRSH define $T/$VM.xml > $T/define 2>&1 || abort "domain defined" "$(cat $T/define)"
$VIRSH start $VM > $T/start 2>&1 || abort "domain starts (nested TCG QEMU)" "$(cat $T/start)"
say "domain started"
qpid=$(cat /run/libvirt/qemu/$VM.pid 2>/dev/null)
[ -n "$qpid" ] && [ -d /proc/$qpid ] || abort "QEMU runs" "no pid in /run/libvirt/qemu/$VM.pid"
id=$($VIRSH domid $VM)
DCG=$CG/machine/qemu-$id-$VM.libvirt-qemu
[ -d $DCG ] || DCG=$(dirname $(grep -l . $CG/machine/*/cgroup.procs 2>/dev/null | head -1) 2>/dev/null)
say "QEMU pid $qpid, cgroup $DCG"
find $CG/machine -type d | while read d; do
	echo "#   ${d#$CG}: type $(cat $d/cgroup.type 2>/dev/null) mems '$(cat $d/cpuset.mems 2>/dev/null)'/$(cat $d/cpuset.mems.effective 2>/dev/null) cpus '$(cat $d/cpuset.cpus 2>/dev/null)' procs $(cat $d/cgroup.procs 2>/dev/null | wc -l) threads $(cat $d/cgroup.threads 2>/dev/null | wc -l) ctl $(cat $d/cgroup.subtree_control 2>/dev/null | tr ' ' ,)"
done

# Memory per node: the cgroup's memory.numa_stat (anon+file, all of the
# domain's threads) and QEMU's numa_maps (its mappings' pages).
cg_mib() { awk -v n="N$1=" '$1=="anon"||$1=="file"{for(i=2;i<=NF;i++) if(index($i,n)==1) s+=substr($i,length(n)+1)} END{printf "%d", s/1048576}' $DCG/memory.numa_stat; }
cg_tot() { awk '$1=="anon"||$1=="file"{for(i=2;i<=NF;i++){split($i,a,"=");s+=a[2]}} END{printf "%d", s/1048576}' $DCG/memory.numa_stat; }
maps_mib() {   # pages on node N in /proc/qpid/numa_maps, in MiB
	awk -v n="N$1=" '{ps=4; for(i=2;i<=NF;i++) if($i ~ /^kernelpagesize_kB=/) ps=substr($i,19)
		for(i=2;i<=NF;i++) if(index($i,n)==1) s+=substr($i,length(n)+1)*ps} END{printf "%d", s/1024}' /proc/$qpid/numa_maps
}
per_node() { for nd in 0 1 2 3; do printf 'N%s=%s/%s ' $nd $(cg_mib $nd) $(maps_mib $nd); done; }
say "memory (cgroup/numa_maps MiB) at start: $(per_node) total $(cg_tot)"
m0=$(maps_mib 0)
# Now the threads go to node 1 (as an operator's vcpupin, or a scheduler
# elsewhere, would put them), away from their memory: however libvirt
# ordered its cgroup and affinity setup at start, the RAM was touched on
# node 0.
$VIRSH vcpupin $VM 0 $c1 > $T/pin 2>&1 && $VIRSH emulatorpin $VM $c1 >> $T/pin 2>&1 ||
	abort "vCPU and emulator pinned to node 1 ($c1)" "$(cat $T/pin)"
[ "$m0" -ge $((MIB * 9 / 10)) ]
result "the domain's RAM starts on node 0 (numatune restrictive 0): $m0 MiB of $MIB in QEMU's numa_maps" $?
nt0=$($VIRSH numatune $VM | tr -s ' ' | tr '\n' ' ')
say "virsh numatune: $nt0"

# ---- node 0 crowded ----------------------------------------------------------
# One spinning process per CPU of node 0 (not guests: outside the scope):
# the vCPU cannot join its memory there, so the memory must move.
for c in $(echo $c0 | tr ',-' '  '); do
	taskset -c $c sh -c 'while :; do :; done' &
	echo $! >> $T/spinners
done

# ---- the agent ------------------------------------------------------------------
cat > $T/conf <<EOF
[agent]
interval = 2
sample = 0.5
[api]
socket = $T/api.sock
[libvirt]
enabled = yes
uri = qemu:///system
place_on_start = no
EOF
$NUMAORCHD --config $T/conf --scope /machine --state-dir $T/state --log-level debug \
	--decision-log $T/dec 2> $T/err &
apid=$!
say "numaorchd started (pid $apid)"
# Every cpuset.mems of the domain's cgroups (configured and effective) and
# QEMU's Mems_allowed: what "half-bound" would show.
mems_all() {
	find $DCG -name cpuset.mems | sort | while read f; do
		printf '%s=%s/%s ' "${f#$DCG/}" "$(cat $f)" "$(cat ${f%.mems}.mems.effective)"
	done
	printf 'Mems_allowed=%s' "$(awk '/^Mems_allowed_list/{print $2}' /proc/$qpid/status)"
}
nodeset() { $VIRSH numatune $VM | awk '$1=="numa_nodeset"{print $3}'; }
# Sample until the memory_arrived record (or a failure), with a deadline:
# the samples show the nodeset widened, the pages moving and the narrowing.
t=$(up) got=
while awk -v a="$t" -v b="$(up)" 'BEGIN{exit !(b-a < 300)}'; do
	kill -0 $apid 2>/dev/null || abort "numaorchd keeps running" "exited: $(tail -5 $T/err)"
	say "sample: $(per_node) | nodeset $(nodeset) | $(mems_all)"
	if grep -q '"decision":"memory_arrived"' $T/dec 2>/dev/null; then got=arrived; break; fi
	# A move whose memory went another way (the cpuset write) never
	# brings a memory_arrived record: no need to wait for the deadline.
	if grep '"decision":"moved"' $T/dec 2>/dev/null | grep -qv 'by the mover'; then
		got="a moved record without a mover job"; break; fi
	if grep -q '"decision":"\(memory_[a-z]*\|failed\|not_applicable\|refused\)"' $T/dec 2>/dev/null; then
		got="$(grep -o '"decision":"[a-z_]*"' $T/dec | tr '\n' ' ')"; break; fi
	sleep 1
done
took=$(awk -v a="$t" -v b="$(up)" 'BEGIN{printf "%.0f", b-a}')
say "decision log after $took s:"
sed 's/^/#   /' $T/dec 2>/dev/null | cut -c1-900
[ "$got" = arrived ]
result "the agent moved the domain's memory through the mover (memory_arrived record within 300 s, $took s)" $? \
	"got ${got:-nothing}; agent log: $(grep -i "$VM\|error\|warn" $T/err | tail -5)"
# The settle step (libvirt narrows the nodeset) runs right after the job
# ends, in the same engine pass that writes the record.
sleep 1
moved=$(grep '"decision":"moved"' $T/dec | head -1)
to_mems=$(echo "$moved" | sed -n 's/.*"to":{[^}]*"mems":"\([^"]*\)".*/\1/p')
to_cpus=$(echo "$moved" | sed -n 's/.*"to":{[^}]*"cpus":"\([^"]*\)".*/\1/p')
say "the moved record's target: mems '$to_mems' cpus '$to_cpus'"
say "memory (cgroup/numa_maps MiB) after: $(per_node) total $(cg_tot)"
say "virsh numatune: $($VIRSH numatune $VM | tr -s ' ' | tr '\n' ' ')"
say "cpusets: $(mems_all)"
say "vcpupin: $($VIRSH vcpupin $VM | tr -s ' ' | tr '\n' ' ')  emulatorpin: $($VIRSH emulatorpin $VM | tr -s ' ' | tr '\n' ' ')"

[ -n "$to_mems" ] && [ "$to_mems" != 0 ]
result "the agent chose to move the memory off crowded node 0 (target mems '$to_mems')" $? "moved record: $moved"
# Bytes arrived, measured by the kernel: QEMU's numa_maps and the
# cgroup's memory.numa_stat, on the target's nodes.
on_t=0 cg_t=0
for nd in $(echo "$to_mems" | tr ',' ' '); do on_t=$((on_t + $(maps_mib $nd))); cg_t=$((cg_t + $(cg_mib $nd))); done
left0=$(maps_mib 0)
[ -n "$to_mems" ] && [ $on_t -ge $((m0 * 9 / 10)) ] && [ $left0 -le $((m0 / 10)) ]
result "the bytes arrived: QEMU's numa_maps $on_t MiB on nodes $to_mems (of $m0 on node 0 before), $left0 MiB left on node 0" $? \
	"numa_maps per node: $(per_node)"
[ -n "$to_mems" ] && [ $cg_t -ge $(($(cg_tot) * 9 / 10)) ]
result "memory.numa_stat of the domain's cgroup agrees: $cg_t of $(cg_tot) MiB on nodes $to_mems" $? "$(per_node)"
ns=$(nodeset)
[ -n "$to_mems" ] && [ "$ns" = "$to_mems" ]
result "libvirt's live nodeset (virsh numatune) ends equal to the target: '$ns'" $? "target '$to_mems'; $($VIRSH numatune $VM | tr -s ' ' | tr '\n' ' ')"
bad=
for f in $(find $DCG -name cpuset.mems); do
	# A cgroup that sets no mems inherits; one with threads in it must
	# have the target in effect.
	c=$(cat $f) e=$(cat ${f%.mems}.mems.effective) d=${f%/cpuset.mems}
	{ [ -z "$c" ] || [ "$c" = "$to_mems" ]; } || bad="$bad ${f#$DCG/}=$c/$e"
	[ -s $d/cgroup.threads ] && [ "$e" != "$to_mems" ] && bad="$bad ${f#$DCG/}(threads)=$c/$e"
done
ma=$(awk '/^Mems_allowed_list/{print $2}' /proc/$qpid/status)
[ -n "$to_mems" ] && [ -z "$bad" ] && [ "$ma" = "$to_mems" ]
result "nothing left half-bound: every cgroup of the domain and QEMU's Mems_allowed are on '$to_mems'" $? \
	"differ:$bad Mems_allowed=$ma"
arr=$(grep '"decision":"memory_arrived"' $T/dec | head -1)
echo "$arr" | grep -q '"outcome":"moved"' && echo "$arr" | grep -q "job [0-9]* done: .* onto $to_mems in" &&
	echo "$arr" | grep -q "\"to\":{[^}]*\"mems\":\"$to_mems\"" && ! echo "$arr" | grep -q '"mems_after"'
result "the memory_arrived record agrees (job done, onto $to_mems, no mems left wide)" $? "$arr"
rmib=$(echo "$arr" | sed -n 's/.*job [0-9]* [a-z]*: \([0-9]*\)\.[0-9] MiB moved.*/\1/p')
[ -n "$rmib" ] && [ "$rmib" -ge $((m0 * 8 / 10)) ]
result "the record's bytes match what the kernel saw move (${rmib:-?} MiB recorded, $m0 MiB were on node 0)" $? "$arr"
vp=$($VIRSH vcpupin $VM | awk 'NF{print $NF; exit}') ep=$($VIRSH emulatorpin $VM | awk 'NF{print $NF; exit}')
[ -n "$to_cpus" ] && [ "$vp" = "$to_cpus" ] && [ "$ep" = "$to_cpus" ]
result "libvirt's live pins are the record's CPUs '$to_cpus' (vcpupin $vp, emulatorpin $ep)" $? \
	"vcpupin: $($VIRSH vcpupin $VM | tr -s ' ' | tr '\n' ' ') emulatorpin: $($VIRSH emulatorpin $VM | tr -s ' ' | tr '\n' ' ')"
say "vCPU 0 runs on CPU $($VIRSH vcpuinfo $VM | awk '$1=="CPU:"{print $2}')"
tail -30 $T/err | sed 's/^/# agent: /' | cut -c1-400

kill -TERM $apid; wait $apid
for p in $(cat $T/spinners); do kill $p; done
$VIRSH destroy $VM > /dev/null 2>&1
finish

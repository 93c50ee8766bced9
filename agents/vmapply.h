/* vmapply.h — the VM actuator: carries out a planned move of a libvirt
 * domain through libvirt's API, so that libvirt's live view (vcpupin,
 * emulatorpin, numatune) stays the truth. It never writes a domain's
 * cgroup itself: libvirt is that cgroup's single writer.
 *
 * Order of one move:
 *   1. re-check: the domain still runs, as the same instance (domain id)
 *      the snapshot saw, and its threads' affinity is still what the
 *      snapshot saw (else VANISHED / CHANGED, nothing done);
 *   2. save the live pinning of every vCPU, the emulator and each
 *      I/O thread (virDomainGet*PinInfo, virDomainGetIOThreadInfo);
 *   3. memory first, when the plan changes the memory nodes:
 *      virDomainSetNumaParameters(nodeset, AFFECT_LIVE). A domain without
 *      <numatune> gets mode restrictive with it — libvirt would otherwise
 *      record the nodeset as mode strict, after which it refuses every
 *      further live change. libvirt refuses modes strict, preferred and
 *      interleave, and memory bound per guest cell (<memnode>): that is
 *      recorded as NOT_APPLICABLE with libvirt's own message, and then
 *      the CPUs move only as cpus_without_memory says (below);
 *   4. CPUs: virDomainPinVcpuFlags(AFFECT_LIVE) for each vCPU, then
 *      virDomainPinEmulator and virDomainPinIOThread, each to the plan's
 *      CPUs; a pin that already matches is not rewritten;
 *   5. a failure in 3–4 restores, in reverse, every pin already changed
 *      and the old nodeset (APPLY_FAILED; APPLY_FAILED_PARTIAL if the
 *      restore fails too). A domain that stops meanwhile is VANISHED.
 *
 * Who does what: this file refuses a target no domain can take, does the
 * re-check (1) and holds the table of libvirt calls a move makes;
 * vmplan.c decides the steps of 3–4 (pure), vmjournal.c reads the live
 * pinning (2), makes the steps through the table and undoes them (5).
 *
 * cpus_without_memory, when libvirt cannot move the memory:
 *   never   change nothing;
 *   local   (default) move the CPUs only if that does not lower the
 *           guest's locality: the memory it has on the target CPU nodes
 *           (or on the nearest memory node, for CPU nodes without
 *           memory) is at least what it has on its current ones. Moving
 *           CPUs away from memory that cannot follow makes every access
 *           remote; moving them to where the memory is costs nothing;
 *   always  move the CPUs anyway (CPU load matters more than locality).
 */
#ifndef NUMAORCH_VMAPPLY_H
#define NUMAORCH_VMAPPLY_H

#include "vmsrc.h"
#include "../orchestrator/actuator/apply.h"

/* enum vm_cpus_without_memory and struct vmapply: vmplugin.h. */

/* VS must outlive the actuator. */
struct vmapply *vmapply_new(struct vmsrc *vs, const struct host_paths *hp,
			    enum vm_cpus_without_memory cpus_without_memory);
void vmapply_free(struct vmapply *va);

/* struct apply_vm_ops's move (engine thread); CTX is the vmapply. */
int vmapply_move(void *ctx, const struct snapshot *snap, const struct snap_guest *g,
		 const struct plan_item *it, struct apply_result *res);

/* struct apply_vm_ops's set_mems: G's live numatune nodeset to MEMS
 * through virDomainSetNumaParameters(AFFECT_LIVE) — mode restrictive when
 * the domain has no <numatune> — nothing else. G is the guest as the
 * job's snapshot saw it: only that instance is narrowed (see
 * vmapply_same_instance). -ESRCH if that instance no longer runs (the
 * reason in ERR, nothing written), -ENOTCONN, -EIO with libvirt's
 * message in ERR. */
int vmapply_set_mems(void *ctx, const struct snap_guest *g, const nodemask_t *mems, char *err, size_t errsz);

/* Is the instance libvirt runs now the one JOB describes (the snapshot a
 * mover job was submitted on)? LIVE_DOMID is libvirt's id of the running
 * domain; START_R/LIVE_START the result and value of reading the start
 * time of JOB's QEMU pid now. A domain restarted under the same name and
 * UUID gets a new id and a new QEMU process: narrowing its nodeset to
 * where the old instance's pages were moved would bind memory the job
 * never moved. 0 if the same, else -ESRCH with the reason in ERR. Pure. */
int vmapply_same_instance(const struct snap_vm *job, int live_domid, int start_r, uint64_t live_start,
			  char *err, size_t errsz);

/* True locality of G if its vCPUs ran on NODES, memory unmoved: each
 * node weighted by its CPUs, the share of G's memory on that node (for a
 * node without memory, its nearest node with memory); 1 if it has none.
 * Pure. */
double vmapply_locality_on(const struct snapshot *snap, const struct snap_guest *g,
			   const nodemask_t *nodes);

#endif

/* hold.h — which planned items the cycle does not carry out, and why
 * (plan_item.hold): facts of the cycle beside what the policy decided on.
 * Guests this cycle's start placement dealt with, start bindings whose write still
 * runs (struct plan_holds, from the engine; it also carries the VMs that
 * just started, whose start placements are the plan's own items, not
 * held) and the mover's live jobs
 * (snap_guest.job, laid on the snapshot). The item keeps what was
 * decided, so the decision log's dedup sees it as decided; the engine
 * carries out every item without a hold. Pure: no I/O.
 */
#ifndef NUMAORCH_HOLD_H
#define NUMAORCH_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/snapshot.h"

/* A VM the VM source saw start, to be placed by this cycle's plan
 * (policy_place: a PLAN_MOVE with reason "place", or a skip saying why
 * not), with the reservation made for it if any. */
struct start_vm {
	char id[GUEST_ID_MAX];
	double cpus;                 /* expected CPU demand (vCPUs × [libvirt] place_vcpu_load) */
	unsigned busy_threads;       /* its vCPUs that demand makes busy, rounded up */
	uint64_t mem_bytes;          /* configured memory */
	/* The reservation labelled with its name, uuid or id: its index in
	 * the reservations the policy is given (-1: none), its id, label
	 * and where the advice put it (cpu_nodes, mems empty: not known). */
	int room;
	uint64_t resv_id;
	const char *resv_label;
	nodemask_t resv_nodes, resv_cpu_nodes, resv_mems;
};

/* What the engine knows of this cycle that the snapshot does not say.
 * Lists of guest ids; any may be empty. */
struct plan_holds {
	/* dealt with by this cycle's start placement: placed, or a binding
	 * from before a restart released */
	char (*placed)[GUEST_ID_MAX];
	unsigned nplaced;
	char (*bind_writing)[GUEST_ID_MAX]; /* a start binding's cpuset.mems write still running */
	unsigned nbind_writing;
	/* cpusets another placer rewrote after the agent's move
	 * (conflict.h): their moves are not fought */
	char (*conflict)[GUEST_ID_MAX];
	unsigned nconflict;
	/* VMs that just started, placed first (their items are the start
	 * placement's, with no hold) */
	const struct start_vm *starting;
	unsigned nstarting;
	/* A cpuset.mems write that migrates, handed to a mover worker and
	 * still queued or running: its guest's id and job (NULL: none).
	 * The kernel ends every cpuset write of any cgroup by waiting for
	 * the migrations such writes queued, so while one is in flight every
	 * other applying move is held (HOLD_MIGRATING_WRITE). */
	const char *write_guest;
	uint64_t write_job;
	/* The cycle carries moves out (enforce, not a dry run): only then
	 * does a write or a job hold a move back; a move merely planned or
	 * advised is said as planned. */
	bool applying;
	/* Beside the kernel's balancing ([memory] kernel_balancing auto or
	 * defer): the seconds the kernel may take to finish moving a guest's
	 * memory toward its threads for its move to be left to it, and
	 * whether a move against its measured flow is held
	 * (plan_mark_kernel_holds).
	 * 0: the flow holds nothing. */
	double kernel_follow_s;
	/* The same bound ([memory] kernel_follow) for the policy's placement
	 * beside the kernel's balancing, whatever kernel_balancing says: a
	 * guest's CPUs stay where the kernel is measured bringing its memory
	 * only if it would finish within it (gview.follow_nodes). 0: the
	 * default, KFLOW_FOLLOW_S. */
	double follow_bound_s;
};

/* Whether live job J already makes the move a plan asks for: its memory
 * onto the same nodes TO, the same first node (FIRST with FIRST_BYTES > 0,
 * as mover_spec takes it), not a cpuset.mems write. Such a plan comes
 * every cycle while the job runs — the guest's memory is on its way, so
 * its locality is still under target — and is no new plan: superseding
 * would start the job over (census, queries, a move counted and budgeted
 * again) each cycle. */
bool snap_job_same_move(const struct snap_job *j, const nodemask_t *to, int first, uint64_t first_bytes);

/* The hold of IT, decided on SNAP, with H's facts (H may be NULL: none):
 * a guest the start placement dealt with holds whatever it is; a move
 * of a guest another placer rewrote; a move while applying, a start
 * binding's write still running; then the live job making the same
 * move — a move while applying (its CPUs already on the plan's), or the
 * move a cool-down holds back (its CPU nodes already the plan's), whose
 * "cool-down ... would go to nodes N" record would only repeat the
 * job's; last, any other move while applying with another guest's
 * migrating write in flight (plan_holds.write_guest). A VM's start
 * placement is never held: it comes once. */
enum plan_hold plan_item_hold(const struct plan_item *it, const struct snapshot *snap, const struct plan_holds *h);
/* plan_item_hold for every item of P (hold_job: the job that holds it;
 * a HOLD_MIGRATING_WRITE item's detail then says so, the plan's own
 * sentence after it as far as it fits). */
void plan_mark_holds(struct plan *p, const struct snapshot *snap, const struct plan_holds *h);

#endif

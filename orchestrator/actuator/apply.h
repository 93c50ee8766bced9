/* apply.h — carries out one planned move (the actuator).
 *
 * For a container it re-checks the facts just before acting (the cgroup
 * still exists, its cpuset is still what the plan saw, the target nodes
 * still have room for the memory that will move), then writes cpuset.cpus
 * and cpuset.mems in an order the kernel accepts, and restores what it
 * wrote if a later write fails:
 *
 *   v1: widen the guest to old ∪ new, shrink its descendants (deepest
 *       first) to new, then shrink the guest to new — cpus first, then
 *       mems with cpuset.memory_migrate=1 so pages follow;
 *   v2: write the guest's cpuset.cpus then cpuset.mems (the kernel
 *       migrates the subtree's pages on the mems write); descendants
 *       that set their own cpuset.mems (a runtime's container cgroups)
 *       are widened and narrowed with it, in v1's order.
 *
 * After memory moved, the guest's mems are widened again to old ∪ new
 * unless memory_binding = strict or the guest is pinned: it stays local
 * by the kernel's local allocation, and can spill rather than be OOM-killed
 * when its node fills.
 *
 * When the mems do not change but memory sits on other nodes (it was
 * allocated before a mems change made with memory_migrate=0), pages are
 * moved with libnuma's numa_migrate_pages() for each process.
 *
 * VMs are moved by the VM source's own actuator (libvirt API), registered
 * with applier_set_vm_ops(); without one, VM moves are "not applicable".
 */
#ifndef NUMAORCH_APPLY_H
#define NUMAORCH_APPLY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "orchestrator/base/cghier.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/model/snapshot.h"
#include "orchestrator/model/plan.h"

enum apply_status {
	APPLY_DONE = 0,
	APPLY_VANISHED,        /* guest gone before or during the move: skipped */
	APPLY_CHANGED,         /* its cpuset changed since the snapshot: skipped */
	APPLY_NO_ROOM,         /* re-check: target nodes lack room now: skipped */
	APPLY_FAILED,          /* a write was refused; what was written is restored */
	APPLY_FAILED_PARTIAL,  /* ... and restoring failed too (logged loudly) */
	APPLY_NOT_APPLICABLE,  /* the owner (libvirt) refuses this kind of change */
	APPLY_REFUSED,         /* a safety guard stopped it (scope, empty set) */
};

struct apply_result {
	enum apply_status status;
	int err;               /* negative errno of the failing step, 0 */
	char msg[320];         /* what happened, one line */
	double duration_s;
	unsigned writes;       /* cgroup writes made (incl. restores) */
	double locality_after; /* measured right after, NAN if unknown */
	bool cpus_moved;       /* VMs: CPUs moved even though memory could not */
	bool mems_loosened;    /* soft binding: the guest's mems after the move are wider than
				* the target's (widened after migrating, or left as they were
				* when nothing had to migrate) ... */
	nodemask_t mems_after; /* ... these */
};

struct apply_opts {
	unsigned nr_scopes;
	char **scopes;                 /* never write outside these */
	uint64_t min_free_bytes;       /* room re-check: the reserve kept, */
	double min_free_share;         /* at most this share of a node (policy_reserve) */
	bool freeze_during_migration;  /* freeze the guest while mems change */
	bool strict_mems;              /* leave mems at the target after a move (else
					* widen them again: see loosen_mems) */
	/* Fresh MemTotal/MemFree of NODES[NR] for the room re-check (the
	 * sources' reader, source_ops.read_meminfo). Required. */
	int (*read_meminfo)(const struct host_paths *hp, struct snap_node *nodes, unsigned nr);
};

struct applier;

struct apply_vm_ops {
	/* Same contract as apply_move for one VM guest. */
	int (*move)(void *ctx, const struct snapshot *snap, const struct snap_guest *g,
		    const struct plan_item *it, struct apply_result *res);
	/* Set G's memory nodes through libvirt (its live numatune nodeset),
	 * nothing else: the narrowing after the mover moved its pages. 0, or
	 * a negative errno with libvirt's reason in ERR. NULL: VMs' memory
	 * moves only inside move (libvirt's cpuset.mems write). */
	int (*set_mems)(void *ctx, const struct snap_guest *g, const nodemask_t *mems, char *err, size_t errsz);
	void *ctx;
};

/* H must describe the hierarchy the snapshot was read from. Copies OPTS.
 * -ENODEV if libcgroup cannot initialise on a live host. */
int applier_new(const struct host_paths *hp, const struct cg_hier *h,
		const struct apply_opts *opts, struct applier **out);
void applier_free(struct applier *a);
void applier_set_vm_ops(struct applier *a, const struct apply_vm_ops *ops);
/* Writes performed so far (tests: a dry run writes nothing). */
unsigned long applier_write_count(const struct applier *a);

/* Carry out IT (a PLAN_MOVE decided on SNAP). Always fills RES. Returns 0
 * when the move was done or skipped for a normal reason (vanished,
 * changed, no room, not applicable), or RES->err when it failed.
 * apply_cpus followed by apply_memory. */
int apply_move(struct applier *a, const struct snapshot *snap, const struct plan_item *it,
	       struct apply_result *res);

/* A move cut in two so that a cycle places every guest's CPUs before any
 * memory moves: phase 1 (apply_cpus) re-checks and writes cpuset.cpus;
 * phase 2 moves the memory. */
struct apply_pending;

/* Phase 1. Fills RES; when the move needs no phase 2 (nothing to migrate,
 * or skipped/failed) *PEND is NULL and RES is final, else *PEND (caller
 * frees; it holds a reference on SNAP and a copy of IT) and RES says the
 * CPUs are in place. A VM with memory to move does all its work in phase
 * 2 (libvirt sets numatune and pins together). */
int apply_cpus(struct applier *a, const struct snapshot *snap, const struct plan_item *it,
	       struct apply_result *res, struct apply_pending **pend);
/* Phase 2 the kernel's way: write cpuset.mems, the kernel migrates inside
 * the write; on failure everything P wrote is restored. RES is final and
 * its duration counts from phase 1. */
int apply_memory(struct applier *a, struct apply_pending *p, struct apply_result *res);
/* Phase 2 without migrating: widen the mems to old ∪ target, which
 * migrates nothing, so the pages can move inside them later — by the
 * kernel's NUMA balancing on fault (soft binding only), or by the mover
 * (move_pages to a node outside a task's mems fails; a strictly bound
 * guest is narrowed after by apply_memory_settle). WHY ends RES's
 * message ("left to the kernel's NUMA balancing"). */
int apply_memory_widen(struct applier *a, struct apply_pending *p, const char *why, struct apply_result *res);
/* The processes of P's cgroup subtree now (caller frees *OUT). */
unsigned apply_pending_pids(struct applier *a, const struct apply_pending *p, pid_t **out);
/* Where each of PIDS[NPIDS] (apply_pending_pids') goes: the mems of the
 * part of the guest (plan_item.parts) whose cgroups it is in now, else
 * the move's target; NULL (all to the target) when no part has a target
 * of its own. The caller frees. */
nodemask_t *apply_pending_pid_targets(struct applier *a, const struct apply_pending *p, const pid_t *pids,
				      unsigned npids);
/* After the mover moved a strictly bound guest's pages (its mems were
 * widened for it): narrow the mems to the target, which now migrates
 * only what was left behind. Nothing for soft binding. RES->mems_after
 * is updated: the target, or where the guest stays (old ∪ target, with
 * RES->mems_loosened set so a record shows it) when the narrowing is
 * refused. 0 or the negative errno (the mems stay wide). */
int apply_memory_settle(struct applier *a, struct apply_pending *p, struct apply_result *res);
/* Once per cycle, before its first apply_cpus: moves of SNAP may count
 * room to come on their target (ROOM_TO_COME: a mover that waits for it
 * will move their memory) — other guests' memory that live jobs
 * (snap_node.mem_leaving, less mem_coming) and this cycle's earlier
 * moves take off those nodes. Without it (or before the first call)
 * only free memory counts. */
void applier_begin_cycle(struct applier *a, const struct snapshot *snap, bool room_to_come);
/* P's room was partly to come: its memory may move only by a mover job
 * that waits for the room (mover_spec.wait_room). NOTE says how much. */
bool apply_pending_room_wait(const struct apply_pending *p);
const char *apply_pending_room_note(const struct apply_pending *p);
/* P's memory cannot wait for its room (it would move inside the kernel):
 * undo its CPU writes; RES is APPLY_NO_ROOM and names WHY. 0 or the
 * negative errno of the restore (RES then says so). */
int apply_pending_no_room(struct applier *a, struct apply_pending *p, const char *why, struct apply_result *res);
/* Can the mover move P's pages (widen, then move_pages)? Always for a
 * container (descendants with mems of their own are widened with it);
 * false for VMs when the VM actuator cannot set a nodeset alone. A VM is widened, narrowed
 * and pinned through libvirt (its live numatune nodeset: libvirt's view
 * stays true); its process is QEMU's. */
bool apply_pending_movable(const struct apply_pending *p);
/* Release a start placement's binding (plan_item.bind_start): widen the
 * mems of the container at CGROUP, bound to BOUND, to BOUND ∪ WIDE, which
 * migrates nothing (see loosen_mems). Re-checks the scope and that the
 * mems are still BOUND (else APPLY_CHANGED); a v2 guest with a descendant
 * whose own mems reach beyond the binding stays bound
 * (APPLY_NOT_APPLICABLE). Needs no snapshot: the guest may be gone, the
 * agent stopping, or the binding recorded before a restart (bindstate.h).
 * Always fills RES; returns 0 or the negative errno of a refused write. */
int apply_release_mems_cgroup(struct applier *a, const char *cgroup, const nodemask_t *bound,
			      const nodemask_t *wide, struct apply_result *res);
/* Is P's phase 2 only a start binding's cpuset.mems write, with next to
 * nothing to migrate when planned (apply_memory; kernel balancing and
 * room rules do not apply: the write narrows, it moves what the guest
 * touched since)? */
bool apply_pending_narrow_only(const struct apply_pending *p);
/* Seconds since P's move began (its first write): a record's duration. */
double apply_pending_age_s(const struct apply_pending *p);
/* Does P's phase 2 write a container's cpuset.mems (apply_memory)? */
bool apply_pending_writes_mems(const struct apply_pending *p);
/* Is P's guest soft-bound (its mems may stay wide)? For a VM only when
 * it holds huge pages and a narrowed nodeset would leave it no free page
 * of their size (recheck_room's huge_tight). */
bool apply_pending_soft(const struct apply_pending *p);
void apply_pending_free(struct apply_pending *p);
const char *apply_pending_guest(const struct apply_pending *p);
const struct plan_item *apply_pending_item(const struct apply_pending *p);
const struct snapshot *apply_pending_snapshot(const struct apply_pending *p);

const char *apply_status_name(enum apply_status s);
/* Fill RES's status, errno and message (for actuators, apply's and the VM
 * source's). */
void apply_result_set(struct apply_result *res, enum apply_status st, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif

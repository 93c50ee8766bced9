/* policy.h — what the core knows of the placement policy: its
 * configuration, the advice types, and the interface (struct policy_ops)
 * that policies/ implements and the daemon's main registers with the
 * engine. The policy is pure: (config, snapshot, previous state) →
 * (plan, next state). No I/O, no clock reads, no globals (STYLE.md §1-2).
 *
 * Definitions used throughout:
 *   utilisation(S) = Σ busy CPUs of nodes in S / Σ CPUs of nodes in S,
 *                    busy CPUs of a node = busy × nr_cpus;
 *   a guest's own share on node n is estimated as
 *                    cpu_use × |cpus ∩ n| / |cpus| (it runs where its
 *                    cpuset lets it, in proportion);
 *   locality       = where its threads run (snap_guest.locality): Σ over
 *                    nodes of its CPU-time share there × its memory share
 *                    there; memory merely inside its cpuset's nodes
 *                    (snap_guest.mem_in_cpuset) is not local;
 *   busy threads   = measured (≥ SNAP_BUSY_THREAD_CPU each) or estimated
 *                    from its demand: a guest is never given more nodes
 *                    than its busy threads fill unless its memory does not
 *                    fit fewer; when no set fits with headroom it goes on
 *                    the least-loaded nodes that hold them (crowded).
 */
#ifndef NUMAORCH_POLICY_H
#define NUMAORCH_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/model/hold.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/pstate.h"
#include "orchestrator/model/snapshot.h"

struct policy_config {
	double locality_target;     /* 0..1; ≥ this on nodes that fit: leave it (0.9) */
	double cpu_headroom;        /* demand = use × (1 + this) (0.2) */
	double min_cpu;             /* demand floor, CPUs (0.1) */
	double mem_headroom;        /* demand = footprint × (1 + this) (0.1) */
	uint64_t min_free_bytes;    /* never plan a node below this free (256 MiB) ... */
	double min_free_share;      /* ... nor below this share of its memory, the smaller of
				     * the two (0.04): policy_reserve */
	double less_busy_margin;    /* relocate only if util_now > util_after × (1+m) (0.12) */
	double max_util;            /* a target may be filled up to this (0.9) */
	double rebalance_util;      /* load-only moves when util_now ≥ this (0.8) */
	int64_t cooldown_ns;        /* after a move (300 s) */
	unsigned max_moves;         /* per cycle (4) */
	uint64_t max_migrate_bytes; /* per cycle (4 GiB) */
	/* A container seen for the first time with (almost) no memory is
	 * placed at once (plan_item.start) (true) */
	bool start_place;
	/* ... and its mems bound to the target while it first touches memory
	 * (plan_item.bind_start) (false: only its CPUs move, and the
	 * kernel's local first touch puts its memory beside them; what it
	 * touched before moves with the mover). Not the default: a mems
	 * write once its process has started migrates the pages it shares
	 * with others too (MPOL_MF_MOVE_ALL), which can stall it for seconds
	 * (policies/README.md). */
	bool start_bind_mems;
	/* A move's CPUs on a host that shows SMT siblings are whole cores:
	 * every sibling of each core it gets (policies/cores.h) (true); false
	 * gives it one CPU of each, leaving the siblings to others. */
	bool whole_cores;
	/* Containers are narrowed to cores too (false: only VMs, whose vCPUs
	 * are their fixed size). A container's use is capped by the cores it
	 * gets and never reads above them, so nothing would widen it again;
	 * on a node-wide cpuset the kernel's scheduler already puts busy
	 * threads on idle cores before siblings. */
	bool container_cores;
	/* What a guest's devices weigh when neither the API nor its
	 * domain's metadata says ([policy] devices): a host of passed-through
	 * NICs may want every such guest on its device's node (require),
	 * where the default only prefers it among sets that cost the same. */
	enum gpol_devices devices;
};

void policy_config_default(struct policy_config *c);
/* The free memory no plan, applier room check or mover job takes from a
 * node of TOTAL bytes (MemTotal): MIN_FREE_BYTES, but no more than SHARE
 * of the node. A fixed reserve that is nothing on a 64 GiB node is a
 * sixth of a 1.5 GiB one, where it keeps memory a guest could use off
 * its own node (policies/README.md); the kernel's own watermarks grow
 * with the node too. TOTAL 0 (not known):
 * MIN_FREE_BYTES. */
uint64_t policy_reserve(uint64_t min_free_bytes, double share, uint64_t total);
/* 0, or -EINVAL with *field naming the first bad field. */
int policy_config_validate(const struct policy_config *c, const char **field);

/* Room promised to a guest about to start (see policy_advise and
 * policy_decide_reserved). */
struct advice_reservation {
	nodemask_t nodes;
	double cpus;
	uint64_t mem_bytes;
};

struct advice_request {
	double cpus;           /* expected CPU demand (e.g. vCPUs) */
	uint64_t mem_bytes;    /* footprint */
	/* Room already promised to other starting guests; subtracted. */
	unsigned nr_reservations;
	const struct advice_reservation *reservations;
	/* Its devices (a VM's from its domain XML, or given in the API's
	 * request): how many, their nodes, and what they weigh (zero:
	 * none, prefer). */
	unsigned nr_devices;
	nodemask_t dev_nodes;
	enum gpol_devices devices;
	/* Its busy threads (a VM: its vCPUs), counted against free cores on
	 * a host with SMT siblings and against one last-level cache's free
	 * cores where a node has several; 0: not given, nodes chosen by CPUs
	 * alone. */
	unsigned busy_threads;
};

struct advice {
	bool ok;
	nodemask_t nodes;      /* CPU nodes to use */
	nodemask_t mems;       /* memory nodes to use */
	double load_after;
	uint64_t mem_free_after; /* on the chosen nodes, after the guest */
	char detail[256];        /* why, or why nothing fits */
};

/* A guest that just started, to be placed at once (VM initial placement
 * inside the decide; policies/place.c). */
struct place_request {
	const char *guest_id;
	double cpus;                 /* expected CPU demand (vCPUs × [libvirt] place_vcpu_load) */
	uint64_t mem_bytes;          /* configured memory */
	/* The reservation made for it (found by label), if any: the engine
	 * takes it out of RESERVATIONS below and drops it when the result
	 * says it was used. */
	bool reserved;
	uint64_t reserved_id;
	const char *reserved_label;
	nodemask_t reserved_nodes;   /* its room: CPU and memory nodes in one mask */
	nodemask_t reserved_cpu_nodes, reserved_mems; /* where the advice put it; empty: not known */
	/* Room promised to other starting guests, counted as load. */
	unsigned nr_reservations;
	const struct advice_reservation *reservations;
};

/* Where it goes: ITEM is a PLAN_MOVE with reason REASON_PLACE and
 * item.to_cpus pointing at CPUS, or a PLAN_SKIP saying why not. */
struct place_result {
	struct plan_item item;
	cpumask_t cpus;
	bool used_reservation;       /* the request's reservation is consumed */
};

/* The policy as the engine calls it (policies/policies.h implements it;
 * agents/numaorchd.c registers it). Each is pure and returns 0 or a
 * negative errno. */
struct policy_ops {
	/* policy_decide_reserved(): PREV may be NULL; on success *plan and
	 * *next are the caller's (plan_free, pstate_free). *next carries
	 * PREV's entries of the guests still there; the caller notes the
	 * cool-downs of the moves it carries out (plan_item_note_cooldown).
	 * HOLDS (may be NULL): the cycle's facts that hold items back
	 * (plan_mark_holds), and the VMs that just started, whose start
	 * placements are their items (plan_holds.starting). */
	int (*decide)(const struct policy_config *cfg, const struct snapshot *snap,
		      const struct pstate *prev, bool verbose,
		      const struct advice_reservation *res, unsigned nres,
		      const struct plan_holds *holds,
		      struct plan **plan, struct pstate **next);
	/* policy_advise(): 0 with out->ok false when nothing fits. */
	int (*advise)(const struct policy_config *cfg, const struct snapshot *snap,
		      const struct advice_request *req, struct advice *out);
};

#endif

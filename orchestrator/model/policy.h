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
#include <stddef.h>
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
	unsigned max_moves;         /* migrating moves per cycle (4) */
	uint64_t max_migrate_bytes; /* per cycle (4 GiB) */
	/* "auto" for the three above (true: the defaults): sized by what the
	 * mover can do (policy_resolve, policy_move_cooldown) from IN; the
	 * numbers above stay the fallback while IN is not told. */
	bool max_moves_auto, max_migrate_auto, cooldown_auto;
	/* What auto sizes from: told by the engine each cycle, never read
	 * from a file (zero: not told, the numbers above hold). */
	struct policy_mover_in {
		double interval_s;    /* [agent] interval in force; 0: not told */
		unsigned workers;     /* [memory] workers: memory moves that run at once */
		double rate_mibs;     /* the mover's measured host-wide MiB/s; 0: not measured yet */
		double rate_cap_mibs; /* [memory] rate_mib in force; 0: no limit */
	} in;
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

/* The auto budget's bytes before the mover has measured itself, and its
 * least after (policy.c says why), and the auto cool-down's factor and
 * bounds (policy_move_cooldown). */
#define POLICY_AUTO_MIGRATE_FLOOR (4096ULL << 20)
#define POLICY_AUTO_COOLDOWN_K 10.0
#define POLICY_AUTO_COOLDOWN_MIN_S 30.0
#define POLICY_AUTO_COOLDOWN_MAX_S 300.0

/* C with its auto budgets sized from C->in into *OUT (max_moves,
 * max_migrate_bytes; the auto flags and IN kept): max_moves the workers,
 * max_migrate_bytes what the mover moves in an interval at its measured
 * rate (at least POLICY_AUTO_MIGRATE_FLOOR; never over the rate_mib
 * budget). A setting given as a number, or auto not yet told its
 * inputs, keeps its number. Pure. */
void policy_resolve(const struct policy_config *c, struct policy_config *out);
/* Where a resolved budget's figure came from, for records: "4 = [memory]
 * workers", "600 MiB = 40 MiB/s measured x 15 s", ... */
void policy_moves_why(const struct policy_config *c, char *buf, size_t sz);
void policy_migrate_why(const struct policy_config *c, char *buf, size_t sz);
/* The cool-down a move of MIGRATE_BYTES earns under C: cooldown_ns when
 * it is a number; auto: POLICY_AUTO_COOLDOWN_K x its migration time at
 * the measured rate, between max(2 intervals, POLICY_AUTO_COOLDOWN_MIN_S)
 * and POLICY_AUTO_COOLDOWN_MAX_S (a migrating move while the rate is not
 * measured: the most). WHY (may be NULL) says how it was sized. Pure. */
int64_t policy_move_cooldown(const struct policy_config *c, uint64_t migrate_bytes, char *why, size_t whysz);
/* The same once the move's memory job has ended after JOB_S seconds (its
 * cost measured, where the estimate was bytes / rate): auto sizes by
 * JOB_S; else cooldown_ns. Pure. */
int64_t policy_job_cooldown(const struct policy_config *c, double job_s);
/* How long a guest whose last move earned COOLDOWN_NS (pstate_entry;
 * 0: not known, a state saved before it was kept) stays still under C:
 * a number in C holds for every guest, as configured; auto: what its
 * move earned, cooldown_ns when not known. */
int64_t policy_guest_cooldown(const struct policy_config *c, int64_t cooldown_ns);
/* The hold of the records said once per cool-down (logged.h): the
 * cool-down, or auto's most. */
int64_t policy_record_hold(const struct policy_config *c);

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
	/* Its vCPUs taken as busy threads, weighed as advice_request's are:
	 * the next cycle counts the running VM's measured ones the same way,
	 * so it is not placed where that count would move it off again. */
	unsigned busy_threads;
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

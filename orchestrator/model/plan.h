/* plan.h — what the policy decided: one item per guest it considered
 * worth a decision, each carrying its reason and the numbers behind it,
 * what holds it back this cycle (hold.h) and how its memory moves
 * (memway.h). What the policy decided is not edited once returned: the
 * engine only adds each move's way (plan_mem_ways) and, carrying the
 * plan out, the way each took (mem_way_applied).
 */
#ifndef NUMAORCH_PLAN_H
#define NUMAORCH_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/memway.h"
#include "orchestrator/model/pstate.h"
#include "orchestrator/model/snapshot.h"

enum plan_kind {
	PLAN_MOVE = 0,   /* change the guest's cpus and/or mems */
	PLAN_SKIP,       /* it had a reason to move, a guard said no */
	PLAN_SETTLED,    /* nothing to do: already placed well (not logged) */
};

enum move_reason {
	REASON_NONE = 0,
	REASON_CONSOLIDATE, /* spans more nodes than it needs */
	REASON_LOCALITY,    /* memory not local to where it runs */
	REASON_LOAD,        /* its nodes are busier than others by the margin */
	REASON_PINNED,      /* per-guest policy pins it elsewhere */
	REASON_PLACE,       /* initial placement of a starting guest */
};

enum skip_reason {
	SKIP_NONE = 0,
	SKIP_IGNORED,        /* per-guest policy "ignore" */
	SKIP_ONE_NODE,       /* host has one CPU node: nothing to choose */
	SKIP_NO_USAGE,       /* CPU use not measured yet */
	SKIP_COOLDOWN,       /* moved too recently */
	SKIP_NO_FIT,         /* no node set has room for it */
	SKIP_NOT_LESS_BUSY,  /* only busier nodes would fit */
	SKIP_MAX_MOVES,      /* cycle's move budget spent */
	SKIP_MAX_MIGRATE,    /* cycle's migration budget spent */
	SKIP_NO_ROOM_PINNED, /* pinned nodes lack memory for it */
	SKIP_OUTSIDE_ALLOWED,/* target not within the parent's cpuset */
	SKIP_IN_SET,         /* spread as it must be, its memory inside its set but
			      * not where its threads run, and the kernel's NUMA
			      * balancing is off: no cpuset write can fix that */
	SKIP_OWNED,          /* another placer owns it (snap_guest.owner: the
			      * kubelet's exclusive CPUs or NUMA assignment) */
	SKIP_MEM_UNKNOWN,    /* its memory per node was not measured: left as it is */
};

/* Why the cycle does not carry an item out though the plan keeps what
 * was decided (kind, skip, targets): a fact of the cycle beside the
 * snapshot, marked by the policy (plan_mark_holds, hold.h). The decision
 * log's dedup (logged.h) sees the item as decided. */
enum plan_hold {
	HOLD_NONE = 0,
	HOLD_JUST_PLACED,   /* this cycle's start placement dealt with it (its binding
			     * from before a restart released: engine_place.c; a VM
			     * that started has its start placement as its item
			     * instead): the plan saw it where it was before; a move
			     * cools down as if made */
	HOLD_BIND_WRITING,  /* a move while its start binding's cpuset.mems write still
			     * runs would race it: decided again on what the write leaves */
	HOLD_STILL_MOVING,  /* the mover's live job (hold_job) makes this move already
			     * (a move, or the one a cool-down holds back) */
	HOLD_CONFLICT,      /* another placer (the kubelet) rewrote the cpuset the agent
			     * wrote: not fought, until its CPUs change again (conflict.h) */
	HOLD_KERNEL_MOVING, /* the kernel's balancing is measured moving its memory toward
			     * its threads fast enough to finish in [memory] kernel_follow:
			     * left to it (kflow.h) */
	HOLD_KERNEL_AGAINST,/* the move would take its memory off the node the kernel is
			     * measured filling for it: not fought, left as it is (kflow.h) */
	HOLD_KERNEL_UNMEASURED, /* a busy guest's move with the kernel's balancing on and no
			     * flow measured yet (the agent's first cycle): decided on
			     * the next, with what the kernel moved in between */
	HOLD_MIGRATING_WRITE, /* another guest's cpuset.mems write is migrating its memory
			     * inside the kernel (plan_holds.write_guest, hold_job): every
			     * cpuset write returns only once the kernel's pending
			     * migrations have ended, so this move's writes would hold
			     * the engine thread that long; decided again next cycle */
};

/* One part of a guest (snap_guest.parts: a container cgroup with its own
 * cpuset) given its own share of the guest's target: the CPUs of NODES
 * within the item's to_cpus, and MEMS. */
struct plan_part {
	unsigned part;               /* index into the guest's parts */
	nodemask_t nodes;
	nodemask_t mems;
};

struct plan_item {
	char guest_id[GUEST_ID_MAX];
	unsigned guest_idx;          /* index in the snapshot decided on */
	enum plan_kind kind;
	enum move_reason reason;
	enum skip_reason skip;

	nodemask_t from_nodes;       /* CPU nodes now */
	nodemask_t from_mems;
	nodemask_t to_nodes;         /* CPU nodes chosen (moves; best candidate for skips) */
	nodemask_t to_mems;
	cpumask_t *to_cpus;          /* exact cpus to write; moves only, else NULL */

	double cpu_demand;           /* CPUs, with headroom */
	uint64_t mem_demand;         /* bytes, with headroom */
	double load_before;          /* utilisation of from_nodes incl. the guest */
	double load_after;           /* utilisation of to_nodes with the guest added */
	uint64_t migrate_bytes;      /* memory that must move to be local */
	double locality_before;      /* 0..1 */
	double gain;                 /* ranking score, higher first */
	/* Nothing fitted with headroom: to_nodes are the least-loaded that
	 * hold its busy threads, load_after may pass max_util. */
	bool crowded;
	/* Fits only without CPU headroom: its memory is already there and
	 * its threads fit the CPUs left (guards.h, pcand.local_fit);
	 * load_after is then its use without headroom, at most 1. */
	bool local_fit;
	/* Start placement (policies/place.c): a new container placed before
	 * its use is measured, with (almost) no memory yet. No cool-down. */
	bool start;
	/* A start placement whose mems are bound to to_mems even under soft
	 * binding, so that its first touches land there ([policy]
	 * start_bind_mems); the engine widens them once its memory stops
	 * growing. */
	bool bind_start;
	/* A VM's start placement (plan_holds.starting): made and recorded
	 * as every move, its cool-down noted unless libvirt refuses the
	 * change; RESV_USED: the reservation it took (consumed at once),
	 * 0 none. */
	bool vm_start;
	uint64_t resv_used;
	/* Its memory does not fit one node, its busy threads fit one node's
	 * CPUs (policy: split): to_nodes is that one node, to_mems it and the
	 * fewest nodes that hold the rest, first_node that node. */
	bool split;
	/* Up to first_bytes of its memory off first_node (from the other
	 * to_mems too) go there first (mover_spec.first): a split's largest
	 * share on its threads' node, or a pinned guest's memory following
	 * its threads inside a multi-node pin. first_bytes 0: none
	 * (first_node is then meaningless). */
	int first_node;
	uint64_t first_bytes;
	/* The pinned guest's memory following its threads inside its pin,
	 * the cpuset unchanged (first_node, first_bytes say where and how
	 * much): its cool-down is noted as such (pstate_note_follow). */
	bool follow;
	/* The cool-down the move earns once carried out (policy_move_cooldown:
	 * sized by its cost under cooldown = auto); 0: not sized, the
	 * configured one. */
	int64_t cooldown_ns;
	/* A guest whose parts get targets of their own (policies/parts.c):
	 * NR_PARTS of them, owned (freed with the plan); each part's memory
	 * goes to its own mems, not to the whole to_mems. 0 and NULL: the
	 * guest's cgroups all get the item's target. A part not named here
	 * gets the item's target. */
	unsigned nr_parts;
	struct plan_part *parts;
	/* Not carried out this cycle, and why (HOLD_STILL_MOVING: the job). */
	enum plan_hold hold;
	uint64_t hold_job;
	/* How its memory moves after its CPUs (memway.h): as planned
	 * (plan_mem_ways), should its binding turn out soft, and as the
	 * applier's facts left it (MEM_WAY_NONE: it did not get that far). */
	enum mem_way mem_way, mem_way_soft, mem_way_applied;
	char detail[320];            /* one human sentence */
};

struct plan {
	uint64_t seq;                /* snapshot seq it was decided on */
	int64_t mono_ns;
	unsigned nr_items;
	struct plan_item *items;
	unsigned nr_moves;
	uint64_t migrate_bytes;      /* sum over moves */
};

/* A migration too small to be worth a cpuset.mems round trip: under
 * 2 MiB, or under 1% of the guest's memory (TOTAL bytes). Narrowing
 * cpuset.mems makes the kernel rebind and walk the whole address space
 * of every task in the group however little there is to move, which can
 * take seconds with busy guests (tests/numa-vm/README.md, "What TCG does
 * to the numbers"). The policy applies such moves first (they take milliseconds, a real
 * migration seconds per GiB) and the applier treats them as moving
 * nothing: no narrowing, no room needed on the target. */
bool plan_migration_negligible(uint64_t migrate_bytes, uint64_t total);

/* Start IT as the decision about guest GI of SNAP: zeroed, then its id,
 * index, KIND, where it is now (from_nodes, from_mems, locality_before),
 * and NaN for the loads and CPU demand nobody has computed yet. */
void plan_item_init(struct plan_item *it, const struct snapshot *snap, unsigned gi, enum plan_kind kind);

/* The cool-down IT leaves in PS once carried out at NOW: none for a
 * start placement (made on an assumed use, the next cycle decides on the
 * measured one) nor for an item that is not a move, pstate_note_follow
 * for memory following its threads, pstate_note_move otherwise; its
 * length is the item's cooldown_ns (pstate_entry.cooldown_ns). */
void plan_item_note_cooldown(const struct plan_item *it, struct pstate *ps, int64_t now_ns);
/* plan_item_note_cooldown for every item of P at the plan's time: as if
 * each planned move were carried out (the tests' simulations). */
void plan_note_cooldowns(const struct plan *p, struct pstate *ps);

/* How each move of P, decided on SNAP, moves its memory (mem_way,
 * mem_way_soft: mem_way_plan, memway.h) under the agent's settings CFG:
 * the plan says what the engine will do. */
void plan_mem_ways(struct plan *p, const struct snapshot *snap, const struct mem_way_cfg *cfg);

/* The holds the kernel's measured flow (kflow.h) puts on P's moves,
 * decided on SNAP with FOLLOW_S the bound the kernel's remaining work
 * must fit in (plan_holds.kernel_follow_s; 0: none), on items no other
 * hold has: a move of a guest the kernel moves toward its threads fast
 * enough (KFLOW_FOLLOWS) is left to it (HOLD_KERNEL_MOVING); else a move
 * whose memory would leave the node the kernel is filling for it
 * (kflow_filling not in its to_mems) is left as it is
 * (HOLD_KERNEL_AGAINST): the smallest change that never migrates
 * against the kernel's flow. With no flow measured at all (no previous
 * snapshot: flow_window_s 0), a busy guest's move waits a cycle
 * (HOLD_KERNEL_UNMEASURED). A pinned guest (its mems end narrow, the
 * operator's order) and a start placement are not held. Each held
 * item's detail says what the kernel was measured doing. */
void plan_mark_kernel_holds(struct plan *p, const struct snapshot *snap, double follow_s);

void plan_free(struct plan *p);
const char *plan_kind_name(enum plan_kind k);
const char *move_reason_name(enum move_reason r);
const char *skip_reason_name(enum skip_reason r);
const char *plan_hold_name(enum plan_hold h);
/* JSON of one item (caller owns). */
json_t *plan_item_to_json(const struct plan_item *it);
json_t *plan_to_json(const struct plan *p);

#endif

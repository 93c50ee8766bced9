/* memway.h — how a planned move's memory gets to its target
 * (plan_item.mem_way), the rule of kbal.h and the shapes the mover can
 * take. Set when the plan is made (mem_way_plan, from what the plan
 * knows); the applier's fresh facts (the cpuset it reads, the room it
 * re-checks) may then only refine it (mem_way_at_apply), and the engine
 * carries out the result (memory_phase). Pure: no I/O.
 *
 * The ways, for a move whose memory must move after its CPUs:
 *
 *   kernel        its mems widened to old ∪ new, which migrates nothing;
 *                 the kernel's NUMA balancing moves the pages on fault
 *                 (kbal: defer);
 *   mover         widened too, and a mover job moves the pages (a strictly
 *                 bound guest is narrowed once they are in place);
 *   write_worker  a container's cpuset.mems write, which migrates inside
 *                 the kernel for as long as the memory takes, made on a
 *                 mover worker while the cycle goes on (no page mover);
 *   bind_write    a start binding's narrowing write (plan_item.bind_start)
 *                 on a mover worker (engine_jobs.c);
 *   write         the write (a VM: libvirt's move) on the engine's own
 *                 thread;
 *   no_room       (at apply only) its room is partly still to come and
 *                 its way would not wait for it: not moved.
 */
#ifndef NUMAORCH_MEMWAY_H
#define NUMAORCH_MEMWAY_H

#include <stdbool.h>

#include "orchestrator/model/kbal.h"

enum mem_way {
	MEM_WAY_NONE = 0,   /* not a move, or nothing worth migrating: its CPUs' write is all */
	MEM_WAY_KERNEL,
	MEM_WAY_MOVER,
	MEM_WAY_WRITE_WORKER,
	MEM_WAY_BIND_WRITE,
	MEM_WAY_WRITE,
	MEM_WAY_NO_ROOM,
};

const char *mem_way_name(enum mem_way w);

/* What the plan knows of one move. */
struct mem_way_in {
	enum kbal_setting kbal;   /* [memory] kernel_balancing */
	int balancing;            /* kernel.numa_balancing, as the snapshot read it */
	double cpu_use;           /* the guest's, CPUs (NAN: not measured) */
	enum kbal_flow flow;      /* the kernel's measured flow of its memory (kbal.h) */
	bool vm;                  /* a VM (libvirt sets its nodeset), else a container */
	/* Bound strictly (its mems end narrow): memory_binding = strict, a
	 * pinned guest, a start binding; a VM always (its nodeset). */
	bool strict;
	bool bind_start;          /* plan_item.bind_start */
	bool negligible;          /* plan_migration_negligible: nothing worth migrating */
	bool mover, mover_on;     /* a page mover, and moving pages ([mover] on, a rate) */
	bool vm_movable;          /* a VM whose QEMU process is known: the mover may move it */
};

/* The way of a move with IN; *IF_SOFT the way should its binding turn
 * out soft at apply (a hugetlb guest whose target would keep no free huge
 * page of its size stays soft): the kernel's where kbal defers a soft
 * guest's memory, else the same. A negligible migration is NONE, but for
 * a start binding, whose write narrows the mems for what it touches
 * next. */
enum mem_way mem_way_plan(const struct mem_way_in *in, enum mem_way *if_soft);

/* What the applier learnt of the move at its first phase (apply.h). */
struct mem_way_facts {
	bool soft;          /* its binding is soft after all (apply_pending_soft) */
	bool movable;       /* the mover can move its pages (apply_pending_movable): a
			     * VM only when the VM actuator sets its nodeset alone */
	bool narrow_only;   /* a start binding's write with next to nothing to migrate */
	bool mems_change;   /* its write changes a container's cpuset.mems */
	bool room_wait;     /* its room on the target is partly still to come */
	bool caller_waits;  /* a caller waits for the cycle's report: no write left to a worker */
	bool no_process;    /* its cgroup has no process: nothing for the mover to move */
};

/* The way PLANNED (IF_SOFT: mem_way_plan's) becomes with F: soft after
 * all, the soft way; a start binding's write with next to nothing to
 * migrate, that write at once (before any room rule: it narrows, it
 * moves only what the guest touched since); room partly to come, NO_ROOM
 * unless the mover takes it (a job waits for the room, the kernel would
 * not); a start binding whose mems stay as they are, or any write a
 * caller waits for, the write on this thread; the mover unable to move
 * it (a VM) or with no process to move, the write. */
enum mem_way mem_way_at_apply(enum mem_way planned, enum mem_way if_soft, const struct mem_way_facts *f);

/* The common part of every move's mem_way_in: the agent's settings
 * (plan_mem_ways, plan.h). */
struct mem_way_cfg {
	enum kbal_setting kbal;
	bool strict_mems;         /* memory_binding = strict */
	bool mover, mover_on;
	/* The bound of kflow_judge ([memory] kernel_follow): how fast the
	 * kernel must move a guest's memory to count as moving it. */
	double kernel_follow_s;
};

#endif

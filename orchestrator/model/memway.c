/* memway.c — how a move's memory gets to its target (memway.h). */
#include "orchestrator/model/memway.h"

#include "orchestrator/base/strtab.h"

static const char *const way_names[] = {
	[MEM_WAY_NONE] = "none",
	[MEM_WAY_KERNEL] = "kernel",
	[MEM_WAY_MOVER] = "mover",
	[MEM_WAY_WRITE_WORKER] = "write_worker",
	[MEM_WAY_BIND_WRITE] = "bind_write",
	[MEM_WAY_WRITE] = "write",
	[MEM_WAY_NO_ROOM] = "no_room",
};
STRTAB_NAME(mem_way_name, enum mem_way, way_names)

enum mem_way mem_way_plan(const struct mem_way_in *in, enum mem_way *if_soft)
{
	enum kbal_action act = kbal_decide_flow(in->kbal, in->balancing, in->strict, in->cpu_use, in->flow);
	bool to_mover = in->mover && in->mover_on && (!in->vm || in->vm_movable) && !in->bind_start;
	enum mem_way way;

	if (in->negligible && !in->bind_start)
		way = MEM_WAY_NONE;
	else if (act == KBAL_ACT_DEFER)
		way = MEM_WAY_KERNEL;
	/* A start binding narrows the mems now, so that what the guest
	 * touches from here lands on the target; widening them for the
	 * mover would let it go on touching off the target while the mover
	 * chases it. Its write goes to a mover worker where there is one. */
	else if (in->bind_start)
		way = in->mover && !in->vm ? MEM_WAY_BIND_WRITE : MEM_WAY_WRITE;
	else if (to_mover)
		way = MEM_WAY_MOVER;
	/* The kernel's way (no page mover, or a VM libvirt moves): a
	 * container's write migrates inside the kernel for as long as its
	 * memory takes, so a worker makes it where there is one. */
	else if (in->mover && !in->vm)
		way = MEM_WAY_WRITE_WORKER;
	else
		way = MEM_WAY_WRITE;
	*if_soft = way != MEM_WAY_NONE &&
		   kbal_decide_flow(in->kbal, in->balancing, false, in->cpu_use, in->flow) == KBAL_ACT_DEFER ? MEM_WAY_KERNEL : way;
	return way;
}

enum mem_way mem_way_at_apply(enum mem_way planned, enum mem_way if_soft, const struct mem_way_facts *f)
{
	enum mem_way way = f->soft ? if_soft : planned;
	bool to_mover = way == MEM_WAY_MOVER && f->movable;

	if (f->narrow_only)
		return planned == MEM_WAY_BIND_WRITE && !f->caller_waits ? MEM_WAY_BIND_WRITE : MEM_WAY_WRITE;
	if (f->room_wait && (way == MEM_WAY_KERNEL || !to_mover))
		return MEM_WAY_NO_ROOM;
	switch (way) {
	case MEM_WAY_KERNEL:
	case MEM_WAY_WRITE_WORKER:
		return way;
	case MEM_WAY_BIND_WRITE:
		return f->mems_change && !f->caller_waits ? MEM_WAY_BIND_WRITE : MEM_WAY_WRITE;
	case MEM_WAY_MOVER:
		return to_mover && !f->no_process ? MEM_WAY_MOVER : MEM_WAY_WRITE;
	default:
		/* (the write; NONE never reaches the memory phase) */
		return MEM_WAY_WRITE;
	}
}

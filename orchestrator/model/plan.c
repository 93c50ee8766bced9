/* plan.c — plan names, JSON and freeing, and the rules an item carries:
 * the cool-down it leaves, how its memory moves (plan_mem_ways). */
#include "orchestrator/model/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/model/kflow.h"
#include "orchestrator/model/snapjson.h"
#include "orchestrator/base/strtab.h"

void plan_item_note_cooldown(const struct plan_item *it, struct pstate *ps, int64_t now_ns)
{
	if (it->kind != PLAN_MOVE || it->start)
		return;
	if (it->follow)
		pstate_note_follow(ps, it->guest_id, now_ns);
	else
		pstate_note_move(ps, it->guest_id, now_ns);
	pstate_note_cooldown(ps, it->guest_id, it->cooldown_ns);
}

void plan_note_cooldowns(const struct plan *p, struct pstate *ps)
{
	for (unsigned i = 0; i < p->nr_items; i++)
		plan_item_note_cooldown(&p->items[i], ps, p->mono_ns);
}

/* The kernel's flow of G's memory as kbal's rule takes it. */
static enum kbal_flow mem_way_flow(const struct snapshot *snap, const struct snap_guest *g, double follow_s)
{
	struct kflow_judgement j;

	kflow_judge(snap, g, follow_s, &j);
	switch (j.verdict) {
	case KFLOW_FOLLOWS:
		return KBAL_FLOW_MOVING;
	case KFLOW_SLOW:
	case KFLOW_STILL:
		return KBAL_FLOW_SHORT;
	default:
		return KBAL_FLOW_UNMEASURED;
	}
}

void plan_mem_ways(struct plan *p, const struct snapshot *snap, const struct mem_way_cfg *cfg)
{
	for (unsigned i = 0; i < p->nr_items; i++) {
		struct plan_item *it = &p->items[i];
		const struct snap_guest *g;
		struct mem_way_in in;

		it->mem_way = it->mem_way_soft = MEM_WAY_NONE;
		if (it->kind != PLAN_MOVE || it->guest_idx >= snap->nr_guests)
			continue;
		/* A VM's start placement is libvirt's one call, CPUs and
		 * memory together. */
		if (it->vm_start) {
			it->mem_way = it->mem_way_soft = MEM_WAY_WRITE;
			continue;
		}
		g = &snap->guests[it->guest_idx];
		in = (struct mem_way_in){
			.kbal = cfg->kbal, .balancing = snap->numa_balancing, .cpu_use = g->cpu_use,
			.vm = g->kind == GUEST_VM,
			.strict = g->kind == GUEST_VM || cfg->strict_mems || g->policy.mode == GPOL_PINNED ||
				  it->bind_start,
			.bind_start = it->bind_start,
			.negligible = plan_migration_negligible(it->migrate_bytes, g->mem_total),
			.mover = cfg->mover, .mover_on = cfg->mover_on,
			.vm_movable = g->vm && g->vm->qemu_pid > 0,
		};
		in.flow = mem_way_flow(snap, g, cfg->kernel_follow_s);
		it->mem_way = mem_way_plan(&in, &it->mem_way_soft);
	}
}

/* The kernel's hold on IT of SNAP, its detail written. */
static enum plan_hold kernel_hold(struct plan_item *it, const struct snapshot *snap, double follow_s)
{
	const struct snap_guest *g = &snap->guests[it->guest_idx];
	struct kflow_judgement j;
	char to[64];
	int fill;

	if (it->kind != PLAN_MOVE || it->start || it->bind_start || g->policy.mode == GPOL_PINNED)
		return HOLD_NONE;
	kflow_judge(snap, g, follow_s, &j);
	/* Not seen moving it, and no window long enough to say it does not
	 * (the first cycle, and the prompt ones within KFLOW_MIN_WINDOW_S of
	 * it): a busy guest's move waits for the cycle that knows. */
	if (j.verdict != KFLOW_FOLLOWS && snap->flow_window_s < KFLOW_MIN_WINDOW_S &&
	    kbal_kernel_moves(snap->numa_balancing) && !isnan(g->cpu_use) && g->cpu_use >= KBAL_BUSY_CPUS &&
	    !plan_migration_negligible(it->migrate_bytes, g->mem_total)) {
		snprintf(it->detail, sizeof(it->detail), "the kernel's balancing is on and what it moves of this "
			 "guest is not measured yet: decided next cycle");
		return HOLD_KERNEL_UNMEASURED;
	}
	if (j.verdict == KFLOW_FOLLOWS) {
		snprintf(it->detail, sizeof(it->detail),
			 "kernel moving %.1f MiB/s to node %d, left to it: %.1f MiB still off its threads' nodes, "
			 "done in about %.0f s (bound %.0f s; measured over %.2f s)", j.rate_bps / 1048576.0, j.to_node,
			 (double)j.remote_bytes / 1048576.0, (double)j.remote_bytes / j.rate_bps, follow_s,
			 g->kflow->window_s);
		return HOLD_KERNEL_MOVING;
	}
	fill = kflow_filling(snap, g);
	if (fill < 0 || mask_test(&it->to_mems, fill) || plan_migration_negligible(it->migrate_bytes, g->mem_total))
		return HOLD_NONE;
	mask_format(&it->to_mems, to, sizeof(to));
	snprintf(it->detail, sizeof(it->detail),
		 "kernel filling node %d with its memory (%.1f MiB/s): moving it to nodes %s would go against "
		 "that flow, left as it is", fill, (double)g->kflow->moved / g->kflow->window_s / 1048576.0, to);
	return HOLD_KERNEL_AGAINST;
}

void plan_mark_kernel_holds(struct plan *p, const struct snapshot *snap, double follow_s)
{
	if (!(follow_s > 0))
		return;
	for (unsigned i = 0; i < p->nr_items; i++) {
		struct plan_item *it = &p->items[i];

		if (it->hold != HOLD_NONE || it->guest_idx >= snap->nr_guests)
			continue;
		it->hold = kernel_hold(it, snap, follow_s);
	}
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->nr_items; i++) {
		free(p->items[i].to_cpus);
		free(p->items[i].parts);
	}
	free(p->items);
	free(p);
}

void plan_item_init(struct plan_item *it, const struct snapshot *snap, unsigned gi, enum plan_kind kind)
{
	const struct snap_guest *g = &snap->guests[gi];

	memset(it, 0, sizeof(*it));
	snprintf(it->guest_id, sizeof(it->guest_id), "%s", g->id);
	it->guest_idx = gi;
	it->kind = kind;
	it->from_nodes = g->cpu_nodes;
	it->from_mems = g->mems;
	it->locality_before = g->locality;
	it->cpu_demand = NAN;
	it->load_before = NAN;
	it->load_after = NAN;
}

bool plan_migration_negligible(uint64_t migrate_bytes, uint64_t total)
{
	return migrate_bytes < (2ULL << 20) || migrate_bytes < total / 100;
}

static const char *const kind_names[] = {
	[PLAN_MOVE] = "move",
	[PLAN_SKIP] = "skip",
	[PLAN_SETTLED] = "settled",
};
STRTAB_NAME(plan_kind_name, enum plan_kind, kind_names)

static const char *const move_reason_names[] = {
	[REASON_NONE] = "none",
	[REASON_CONSOLIDATE] = "consolidate",
	[REASON_LOCALITY] = "locality",
	[REASON_LOAD] = "load",
	[REASON_PINNED] = "pinned",
	[REASON_PLACE] = "place",
};
STRTAB_NAME(move_reason_name, enum move_reason, move_reason_names)

static const char *const skip_reason_names[] = {
	[SKIP_NONE] = "none",
	[SKIP_IGNORED] = "ignored",
	[SKIP_ONE_NODE] = "one_node",
	[SKIP_NO_USAGE] = "no_usage",
	[SKIP_COOLDOWN] = "cooldown",
	[SKIP_NO_FIT] = "no_fit",
	[SKIP_NOT_LESS_BUSY] = "not_less_busy",
	[SKIP_MAX_MOVES] = "max_moves",
	[SKIP_MAX_MIGRATE] = "max_migrate",
	[SKIP_NO_ROOM_PINNED] = "no_room_pinned",
	[SKIP_OUTSIDE_ALLOWED] = "outside_allowed",
	[SKIP_IN_SET] = "in_set",
	[SKIP_OWNED] = "owned",
	[SKIP_MEM_UNKNOWN] = "mem_unknown",
};
STRTAB_NAME(skip_reason_name, enum skip_reason, skip_reason_names)

static const char *const hold_names[] = {
	[HOLD_NONE] = "none",
	[HOLD_JUST_PLACED] = "just_placed",
	[HOLD_BIND_WRITING] = "bind_writing",
	[HOLD_STILL_MOVING] = "still_moving",
	[HOLD_CONFLICT] = "conflict",
	[HOLD_KERNEL_MOVING] = "kernel_moving",
	[HOLD_KERNEL_AGAINST] = "kernel_against",
	[HOLD_KERNEL_UNMEASURED] = "kernel_unmeasured",
	[HOLD_MIGRATING_WRITE] = "migrating_write",
};
STRTAB_NAME(plan_hold_name, enum plan_hold, hold_names)

json_t *plan_item_to_json(const struct plan_item *it)
{
	json_t *o = json_object();

	json_object_set_new(o, "guest", json_string(it->guest_id));
	json_object_set_new(o, "kind", json_string(plan_kind_name(it->kind)));
	json_object_set_new(o, "reason", json_string(move_reason_name(it->reason)));
	json_object_set_new(o, "skip", json_string(skip_reason_name(it->skip)));
	json_object_set_new(o, "from_nodes", snapj_nodemask(&it->from_nodes));
	json_object_set_new(o, "from_mems", snapj_nodemask(&it->from_mems));
	json_object_set_new(o, "to_nodes", snapj_nodemask(&it->to_nodes));
	json_object_set_new(o, "to_mems", snapj_nodemask(&it->to_mems));
	json_object_set_new(o, "to_cpus", it->to_cpus ? snapj_cpumask(it->to_cpus) : json_null());
	json_object_set_new(o, "cpu_demand", snapj_real_or_null(it->cpu_demand));
	json_object_set_new(o, "mem_demand_bytes", json_integer((json_int_t)it->mem_demand));
	json_object_set_new(o, "load_before", snapj_real_or_null(it->load_before));
	json_object_set_new(o, "load_after", snapj_real_or_null(it->load_after));
	json_object_set_new(o, "migrate_bytes", json_integer((json_int_t)it->migrate_bytes));
	json_object_set_new(o, "locality_before", snapj_real_or_null(it->locality_before));
	json_object_set_new(o, "gain", snapj_real_or_null(it->gain));
	if (it->kind == PLAN_MOVE && it->cooldown_ns > 0)
		json_object_set_new(o, "cooldown_s", json_real((double)it->cooldown_ns / 1e9));
	if (it->crowded)
		json_object_set_new(o, "crowded", json_true());
	if (it->local_fit)
		json_object_set_new(o, "local_fit", json_true());
	if (it->start)
		json_object_set_new(o, "start", json_true());
	if (it->bind_start)
		json_object_set_new(o, "bind_start", json_true());
	if (it->split)
		json_object_set_new(o, "split", json_true());
	if (it->split || it->first_bytes) {
		json_object_set_new(o, "first_node", json_integer(it->first_node));
		json_object_set_new(o, "first_bytes", json_integer((json_int_t)it->first_bytes));
	}
	if (it->nr_parts && it->parts) {
		json_t *a = json_array();

		for (unsigned i = 0; i < it->nr_parts; i++)
			json_array_append_new(a, json_pack("{s:i, s:o, s:o}", "part", (int)it->parts[i].part,
							   "nodes", snapj_nodemask(&it->parts[i].nodes),
							   "mems", snapj_nodemask(&it->parts[i].mems)));
		json_object_set_new(o, "parts", a);
	}
	if (it->kind == PLAN_MOVE) {
		json_object_set_new(o, "mem_way", json_string(mem_way_name(it->mem_way)));
		if (it->mem_way_soft != it->mem_way)
			json_object_set_new(o, "mem_way_soft", json_string(mem_way_name(it->mem_way_soft)));
		if (it->mem_way_applied != MEM_WAY_NONE)
			json_object_set_new(o, "mem_way_applied", json_string(mem_way_name(it->mem_way_applied)));
	}
	if (it->hold != HOLD_NONE) {
		json_object_set_new(o, "hold", json_string(plan_hold_name(it->hold)));
		if (it->hold_job)
			json_object_set_new(o, "hold_job", json_integer((json_int_t)it->hold_job));
	}
	json_object_set_new(o, "detail", json_string(it->detail));
	return o;
}

json_t *plan_to_json(const struct plan *p)
{
	json_t *items = json_array();

	for (unsigned i = 0; i < p->nr_items; i++)
		json_array_append_new(items, plan_item_to_json(&p->items[i]));
	return json_pack("{s:I, s:I, s:i, s:I, s:o}",
			 "seq", (json_int_t)p->seq,
			 "mono_ns", (json_int_t)p->mono_ns,
			 "nr_moves", (int)p->nr_moves,
			 "migrate_bytes", (json_int_t)p->migrate_bytes,
			 "items", items);
}

/* plan.c — plan names, JSON, and freeing. */
#include "plan.h"

#include <stdlib.h>

#include "snapjson.h"

void plan_free(struct plan *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->nr_items; i++)
		free(p->items[i].to_cpus);
	free(p->items);
	free(p);
}

bool plan_migration_negligible(uint64_t migrate_bytes, uint64_t total)
{
	return migrate_bytes < (2ULL << 20) || migrate_bytes < total / 100;
}

const char *plan_kind_name(enum plan_kind k)
{
	switch (k) {
	case PLAN_MOVE: return "move";
	case PLAN_SKIP: return "skip";
	case PLAN_SETTLED: return "settled";
	}
	return "unknown";
}

const char *move_reason_name(enum move_reason r)
{
	switch (r) {
	case REASON_NONE: return "none";
	case REASON_CONSOLIDATE: return "consolidate";
	case REASON_LOCALITY: return "locality";
	case REASON_LOAD: return "load";
	case REASON_PINNED: return "pinned";
	case REASON_PLACE: return "place";
	}
	return "unknown";
}

const char *skip_reason_name(enum skip_reason r)
{
	switch (r) {
	case SKIP_NONE: return "none";
	case SKIP_IGNORED: return "ignored";
	case SKIP_ONE_NODE: return "one_node";
	case SKIP_NO_USAGE: return "no_usage";
	case SKIP_COOLDOWN: return "cooldown";
	case SKIP_NO_FIT: return "no_fit";
	case SKIP_NOT_LESS_BUSY: return "not_less_busy";
	case SKIP_MAX_MOVES: return "max_moves";
	case SKIP_MAX_MIGRATE: return "max_migrate";
	case SKIP_NO_ROOM_PINNED: return "no_room_pinned";
	case SKIP_OUTSIDE_ALLOWED: return "outside_allowed";
	case SKIP_IN_SET: return "in_set";
	}
	return "unknown";
}

json_t *plan_item_to_json(const struct plan_item *it)
{
	json_t *o = json_object();

	json_object_set_new(o, "guest", json_string(it->guest_id));
	json_object_set_new(o, "kind", json_string(plan_kind_name(it->kind)));
	json_object_set_new(o, "reason", json_string(move_reason_name(it->reason)));
	json_object_set_new(o, "skip", json_string(skip_reason_name(it->skip)));
	json_object_set_new(o, "from_nodes", json_nodemask(&it->from_nodes));
	json_object_set_new(o, "from_mems", json_nodemask(&it->from_mems));
	json_object_set_new(o, "to_nodes", json_nodemask(&it->to_nodes));
	json_object_set_new(o, "to_mems", json_nodemask(&it->to_mems));
	json_object_set_new(o, "to_cpus", it->to_cpus ? json_cpumask(it->to_cpus) : json_null());
	json_object_set_new(o, "cpu_demand", json_real_or_null(it->cpu_demand));
	json_object_set_new(o, "mem_demand_bytes", json_integer((json_int_t)it->mem_demand));
	json_object_set_new(o, "load_before", json_real_or_null(it->load_before));
	json_object_set_new(o, "load_after", json_real_or_null(it->load_after));
	json_object_set_new(o, "migrate_bytes", json_integer((json_int_t)it->migrate_bytes));
	json_object_set_new(o, "locality_before", json_real_or_null(it->locality_before));
	json_object_set_new(o, "gain", json_real_or_null(it->gain));
	if (it->crowded)
		json_object_set_new(o, "crowded", json_true());
	if (it->local_fit)
		json_object_set_new(o, "local_fit", json_true());
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

/* place.c — policy_place(): where a guest that just started goes (the
 * choice; the engine applies it and records the outcome). Pure. */
#include "policies.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Memory nodes for CPU nodes NODES: those with memory, else the one with
 * memory nearest to them. */
static void place_mems(const struct snapshot *snap, const nodemask_t *nodes, nodemask_t *out)
{
	unsigned best = ~0u;
	int near = -1;

	mask_zero(out);
	for (unsigned n = 0; n < snap->nr_nodes; n++)
		if (mask_test(nodes, snap->nodes[n].id) && snap->nodes[n].mem_total)
			mask_set(out, snap->nodes[n].id);
	if (!mask_empty(out))
		return;
	for (unsigned n = 0; n < snap->nr_nodes; n++) {
		unsigned d;
		int m;

		if (!mask_test(nodes, snap->nodes[n].id))
			continue;
		m = snap_nearest_mem_node(snap, n, &d);
		if (m >= 0 && d < best) {
			best = d;
			near = m;
		}
	}
	if (near >= 0)
		mask_set(out, near);
}

/* A reservation holds CPU nodes and memory nodes in one mask (a guest
 * on a memory-less node has its memory elsewhere), so which of RNODES
 * are CPU nodes is asked again of the same advice, with the reservation
 * itself already given back: its answer is what was promised unless the
 * load changed. If it now lies outside RNODES, the CPU nodes are RNODES
 * without the memory nodes that only serve memory-less ones among them. */
static void place_reserved(const struct policy_config *cfg, const struct snapshot *snap,
			   const struct place_request *req, const nodemask_t *rnodes, nodemask_t *nodes,
			   nodemask_t *mems)
{
	struct advice_request areq = { .cpus = req->cpus, .mem_bytes = req->mem_bytes,
				       .nr_reservations = req->nr_reservations,
				       .reservations = req->reservations };
	struct advice adv = { .ok = false };
	nodemask_t cpu_nodes, memonly;

	if (policy_advise(cfg, snap, &areq, &adv) == 0 && adv.ok &&
	    mask_subset(&adv.nodes, rnodes) && mask_subset(&adv.mems, rnodes)) {
		*nodes = adv.nodes;
		*mems = adv.mems;
		return;
	}
	mask_zero(&cpu_nodes);
	mask_zero(&memonly);
	for (unsigned n = 0; n < snap->nr_nodes; n++)
		if (mask_test(rnodes, snap->nodes[n].id) && snap->nodes[n].nr_cpus)
			mask_set(&cpu_nodes, snap->nodes[n].id);
	for (unsigned n = 0; n < snap->nr_nodes; n++) {
		int m;

		if (!mask_test(&cpu_nodes, snap->nodes[n].id) || snap->nodes[n].mem_total)
			continue;
		m = snap_nearest_mem_node(snap, n, NULL);
		if (m >= 0)
			mask_set(&memonly, m);
	}
	mask_andnot(nodes, &cpu_nodes, &memonly);
	if (mask_empty(nodes))
		*nodes = cpu_nodes;
	place_mems(snap, rnodes, mems);
}

int policy_place(const struct policy_config *cfg, const struct snapshot *snap,
		 const struct place_request *req, struct place_result *out)
{
	const struct snap_guest *g = snap_find_guest(snap, req->guest_id);
	struct plan_item *it = &out->item;
	nodemask_t nodes, mems;
	char nl[NODELIST_BUFSZ];

	if (!g)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	plan_item_init(it, snap, (unsigned)(g - snap->guests), PLAN_MOVE);
	it->reason = REASON_PLACE;
	it->cpu_demand = req->cpus;
	it->mem_demand = req->mem_bytes;

	if (g->policy.mode == GPOL_IGNORE) {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_IGNORED;
		snprintf(it->detail, sizeof(it->detail), "started; its policy says ignore: not placed");
		return 0;
	}
	if (req->reserved) {
		bool exact = !mask_empty(&req->reserved_cpu_nodes) && !mask_empty(&req->reserved_mems);

		if (exact) {
			/* Exactly where the advice that made the reservation put it. */
			nodes = req->reserved_cpu_nodes;
			mems = req->reserved_mems;
		}
		mask_format(exact ? &nodes : &req->reserved_nodes, nl, sizeof(nl));
		snprintf(it->detail, sizeof(it->detail), "started; placed on nodes %.40s reserved for it (reservation %llu, "
			 "label \"%.60s\")", nl, (unsigned long long)req->reserved_id,
			 req->reserved_label ? req->reserved_label : "");
		out->used_reservation = true;
		if (!exact)
			place_reserved(cfg, snap, req, &req->reserved_nodes, &nodes, &mems);
	} else if (g->policy.mode == GPOL_PINNED) {
		nodes = g->policy.nodes;
		mask_format(&nodes, nl, sizeof(nl));
		snprintf(it->detail, sizeof(it->detail), "started; pinned to nodes %.40s by its %s policy", nl,
			 g->policy.source == GPOL_SRC_API ? "API" : "metadata");
		place_mems(snap, &nodes, &mems);
	} else {
		struct advice_request areq = { .cpus = req->cpus, .mem_bytes = req->mem_bytes,
					       .nr_reservations = req->nr_reservations,
					       .reservations = req->reservations };
		struct advice adv = { .ok = false };

		if (policy_advise(cfg, snap, &areq, &adv) < 0 || !adv.ok) {
			it->kind = PLAN_SKIP;
			it->skip = SKIP_NO_FIT;
			snprintf(it->detail, sizeof(it->detail), "started; not placed: %.160s",
				 adv.detail[0] ? adv.detail : "bad request");
			return 0;
		}
		nodes = adv.nodes;
		mems = adv.mems;
		it->load_after = adv.load_after;
		snprintf(it->detail, sizeof(it->detail), "started; initial placement: %.160s", adv.detail);
	}
	snap_nodes_to_cpus(snap, &nodes, &out->cpus);
	if (!mask_empty(g->allowed_cpus))
		mask_and(&out->cpus, &out->cpus, g->allowed_cpus);
	if (mask_empty(&out->cpus) || mask_empty(&mems)) {
		size_t l = strlen(it->detail);

		it->kind = PLAN_SKIP;
		it->skip = SKIP_OUTSIDE_ALLOWED;
		snprintf(it->detail + l, sizeof(it->detail) - l, "; no usable CPUs or memory there");
		return 0;
	}
	snap_cpus_to_nodes(snap, &out->cpus, &it->to_nodes);
	it->to_mems = mems;
	it->to_cpus = &out->cpus;
	for (unsigned n = 0; n < snap->nr_nodes; n++)
		if (!mask_test(&mems, snap->nodes[n].id))
			it->migrate_bytes += g->mem_node[n];
	return 0;
}

/* place.c — start placement: where a guest that just started goes, for
 * both kinds of guest, inside the policy's one decide. Pure: the engine
 * applies the result as every move of the plan.
 *
 *   a VM the VM source saw start (an input of the decide,
 *     plan_holds.starting; place_starts, policy_place): the reservation
 *     made for it (found by the engine by label), else its pinned nodes,
 *     else the advice (its vCPUs named as its busy threads), the other
 *     reservations counted as load; its item
 *     replaces the one decided for it, and it starts a cool-down;
 *   a container seen for the first time with little memory
 *     (place_start_placeable): decided inside policy_decide on a stand-in
 *     that uses one CPU and holds no memory (consolidate.c:
 *     evaluate_start), then made a start placement (place_start_item):
 *     no cool-down, and with [policy] start_bind_mems its mems bound to
 *     the target until its memory stops growing (the engine releases
 *     them).
 *
 * Its devices steer every branch (devpref.h): the advice weighs them
 * (a VM's from its domain XML, in the snapshot when it starts); under
 * devices = require a reservation or a pin holding none of their nodes
 * is not applied — the guest is skipped, the record saying why — and
 * the advice offers only sets holding one.
 *
 * Either way the result is a PLAN_MOVE with reason "place" whose
 * migrate_bytes is what the guest already holds off its target
 * (place_finish), or a PLAN_SKIP saying why not.
 *
 * Why a container is placed at once: seen with little memory yet (under
 * PLACE_START_MAX_BYTES: its first second or so of touching, as a
 * prompted cycle may wait a second) it has no CPU use to decide on, but
 * placing it now costs little migration, while waiting a cycle lets it
 * first-touch its memory wherever its threads or its own memory policy
 * put it — memory that must then be migrated while the guest is busy
 * (test_table: "start placement: a new container with nothing touched
 * goes to an idle node at once"). So it is placed as if it used one CPU (a
 * starting process runs one thread), without a cool-down: the next cycle
 * decides on its measured use as for any guest (plan_item.start). Its
 * CPUs move, and the kernel's local first touch puts what it touches from
 * then on beside them; bound (plan_item.bind_start), its first touches
 * land there even against its own memory policy. */
#include "policies.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devpref.h"
#include "../orchestrator/base/xalloc.h"

static void set_detail(struct plan_item *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* (vsnprintf: the detail is cut where it must be, as every detail is) */
static void set_detail(struct plan_item *it, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(it->detail, sizeof(it->detail), fmt, ap);
	va_end(ap);
}

/* What G holds off the nodes IT's memory goes to must move (for a
 * container's stand-in, which weighed none of it: a few MiB are no reason
 * to stay). The reason of every start placement. */
static void place_finish(const struct snapshot *snap, const struct snap_guest *g, struct plan_item *it)
{
	it->reason = REASON_PLACE;
	it->migrate_bytes = 0;
	for (unsigned n = 0; n < snap->nr_nodes; n++)
		if (!mask_test(&it->to_mems, snap->nodes[n].id))
			it->migrate_bytes += g->mem_node[n];
}

bool place_start_placeable(const struct snap_guest *g, struct snap_guest *sg)
{
	/* First sight either way: no usage at all, or only its process's
	 * average since it started (seen a second or more after its start).
	 * Moved as an old guest, mems not bound, a container that first
	 * touched memory on a full node would keep touching there and have
	 * its memory chase it (test_table: "start placement: first seen a
	 * second late, its young process's average use known"). */
	if (g->kind != GUEST_CONTAINER || g->policy.mode != GPOL_AUTO || (!isnan(g->cpu_use) && !g->first_sight) ||
	    g->mem_total >= PLACE_START_MAX_BYTES)
		return false;
	*sg = *g;
	sg->cpu_use = PLACE_START_CPU;
	sg->cpu_node = NULL;
	sg->busy_threads = 1;
	sg->busy_measured = false;
	sg->mem_total = 0;
	sg->huge_node = NULL;
	sg->huge_total = 0;
	return true;
}

void place_start_item(const struct policy_config *cfg, const struct snapshot *snap, const struct snap_guest *g,
		      struct plan_item *it)
{
	char det[sizeof(it->detail)];

	it->start = true;
	it->bind_start = cfg->start_bind_mems;
	place_finish(snap, g, it);
	snprintf(det, sizeof(det), "%s", it->detail);
	set_detail(it, "start: %llu MiB touched, CPU use not measured yet (taken as %.0f "
		 "CPU), %s; %s", (unsigned long long)(g->mem_total >> 20), PLACE_START_CPU,
		 it->bind_start ? "mems bound to the target until its memory stops growing"
				: "its first touches left to the kernel's local placement", det);
}

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
			   const struct snap_guest *g, const struct place_request *req, const nodemask_t *rnodes,
			   nodemask_t *nodes, nodemask_t *mems)
{
	struct advice_request areq = { .cpus = req->cpus, .mem_bytes = req->mem_bytes,
				       .nr_reservations = req->nr_reservations,
				       .reservations = req->reservations, .nr_devices = g->nr_devices,
				       .dev_nodes = g->dev_nodes, .devices = g->policy.devices,
				       .busy_threads = req->busy_threads };
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

/* The reservations of RES[NRES] a start counts as load: all but those
 * USED and its own ROOM. */
static unsigned others_of(const struct advice_reservation *res, unsigned nres, const bool *used, int room,
			  struct advice_reservation *out)
{
	unsigned k = 0;

	for (unsigned i = 0; i < nres; i++)
		if (!used[i] && (int)i != room)
			out[k++] = res[i];
	return k;
}

void place_starts(const struct policy_config *cfg, const struct snapshot *snap, const struct plan_holds *h,
		  const struct advice_reservation *res, unsigned nres, bool *used, struct plan_item **items,
		  unsigned *n)
{
	struct advice_reservation *others = xcalloc(nres ? nres : 1, sizeof(*others));

	*items = xcalloc(h && h->nstarting ? h->nstarting : 1, sizeof(**items));
	*n = 0;
	for (unsigned i = 0; h && i < h->nstarting; i++) {
		const struct start_vm *s = &h->starting[i];
		bool mine = s->room >= 0 && (unsigned)s->room < nres && !used[s->room];
		struct place_request req = {
			.guest_id = s->id, .cpus = s->cpus, .busy_threads = s->busy_threads,
			.mem_bytes = s->mem_bytes, .reserved = mine,
			.reserved_id = s->resv_id, .reserved_label = s->resv_label, .reserved_nodes = s->resv_nodes,
			.reserved_cpu_nodes = s->resv_cpu_nodes, .reserved_mems = s->resv_mems,
			.reservations = others,
		};
		struct place_result pr;
		struct plan_item *it = &(*items)[*n];

		req.nr_reservations = others_of(res, nres, used, mine ? s->room : -1, others);
		if (policy_place(cfg, snap, &req, &pr) < 0)
			continue;
		*it = pr.item;
		it->to_cpus = NULL;
		if (it->kind == PLAN_MOVE) {
			it->to_cpus = xmalloc(sizeof(*it->to_cpus));
			*it->to_cpus = pr.cpus;
		}
		it->vm_start = true;
		if (pr.used_reservation) {
			it->resv_used = s->resv_id;
			used[s->room] = true;
		}
		(*n)++;
	}
	free(others);
}

void place_starts_splice(struct plan *p, struct plan_item *items, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned k;

		for (k = 0; k < p->nr_items; k++)
			if (strcmp(p->items[k].guest_id, items[i].guest_id) == 0)
				break;
		if (k == p->nr_items) {
			p->items = xrealloc(p->items, (p->nr_items + 1) * sizeof(*p->items));
			p->nr_items++;
		} else {
			free(p->items[k].to_cpus);
			free(p->items[k].parts);
		}
		p->items[k] = items[i];
	}
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
			place_reserved(cfg, snap, g, req, &req->reserved_nodes, &nodes, &mems);
	} else if (g->policy.mode == GPOL_PINNED) {
		nodes = g->policy.nodes;
		mask_format(&nodes, nl, sizeof(nl));
		snprintf(it->detail, sizeof(it->detail), "started; pinned to nodes %.40s by its %s policy", nl,
			 g->policy.source == GPOL_SRC_API ? "API" : "metadata");
		place_mems(snap, &nodes, &mems);
	} else {
		struct advice_request areq = { .cpus = req->cpus, .mem_bytes = req->mem_bytes,
					       .nr_reservations = req->nr_reservations,
					       .reservations = req->reservations, .nr_devices = g->nr_devices,
					       .dev_nodes = g->dev_nodes, .devices = g->policy.devices,
					       .busy_threads = req->busy_threads };
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
	if (dev_refused(g, &nodes)) {
		char dn[48], why[sizeof(it->detail)];

		/* A reservation or a pin is an order too: the two orders
		 * disagree, and the operator says which goes. */
		fmt_nodes(&g->dev_nodes, dn, sizeof(dn));
		mask_format(&nodes, nl, sizeof(nl));
		snprintf(why, sizeof(why), "%s", it->detail);
		it->kind = PLAN_SKIP;
		it->skip = SKIP_NO_FIT;
		out->used_reservation = false;
		set_detail(it, "devices = require: nodes %.40s hold not its device's node %s, not placed (%.120s)", nl, dn,
			   why);
		return 0;
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
	place_finish(snap, g, it);
	/* The advice's words already say it. */
	if (req->reserved || g->policy.mode == GPOL_PINNED) {
		char note[96];
		size_t l = strlen(it->detail);

		dev_note(g, &it->to_nodes, note, sizeof(note));
		snprintf(it->detail + l, sizeof(it->detail) - l, "%s", note);
	}
	return 0;
}

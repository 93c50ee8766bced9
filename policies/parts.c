#include "parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"

/* CPUs a part's threads need on one node: a whole one per busy thread,
 * at least its use. */
static double part_need(const struct snap_part *p)
{
	return fmax((double)p->busy_threads, p->cpu_use > 0.0 ? p->cpu_use : 0.0);
}

static bool part_measured(const struct snap_part *p)
{
	return p->mem_node && p->cpu_node && p->cpu_use > 0.0;
}

/* Parts in order of CPU use, biggest first (ties: index). */
struct porder {
	unsigned i;
	double use;
};

static int porder_cmp(const void *a, const void *b)
{
	const struct porder *x = a, *y = b;

	if (x->use != y->use)
		return x->use > y->use ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* The node index among CAND (NC entries: node indexes) that part P goes
 * to, or -1: the most of its memory, then where its threads ran most
 * (a tie does not send it off the node it runs on), then the least CPU
 * given so far, then the least busy. */
static int pick_node(const struct snapshot *s, const struct snap_part *p, const unsigned *cand, unsigned nc,
		     const double *left, const double *given, const uint64_t *in, double need)
{
	int best = -1;

	for (unsigned c = 0; c < nc; c++) {
		unsigned k = cand[c];
		uint64_t bring = p->mem_total - p->mem_node[k];

		/* A quarter of a CPU of slack: a part's use is the guest's
		 * counter shared out by its threads' ticks, which reads a little
		 * over what its busy threads can use. */
		if (left[k] + SNAP_BUSY_THREAD_CPU < need || in[k] + bring > s->nodes[k].mem_free)
			continue;
		if (best < 0 || p->mem_node[k] > p->mem_node[best])
			best = (int)k;
		else if (p->mem_node[k] == p->mem_node[best] &&
			 (p->cpu_node[k] > p->cpu_node[best] ||
			  (p->cpu_node[k] == p->cpu_node[best] &&
			   (given[k] < given[best] ||
			    (given[k] == given[best] && s->nodes[k].busy < s->nodes[best].busy)))))
			best = (int)k;
	}
	return best;
}

/* Bytes of MEM ([nr_nodes]) on nodes outside TO. */
static uint64_t outside(const struct snapshot *s, const uint64_t *mem, const nodemask_t *to)
{
	uint64_t b = 0;

	for (unsigned k = 0; k < s->nr_nodes; k++)
		if (!mask_test(to, s->nodes[k].id))
			b += mem[k];
	return b;
}

static uint64_t split_migrate(const struct snapshot *s, const struct snap_guest *g, const nodemask_t *mems,
			      const struct plan_part *out)
{
	uint64_t *rest = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(*rest)), b = 0;

	for (unsigned k = 0; k < s->nr_nodes; k++)
		rest[k] = g->mem_node[k];
	for (unsigned i = 0; i < g->nr_parts; i++) {
		const struct snap_part *p = &g->parts[i];

		if (!p->mem_node)
			continue;
		b += outside(s, p->mem_node, &out[i].mems);
		for (unsigned k = 0; k < s->nr_nodes; k++)
			rest[k] -= rest[k] < p->mem_node[k] ? rest[k] : p->mem_node[k];
	}
	b += outside(s, rest, mems);
	free(rest);
	return b;
}

unsigned parts_split(const struct snapshot *s, const struct snap_guest *g, const nodemask_t *nodes,
		     const nodemask_t *mems, const cpumask_t *cpus, struct plan_part *out, uint64_t *migrate)
{
	unsigned nc = 0, own = 0;
	unsigned *cand;
	double *left, *given;
	uint64_t *in;
	struct porder *ord;

	if (!g->nr_parts || mask_count(nodes) < 2)
		return 0;
	cand = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(*cand));
	left = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(*left));
	given = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(*given));
	in = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(*in));
	for (unsigned k = 0; k < s->nr_nodes; k++) {
		cpumask_t on;

		if (!s->nodes[k].nr_cpus || !mask_test(nodes, s->nodes[k].id) || !mask_test(mems, s->nodes[k].id))
			continue;
		mask_and(&on, &s->nodes[k].cpus, cpus);
		left[k] = (double)mask_count(&on);
		if (left[k] > 0.0)
			cand[nc++] = k;
	}
	ord = xcalloc(g->nr_parts, sizeof(*ord));
	for (unsigned i = 0; i < g->nr_parts; i++) {
		ord[i].i = i;
		ord[i].use = g->parts[i].cpu_use;
		out[i].part = i;
		out[i].nodes = *nodes;
		out[i].mems = *mems;
	}
	qsort(ord, g->nr_parts, sizeof(*ord), porder_cmp);
	for (unsigned o = 0; o < g->nr_parts && nc >= 2; o++) {
		const struct snap_part *p = &g->parts[ord[o].i];
		double need = part_need(p);
		int k;

		if (!part_measured(p))
			continue;
		k = pick_node(s, p, cand, nc, left, given, in, need);
		if (k < 0)
			continue;
		left[k] -= need;
		given[k] += need;
		in[k] += p->mem_total - p->mem_node[k];
		mask_zero(&out[ord[o].i].nodes);
		mask_set(&out[ord[o].i].nodes, s->nodes[k].id);
		out[ord[o].i].mems = out[ord[o].i].nodes;
		own++;
	}
	if (own && migrate)
		*migrate = split_migrate(s, g, mems, out);
	free(ord);
	free(in);
	free(given);
	free(left);
	free(cand);
	return own;
}

/* A part's share of its memory on the nodes its threads ran on. */
static double part_local(const struct snapshot *s, const struct snap_part *p)
{
	double loc = 0.0, sum = 0.0;

	for (unsigned k = 0; k < s->nr_nodes; k++) {
		if (!(p->cpu_node[k] > 0.0))
			continue;
		sum += p->cpu_node[k];
		loc += p->cpu_node[k] * (double)p->mem_node[k];
	}
	return sum > 0.0 && p->mem_total ? loc / sum / (double)p->mem_total : 1.0;
}

bool parts_misplaced(const struct snapshot *s, const struct snap_guest *g, const struct plan_part *split,
		     unsigned n, double locality_target)
{
	for (unsigned i = 0; i < n && i < g->nr_parts; i++) {
		const struct snap_part *p = &g->parts[split[i].part];

		if (!part_measured(p) || mask_count(&split[i].nodes) != 1)
			continue;
		if (part_local(s, p) < locality_target)
			return true;
	}
	return false;
}

/* "; containers: <name> to node N, ..." after IT's detail: the last
 * part of each part's cgroup path, shortened. */
static void parts_detail(const struct snap_guest *g, struct plan_item *it)
{
	size_t len = strlen(it->detail);
	const char *sep = "; containers: ";

	for (unsigned i = 0; i < it->nr_parts && len < sizeof(it->detail); i++) {
		const char *c = g->parts[it->parts[i].part].cgroup, *base = strrchr(c, '/');
		char nodes[48];
		int w;

		if (mask_count(&it->parts[i].nodes) != 1)
			continue;
		if (mask_format(&it->parts[i].nodes, nodes, sizeof(nodes)) < 0)
			snprintf(nodes, sizeof(nodes), "?");
		base = base ? base + 1 : c;
		w = snprintf(it->detail + len, sizeof(it->detail) - len, "%s%.24s to node %s", sep, base, nodes);
		if (w < 0)
			break;
		len += (size_t)w;
		sep = ", ";
	}
	if (len < sizeof(it->detail))
		snprintf(it->detail + len, sizeof(it->detail) - len, " (%llu MiB to move for that)",
			 (unsigned long long)(it->migrate_bytes >> 20));
}

void parts_plan(const struct snapshot *s, struct plan *p, uint64_t max_migrate)
{
	for (unsigned i = 0; i < p->nr_items; i++) {
		struct plan_item *it = &p->items[i];
		const struct snap_guest *g;
		struct plan_part *pp;
		uint64_t mig = 0;

		if (it->kind != PLAN_MOVE || it->split || !it->to_cpus || it->parts || it->guest_idx >= s->nr_guests)
			continue;
		g = &s->guests[it->guest_idx];
		if (!g->nr_parts || mask_count(&it->to_nodes) < 2)
			continue;
		pp = xcalloc(g->nr_parts, sizeof(*pp));
		if (!parts_split(s, g, &it->to_nodes, &it->to_mems, it->to_cpus, pp, &mig)) {
			free(pp);
			continue;
		}
		/* The cycle's budget admitted the pod's move as decided: a split
		 * that would take it past the budget waits for a cycle with room
		 * (the pod's move, already within it, goes ahead unsplit). */
		if (mig > it->migrate_bytes && p->migrate_bytes - it->migrate_bytes + mig > max_migrate) {
			size_t len = strlen(it->detail);

			free(pp);
			if (len < sizeof(it->detail))
				snprintf(it->detail + len, sizeof(it->detail) - len,
					 "; its containers not given nodes of their own: %llu MiB more would pass the "
					 "cycle's %llu MiB migration budget", (unsigned long long)((mig - it->migrate_bytes) >> 20),
					 (unsigned long long)(max_migrate >> 20));
			continue;
		}
		it->parts = pp;
		it->nr_parts = g->nr_parts;
		p->migrate_bytes = p->migrate_bytes - it->migrate_bytes + mig;
		it->migrate_bytes = mig;
		parts_detail(g, it);
	}
}

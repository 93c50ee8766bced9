/* kflow.c — the kernel's flow of each guest's memory between two
 * snapshots, and the verdict on it (kflow.h). */
#include "orchestrator/model/kflow.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"
#include "orchestrator/model/hold.h"
#include "orchestrator/model/kbal.h"
#include "orchestrator/model/plan.h"

/* G's flow from P (the same guest in PREV, nodes alike), or NULL when
 * either read of its memory is no measurement. */
static struct snap_kflow *guest_flow(const struct snapshot *cur, const struct snap_guest *g,
				     const struct snap_guest *p, double window_s)
{
	struct snap_kflow *f;

	if (g->mem_unknown || p->mem_unknown || !g->mem_node || !p->mem_node)
		return NULL;
	f = xcalloc(1, sizeof(*f));
	f->window_s = window_s;
	f->delta = xcalloc(cur->nr_nodes ? cur->nr_nodes : 1, sizeof(int64_t));
	for (unsigned n = 0; n < cur->nr_nodes; n++) {
		int64_t d = (int64_t)g->mem_node[n] - (int64_t)p->mem_node[n];

		f->delta[n] = d;
		if (d > 0)
			f->arrived += (uint64_t)d;
		else
			f->left += (uint64_t)-d;
	}
	f->moved = f->arrived < f->left ? f->arrived : f->left;
	return f;
}

/* The two snapshots number their nodes alike (the same ids in the same
 * order): a node gone or come between them makes every guest's delta
 * meaningless. */
static bool same_nodes(const struct snapshot *a, const struct snapshot *b)
{
	if (a->nr_nodes != b->nr_nodes)
		return false;
	for (unsigned n = 0; n < a->nr_nodes; n++)
		if (a->nodes[n].id != b->nodes[n].id)
			return false;
	return true;
}

void kflow_fill(struct snapshot *cur, const struct snapshot *prev, kflow_ours_fn ours, void *ctx)
{
	double window_s;

	if (!prev || prev->mono_ns >= cur->mono_ns)
		return;
	window_s = (double)(cur->mono_ns - prev->mono_ns) / 1e9;
	if (cur->vmstat_read && prev->vmstat_read && cur->numa_pages_migrated >= prev->numa_pages_migrated)
		cur->kernel_migrated_pps = (double)(cur->numa_pages_migrated - prev->numa_pages_migrated) / window_s;
	if (!same_nodes(cur, prev))
		return;
	for (unsigned i = 0; i < cur->nr_guests; i++) {
		struct snap_guest *g = &cur->guests[i];
		const struct snap_guest *p = snap_find_guest(prev, g->id);

		if (g->kflow) {
			free(g->kflow->delta);
			free(g->kflow);
			g->kflow = NULL;
		}
		/* Another instance under the same id (a container restarted
		 * in a new cgroup) is another guest. */
		if (!p || !p->cgroup != !g->cgroup || (p->cgroup && strcmp(p->cgroup, g->cgroup) != 0))
			continue;
		/* A job of the agent's running at either end: its pages are
		 * in the delta. */
		if (g->job.id || p->job.id)
			continue;
		if (ours && ours(ctx, g->id, prev->mono_ns, cur->mono_ns))
			continue;
		g->kflow = guest_flow(cur, g, p, window_s);
	}
}

void kflow_thread_nodes(const struct snapshot *s, const struct snap_guest *g, nodemask_t *out)
{
	mask_zero(out);
	if (g->cpu_node) {
		for (unsigned n = 0; n < s->nr_nodes; n++)
			if (g->cpu_node[n] >= SNAP_BUSY_THREAD_CPU)
				mask_set(out, s->nodes[n].id);
		if (!mask_empty(out))
			return;
	}
	*out = g->cpu_nodes;
}

/* T's nodes with memory: each memory-less node of T stands for the
 * nearest node with memory, where its threads' memory goes. */
static void memory_nodes(const struct snapshot *s, const nodemask_t *t, nodemask_t *out)
{
	mask_zero(out);
	mask_foreach(id, t) {
		int n = snap_node_index(s, id), m;

		if (n < 0)
			continue;
		m = s->nodes[n].mem_total ? id : snap_nearest_mem_node(s, (unsigned)n, NULL);
		if (m >= 0)
			mask_set(out, m);
	}
}

void kflow_judge(const struct snapshot *s, const struct snap_guest *g, double follow_s, struct kflow_judgement *out)
{
	const struct snap_kflow *f = g->kflow;
	uint64_t onto = 0, off = 0, toward, best = 0;
	nodemask_t t, tm;

	*out = (struct kflow_judgement){ .verdict = KFLOW_ABSENT, .to_node = -1 };
	if (!f || !kbal_kernel_moves(s->numa_balancing) || g->mem_unknown || !(f->window_s > 0))
		return;
	kflow_thread_nodes(s, g, &t);
	memory_nodes(s, &t, &tm);
	if (mask_empty(&tm))
		return;
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		bool in = mask_test(&tm, s->nodes[n].id);

		if (!in)
			out->remote_bytes += g->mem_node[n];
		if (in && f->delta[n] > 0) {
			onto += (uint64_t)f->delta[n];
			if ((uint64_t)f->delta[n] > best) {
				best = (uint64_t)f->delta[n];
				out->to_node = s->nodes[n].id;
			}
		} else if (!in && f->delta[n] < 0) {
			off += (uint64_t)-f->delta[n];
		}
	}
	/* Local already: nothing for anyone to move. */
	if (plan_migration_negligible(out->remote_bytes, g->mem_total)) {
		out->to_node = -1;
		return;
	}
	/* Growth on its threads' nodes is no migration: only what came
	 * onto them while as much left the others counts. */
	toward = onto < off ? onto : off;
	out->rate_bps = (double)toward / f->window_s;
	if (toward >= KFLOW_FLOOR_BYTES)
		out->verdict = (double)out->remote_bytes <= out->rate_bps * follow_s ? KFLOW_FOLLOWS : KFLOW_SLOW;
	else if (!isnan(g->cpu_use) && g->cpu_use >= KBAL_BUSY_CPUS)
		out->verdict = KFLOW_STILL;
	if (out->verdict != KFLOW_FOLLOWS && out->verdict != KFLOW_SLOW)
		out->to_node = -1;
}

int kflow_filling(const struct snapshot *s, const struct snap_guest *g)
{
	const struct snap_kflow *f = g->kflow;
	int64_t best = (int64_t)KFLOW_FLOOR_BYTES - 1;
	int node = -1;

	if (!f || !kbal_kernel_moves(s->numa_balancing) || f->moved < KFLOW_FLOOR_BYTES)
		return -1;
	for (unsigned n = 0; n < s->nr_nodes; n++)
		if (f->delta[n] > best) {
			best = f->delta[n];
			node = s->nodes[n].id;
		}
	return node;
}

/* The kernel's hold on IT of SNAP, its detail written. */
static enum plan_hold item_hold(struct plan_item *it, const struct snapshot *snap, double follow_s)
{
	const struct snap_guest *g = &snap->guests[it->guest_idx];
	struct kflow_judgement j;
	char to[64];
	int fill;

	if (it->kind != PLAN_MOVE || it->start || it->bind_start || g->policy.mode == GPOL_PINNED)
		return HOLD_NONE;
	kflow_judge(snap, g, follow_s, &j);
	if (j.verdict == KFLOW_FOLLOWS) {
		snprintf(it->detail, sizeof(it->detail),
			 "kernel moving %.1f MiB/s to node %d, left to it: %.1f MiB still off its threads' nodes, "
			 "done in about %.0f s (bound %.0f s)", j.rate_bps / 1048576.0, j.to_node,
			 (double)j.remote_bytes / 1048576.0, (double)j.remote_bytes / j.rate_bps, follow_s);
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

void kflow_mark_holds(struct plan *p, const struct snapshot *snap, const struct plan_holds *h)
{
	if (!h || !(h->kernel_follow_s > 0))
		return;
	for (unsigned i = 0; i < p->nr_items; i++) {
		struct plan_item *it = &p->items[i];

		if (it->hold != HOLD_NONE || it->guest_idx >= snap->nr_guests)
			continue;
		it->hold = item_hold(it, snap, h->kernel_follow_s);
	}
}

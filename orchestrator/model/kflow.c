/* kflow.c — the kernel's flow of each guest's memory between two
 * snapshots, and the verdict on it (kflow.h). */
#include "orchestrator/model/kflow.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"
#include "orchestrator/model/kbal.h"

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

bool kflow_fill(struct snapshot *cur, const struct snapshot *prev, kflow_ours_fn ours, void *ctx)
{
	double window_s;

	if (!prev || prev->mono_ns >= cur->mono_ns)
		return true;
	window_s = (double)(cur->mono_ns - prev->mono_ns) / 1e9;
	if (cur->vmstat_read && prev->vmstat_read && cur->numa_pages_migrated >= prev->numa_pages_migrated)
		cur->kernel_migrated_pps = (double)(cur->numa_pages_migrated - prev->numa_pages_migrated) / window_s;
	if (!same_nodes(cur, prev))
		return true;
	cur->flow_window_s = window_s;
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
		if (g->kflow)
			g->kflow->cpus_steady = g->cpus && p->cpus && mask_equal(g->cpus, p->cpus);
	}
	return window_s >= KFLOW_MIN_WINDOW_S;
}

bool kflow_negligible(uint64_t remote, uint64_t total)
{
	return remote < 2 * KFLOW_FLOOR_BYTES || (double)remote < 0.01 * (double)total;
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
	if (kflow_negligible(out->remote_bytes, g->mem_total)) {
		out->to_node = -1;
		return;
	}
	/* Growth on its threads' nodes is no migration: only what came
	 * onto them while as much left the others counts. */
	toward = onto < off ? onto : off;
	out->rate_bps = (double)toward / f->window_s;
	if (toward >= KFLOW_FLOOR_BYTES)
		out->verdict = (double)out->remote_bytes <= out->rate_bps * follow_s ? KFLOW_FOLLOWS : KFLOW_SLOW;
	/* Not moving it needs the whole window with its threads where they
	 * are: CPUs changed in it leave the kernel no time to be judged. */
	else if (!isnan(g->cpu_use) && g->cpu_use >= KBAL_BUSY_CPUS && f->cpus_steady)
		out->verdict = KFLOW_STILL;
	if (out->verdict != KFLOW_FOLLOWS && f->window_s < KFLOW_MIN_WINDOW_S)
		out->verdict = KFLOW_ABSENT;
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

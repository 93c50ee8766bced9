#include "cores.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"

struct coreload {
	unsigned nr;     /* CPU ids covered: snapshot.nr_cpu_ids */
	double *load;    /* [nr] busy CPUs estimated on each */
	/* [nr] by a last-level cache's lowest CPU id: the online cores it
	 * holds (coreload_llcs). */
	unsigned *llc_cores;
};

/* One core of the target node, as cores_choose weighs it. */
struct core {
	int leader;      /* its lowest CPU id (snapshot.cpu_core) */
	int llc;         /* its last-level cache's lowest CPU id, -1 unknown */
	unsigned nr;     /* its CPUs OUT allows */
	int least;       /* its least loaded allowed CPU */
	double load;
};

static int core_of(const struct snapshot *s, int cpu)
{
	return cpu >= 0 && (unsigned)cpu < s->nr_cpu_ids ? s->cpu_core[cpu] : -1;
}

static int llc_of(const struct snapshot *s, int cpu)
{
	return cpu >= 0 && (unsigned)cpu < s->nr_cpu_ids ? s->cpu_llc[cpu] : -1;
}

static bool node_shaped(const struct snap_node *n)
{
	return n->nr_cores && (n->threads_per_core > 1 || n->nr_llcs > 1);
}

/* Spread USE over the CPUs of M that CL covers, with sign SIGN. */
static void spread(struct coreload *cl, const cpumask_t *m, double use, double sign)
{
	unsigned k = 0;

	if (!(use > 0.0))
		return;
	mask_foreach(c, m)
		k += (unsigned)c < cl->nr;
	if (!k)
		return;
	mask_foreach(c, m)
		if ((unsigned)c < cl->nr)
			cl->load[c] += sign * use / k;
}

struct coreload *coreload_new(const struct snapshot *s)
{
	struct coreload *cl;
	bool any = false, *seen;

	for (unsigned i = 0; i < s->nr_nodes; i++)
		any |= node_shaped(&s->nodes[i]);
	if (!any || !s->nr_cpu_ids)
		return NULL;
	cl = xcalloc(1, sizeof(*cl));
	cl->nr = s->nr_cpu_ids;
	cl->load = xcalloc(cl->nr, sizeof(*cl->load));
	cl->llc_cores = xcalloc(cl->nr, sizeof(*cl->llc_cores));
	for (unsigned i = 0; i < s->nr_guests; i++)
		spread(cl, s->guests[i].cpus, s->guests[i].cpu_use, 1.0);
	seen = xcalloc(cl->nr, sizeof(*seen));
	for (unsigned i = 0; i < s->nr_nodes; i++)
		mask_foreach(c, &s->nodes[i].cpus) {
			int core = core_of(s, c), llc = llc_of(s, c);

			if (core < 0 || llc < 0 || (unsigned)core >= cl->nr || (unsigned)llc >= cl->nr || seen[core])
				continue;
			seen[core] = true;
			cl->llc_cores[llc]++;
		}
	free(seen);
	return cl;
}

void coreload_move(struct coreload *cl, const cpumask_t *from, const cpumask_t *to, double use)
{
	if (!cl)
		return;
	spread(cl, from, use, -1.0);
	spread(cl, to, use, 1.0);
}

unsigned coreload_llcs(const struct coreload *cl, const struct snapshot *s, const struct snap_node *n,
		       const cpumask_t *own, double own_use, struct llc_load *out, unsigned max)
{
	unsigned nl = 0, nown = 0;

	if (!cl || !node_shaped(n))
		return 0;
	if (own && own_use > 0.0)
		mask_foreach(c, own)
			nown += (unsigned)c < cl->nr;
	mask_foreach(c, &n->cpus) {
		int l = llc_of(s, c);
		unsigned j = 0;

		if (l < 0 || (unsigned)c >= cl->nr || (unsigned)l >= cl->nr)
			continue;
		while (j < nl && out[j].leader != l)
			j++;
		if (j == nl) {
			if (nl == max)
				continue;
			out[nl++] = (struct llc_load){ .leader = l, .cores = cl->llc_cores[l] };
		}
		out[j].load += cl->load[c] - (nown && mask_test(own, c) ? own_use / nown : 0.0);
	}
	for (unsigned j = 0; j < nl; j++)
		out[j].load = fmax(0.0, out[j].load);
	return nl;
}

void coreload_free(struct coreload *cl)
{
	if (!cl)
		return;
	free(cl->load);
	free(cl->llc_cores);
	free(cl);
}

/* Cores G's threads need: its busy threads, else its use with a
 * fraction over a whole CPU counted as a thread only from the busy
 * threshold on (a one-thread guest reads a little over 1 CPU with its
 * idle helpers), at most its threads; a VM's vCPUs (its own threads
 * that may all run at once); 0: not known. */
static unsigned cores_needed(const struct snap_guest *g)
{
	unsigned need = g->busy_measured ? g->busy_threads : 0;

	if (!g->busy_measured && isfinite(g->cpu_use) && g->cpu_use > 0.0) {
		double u = ceil(g->cpu_use - SNAP_BUSY_THREAD_CPU);

		need = u < 1.0 ? 1 : (unsigned)u;
		if (g->nr_threads && need > g->nr_threads)
			need = g->nr_threads;
	}
	if (g->vm && g->vm->nr_vcpus > need)
		need = g->vm->nr_vcpus;
	return need;
}

/* The cores of node N that OUT allows any CPU of (WHOLE: all their CPUs
 * on N), with their load, into C; returns how many. */
static unsigned collect(const struct coreload *cl, const struct snapshot *s, const struct snap_node *n,
			const cpumask_t *out, bool whole, struct core *c)
{
	unsigned nc = 0;

	mask_foreach(cpu, &n->cpus) {
		int lead = core_of(s, cpu);
		struct core k = { .leader = lead, .llc = llc_of(s, cpu), .least = -1 };
		bool all = true, seen = false;

		for (unsigned j = 0; j < nc; j++)
			seen |= c[j].leader == lead;
		if (seen || lead < 0)
			continue;
		mask_foreach(d, &n->cpus) {
			double ld;

			if (core_of(s, d) != lead)
				continue;
			if (!mask_test(out, d)) {
				all = false;
				continue;
			}
			ld = (unsigned)d < cl->nr ? cl->load[d] : 0.0;
			k.load += ld;
			if (k.least < 0 || ld < cl->load[k.least])
				k.least = d;
			k.nr++;
		}
		if (k.nr && (all || !whole))
			c[nc++] = k;
	}
	return nc;
}

static int core_cmp(const void *a, const void *b)
{
	const struct core *x = a, *y = b;

	if (fabs(x->load - y->load) > 1e-9)
		return x->load < y->load ? -1 : 1;
	return (x->leader > y->leader) - (x->leader < y->leader);
}

/* Sort C[NC] least loaded first and put first the NEED cores of the one
 * last-level cache whose NEED least loaded cores carry the least load
 * (lowest cache on a tie); with no cache holding NEED cores, the NEED
 * least loaded anywhere. Returns the cache, or -1 when they span caches. */
static int pick(struct core *c, unsigned nc, unsigned need)
{
	int best = -1;
	double best_load = 0.0;

	qsort(c, nc, sizeof(*c), core_cmp);
	for (unsigned i = 0; i < nc; i++) {
		unsigned k = 0;
		double ld = 0.0;

		if (c[i].llc < 0 || (best >= 0 && c[i].llc == best))
			continue;
		for (unsigned j = 0; j < nc && k < need; j++)
			if (c[j].llc == c[i].llc) {
				ld += c[j].load;
				k++;
			}
		if (k == need && (best < 0 || ld < best_load - 1e-9 || (fabs(ld - best_load) <= 1e-9 && c[i].llc < best))) {
			best = c[i].llc;
			best_load = ld;
		}
	}
	if (best >= 0) {
		unsigned k = 0;

		/* A stable move of that cache's cores to the front. */
		for (unsigned j = 0; j < nc && k < need; j++)
			if (c[j].llc == best) {
				struct core t = c[j];

				memmove(&c[k + 1], &c[k], (j - k) * sizeof(*c));
				c[k++] = t;
			}
	}
	return best;
}

/* The host-wide number of the cache whose lowest CPU is LEADER: how many
 * caches have a lower one. */
static unsigned llc_number(const struct snapshot *s, int leader)
{
	unsigned k = 0;

	for (unsigned c = 0; c < s->nr_cpu_ids; c++)
		k += s->cpu_llc[c] == (int)c && (int)c < leader;
	return k;
}

void cores_choose(struct coreload *cl, const struct snapshot *s, const struct snap_guest *g,
		  const nodemask_t *nodes, const cpumask_t *from, bool whole_cores, bool containers,
		  cpumask_t *out, char *why, size_t whysz)
{
	const struct snap_node *n = NULL;
	struct core *c = NULL;
	unsigned need, nc, busy;
	int llc, o;

	if (!whysz)
		return;
	why[0] = '\0';
	if (!cl)
		return;
	spread(cl, from, g->cpu_use, -1.0);
	if (mask_count(nodes) == 1) {
		int i = snap_node_index(s, mask_first(nodes->w, MASK_BITS(nodes)));

		n = i >= 0 ? &s->nodes[i] : NULL;
	}
	need = g->vm || containers ? cores_needed(g) : 0;
	if (!n || !node_shaped(n) || !need)
		goto out;
	c = xcalloc(n->nr_cpus ? n->nr_cpus : 1, sizeof(*c));
	nc = collect(cl, s, n, out, whole_cores, c);
	if (need >= nc)
		goto out;
	llc = pick(c, nc, need);
	mask_zero(out);
	for (unsigned j = 0; j < need; j++) {
		if (!whole_cores) {
			mask_set(out, c[j].least);
			continue;
		}
		mask_foreach(d, &n->cpus)
			if (core_of(s, d) == c[j].leader)
				mask_set(out, d);
	}
	busy = g->busy_measured ? g->busy_threads : 0;
	if (g->vm)
		o = snprintf(why, whysz, "%u vCPU%s", need, need == 1 ? "" : "s");
	else if (busy)
		o = snprintf(why, whysz, "%u busy thread%s", busy, busy == 1 ? "" : "s");
	else
		o = snprintf(why, whysz, "%.1f CPUs of use", g->cpu_use);
	if (o >= 0 && (size_t)o < whysz && llc >= 0)
		snprintf(why + o, whysz - (size_t)o, " on %u core%s of LLC %u", need, need == 1 ? "" : "s",
			 llc_number(s, llc));
	else if (o >= 0 && (size_t)o < whysz)
		snprintf(why + o, whysz - (size_t)o, " on %u cores across LLCs", need);
out:
	free(c);
	spread(cl, out, g->cpu_use, 1.0);
}

/* guards.c — the fit checks and candidate node sets, shared by
 * policy_decide() (consolidate.c) and policy_advise() (advise.c).
 *
 * Fit(T) for a guest with CPU demand d and memory demand m:
 *   CPU:    (Σ_{n∈T} max(0, busy_n − own_n) + d) / Σ_{n∈T} cpus_n ≤ max_util,
 *           and d ≤ the CPUs it may be given on T (allowed_cpus);
 *   memory: Σ_{n∈mems(T)} max(0, free_n − reserve_n) + its memory already on
 *           mems(T) ≥ m, or all of its memory is on mems(T) already (all
 *           but a negligible part, plan_migration_negligible, that fits
 *           in what mems(T) have free).
 * Local fit (pcand.local_fit): CPU may instead hold use without headroom,
 *           (Σ max(0, busy_n − own_n) + use) / Σ cpus_n ≤ 1 + LOCAL_FIT_SLACK,
 *           its busy threads ≤ the CPUs it may be given on T and its use ≤
 *           them × (1 + LOCAL_FIT_SLACK), when all (but a negligible part)
 *           of its memory is on mems(T) already — beside the kernel's
 *           balancing, more than half of it (the kernel brings the rest).
 *   huge pages (a hugetlb guest): those not on mems(T) fit the free pages
 *           of their size on mems(T) (the pools, less this cycle's earlier
 *           moves); the memory terms above then count its other memory
 *           only (its demand less its huge pages).
 * reserve_n = min_free, but at most min_free_share of node n (policy_reserve).
 * A node already below its reserve contributes no room rather than negative
 * room: its deficit is not the guest's to pay from other nodes' room.
 * mems(T) = T's nodes with memory that allowed_mems permits; a T made only
 * of memory-less CPU nodes gets the nearest node with memory instead; a T
 * whose memory nodes are all outside allowed_mems is not a candidate.
 */
#include "guards.h"
#include "cores.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/model/kflow.h"

void pctx_init(struct pctx *x, const struct policy_config *cfg, const struct snapshot *s)
{
	unsigned nn = s->nr_nodes;
	size_t n = nn ? nn : 1;

	memset(x, 0, sizeof(*x));
	x->cfg = cfg;
	x->s = s;
	x->follow_s = KFLOW_FOLLOW_S;
	x->nn = nn;
	x->busy = xcalloc(n, sizeof(*x->busy));
	x->busy_base = xcalloc(n, sizeof(*x->busy_base));
	x->fbusy = xcalloc(n, sizeof(*x->fbusy));
	x->fbusy_start = xcalloc(n, sizeof(*x->fbusy_start));
	x->free = xcalloc(n, sizeof(*x->free));
	x->credit = xcalloc(n, sizeof(*x->credit));
	x->keep = xcalloc(n, sizeof(*x->keep));
	x->hfree = xcalloc(n * SNAP_HP_MAX, sizeof(*x->hfree));
	x->wlo = xcalloc(n, sizeof(*x->wlo));
	x->whi = xcalloc(n, sizeof(*x->whi));
	x->idx_of_id = xmalloc(MASK_MAX_NODES * sizeof(*x->idx_of_id));
	x->set = xcalloc(n, sizeof(*x->set));
	x->uni = xcalloc(2 * n, sizeof(*x->uni));
	x->distsum = xcalloc(n, sizeof(*x->distsum));
	x->midx = xcalloc(n, sizeof(*x->midx));
	if (nn && nn <= TFAC_MAX_NODES) {
		x->tfac = xcalloc((size_t)nn * nn, sizeof(*x->tfac));
		for (unsigned a = 0; a < nn; a++)
			for (unsigned b = 0; b < nn; b++) {
				unsigned d = s->distance[a * nn + b];
				unsigned dsum = d > TRAVEL_UNIT_DIST ? d : (unsigned)TRAVEL_UNIT_DIST;

				/* travel_of's expression for one memory node (nm 1) */
				x->tfac[a * nn + b] = (double)dsum / (double)1u / TRAVEL_UNIT_DIST;
			}
	}
	x->inset = xcalloc(n, sizeof(*x->inset));
	x->univ = xcalloc(n, sizeof(*x->univ));
	x->own = xcalloc(n, sizeof(*x->own));
	x->acpus = xcalloc(n, sizeof(*x->acpus));
	x->memok = xcalloc(n, sizeof(*x->memok));
	x->cands_cap = 2 * (unsigned)n + 2;
	x->cands = xcalloc(x->cands_cap, sizeof(*x->cands));

	for (unsigned i = 0; i < MASK_MAX_NODES; i++)
		x->idx_of_id[i] = -1;
	/* busy is a fraction of the node's CPUs; not measured yet reads as
	 * idle here and is flagged in the item's detail. */
	for (unsigned i = 0; i < nn; i++) {
		x->busy_base[i] = isnan(s->nodes[i].busy) ? 0.0 : fmax(0.0, s->nodes[i].busy) * s->nodes[i].nr_cpus;
		x->keep[i] = (int64_t)policy_reserve(cfg->min_free_bytes, cfg->min_free_share, s->nodes[i].mem_total);
		x->smt = x->smt || (s->nodes[i].threads_per_core > 1 && s->nodes[i].nr_cores);
		x->llc = x->llc || (s->nodes[i].nr_llcs > 1 && s->nodes[i].nr_cores);
	}
	if (x->smt) {
		x->shift = xcalloc(n, sizeof(*x->shift));
		x->shift_start = xcalloc(n, sizeof(*x->shift_start));
	}
	pctx_reset(x);
	for (unsigned i = 0; i < nn; i++) {
		const struct snap_node *nd = &s->nodes[i];
		unsigned lo = MASK_WORDS(&nd->cpus), hi = 0;

		if (nd->id >= 0 && nd->id < MASK_MAX_NODES)
			x->idx_of_id[nd->id] = (int)i;
		for (unsigned w = 0; w < MASK_WORDS(&nd->cpus); w++) {
			if (!nd->cpus.w[w])
				continue;
			if (w < lo)
				lo = w;
			hi = w + 1;
		}
		x->wlo[i] = lo < hi ? lo : 0;
		x->whi[i] = hi;
	}
}

void pctx_reset(struct pctx *x)
{
	for (unsigned i = 0; i < x->nn; i++) {
		const struct snap_node *nd = &x->s->nodes[i];

		x->busy[i] = x->busy_base[i];
		x->fbusy[i] = x->fbusy_start[i];
		if (x->shift)
			x->shift[i] = x->shift_start[i];
		x->free[i] = nd->mem_free > INT64_MAX ? INT64_MAX : (int64_t)nd->mem_free;
		/* Memory in flight: pages live jobs are taking off the node are
		 * room to come (credit: the applier counts it, and the mover
		 * waits for it), pages they bring are room spoken for. Without
		 * it, the least loaded node, its guests' memory leaving, reads
		 * as full; a guest goes onto a busier node instead, and its
		 * cool-down then keeps the emptied node idle. */
		x->free[i] += (int64_t)nd->mem_leaving - (int64_t)nd->mem_coming;
		x->credit[i] = (int64_t)nd->mem_leaving;
		for (unsigned h = 0; h < SNAP_HP_MAX; h++)
			x->hfree[i * SNAP_HP_MAX + h] = h < nd->nr_hpools ? (int64_t)(nd->hpools[h].free * nd->hpools[h].page) : 0;
	}
}

/* Room promised to a guest about to start counts as taken: its CPUs as
 * busy on the reserved nodes (spread by CPU count), its memory as used on
 * their memory nodes (or the nearest node with memory). */
void pctx_reserve(struct pctx *x, const struct advice_reservation *r)
{
	const struct snapshot *s = x->s;
	unsigned cpus = 0, nmem = 0;
	int near = -1;
	uint64_t part, left = r->mem_bytes;

	for (unsigned n = 0; n < x->nn; n++)
		if (mask_test(&r->nodes, s->nodes[n].id)) {
			cpus += s->nodes[n].nr_cpus;
			nmem += s->nodes[n].mem_total > 0;
		}
	for (unsigned n = 0; n < x->nn; n++)
		if (mask_test(&r->nodes, s->nodes[n].id) && cpus && !isnan(r->cpus))
			x->busy[n] += r->cpus * s->nodes[n].nr_cpus / cpus;
	if (!nmem) {
		unsigned bestd = ~0u;

		for (unsigned m = 0; m < x->nn; m++) {
			if (!s->nodes[m].mem_total)
				continue;
			for (unsigned n = 0; n < x->nn; n++)
				if (mask_test(&r->nodes, s->nodes[n].id) &&
				    s->distance[n * x->nn + m] < bestd) {
					bestd = s->distance[n * x->nn + m];
					near = (int)m;
				}
		}
		if (near >= 0)
			x->free[near] -= (int64_t)r->mem_bytes;
		return;
	}
	part = r->mem_bytes / nmem;
	for (unsigned n = 0; n < x->nn; n++) {
		if (!mask_test(&r->nodes, s->nodes[n].id) || !s->nodes[n].mem_total)
			continue;
		if (--nmem == 0)
			part = left;
		x->free[n] -= (int64_t)part;
		left -= part;
	}
}

/* A guest's own share of a node is where its threads ran, each thread's
 * ticks wholly on the node it was last seen on (cgthr.c). Over a window
 * in which a thread changed nodes that puts its load on a node that did
 * not carry it, and leaves the node that did with busy CPUs no guest
 * owns: "other load" that nothing takes away when the guests are
 * placed. Threads set free just before a window can leave over half a
 * CPU of such phantom load on a node, enough that a guest no longer fits
 * beside its memory there and migrates for nothing
 * (test_phantom_load_of_a_moving_thread). What no guest owns in all is
 * exact (the nodes' busy CPUs and the guests' use are both measured over
 * the window); only its split by node is not. So each node is its owned load plus its share of the real
 * unowned total, shared in proportion to each node's surplus (busy above
 * owned); a node whose guests own more than it measured keeps what they
 * own (a move takes it off again). With no misattribution (no node owns
 * more than it measured) nothing changes. */
void pctx_settle(struct pctx *x, const double *owned)
{
	double surplus = 0.0, total = 0.0, scale;

	for (unsigned n = 0; n < x->nn; n++) {
		if (isnan(x->s->nodes[n].busy))
			return;   /* not measured: nothing to reconcile with */
		total += x->busy_base[n] - owned[n];
		if (x->busy_base[n] > owned[n])
			surplus += x->busy_base[n] - owned[n];
	}
	if (!(surplus > 0.0) || total >= surplus - UTIL_EPS)
		return;
	scale = total > 0.0 ? total / surplus : 0.0;
	for (unsigned n = 0; n < x->nn; n++) {
		double o = owned[n] > 0.0 ? owned[n] : 0.0;
		double sur = x->busy_base[n] > o ? x->busy_base[n] - o : 0.0;

		x->busy_base[n] = o + sur * scale;
	}
	pctx_reset(x);
}

void pctx_fini(struct pctx *x)
{
	free(x->busy);
	free(x->busy_base);
	free(x->fbusy);
	free(x->fbusy_start);
	free(x->shift);
	free(x->shift_start);
	free(x->free);
	free(x->credit);
	free(x->keep);
	free(x->hfree);
	free(x->wlo);
	free(x->whi);
	free(x->idx_of_id);
	free(x->set);
	free(x->uni);
	free(x->distsum);
	free(x->midx);
	free(x->tfac);
	free(x->inset);
	free(x->univ);
	free(x->own);
	free(x->acpus);
	free(x->memok);
	free(x->cands);
	free(x->gmem);
	memset(x, 0, sizeof(*x));
}

void pctx_float(struct pctx *x, const struct gview *g)
{
	if (!g->floater || !g->own)
		return;
	x->floated = true;
	for (unsigned n = 0; n < x->nn; n++) {
		x->fbusy[n] += g->own[n];
		x->fbusy_start[n] += g->own[n];
	}
}

void pctx_float_sum(struct pctx *x, const double *floated)
{
	x->floated = true;
	for (unsigned n = 0; n < x->nn; n++) {
		x->fbusy[n] += floated[n];
		x->fbusy_start[n] += floated[n];
	}
}

double pctx_other_busy(const struct pctx *x, const struct gview *g, unsigned n)
{
	/* A floater's own share is in fbusy (it is not placed yet), if
	 * anything floated. */
	double b = x->busy[n] - x->fbusy[n] - (g->own && !(g->floater && x->floated) ? g->own[n] : 0.0);

	return b > 0.0 ? b : 0.0;
}

double pctx_shift(const struct pctx *x, const struct gview *g, unsigned n)
{
	return g->floater && x->floated && (int)n == g->mem_major ? g->cpu_use : 0.0;
}

void pctx_expect(struct pctx *x, const struct gview *g)
{
	if (!x->shift || g->mem_major < 0)
		return;
	for (unsigned n = 0; n < x->nn; n++) {
		double d = pctx_shift(x, g, n);

		x->shift[n] += d;
		x->shift_start[n] += d;
	}
}

void pctx_float_memory(struct pctx *x, const struct gview *g)
{
	if (!g->floater || !g->mem_node)
		return;
	if (!x->gmem)
		x->gmem = xcalloc(x->nn ? x->nn : 1, sizeof(*x->gmem));
	for (unsigned n = 0; n < x->nn; n++)
		x->gmem[n] += g->mem_node[n];
}

uint64_t pctx_others(const struct pctx *x, const struct gview *g, unsigned n)
{
	uint64_t own = g->floater && g->mem_node ? g->mem_node[n] : 0;

	if (!x->gmem)
		return 0;
	return x->gmem[n] > own ? x->gmem[n] - own : 0;
}

bool kernel_migrates_on_fault(const struct snapshot *s)
{
	return s->numa_balancing > 0 && (s->numa_balancing & 1);
}

bool kernel_brings_back(const struct snapshot *s, uint64_t migrate, uint64_t mem_total)
{
	return kernel_migrates_on_fault(s) && mem_total > 0 && 2 * migrate < mem_total;
}

uint64_t pctx_room(const struct pctx *x, unsigned n)
{
	int64_t r = x->free[n] - x->keep[n];

	return r > 0 ? (uint64_t)r : 0;
}

/* The slot of node index N's pool of PAGE, or -1. */
static int hslot(const struct pctx *x, unsigned n, uint64_t page)
{
	const struct snap_node *nd = &x->s->nodes[n];

	for (unsigned h = 0; page && h < nd->nr_hpools && h < SNAP_HP_MAX; h++)
		if (nd->hpools[h].page == page)
			return (int)h;
	return -1;
}

uint64_t pctx_hroom(const struct pctx *x, unsigned n, uint64_t page)
{
	int h = hslot(x, n, page);
	int64_t r = h < 0 ? 0 : x->hfree[n * SNAP_HP_MAX + (unsigned)h];

	return r > 0 ? (uint64_t)r : 0;
}

static unsigned dist(const struct pctx *x, unsigned a, unsigned b)
{
	return x->s->distance[a * x->nn + b];
}

/* The node with memory, allowed for G, nearest to the set IDX[0..K);
 * ties to the lower index. -1 if none. */
static int nearest_mem(const struct pctx *x, const struct gview *g, const unsigned *idx,
		       unsigned k)
{
	int best = -1;
	unsigned bestd = 0;

	for (unsigned m = 0; m < x->nn; m++) {
		unsigned d = ~0u;

		if (!x->s->nodes[m].mem_total || !g->memok[m])
			continue;
		for (unsigned i = 0; i < k; i++)
			if (dist(x, idx[i], m) < d)
				d = dist(x, idx[i], m);
		if (best < 0 || d < bestd) {
			best = (int)m;
			bestd = d;
		}
	}
	return best;
}

/* With the kernel tiering memory (snap_memory_tiering), G's memory on
 * node index N, a node with memory and no CPUs, is the kernel's tier:
 * where it demoted cold pages, and whence it promotes hot ones. It is
 * left there: that node joins the mems of any set (so no cpuset write
 * and no mover job takes it off), and nothing of it migrates — moving it
 * would undo the kernel's demotion, and it would demote it again. Its
 * huge pages are no tier (hugetlb is not demoted). */
static bool tier_left(const struct pctx *x, const struct gview *g, unsigned n)
{
	return !x->s->nodes[n].nr_cpus && x->s->nodes[n].mem_total && g->mem_node[n] &&
	       (!g->huge_node || !g->huge_node[n]);
}

/* OUT's travel (pcand.travel): each node's part of the guest's memory
 * that must leave it, by the mean distance from there to mems(OUT), each
 * distance at least TRAVEL_UNIT_DIST. x->midx[0..NM) are the node
 * indices of mems(OUT), in any order (the sums are of integers). */
static void travel_of(const struct pctx *x, const struct gview *g, struct pcand *out, unsigned nm)
{
	out->travel = 0.0;
	out->travel_far = 0;
	if (!out->migrate || !g->mem_node)
		return;
	if (!nm)
		return;
	if (nm == 1 && x->tfac) {
		/* One memory node M (most sets): each node's factor is the
		 * loop's below for a single distance, computed once a cycle. */
		unsigned m = x->midx[0];

		for (unsigned n = 0; n < x->nn; n++) {
			unsigned d = x->s->distance[n * x->nn + m];

			if (!g->mem_node[n] || n == m)
				continue;
			out->travel_far = d > out->travel_far ? d : out->travel_far;
			out->travel += (double)g->mem_node[n] * x->tfac[n * x->nn + m];
		}
		return;
	}
	for (unsigned n = 0; n < x->nn; n++) {
		const unsigned *row = &x->s->distance[n * x->nn];
		unsigned dsum = 0, far = 0, i;

		if (!g->mem_node[n])
			continue;
		for (i = 0; i < nm && x->midx[i] != n; i++) {
			unsigned d = row[x->midx[i]];

			/* A move costs at least one to a node at the default
			 * distance (guards.h: TRAVEL_UNIT_DIST). */
			dsum += d > TRAVEL_UNIT_DIST ? d : (unsigned)TRAVEL_UNIT_DIST;
			far = d > far ? d : far;
		}
		if (i < nm)
			continue;   /* N is one of the mems: nothing leaves it */
		out->travel_far = far > out->travel_far ? far : out->travel_far;
		out->travel += (double)g->mem_node[n] * ((double)dsum / (double)nm / TRAVEL_UNIT_DIST);
	}
}

/* What moving C's memory costs in the score (guards.h): its share of the
 * guest's memory and its bytes, each by the distance they travel. */
static double travel_cost(const struct pctx *x, const struct gview *g, const struct pcand *c)
{
	if (!g->mem_total || !(c->travel > 0.0))
		return 0.0;
	return W_MIGRATE * c->travel / (double)g->mem_total +
	       W_TRAVEL * c->travel / (1024.0 * MIB) / fmax(g->cpu_use, x->cfg->min_cpu);
}

/* mems(T) of the set IDX[0..K) for G (pset_eval's MEMS_OVERRIDE rule)
 * into OUT->mems and, as node indices, into x->midx: pset_eval's sums
 * and travel_of walk that list, not the 1024-bit mask. Returns their
 * number. */
static unsigned pset_mems(const struct pctx *x, const struct gview *g, const unsigned *idx, unsigned k,
			  const nodemask_t *mems_override, struct pcand *out)
{
	const struct snapshot *s = x->s;
	unsigned any_mem = 0, nm = 0;

	if (mems_override) {
		mask_foreach(id, mems_override) {
			int n = id < MASK_MAX_NODES ? x->idx_of_id[id] : -1;

			if (n < 0 || !s->nodes[n].mem_total)
				continue;
			any_mem++;
			if (g->memok[n]) {
				mask_set(&out->mems, id);
				x->midx[nm++] = (unsigned)n;
			}
		}
	} else {
		for (unsigned i = 0; i < k; i++) {
			unsigned n = idx[i];

			if (!s->nodes[n].mem_total)
				continue;
			any_mem++;
			if (g->memok[n] && !mask_test(&out->mems, s->nodes[n].id)) {
				mask_set(&out->mems, s->nodes[n].id);
				x->midx[nm++] = n;
			}
		}
	}
	if (!any_mem) {
		int m = nearest_mem(x, g, idx, k);

		if (m >= 0) {
			mask_set(&out->mems, s->nodes[m].id);
			x->midx[nm++] = (unsigned)m;
		}
	}
	return nm;
}

/* Busy threads a node's load of LOAD CPUs holds: as cores.c counts a
 * guest's use where its threads are not measured, a fraction over whole
 * CPUs only from the busy threshold on (the node's figure carries a few
 * % of the host's own work and rounding, and a thread using less than
 * SNAP_BUSY_THREAD_CPU is not busy). The node's load, not its guests'
 * busy threads: those are measured per guest, not per node, and only
 * for guests spread over nodes; the load also follows this cycle's
 * moves (pctx_commit). */
static unsigned busy_threads_in(double load)
{
	return load > SNAP_BUSY_THREAD_CPU ? (unsigned)ceil(load - SNAP_BUSY_THREAD_CPU) : 0;
}

/* The cores G's threads need at once: its busy threads (gview.busy_thr),
 * else its use counted as busy_threads_in does, at least one. */
static unsigned guest_threads(const struct pctx *x, const struct gview *g)
{
	unsigned t = g->busy_thr ? g->busy_thr : busy_threads_in(fmax(g->cpu_use, x->cfg->min_cpu));

	return t ? t : 1;
}

/* The most last-level caches of a node weighed (llc_fits); a node with
 * more has the rest left out. */
#define LLC_MAX 64

/* Has one last-level cache of node index N a core beside the busy
 * threads already there for each of G's busy threads? Counted as the
 * node's cores are (busy_threads_in), on the CPUs' load by core
 * (pctx.cores) less G's own; true where that is not known. */
static bool llc_fits(const struct pctx *x, const struct gview *g, unsigned n)
{
	struct llc_load l[LLC_MAX];
	unsigned nl = coreload_llcs(x->cores, x->s, &x->s->nodes[n], g->cpus, g->cpu_use, l, LLC_MAX);
	unsigned need = guest_threads(x, g);

	for (unsigned i = 0; i < nl; i++)
		if (l[i].cores >= need + busy_threads_in(l[i].load))
			return true;
	return nl == 0;
}

/* OUT (the set IDX[0..K) of CORES cores, THR_THERE busy threads there)
 * counted by cores and weighed by caches where X says so. */
static void cores_eval(const struct pctx *x, const struct gview *g, const unsigned *idx, unsigned k,
		       unsigned cores, unsigned thr_there, struct pcand *out)
{
	/* Counted by cores, a set fits only where a core is free for each of
	 * its busy threads beside those already there: by CPUs a node of two
	 * cores x two threads takes 3.6 busy threads, and its siblings share
	 * cores while another node has idle ones
	 * (test_smt_node_by_free_cores). */
	if (x->by_cores && out->cpu_ok && cores < out->nr_cpus &&
	    thr_there + guest_threads(x, g) > cores) {
		out->cpu_ok = false;
		out->local_fit = false;
		out->cores_short = true;
	}
	/* Several caches in the node: its threads in one of them where one
	 * has the cores (cores.c then picks it), else W_LLC. */
	if (x->by_llc && k == 1 && out->cpu_ok && x->s->nodes[idx[0]].nr_llcs > 1 && !llc_fits(x, g, idx[0]))
		out->llc_split = true;
}

void pset_eval(const struct pctx *x, const struct gview *g, const unsigned *idx, unsigned k,
	       const nodemask_t *mems_override, struct pcand *out)
{
	const struct snapshot *s = x->s;
	double load = 0.0;
	unsigned nuni = 0, nm, cores = 0, thr_there = 0;
	uint64_t dsum = 0, npairs = 0, free_sum = 0;
	uint64_t huge_already = 0, o_total, o_already, o_demand, o_migrate;

	memset(out, 0, sizeof(*out));
	out->k = k;
	for (unsigned i = 0; i < k; i++) {
		unsigned n = idx[i];
		const struct snap_node *nd = &s->nodes[n];
		double other;

		mask_set(&out->nodes, s->nodes[n].id);
		out->nr_cpus += s->nodes[n].nr_cpus;
		/* What runs at full speed: a core each where SMT siblings show. */
		cores += nd->threads_per_core > 1 && nd->nr_cores ? nd->nr_cores : nd->nr_cpus;
		out->nr_to_cpus += g->acpus[n];
		other = pctx_other_busy(x, g, n);
		load += other;
		if (x->by_cores)
			thr_there += busy_threads_in(other + (x->shift ? x->shift[n] - pctx_shift(x, g, n) : 0.0));
		if (isnan(s->nodes[n].busy))
			out->busy_nan = true;
		x->uni[nuni++] = n;
	}
	out->util_after = out->nr_cpus ? (load + g->cpu_demand) / out->nr_cpus : INFINITY;
	out->cpu_ok = out->util_after <= x->cfg->max_util + UTIL_EPS &&
		      g->cpu_demand <= out->nr_to_cpus + UTIL_EPS;

	nm = pset_mems(x, g, idx, k, mems_override, out);
	out->allowed_ok = nm > 0;

	for (unsigned i = 0; i < nm; i++) {
		unsigned n = x->midx[i];
		int id = s->nodes[n].id;

		out->room += pctx_room(x, n);
		free_sum += x->free[n] > 0 ? (uint64_t)x->free[n] : 0;
		if (g->mem_node)
			out->already += g->mem_node[n];
		if (g->huge_node) {
			huge_already += g->huge_node[n];
			out->huge_room += pctx_hroom(x, n, g->huge_page);
		}
		if (!mask_test(&out->nodes, id))
			x->uni[nuni++] = n;
	}
	/* Its memory in the kernel's tier stays there, in its mems (after
	 * the room: the tier's free memory is no room for its growth). */
	if (g->mem_node && snap_memory_tiering(s) && out->allowed_ok)
		for (unsigned n = 0; n < x->nn; n++)
			if (tier_left(x, g, n) && g->memok[n] && !mask_test(&out->mems, s->nodes[n].id)) {
				out->already += g->mem_node[n];
				mask_set(&out->mems, s->nodes[n].id);
				x->midx[nm++] = n;
			}
	out->migrate = g->mem_total > out->already ? g->mem_total - out->already : 0;
	travel_of(x, g, out, nm);
	/* Huge pages fit only in free pages of their size: the kernel would
	 * make surplus pages on a node without, out of its free memory, and
	 * change the pools behind the operator's back. */
	out->huge_migrate = g->huge_total > huge_already ? g->huge_total - huge_already : 0;
	out->huge_ok = out->huge_migrate == 0 || out->huge_room >= out->huge_migrate;
	/* The rest is the ordinary memory, against free memory as before. */
	o_total = g->mem_total - (g->huge_total < g->mem_total ? g->huge_total : g->mem_total);
	o_already = out->already - (huge_already < out->already ? huge_already : out->already);
	o_demand = g->mem_demand > g->huge_total ? g->mem_demand - g->huge_total : 0;
	o_migrate = o_total > o_already ? o_total - o_already : 0;
	/* Room is for memory that would move. A set already holding all of
	 * the guest's memory moves none: it fits memory-wise even on a node
	 * too full for the growth headroom (moving the guest away for that
	 * would migrate everything to gain nothing). */
	out->mem_ok = out->huge_ok &&
		      (out->room + o_already >= o_demand ||
		      (o_total > 0 && (o_migrate == 0 ||
					    /* A few stray pages elsewhere change nothing,
					     * and may use the min_free reserve (never more
					     * than is free): else a guest with a few KiB
					     * off a node whose room others' growth took
					     * finds that node, its CPUs free, no candidate,
					     * and migrates all its memory onto a busier
					     * one. */
					    (plan_migration_negligible(o_migrate, o_total) &&
					     o_migrate <= free_sum))));
	/* Beside the kernel's balancing (it migrates on fault: bit 0), a
	 * set holding the larger part of its memory is as good: the kernel
	 * has begun moving pages toward wherever its threads ran before the
	 * first decision, and brings them back on fault once its threads
	 * are here. Held to all of it, two guests whose memory shares a
	 * 2-CPU node each fit neither way once the kernel moved a tenth of
	 * it, and all of it was pulled to an idle node instead
	 * (test_misplaced_beside_kernel_first_moves). The score still
	 * counts what comes back (travel). */
	bool kernel_back = kernel_brings_back(s, out->migrate, g->mem_total);
	bool negligible = plan_migration_negligible(out->migrate, g->mem_total);

	if (!out->cpu_ok && out->allowed_ok && out->nr_cpus && g->mem_total > 0 && (negligible || kernel_back)) {
		/* Each busy thread needs a CPU of its own: three one-thread
		 * guests sharing two CPUs use 0.67 each and are no fit. Its use
		 * may pass its CPUs by the node's slack (two busy threads can
		 * read a little over 2 CPUs: accounting jitter, as in
		 * split_eval), its busy threads never. Where part of its
		 * memory has still to come (the kernel bringing it), a core
		 * each: past the headroom every CPU of an SMT node is busy, so
		 * its threads would run beside siblings for good to save a
		 * migration about as large as going where cores are free
		 * (test_smt_beside_kernel_takes_free_cores). */
		double use = fmax(fmax(g->cpu_use, x->cfg->min_cpu), (double)g->busy_thr);
		double u = (load + use) / out->nr_cpus;

		if (u <= 1.0 + LOCAL_FIT_SLACK && g->busy_thr <= out->nr_to_cpus &&
		    use <= out->nr_to_cpus * (1.0 + LOCAL_FIT_SLACK) + UTIL_EPS &&
		    (negligible || load + use <= cores * (1.0 + LOCAL_FIT_SLACK) + UTIL_EPS)) {
			out->local_fit = true;
			out->cpu_ok = true;
			out->util_after = u;
		}
	}
	cores_eval(x, g, idx, k, cores, thr_there, out);

	for (unsigned i = 0; i < nuni; i++)
		for (unsigned j = i + 1; j < nuni; j++) {
			dsum += dist(x, x->uni[i], x->uni[j]);
			npairs++;
		}
	out->mean_dist = npairs ? (double)dsum / (double)npairs
				: (nuni ? dist(x, x->uni[0], x->uni[0]) : 10.0);
	/* Beside the kernel's balancing, memory onto the nodes its busy
	 * threads run on is the kernel's, on fault, under way already
	 * (gview.follow_nodes): a set keeping them there pays nothing for it. */
	out->score = out->util_after +
		     (g->follow_any && mask_subset(&g->follow_nodes, &out->nodes) ? 0.0 :
		      travel_cost(x, g, out)) +
		     W_DISTANCE * (out->mean_dist / 10.0 - 1.0);
	if (out->llc_split)
		out->score += W_LLC;
}

void pset_eval_mask(const struct pctx *x, const struct gview *g, const nodemask_t *nodes,
		    const nodemask_t *mems_override, struct pcand *out)
{
	unsigned k = 0;

	mask_foreach(id, nodes) {
		int n = id < MASK_MAX_NODES ? x->idx_of_id[id] : -1;

		if (n >= 0)
			x->set[k++] = (unsigned)n;
	}
	pset_eval(x, g, x->set, k, mems_override, out);
}

bool pcand_better(const struct pcand *a, const struct pcand *b)
{
	if (a->score < b->score - UTIL_EPS)
		return true;
	if (a->score > b->score + UTIL_EPS)
		return false;
	/* A move whose gain only pays its cost exactly is not worth it. */
	if (a->migrate != b->migrate)
		return a->migrate < b->migrate;
	if (a->util_after != b->util_after)
		return a->util_after < b->util_after;
	for (size_t w = 0; w < MASK_WORDS(&a->nodes); w++)
		if (a->nodes.w[w] != b->nodes.w[w]) {
			uint64_t diff = a->nodes.w[w] ^ b->nodes.w[w];
			uint64_t low = diff & -diff;

			/* The set holding the lowest differing id comes first. */
			return (a->nodes.w[w] & low) != 0;
		}
	return false;
}

static void cands_push(struct pctx *x, const struct pcand *c)
{
	if (x->nr_cands == x->cands_cap) {
		x->cands_cap *= 2;
		x->cands = xrealloc(x->cands, x->cands_cap * sizeof(*x->cands));
	}
	x->cands[x->nr_cands++] = *c;
}

/* Its footprint, not its demand, fits C's room with what is there
 * (pcand.bare_mem). */
static bool bare_fits(const struct gview *g, const struct pcand *c)
{
	uint64_t o_total = g->mem_total - g->huge_total, o_migrate = c->migrate - c->huge_migrate;

	return g->mem_total > 0 && c->huge_ok && c->room + (c->already - (g->huge_total - c->huge_migrate)) >= o_total &&
	       c->room >= o_migrate;
}

/* Grow a set from SEED within UNIV (by index) while it does not fit, up
 * to LIMIT nodes, adding each time the node nearest to the set (sum of
 * distances to its members, then lower load, then lower index) among
 * those that help with what is short: CPU slack when CPU is short, room
 * or the guest's own memory when memory is short. Pushes the first set
 * that fits and returns its size; 0 if none. */
static unsigned grow(struct pctx *x, const struct gview *g, unsigned seed, const bool *univ,
		     unsigned limit, bool *allowed_block)
{
	const struct snapshot *s = x->s;
	const struct policy_config *cfg = x->cfg;
	unsigned k = 0, found = 0;
	struct pcand c;

	x->set[k++] = seed;
	for (;;) {
		int best = -1;
		double bestload = 0.0;
		bool cpu_short, mem_short, threads_held;

		pset_eval(x, g, x->set, k, NULL, &c);
		if (pcand_fits(&c)) {
			cands_push(x, &c);
			found = k;
			break;
		}
		if (c.cpu_ok && c.mem_ok && !c.allowed_ok)
			*allowed_block = true;
		/* Its CPUs here hold all its busy threads: more nodes would only
		 * spread them away from their memory. */
		threads_held = g->busy_thr && c.nr_to_cpus >= g->busy_thr;
		if (threads_held && c.allowed_ok && (c.mem_ok || bare_fits(g, &c))) {
			c.bare_mem = !c.mem_ok;
			c.crowded = true;
			cands_push(x, &c);
			break;
		}
		if (k >= limit)
			break;
		if (k == 1) {
			/* Most guests fit one node: set up growth only now. */
			for (unsigned n = 0; n < x->nn; n++) {
				x->inset[n] = false;
				x->distsum[n] = dist(x, seed, n);
			}
			x->inset[seed] = true;
		}
		cpu_short = !c.cpu_ok && !threads_held;
		mem_short = !c.mem_ok || !c.allowed_ok;
		for (unsigned n = 0; n < x->nn; n++) {
			double other, load;
			bool helps = false;

			if (!univ[n] || x->inset[n])
				continue;
			other = pctx_other_busy(x, g, n);
			if (cpu_short && g->acpus[n] > 0 &&
			    cfg->max_util * s->nodes[n].nr_cpus - other > UTIL_EPS)
				helps = true;
			if (mem_short && s->nodes[n].mem_total && g->memok[n] &&
			    (pctx_room(x, n) > 0 || (g->mem_node && g->mem_node[n] > 0)) &&
			    (c.huge_ok || pctx_hroom(x, n, g->huge_page) > 0 || (g->huge_node && g->huge_node[n] > 0)))
				helps = true;
			if (!helps)
				continue;
			load = s->nodes[n].nr_cpus ? other / s->nodes[n].nr_cpus : 0.0;
			/* Equal, the node holding less of the others' memory:
			 * a floater's load counts as free room, so a node whose
			 * guests are about to be placed on their memory there
			 * reads as idle as an empty one (pctx_others). */
			if (best < 0 || x->distsum[n] < x->distsum[best] ||
			    (x->distsum[n] == x->distsum[best] &&
			     (load < bestload ||
			      (load == bestload && pctx_others(x, g, n) < pctx_others(x, g, (unsigned)best))))) {
				best = (int)n;
				bestload = load;
			}
		}
		if (best < 0)
			break;
		x->set[k++] = (unsigned)best;
		x->inset[best] = true;
		for (unsigned n = 0; n < x->nn; n++)
			x->distsum[n] += dist(x, (unsigned)best, n);
	}
	return found;
}

/* A set grown for memory past the nodes its busy threads fill is kept
 * only when no set that holds them with its memory exists: growth from a
 * seed without its memory reaches its memory's node and takes both.
 * Returns the smallest size among the fitting sets left. */
static unsigned drop_spread(struct pctx *x, const struct gview *g, unsigned kmin)
{
	bool held = false;
	unsigned w = 0;

	for (unsigned i = 0; i < x->nr_cands; i++)
		held = held || !pcand_more_than_threads(x, g, &x->cands[i]);
	if (!held)
		return kmin;
	kmin = 0;
	for (unsigned i = 0; i < x->nr_cands; i++) {
		if (pcand_more_than_threads(x, g, &x->cands[i]))
			continue;
		x->cands[w++] = x->cands[i];
		if (!x->cands[w - 1].crowded && (!kmin || x->cands[w - 1].k < kmin))
			kmin = x->cands[w - 1].k;
	}
	x->nr_cands = w;
	return kmin;
}

unsigned pcands_generate(struct pctx *x, const struct gview *g, const bool *usable,
			 bool *allowed_block)
{
	unsigned kmin = 0, nusable = 0, ncur = 0;
	bool cur_usable = true;
	struct pcand c;

	x->nr_cands = 0;
	*allowed_block = false;
	for (unsigned n = 0; n < x->nn; n++)
		nusable += usable[n];

	/* Sets of the minimal size are found whatever the seed order: a
	 * chain is cut only beyond the smallest size found so far. */
	for (unsigned n = 0; n < x->nn; n++) {
		unsigned k;

		if (!usable[n])
			continue;
		k = grow(x, g, n, usable, kmin ? kmin : nusable, allowed_block);
		if (k && (!kmin || k < kmin))
			kmin = k;
	}

	/* Proper subsets of the current set: consolidating onto nodes it
	 * already runs on needs no less-busy check, so look for them even
	 * where the unrestricted growth wandered off the current set. */
	for (unsigned n = 0; n < x->nn; n++) {
		x->univ[n] = mask_test(&g->cur_nodes, x->s->nodes[n].id) && x->s->nodes[n].nr_cpus;
		if (x->univ[n]) {
			ncur++;
			if (!usable[n])
				cur_usable = false;
		}
	}
	if (ncur > 1 && cur_usable) {
		for (unsigned n = 0; n < x->nn; n++) {
			unsigned k;

			if (!x->univ[n])
				continue;
			k = grow(x, g, n, x->univ, ncur - 1, allowed_block);
			if (k && (!kmin || k < kmin))
				kmin = k;
		}
	}
	if (ncur && cur_usable) {
		/* More nodes than its busy threads fill is no place to stay:
		 * where memory needs them, growth above finds such sets. */
		bool more;

		pset_eval_mask(x, g, &g->cur_nodes, NULL, &c);
		more = pcand_more_than_threads(x, g, &c);
		if (more) {
			/* not a candidate */
		} else if (pcand_fits(&c)) {
			cands_push(x, &c);
			if (!kmin || c.k < kmin)
				kmin = c.k;
		} else if (c.cpu_ok && c.mem_ok && !c.allowed_ok) {
			*allowed_block = true;
		} else if (g->busy_thr && c.nr_to_cpus >= g->busy_thr && c.allowed_ok &&
			   (c.mem_ok || bare_fits(g, &c))) {
			/* Staying is an option among crowded sets too. */
			c.bare_mem = !c.mem_ok;
			c.crowded = true;
			cands_push(x, &c);
		}
	}
	return drop_spread(x, g, kmin);
}

unsigned pcands_crowded_min(const struct pctx *x)
{
	unsigned k = 0;

	for (unsigned i = 0; i < x->nr_cands; i++)
		if (x->cands[i].crowded && (!k || x->cands[i].k < k))
			k = x->cands[i].k;
	return k;
}

bool pcand_more_than_threads(const struct pctx *x, const struct gview *g, const struct pcand *c)
{
	unsigned least = ~0u;

	if (!g->busy_thr || c->k < 2)
		return false;
	mask_foreach(id, &c->nodes) {
		int n = x->idx_of_id[id];

		if (n >= 0 && g->acpus[n] < least)
			least = g->acpus[n];
	}
	return least != ~0u && c->nr_to_cpus - least >= g->busy_thr;
}

void pctx_commit(struct pctx *x, const struct gview *g, const struct pcand *c)
{
	const struct snapshot *s = x->s;
	/* Huge pages come out of the pools, the rest out of free memory. */
	uint64_t h_already = g->huge_total - c->huge_migrate, o_already = c->already - h_already;
	uint64_t o_demand = g->mem_demand > g->huge_total ? g->mem_demand - g->huge_total : 0;
	uint64_t need = o_demand > o_already ? o_demand - o_already : 0, hneed = c->huge_migrate;
	uint64_t room = 0, left, real = 0;
	int last = -1;
	bool grounded;

	/* Does its own migration fit without memory other moves of this
	 * cycle will free (what the applier will find)? */
	mask_foreach(id, &c->mems) {
		unsigned n = (unsigned)x->idx_of_id[id];
		int64_t r = x->free[n] - x->credit[n] - x->keep[n];

		real += r > 0 ? (uint64_t)r : 0;
	}
	grounded = c->migrate - c->huge_migrate == 0 || real >= c->migrate - c->huge_migrate;
	for (unsigned n = 0; n < x->nn; n++) {
		bool was = mask_test(&g->cur_nodes, s->nodes[n].id);
		bool will = mask_test(&c->nodes, s->nodes[n].id);

		if (was && g->own)
			x->busy[n] = fmax(0.0, x->busy[n] - g->own[n]);
		/* Placed: where its load goes is in busy now. */
		if (x->shift)
			x->shift[n] -= pctx_shift(x, g, n);
		if (g->floater && g->own)
			x->fbusy[n] = fmax(0.0, x->fbusy[n] - g->own[n]);
		if (will && c->nr_to_cpus)
			x->busy[n] += g->cpu_use * g->acpus[n] / c->nr_to_cpus;
		if (grounded && g->mem_node && g->mem_node[n] && !mask_test(&c->mems, s->nodes[n].id)) {
			uint64_t h = g->huge_node ? g->huge_node[n] : 0;
			int slot = hslot(x, n, g->huge_page);

			x->free[n] += (int64_t)(g->mem_node[n] - h);
			x->credit[n] += (int64_t)(g->mem_node[n] - h);
			/* Huge pages that leave go back to their node's pool. */
			if (h && slot >= 0)
				x->hfree[n * SNAP_HP_MAX + (unsigned)slot] += (int64_t)h;
		}
	}
	mask_foreach(id, &c->mems) {
		unsigned n = (unsigned)x->idx_of_id[id];
		uint64_t part = pctx_hroom(x, n, g->huge_page);
		int slot = hslot(x, n, g->huge_page);

		if (!hneed)
			break;
		if (slot < 0 || !part)
			continue;
		if (part > hneed)
			part = hneed;
		x->hfree[n * SNAP_HP_MAX + (unsigned)slot] -= (int64_t)part;
		hneed -= part;
	}
	mask_foreach(id, &c->mems) {
		room += pctx_room(x, (unsigned)x->idx_of_id[id]);
		last = x->idx_of_id[id];
	}
	left = need;
	mask_foreach(id, &c->mems) {
		unsigned n = (unsigned)x->idx_of_id[id];
		uint64_t part;

		if ((int)n == last)
			part = left;
		else if (room)
			part = (uint64_t)((double)need * ((double)pctx_room(x, n) / (double)room));
		else
			part = need / (uint64_t)mask_count(&c->mems);
		if (part > left)
			part = left;
		x->free[n] -= (int64_t)part;
		left -= part;
	}
	x->version++;
}

void fmt_nodes(const nodemask_t *m, char *buf, size_t bufsz)
{
	if (mask_format(m, buf, bufsz) < 0)
		snprintf(buf, bufsz, "…");
	else if (!buf[0])
		snprintf(buf, bufsz, "none");
}

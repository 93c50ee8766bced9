#include "orchestrator/model/snapshot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/strtab.h"
#include "orchestrator/base/xalloc.h"

struct snapshot *snap_new(void)
{
	struct snapshot *s = xcalloc(1, sizeof(*s));

	s->refs = 1;
	s->numa_balancing = -1;
	s->kernel_migrated_pps = NAN;
	s->demotion_enabled = -1;
	return s;
}

const struct snapshot *snap_ref(const struct snapshot *s)
{
	if (s)
		__atomic_add_fetch(&((struct snapshot *)s)->refs, 1, __ATOMIC_RELAXED);
	return s;
}

static void vm_free(struct snap_vm *vm)
{
	if (!vm)
		return;
	free(vm->vcpu_tids);
	free(vm->vcpu_use);
	free(vm->emulator_tids);
	free(vm->iothread_tids);
	free(vm->iothread_ids);
	free(vm);
}

static void guest_clear(struct snap_guest *g)
{
	free(g->cgroup);
	free(g->mem_node);
	free(g->huge_node);
	free(g->cpu_node);
	if (g->kflow)
		free(g->kflow->delta);
	free(g->kflow);
	vm_free(g->vm);
	for (unsigned i = 0; i < g->nr_parts; i++) {
		free(g->parts[i].cgroup);
		free(g->parts[i].mem_node);
		free(g->parts[i].cpu_node);
	}
	free(g->parts);
}

struct snap_part *snap_guest_add_part(const struct snapshot *s, struct snap_guest *g, const char *cgroup)
{
	struct snap_part *p;

	g->parts = xrealloc(g->parts, (g->nr_parts + 1) * sizeof(*g->parts));
	p = &g->parts[g->nr_parts++];
	memset(p, 0, sizeof(*p));
	p->cgroup = xstrdup(cgroup);
	p->mem_node = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(uint64_t));
	return p;
}

static int part_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_part *)a)->cgroup, ((const struct snap_part *)b)->cgroup);
}

int snap_part_of(const struct snap_guest *g, const char *rel)
{
	for (unsigned i = 0; rel && i < g->nr_parts; i++) {
		size_t n = strlen(g->parts[i].cgroup);

		if (strncmp(rel, g->parts[i].cgroup, n) == 0 && (rel[n] == '\0' || rel[n] == '/'))
			return (int)i;
	}
	return -1;
}

void snap_unref(const struct snapshot *cs)
{
	/* The last reference: nobody else reads it any more. */
	struct snapshot *s = (struct snapshot *)cs;

	if (!s)
		return;
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (unsigned i = 0; i < s->nr_guests; i++)
		guest_clear(&s->guests[i]);
	free(s->guests);
	free(s->nodes);
	free(s->distance);
	free(s->cpu_core);
	free(s->cpu_llc);
	for (unsigned i = 0; i < s->nr_warnings; i++)
		free(s->warnings[i]);
	free(s->warnings);
	for (unsigned i = 0; i < s->nr_masks; i++)
		free(s->masks[i]);
	free(s->masks);
	free(s->mask_ht);
	free(s);
}

/* FNV-1a over the words up to the last non-zero one: masks are mostly
 * zero above the host's CPUs. */
static uint64_t mask_hash(const cpumask_t *m)
{
	uint64_t h = 1469598103934665603ULL;
	size_t last = MASK_WORDS(m);

	while (last > 0 && !m->w[last - 1])
		last--;
	for (size_t i = 0; i < last; i++) {
		h ^= m->w[i];
		h *= 1099511628211ULL;
	}
	return h ^ (h >> 29);
}

static void mask_ht_put(struct snapshot *s, unsigned idx)
{
	unsigned mask = s->mask_ht_cap - 1;
	unsigned slot = (unsigned)mask_hash(s->masks[idx]) & mask;

	while (s->mask_ht[slot])
		slot = (slot + 1) & mask;
	s->mask_ht[slot] = idx + 1;
}

const cpumask_t *snap_cpumask(struct snapshot *s, const cpumask_t *m)
{
	unsigned slot;
	cpumask_t *copy;

	if (s->mask_ht_cap) {
		slot = (unsigned)mask_hash(m) & (s->mask_ht_cap - 1);
		for (; s->mask_ht[slot]; slot = (slot + 1) & (s->mask_ht_cap - 1))
			if (mask_equal(s->masks[s->mask_ht[slot] - 1], m))
				return s->masks[s->mask_ht[slot] - 1];
	}
	copy = xmalloc(sizeof(*copy));
	*copy = *m;
	if (s->nr_masks == s->masks_cap) {
		s->masks_cap = s->masks_cap ? s->masks_cap * 2 : 8;
		s->masks = xrealloc(s->masks, s->masks_cap * sizeof(*s->masks));
	}
	s->masks[s->nr_masks++] = copy;
	/* Keep the table at most half full. */
	if (s->nr_masks * 2 > s->mask_ht_cap) {
		free(s->mask_ht);
		s->mask_ht_cap = s->mask_ht_cap ? s->mask_ht_cap * 2 : 16;
		s->mask_ht = xcalloc(s->mask_ht_cap, sizeof(*s->mask_ht));
		for (unsigned i = 0; i < s->nr_masks; i++)
			mask_ht_put(s, i);
	} else {
		mask_ht_put(s, s->nr_masks - 1);
	}
	return copy;
}

static const cpumask_t *snap_cpumask_empty(struct snapshot *s)
{
	cpumask_t none;

	mask_zero(&none);
	return snap_cpumask(s, &none);
}

void snap_guest_set_cpus(struct snapshot *s, struct snap_guest *g, const cpumask_t *cpus,
			 const cpumask_t *allowed)
{
	g->cpus = snap_cpumask(s, cpus);
	g->allowed_cpus = allowed ? snap_cpumask(s, allowed) : snap_cpumask_empty(s);
}

static int node_cmp(const void *a, const void *b)
{
	const struct snap_node *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

void snap_set_nodes(struct snapshot *s, const struct snap_node *nodes, unsigned n,
		    const unsigned *distance)
{
	unsigned *order = NULL;

	free(s->nodes);
	free(s->distance);
	s->nr_nodes = n;
	s->nodes = xcalloc(n, sizeof(*s->nodes));
	memcpy(s->nodes, nodes, n * sizeof(*nodes));
	/* Keep the distance matrix consistent with the sorted order. */
	order = xcalloc(n, sizeof(*order));
	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	qsort(s->nodes, n, sizeof(*s->nodes), node_cmp);
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++)
			if (nodes[j].id == s->nodes[i].id)
				order[i] = j;
	s->distance = xcalloc((size_t)n * n, sizeof(unsigned));
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++)
			s->distance[i * n + j] = distance ? distance[order[i] * n + order[j]]
							  : (i == j ? 10 : 20);
	free(order);
}

int snap_cpu_core(const struct snapshot *s, int cpu)
{
	return cpu >= 0 && (unsigned)cpu < s->nr_cpu_ids ? s->cpu_core[cpu] : -1;
}

int snap_cpu_llc(const struct snapshot *s, int cpu)
{
	return cpu >= 0 && (unsigned)cpu < s->nr_cpu_ids ? s->cpu_llc[cpu] : -1;
}

/* Node N's counts from the CPUs' cores and caches: a core or a cache is
 * counted at its lowest CPU of the node. All 0 when one of its CPUs has
 * no core known: a half-known node would be placed on by half a rule. */
static void node_cputopo(const struct snapshot *s, struct snap_node *n)
{
	unsigned cores = 0, llcs = 0, tpc = 0;

	n->nr_cores = n->nr_llcs = n->threads_per_core = 0;
	mask_foreach(c, &n->cpus) {
		int core = snap_cpu_core(s, (int)c), llc = snap_cpu_llc(s, (int)c);
		unsigned sib = 0;
		bool first_core = true, first_llc = true;

		if (core < 0)
			return;
		mask_foreach(d, &n->cpus) {
			if ((int)d >= (int)c)
				break;
			if (snap_cpu_core(s, (int)d) == core)
				first_core = false;
			if (llc >= 0 && snap_cpu_llc(s, (int)d) == llc)
				first_llc = false;
		}
		mask_foreach(d, &n->cpus)
			sib += snap_cpu_core(s, (int)d) == core;
		cores += first_core;
		llcs += llc >= 0 && first_llc;
		if (sib > tpc)
			tpc = sib;
	}
	n->nr_cores = cores;
	n->nr_llcs = llcs;
	n->threads_per_core = tpc;
}

void snap_set_cputopo(struct snapshot *s, const int *core, const int *llc, unsigned nr)
{
	free(s->cpu_core);
	free(s->cpu_llc);
	s->cpu_core = s->cpu_llc = NULL;
	s->nr_cpu_ids = 0;
	if (core && llc && nr) {
		s->nr_cpu_ids = nr;
		s->cpu_core = xcalloc(nr, sizeof(int));
		s->cpu_llc = xcalloc(nr, sizeof(int));
		memcpy(s->cpu_core, core, nr * sizeof(int));
		memcpy(s->cpu_llc, llc, nr * sizeof(int));
	}
	for (unsigned i = 0; i < s->nr_nodes; i++)
		node_cputopo(s, &s->nodes[i]);
}

void snap_reserve_guests(struct snapshot *s, unsigned n)
{
	if (n <= s->guests_cap)
		return;
	s->guests_cap = n;
	s->guests = xrealloc(s->guests, s->guests_cap * sizeof(*s->guests));
}

struct snap_guest *snap_add_guest(struct snapshot *s)
{
	struct snap_guest *g;

	if (s->nr_guests == s->guests_cap) {
		s->guests_cap = s->guests_cap ? s->guests_cap * 2 : 16;
		s->guests = xrealloc(s->guests, s->guests_cap * sizeof(*s->guests));
	}
	g = &s->guests[s->nr_guests++];
	memset(g, 0, sizeof(*g));
	g->mem_node = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(uint64_t));
	g->cpu_use = NAN;
	g->cpus = g->allowed_cpus = snap_cpumask_empty(s);
	return g;
}

void snap_warn(struct snapshot *s, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	/* Bound the list: a broken host must not grow a snapshot without end. */
	if (s->nr_warnings >= 256)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg)
		return;
	s->warnings = xrealloc(s->warnings, (s->nr_warnings + 1) * sizeof(char *));
	s->warnings[s->nr_warnings++] = msg;
}

void snap_cpus_to_nodes(const struct snapshot *s, const cpumask_t *cpus, nodemask_t *out)
{
	size_t lo = 0, hi = MASK_WORDS(cpus);

	mask_zero(out);
	/* Only the words CPUS has bits in are compared: a mask holds
	 * thousands of bits, a host's CPUs a few words of them. */
	while (lo < hi && !cpus->w[lo])
		lo++;
	while (hi > lo && !cpus->w[hi - 1])
		hi--;
	if (lo == hi)
		return;
	for (unsigned i = 0; i < s->nr_nodes; i++)
		if (s->nodes[i].nr_cpus &&
		    mask_intersects_words(s->nodes[i].cpus.w + lo, cpus->w + lo, (unsigned)(hi - lo)))
			mask_set(out, s->nodes[i].id);
}

void snap_nodes_to_cpus(const struct snapshot *s, const nodemask_t *nodes, cpumask_t *out)
{
	mask_zero(out);
	for (unsigned i = 0; i < s->nr_nodes; i++)
		if (mask_test(nodes, s->nodes[i].id))
			mask_or(out, out, &s->nodes[i].cpus);
}

static uint32_t fnv1a(const char *s);

/* Same id, then by cgroup (none last): which of two guests keeps it. */
static int guest_cg_cmp(const void *a, const void *b)
{
	const struct snap_guest *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	if (c)
		return c;
	if (!x->cgroup || !y->cgroup)
		return !x->cgroup - !y->cgroup;
	return strcmp(x->cgroup, y->cgroup);
}

/* Two cgroups that name the same guest id (/docker/<id> beside
 * .../docker-<id>.scope; names equal after the id's character rules)
 * are two guests: the one whose cgroup sorts first keeps the id, each
 * other one gets "-c" and a hash of its cgroup appended — the same on
 * every scan and after a restart, whatever order the scan found them
 * in. Returns whether any id changed. */
static bool disambiguate(struct snapshot *s)
{
	bool changed = false;

	for (unsigned first = 0, i = 1; i < s->nr_guests; i++) {
		struct snap_guest *g = &s->guests[i], *keeper = &s->guests[first];
		char id[GUEST_ID_MAX];
		size_t keep;

		if (strcmp(keeper->id, g->id) != 0) {
			first = i;
			continue;
		}
		if (!g->cgroup || (keeper->cgroup && strcmp(keeper->cgroup, g->cgroup) == 0))
			continue; /* the same guest twice: snap_finalize drops it */
		keep = strlen(g->id);
		if (keep > GUEST_ID_MAX - 12)
			keep = GUEST_ID_MAX - 12;
		snprintf(id, sizeof(id), "%.*s-c%08x", (int)keep, g->id, fnv1a(g->cgroup));
		snap_warn(s, "guest id %s is taken by cgroup %s: cgroup %s is guest %s", g->id,
			  keeper->cgroup ? keeper->cgroup : "?", g->cgroup, id);
		memcpy(g->id, id, sizeof(id));
		changed = true;
	}
	return changed;
}

/* The share of MEM_TOTAL bytes of MEM ([nr_nodes]) on the nodes where
 * the weights W put the threads (snap_locality_for). */
static double locality_of(const struct snapshot *s, const uint64_t *mem, uint64_t mem_total, const double *w)
{
	double sum = 0.0, loc = 0.0;

	if (!mem_total)
		return 1.0;
	for (unsigned k = 0; w && k < s->nr_nodes; k++) {
		int m = (int)k;

		if (!(w[k] > 0.0))
			continue;
		sum += w[k];
		/* A thread on a memory-less node is as local as it can be when
		 * its memory is on the nearest node with memory. */
		if (!s->nodes[k].mem_total) {
			int id = snap_nearest_mem_node(s, k, NULL);

			m = id < 0 ? -1 : snap_node_index(s, id);
		}
		if (m >= 0)
			loc += w[k] * (double)mem[m];
	}
	return sum > 0.0 ? loc / sum / (double)mem_total : 0.0;
}

double snap_locality_for(const struct snapshot *s, const struct snap_guest *g, const double *w)
{
	return locality_of(s, g->mem_node, g->mem_total, w);
}

double snap_part_locality(const struct snapshot *s, const struct snap_part *p)
{
	if (!p->mem_node || !p->cpu_node || !(p->cpu_use > 0.0))
		return NAN;
	return locality_of(s, p->mem_node, p->mem_total, p->cpu_node);
}

/* A guest whose parts' threads did most of its work is as local as its
 * parts are, each weighted by its CPU use: a container's threads touch
 * its own memory, not its sibling's, so the guest's memory on a thread's
 * node says little when the containers sit on different nodes. NAN:
 * not measured that way. */
static double parts_locality(const struct snapshot *s, const struct snap_guest *g, double guest_cpu)
{
	double cpu = 0.0, loc = 0.0;

	for (unsigned i = 0; i < g->nr_parts; i++) {
		const struct snap_part *p = &g->parts[i];
		double l = snap_part_locality(s, p);

		if (isnan(l))
			continue;
		cpu += p->cpu_use;
		loc += p->cpu_use * l;
	}
	if (!(cpu > 0.0) || cpu < 0.5 * guest_cpu)
		return NAN;
	return loc / cpu;
}

/* What a guest's CPUs are in node terms, kept per distinct cpus mask
 * within one pass over the guests: the masks are a few thousand bits
 * each, and thousands of guests share a handful of them. */
struct cpus_memo {
	const cpumask_t *cpus;
	nodemask_t nodes;       /* snap_cpus_to_nodes */
	double *on;             /* [nr_nodes]: its CPUs on each node with CPUs */
};

#define CPUS_MEMO_MAX 32

/* The memo of CPUS, computed into one of MEMO's N slots when absent
 * (round robin when full). */
static const struct cpus_memo *cpus_memo_get(const struct snapshot *s, struct cpus_memo *memo, unsigned *n,
					     unsigned *next, const cpumask_t *cpus)
{
	struct cpus_memo *m;

	for (unsigned i = 0; i < *n; i++)
		if (memo[i].cpus == cpus)
			return &memo[i];
	if (*n < CPUS_MEMO_MAX) {
		m = &memo[(*n)++];
		m->on = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(double));
	} else {
		m = &memo[*next];
		*next = (*next + 1) % CPUS_MEMO_MAX;
	}
	m->cpus = cpus;
	snap_cpus_to_nodes(s, cpus, &m->nodes);
	for (unsigned k = 0; k < s->nr_nodes; k++) {
		m->on[k] = 0.0;
		if (s->nodes[k].nr_cpus && mask_test(&m->nodes, s->nodes[k].id)) {
			cpumask_t on;

			mask_and(&on, &s->nodes[k].cpus, cpus);
			m->on[k] = (double)mask_count(&on);
		}
	}
	return m;
}

/* g->locality and its source. Without a measurement, a guest spread over
 * several nodes is taken to run on each in proportion to its CPUs there
 * (what the scheduler does over time), never as local as its cpuset.
 * M: the memo of its cpus. */
static void true_locality(const struct snapshot *s, struct snap_guest *g, const struct cpus_memo *m)
{
	double sum = 0.0;

	for (unsigned k = 0; g->cpu_node && k < s->nr_nodes; k++)
		sum += g->cpu_node[k] > 0.0 ? g->cpu_node[k] : 0.0;
	if (sum > 0.0) {
		double pl = parts_locality(s, g, sum);

		g->locality_source = LOC_THREADS;
		g->locality = isnan(pl) ? snap_locality_for(s, g, g->cpu_node) : pl;
	} else {
		unsigned nn = 0;

		for (unsigned k = 0; k < s->nr_nodes; k++)
			if (s->nodes[k].nr_cpus && mask_test(&g->cpu_nodes, s->nodes[k].id))
				nn++;
		g->locality_source = nn > 1 ? LOC_ESTIMATE : LOC_ONE_NODE;
		g->locality = nn ? snap_locality_for(s, g, m->on) : (g->mem_total ? 0.0 : 1.0);
	}
}

void snap_finalize(struct snapshot *s)
{
	snap_finalize_with(s, NULL);
}

void snap_finalize_with(struct snapshot *s, const struct snap_policy_overlay *ov)
{
	struct cpus_memo memo[CPUS_MEMO_MAX];
	unsigned w = 0, nr_memo = 0, next_memo = 0;

	if (s->nr_guests) {
		qsort(s->guests, s->nr_guests, sizeof(*s->guests), guest_cg_cmp);
		if (disambiguate(s))
			qsort(s->guests, s->nr_guests, sizeof(*s->guests), guest_cg_cmp);
	}
	for (unsigned i = 0; i < s->nr_guests; i++) {
		if (w > 0 && strcmp(s->guests[w - 1].id, s->guests[i].id) == 0) {
			snap_warn(s, "guest id %s seen twice (cgroups %s and %s); keeping the first",
				  s->guests[i].id, s->guests[w - 1].cgroup ? s->guests[w - 1].cgroup : "?",
				  s->guests[i].cgroup ? s->guests[i].cgroup : "?");
			guest_clear(&s->guests[i]);
			continue;
		}
		if (w != i)
			s->guests[w] = s->guests[i];
		w++;
	}
	s->nr_guests = w;

	for (unsigned i = 0; i < s->nr_guests; i++) {
		struct snap_guest *g = &s->guests[i];
		struct guest_policy pol;

		/* Sources never give an API policy: one here is an earlier
		 * finalize's override, and the base stays as that one left it. */
		if (g->policy.source != GPOL_SRC_API) {
			if (ov && g->policy.source == GPOL_SRC_DEFAULT)
				g->policy.devices = ov->devices;
			g->base_policy = g->policy;
		}
		if (ov && ov->get && ov->get(ov->ctx, g->id, &pol))
			g->policy = pol;
	}
	for (unsigned i = 0; i < s->nr_guests; i++) {
		struct snap_guest *g = &s->guests[i];
		uint64_t total = 0, local = 0;
		const struct cpus_memo *m = cpus_memo_get(s, memo, &nr_memo, &next_memo, g->cpus);

		g->cpu_nodes = m->nodes;
		for (unsigned n = 0; n < s->nr_nodes; n++) {
			total += g->mem_node[n];
			if (mask_test(&g->cpu_nodes, s->nodes[n].id))
				local += g->mem_node[n];
		}
		g->mem_total = total;
		g->huge_total = 0;
		for (unsigned n = 0; g->huge_node && n < s->nr_nodes; n++)
			g->huge_total += g->huge_node[n];
		if (g->nr_parts > 1)
			qsort(g->parts, g->nr_parts, sizeof(*g->parts), part_cmp);
		for (unsigned k = 0; k < g->nr_parts; k++) {
			struct snap_part *pt = &g->parts[k];

			pt->mem_total = 0;
			for (unsigned n = 0; pt->mem_node && n < s->nr_nodes; n++)
				pt->mem_total += pt->mem_node[n];
		}
		g->mem_in_cpuset_bytes = local;
		g->mem_in_cpuset = total ? (double)local / (double)total : 1.0;
		true_locality(s, g, m);
		if (g->mem_unknown) {
			g->mem_in_cpuset = NAN;
			g->locality = NAN;
		}
	}
	for (unsigned i = 0; i < nr_memo; i++)
		free(memo[i].on);
	if (ov && ov->flows)
		ov->flows(ov->flows_ctx, s);
}

const struct snap_hpool *snap_node_hpool(const struct snap_node *n, uint64_t page)
{
	for (unsigned i = 0; i < n->nr_hpools && i < SNAP_HP_MAX; i++)
		if (n->hpools[i].page == page)
			return &n->hpools[i];
	return NULL;
}

int snap_node_index(const struct snapshot *s, int node_id)
{
	unsigned lo = 0, hi = s->nr_nodes;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (s->nodes[mid].id == node_id)
			return (int)mid;
		if (s->nodes[mid].id < node_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

const struct snap_guest *snap_find_guest(const struct snapshot *s, const char *id)
{
	unsigned lo = 0, hi = s->nr_guests;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		int c = strcmp(s->guests[mid].id, id);

		if (c == 0)
			return &s->guests[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

unsigned snap_distance(const struct snapshot *s, unsigned from_idx, unsigned to_idx)
{
	if (from_idx >= s->nr_nodes || to_idx >= s->nr_nodes)
		return 255;
	return s->distance[from_idx * s->nr_nodes + to_idx];
}

int snap_cpu_node_index(const struct snapshot *s, int cpu)
{
	for (unsigned k = 0; cpu >= 0 && k < s->nr_nodes; k++)
		if (cpu < (int)MASK_BITS(&s->nodes[k].cpus) && mask_test(&s->nodes[k].cpus, cpu))
			return (int)k;
	return -1;
}

double *snap_node_use(const struct snapshot *s, double *w, double cpu_use)
{
	double sum = 0.0;

	for (unsigned k = 0; k < s->nr_nodes; k++)
		sum += w[k];
	if (!(sum > 0.0) || isnan(cpu_use)) {
		free(w);
		return NULL;
	}
	for (unsigned k = 0; k < s->nr_nodes; k++)
		w[k] = cpu_use * w[k] / sum;
	return w;
}

int snap_nearest_mem_node(const struct snapshot *s, unsigned idx, unsigned *dist)
{
	unsigned best = ~0u;
	int near = -1;

	/* Strict <: the first (lowest index) of equally near nodes stays. */
	for (unsigned m = 0; m < s->nr_nodes; m++)
		if (s->nodes[m].mem_total && snap_distance(s, idx, m) < best) {
			best = snap_distance(s, idx, m);
			near = s->nodes[m].id;
		}
	if (dist)
		*dist = best;
	return near;
}

unsigned snap_nr_cpu_nodes(const struct snapshot *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->nr_nodes; i++)
		n += s->nodes[i].nr_cpus > 0;
	return n;
}

static bool id_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

void snap_make_id(char out[GUEST_ID_MAX], const char *prefix, const char *name)
{
	size_t plen = strlen(prefix), off = 0;
	bool changed = false;
	/* Leave room for "-" + 8 hex + NUL. */
	const size_t limit = GUEST_ID_MAX - 10;

	for (size_t i = 0; i < plen && off < limit; i++)
		out[off++] = id_char_ok(prefix[i]) ? prefix[i] : '_';
	if (off < limit)
		out[off++] = '-';
	for (const char *p = name; *p; p++) {
		if (off >= limit) {
			changed = true;
			break;
		}
		if (id_char_ok(*p)) {
			out[off++] = *p;
		} else {
			out[off++] = '_';
			changed = true;
		}
	}
	if (off > 0 && (out[0] == '.' || out[0] == '-')) {
		out[0] = '_';
		changed = true;
	}
	if (changed)
		off += (size_t)snprintf(out + off, GUEST_ID_MAX - off, "-%08x", fnv1a(name));
	out[off] = '\0';
}

bool snap_id_valid(const char *id)
{
	size_t n = 0;

	if (!id || !*id || id[0] == '.' || id[0] == '-')
		return false;
	for (; id[n]; n++) {
		if (n >= GUEST_ID_MAX - 1 || !id_char_ok(id[n]))
			return false;
	}
	return true;
}

static const char *const loc_source_names[] = {
	[LOC_ONE_NODE] = "one_node",
	[LOC_THREADS] = "threads",
	[LOC_ESTIMATE] = "estimate",
};
STRTAB_NAME(snap_loc_source_name, enum loc_source, loc_source_names)

static const char *const kind_names[] = {
	[GUEST_CONTAINER] = "container",
	[GUEST_VM] = "vm",
};
STRTAB_NAME(snap_kind_name, enum guest_kind, kind_names)

static const char *const gpol_mode_names[] = {
	[GPOL_AUTO] = "auto",
	[GPOL_PINNED] = "pinned",
	[GPOL_IGNORE] = "ignore",
};
STRTAB_NAME(gpol_mode_name, enum gpol_mode, gpol_mode_names)
STRTAB_PARSE(gpol_mode_parse, enum gpol_mode, gpol_mode_names)

static const char *const gpol_devices_names[] = {
	[GPOL_DEV_PREFER] = "prefer",
	[GPOL_DEV_REQUIRE] = "require",
	[GPOL_DEV_IGNORE] = "ignore",
};
STRTAB_NAME(gpol_devices_name, enum gpol_devices, gpol_devices_names)
STRTAB_PARSE(gpol_devices_parse, enum gpol_devices, gpol_devices_names)

static const char *const gpol_source_names[] = {
	[GPOL_SRC_DEFAULT] = "default",
	[GPOL_SRC_API] = "api",
	[GPOL_SRC_METADATA] = "metadata",
};
STRTAB_NAME(gpol_source_name, enum gpol_source, gpol_source_names)


uint64_t *snap_guest_huge(struct snapshot *s, struct snap_guest *g)
{
	if (!g->huge_node)
		g->huge_node = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(uint64_t));
	return g->huge_node;
}

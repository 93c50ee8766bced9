/* Tests for policies/cores.c: a move's exact CPUs by core and last-level
 * cache, on the captured shape tests/fixtures/host-2node-smt (2 nodes of 2
 * cores × 2 threads, an L3 per node) and on hand-built topologies. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/topo.h"
#include "policies/cores.h"
#include "policies/policies.h"

#define MIB (1024ULL * 1024ULL)
#define T0 1000000000000LL

/* The fixture host HOST as a snapshot: node 0 idle, node 1 BUSY1 of its
 * CPUs busy. */
static struct snapshot *fixture_snap(const char *host, double busy1)
{
	struct snap_node *nodes = NULL;
	unsigned nr = 0, *dist = NULL;
	struct topo_cputopo t;
	struct host_paths hp = { 0 };
	struct snapshot *s = snap_new();

	snprintf(hp.sysfs, sizeof(hp.sysfs), "tests/fixtures/%s/sys", host);
	snprintf(hp.procfs, sizeof(hp.procfs), "tests/fixtures/%s/proc", host);
	assert_int_equal(topo_read_nodes(&hp, &nodes, &nr, &dist), 0);
	assert_int_equal(nr, 2);
	nodes[0].busy = 0.0;
	nodes[1].busy = busy1;
	snap_set_nodes(s, nodes, nr, dist);
	topo_read_cputopo(&hp, nodes, nr, &t);
	snap_set_cputopo(s, t.core, t.llc, t.nr);
	topo_cputopo_free(&t);
	free(nodes);
	free(dist);
	s->mono_ns = T0;
	return s;
}

/* A guest of THREADS busy threads (a CPU each) on CPUS, all of them on
 * node index CPU_NODE, its mems MEMS and MIB MiB on node index MEM_NODE;
 * returned for a test to vary. */
static struct snap_guest *busy_guest(struct snapshot *s, const char *id, const char *cpus, unsigned threads,
				     unsigned cpu_node, const char *mems, unsigned mem_node, uint64_t mib)
{
	struct snap_guest *g = snap_add_guest(s);
	cpumask_t c;

	snprintf(g->id, sizeof(g->id), "%s", id);
	g->cpu_use = threads;
	g->nr_threads = threads;
	g->busy_threads = threads;
	g->busy_measured = true;
	mask_zero(&c);
	mask_parse(cpus, &c);
	g->cpus = snap_cpumask(s, &c);
	mask_parse(mems, &g->mems);
	g->mem_node[mem_node] = mib * MIB;
	g->cpu_node = calloc(s->nr_nodes, sizeof(double));
	g->cpu_node[cpu_node] = threads;
	return g;
}

/* A one-busy-thread guest running on node 1's CPUs with all its memory
 * on node 0 (locality 0): its CPUs go to the memory. */
static void remote_guest(struct snapshot *s, const char *id, const char *cpus)
{
	busy_guest(s, id, cpus, 1, 1, "0-1", 0, 512);
}

static struct plan *decide_as(struct snapshot *s, bool whole, bool containers)
{
	struct policy_config cfg;
	struct pstate *next;
	struct plan *p;

	snap_finalize(s);
	policy_config_default(&cfg);
	cfg.whole_cores = whole;
	cfg.container_cores = containers;
	assert_int_equal(policy_decide(&cfg, s, NULL, false, &p, &next), 0);
	pstate_free(next);
	return p;
}

/* The narrowing itself is tested on containers, with container_cores on. */
static struct plan *decide(struct snapshot *s, bool whole)
{
	return decide_as(s, whole, true);
}

/* ID is settled: the plan (not verbose) holds no item for it. */
static void assert_settled(const struct plan *p, const char *id)
{
	for (unsigned i = 0; i < p->nr_items; i++)
		if (strcmp(p->items[i].guest_id, id) == 0)
			fail_msg("%s: %s", id, p->items[i].detail);
}

static void assert_nodes(const nodemask_t *m, const char *want)
{
	char buf[64];

	assert_true(mask_format(m, buf, sizeof(buf)) >= 0);
	assert_string_equal(buf, want);
}

static const struct plan_item *item_of(const struct plan *p, const char *id)
{
	for (unsigned i = 0; i < p->nr_items; i++)
		if (strcmp(p->items[i].guest_id, id) == 0)
			return &p->items[i];
	fail_msg("no item for %s", id);
	return NULL;
}

static void assert_cpus(const cpumask_t *m, const char *want)
{
	char buf[64];

	assert_non_null(m);
	assert_true(mask_format(m, buf, sizeof(buf)) >= 0);
	assert_string_equal(buf, want);
}

/* Two one-thread guests moved onto node 0 in one cycle get a core each,
 * both siblings of it, and the record says so. */
static void test_two_guests_separate_cores(void **st)
{
	struct snapshot *s = fixture_snap("host-2node-smt", 1.0);
	const struct plan_item *a, *b;
	struct plan *p;

	(void)st;
	remote_guest(s, "a", "2-3,6-7");
	remote_guest(s, "b", "2-3,6-7");
	p = decide(s, true);
	a = item_of(p, "a");
	b = item_of(p, "b");
	assert_int_equal(a->kind, PLAN_MOVE);
	assert_int_equal(b->kind, PLAN_MOVE);
	assert_cpus(a->to_cpus, "0,4");
	assert_cpus(b->to_cpus, "1,5");
	assert_non_null(strstr(a->detail, "1 busy thread on 1 core of LLC 0"));
	assert_non_null(strstr(b->detail, "1 busy thread on 1 core of LLC 0"));
	plan_free(p);
	snap_unref(s);
}

/* By default ([policy] container_cores = no) a container moved onto a
 * node keeps all of the node's CPUs: narrowed, its use could never read
 * above its cores, and nothing would widen it again. */
static void test_containers_keep_the_node_by_default(void **st)
{
	struct snapshot *s = fixture_snap("host-2node-smt", 1.0);
	const struct plan_item *a;
	struct plan *p;

	(void)st;
	remote_guest(s, "a", "2-3,6-7");
	p = decide_as(s, true, false);
	a = item_of(p, "a");
	assert_int_equal(a->kind, PLAN_MOVE);
	assert_cpus(a->to_cpus, "0-1,4-5");
	assert_null(strstr(a->detail, "core"));
	plan_free(p);
	snap_unref(s);
}

/* Busy threads not measured (a guest on one node): a use a little over
 * one CPU is still one thread's; over the busy threshold beyond it, two. */
static void test_use_without_busy_threads(void **st)
{
	struct snapshot *s = fixture_snap("host-2node-smt", 1.0);
	struct plan *p;

	(void)st;
	remote_guest(s, "a", "2-3,6-7");
	remote_guest(s, "b", "2-3,6-7");
	s->guests[0].busy_measured = s->guests[1].busy_measured = false;
	s->guests[0].busy_threads = s->guests[1].busy_threads = 0;
	s->guests[0].nr_threads = s->guests[1].nr_threads = 2;
	s->guests[0].cpu_use = s->guests[0].cpu_node[1] = 1.12;
	s->guests[1].cpu_use = s->guests[1].cpu_node[1] = 1.16;
	p = decide(s, true);
	assert_cpus(item_of(p, "a")->to_cpus, "0,4");
	assert_cpus(item_of(p, "b")->to_cpus, "1,5");
	assert_non_null(strstr(item_of(p, "a")->detail, "1.1 CPUs of use on 1 core of LLC 0"));
	plan_free(p);
	snap_unref(s);

	s = fixture_snap("host-2node-smt", 1.0);
	remote_guest(s, "a", "2-3,6-7");
	s->guests[0].busy_measured = false;
	s->guests[0].nr_threads = 3;
	s->guests[0].cpu_use = s->guests[0].cpu_node[1] = 1.3;
	p = decide(s, true);
	assert_cpus(item_of(p, "a")->to_cpus, "0-1,4-5");
	plan_free(p);
	snap_unref(s);
}

/* whole_cores = no: one CPU of each core, the siblings left to others. */
static void test_not_whole_cores(void **st)
{
	struct snapshot *s = fixture_snap("host-2node-smt", 1.0);
	struct plan *p;

	(void)st;
	remote_guest(s, "a", "2-3,6-7");
	remote_guest(s, "b", "2-3,6-7");
	p = decide(s, false);
	assert_cpus(item_of(p, "a")->to_cpus, "0");
	assert_cpus(item_of(p, "b")->to_cpus, "1");
	plan_free(p);
	snap_unref(s);
}

/* A guest whose threads need every core of the node gets the node as
 * before, with nothing added to the record. */
static void test_big_guest_whole_node(void **st)
{
	struct snapshot *s = fixture_snap("host-2node-smt", 1.0);
	const struct plan_item *a;
	struct snap_guest *g;
	struct plan *p;

	(void)st;
	remote_guest(s, "a", "2-3,6-7");
	g = &s->guests[0];
	g->cpu_use = 2.0;
	g->busy_threads = 2;
	g->nr_threads = 2;
	g->cpu_node[1] = 2.0;
	p = decide(s, true);
	a = item_of(p, "a");
	assert_int_equal(a->kind, PLAN_MOVE);
	assert_cpus(a->to_cpus, "0-1,4-5");
	assert_null(strstr(a->detail, "core"));
	plan_free(p);
	snap_unref(s);
}

/* The same moves on the same host without the per-CPU files: whole
 * nodes, as always. */
static void test_no_topology_unchanged(void **st)
{
	struct snapshot *s = fixture_snap("host-2node-smt", 1.0);
	struct plan *p;

	(void)st;
	snap_set_cputopo(s, NULL, NULL, 0);
	assert_int_equal(s->nodes[0].nr_cores, 0);
	remote_guest(s, "a", "2-3,6-7");
	remote_guest(s, "b", "2-3,6-7");
	p = decide(s, true);
	assert_cpus(item_of(p, "a")->to_cpus, "0-1,4-5");
	assert_cpus(item_of(p, "b")->to_cpus, "0-1,4-5");
	assert_null(strstr(item_of(p, "a")->detail, "core"));
	plan_free(p);
	snap_unref(s);
}

/* One node of 8 cores without SMT and two last-level caches (CPUs 0-3,
 * 4-7), another node like it: a 2-thread guest gets 2 cores of one
 * cache, the one less loaded, the least loaded cores of it; a 5-thread
 * guest fits no cache and spans them. */
static struct snapshot *two_llc_host(void)
{
	struct snapshot *s = snap_new();
	struct snap_node nodes[2] = { 0 };
	int core[16], llc[16];

	for (unsigned i = 0; i < 2; i++) {
		nodes[i].id = (int)i;
		for (unsigned c = 8 * i; c < 8 * i + 8; c++)
			mask_set(&nodes[i].cpus, c);
		nodes[i].nr_cpus = 8;
		nodes[i].mem_total = 8192 * MIB;
		nodes[i].mem_free = 6144 * MIB;
	}
	for (int c = 0; c < 16; c++) {
		core[c] = c;
		llc[c] = c & ~3;
	}
	snap_set_nodes(s, nodes, 2, NULL);
	snap_set_cputopo(s, core, llc, 16);
	assert_int_equal(s->nodes[0].nr_llcs, 2);
	assert_int_equal(s->nodes[0].threads_per_core, 1);
	return s;
}

static void test_one_llc_where_it_fits(void **st)
{
	struct snapshot *s = two_llc_host();
	struct snap_guest *g, *other;
	struct coreload *cl;
	cpumask_t from, out;
	nodemask_t n0;
	char why[96];

	(void)st;
	/* Another guest busy on CPUs 0 and 4: cache 4-7 has 3 idle cores,
	 * 0-3 too; the tie goes to the lower cache, and within it CPUs 1, 2. */
	other = snap_add_guest(s);
	snprintf(other->id, sizeof(other->id), "other");
	other->cpu_use = 2.0;
	mask_zero(&from);
	mask_set(&from, 0);
	mask_set(&from, 4);
	other->cpus = snap_cpumask(s, &from);
	g = snap_add_guest(s);
	snprintf(g->id, sizeof(g->id), "g");
	g->cpu_use = 1.8;
	g->busy_threads = 2;
	g->busy_measured = true;
	mask_zero(&from);
	mask_parse("8-15", &from);
	g->cpus = snap_cpumask(s, &from);
	cl = coreload_new(s);
	assert_non_null(cl);
	mask_zero(&n0);
	mask_set(&n0, 0);
	mask_zero(&out);
	mask_parse("0-7", &out);
	cores_choose(cl, s, g, &n0, &from, true, true, &out, why, sizeof(why));
	assert_cpus(&out, "1-2");
	assert_string_equal(why, "2 busy threads on 2 cores of LLC 0");

	/* A second one like it: cache 0-3 now holds 3 busy CPUs, 4-7 one. */
	mask_zero(&out);
	mask_parse("0-7", &out);
	cores_choose(cl, s, g, &n0, &from, true, true, &out, why, sizeof(why));
	assert_cpus(&out, "5-6");
	assert_string_equal(why, "2 busy threads on 2 cores of LLC 1");

	/* Five busy threads fit no cache of four cores. */
	g->busy_threads = 5;
	mask_zero(&out);
	mask_parse("0-7", &out);
	cores_choose(cl, s, g, &n0, &from, true, true, &out, why, sizeof(why));
	assert_int_equal(mask_count(&out), 5);
	assert_string_equal(why, "5 busy threads on 5 cores across LLCs");

	/* A two-node target is left whole. */
	mask_set(&n0, 1);
	mask_zero(&out);
	mask_parse("0-15", &out);
	g->busy_threads = 2;
	cores_choose(cl, s, g, &n0, &from, true, true, &out, why, sizeof(why));
	assert_cpus(&out, "0-15");
	assert_string_equal(why, "");
	coreload_free(cl);
	snap_unref(s);
}

/* No node with SMT or more than one cache: nothing to weigh. */
static void test_plain_host_no_coreload(void **st)
{
	struct snapshot *s = snap_new();
	int core[4] = { 0, 1, 2, 3 }, llc[4] = { 0, 0, 2, 2 };

	(void)st;
	tu_snap_nodes(s, 2, 2, 1024 * MIB);
	snap_set_cputopo(s, core, llc, 4);
	assert_int_equal(s->nodes[1].nr_cores, 2);
	assert_int_equal(s->nodes[1].nr_llcs, 1);
	assert_null(coreload_new(s));
	snap_unref(s);
}

/* A guest of the vm-smt fixture's host (CPUs 0-3 node 0, 4-7 node 1, an
 * L3 each): USE CPUs of BUSY busy threads running on node RUN, its memory
 * MEM0/MEM1 MiB on nodes 0 and 1, free to run and allocate anywhere. */
static struct snap_guest *smt_guest(struct snapshot *s, const char *id, double use, unsigned busy, int run,
				    unsigned mem0, unsigned mem1)
{
	struct snap_guest *g = snap_add_guest(s);
	cpumask_t c;

	snprintf(g->id, sizeof(g->id), "%s", id);
	g->cpu_use = use;
	g->nr_threads = busy + 1;
	g->busy_threads = busy;
	g->busy_measured = true;
	mask_zero(&c);
	mask_parse("0-7", &c);
	g->cpus = snap_cpumask(s, &c);
	mask_parse("0-1", &g->mems);
	g->mem_node[0] = mem0 * MIB;
	g->mem_node[1] = mem1 * MIB;
	g->cpu_node = calloc(s->nr_nodes, sizeof(double));
	g->cpu_node[run] = use;
	return g;
}

/* The testbed's smt-busy beside the kernel's balancing, at the agent's
 * first cycle: s1 (2 busy threads on node 1, 168 of its 256 MiB on node
 * 0), s2 (2 on node 0, 132 MiB on node 0 and 124 on node 1: the kernel
 * had begun moving it to its threads), s3 (1 on node 1, 100 of 128 MiB
 * there). Each node has two cores. STATE: 0 as it was, 1 without the
 * host's core files, 2 with all of s2's memory on node 0. */
static struct plan *smt_beside_kernel(int state)
{
	struct snapshot *s = fixture_snap("vm-smt", 0.75);
	struct plan *p;

	s->nodes[0].busy = 0.5;
	s->numa_balancing = 1;
	smt_guest(s, "s1", 2.01, 2, 1, 168, 88);
	smt_guest(s, "s2", 2.02, 2, 0, state == 2 ? 256 : 132, state == 2 ? 0 : 124);
	smt_guest(s, "s3", 1.0, 1, 1, 28, 100);
	if (state == 1)
		snap_set_cputopo(s, NULL, NULL, 0);
	p = decide_as(s, true, false);
	snap_unref(s);
	return p;
}

/* s1 goes to its memory on node 0; s2 then fitted node 0 only without
 * headroom, with "the kernel brings the rest", and went there: four busy
 * threads on node 0's two cores, node 1's second core idle, for a
 * migration no smaller than node 1's (124 MiB against 132). With its
 * memory still to come a set must give its busy threads a core each to
 * fit without headroom; where it is all there already, it stays. */
static void test_smt_beside_kernel_takes_free_cores(void **st)
{
	const struct plan_item *it;
	struct plan *p;

	(void)st;
	p = smt_beside_kernel(0);
	assert_cpus(item_of(p, "s1")->to_cpus, "0-3");
	it = item_of(p, "s2");
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_cpus(it->to_cpus, "4-7");
	assert_null(strstr(it->detail, "without headroom"));
	assert_cpus(item_of(p, "s3")->to_cpus, "4-7");
	plan_free(p);

	/* Without core files every CPU is a core: node 0 fits as before. */
	p = smt_beside_kernel(1);
	it = item_of(p, "s2");
	assert_cpus(it->to_cpus, "0-3");
	assert_non_null(strstr(it->detail, "fits without headroom: most of its memory is there"));
	plan_free(p);

	/* All of it on node 0: nothing travels, it stays with its memory. */
	p = smt_beside_kernel(2);
	it = item_of(p, "s2");
	assert_cpus(it->to_cpus, "0-3");
	assert_non_null(strstr(it->detail, "fits without headroom: its memory is there"));
	plan_free(p);
}

/* A guest of the vm-smt fixture's host with BUSY busy threads using USE
 * CPUs, on CPUS, running on node RUN, all its MIB of memory on node MEM. */
static void core_guest(struct snapshot *s, const char *id, const char *cpus, double use, unsigned busy, int run,
		       int mem, unsigned mib)
{
	struct snap_guest *g = smt_guest(s, id, use, busy, run, mem == 0 ? mib : 0, mem == 1 ? mib : 0);
	cpumask_t c;

	mask_zero(&c);
	mask_parse(cpus, &c);
	g->cpus = snap_cpumask(s, &c);
}

/* Node 0 of the vm-smt host (two cores x two threads, CPUs 0-3) holds
 * guest a's A busy threads on its own cores; n, two busy threads running
 * on node 1 (idle but for it), has its memory on node 0. STATE: 0 as it
 * is, 1 without the host's core files, 2 with b's two busy threads on
 * node 1 as well (no node has a free core for n), 3 with n on node 0's
 * CPUs beside a (node 1 idle), 4 with node 1's memory full, 5 with a
 * free to run on both nodes too (the testbed's smt-free-cores). */
static struct plan *smt_free_cores(unsigned a, int state)
{
	struct snapshot *s = fixture_snap("vm-smt", 0.5);
	struct plan *p;

	s->nodes[0].busy = a / 4.0;
	core_guest(s, "a", state == 5 ? "0-7" : "0-3", a, a, 0, 0, 256);
	if (state == 3) {
		s->nodes[0].busy = (a + 2) / 4.0;
		s->nodes[1].busy = 0.0;
		core_guest(s, "n", "0-3", 2.0, 2, 0, 0, 256);
	} else {
		core_guest(s, "n", "0-7", 2.0, 2, 1, 0, 256);
	}
	if (state == 2) {
		s->nodes[1].busy = 1.0;
		core_guest(s, "b", "4-7", 2.0, 2, 1, 1, 256);
	}
	if (state == 1)
		snap_set_cputopo(s, NULL, NULL, 0);
	if (state == 4)
		s->nodes[1].mem_free = 8 * MIB;
	p = decide_as(s, true, false);
	snap_unref(s);
	return p;
}

/* By CPUs node 0 fits n beside a: with a's two busy threads as a local
 * fit (4 of 4 CPUs, its memory there), with a's one within max_util
 * (3.4 of 3.6 CPUs). Either way n's threads would share node 0's two
 * cores with a's while node 1's cores stand idle; counted by cores
 * where the host shows siblings, n goes to node 1 and its memory with
 * it. Without core files every CPU is a core: node 0 as before. */
static void test_smt_node_by_free_cores(void **st)
{
	const struct plan_item *it;
	struct plan *p;

	(void)st;
	for (unsigned a = 1; a <= 2; a++) {
		p = smt_free_cores(a, 0);
		it = item_of(p, "n");
		assert_int_equal(it->kind, PLAN_MOVE);
		assert_cpus(it->to_cpus, "4-7");
		assert_nodes(&it->to_mems, "1");
		assert_settled(p, "a");
		plan_free(p);

		p = smt_free_cores(a, 1);
		it = item_of(p, "n");
		assert_int_equal(it->kind, PLAN_MOVE);
		assert_cpus(it->to_cpus, "0-3");
		assert_nodes(&it->to_mems, "0");
		plan_free(p);

		/* n already beside a, both local: one of them leaves the
		 * shared cores for node 1 (by CPUs both were settled), the
		 * record says why, and the other stays. */
		p = smt_free_cores(a, 3);
		assert_int_equal(p->nr_items, 1);
		it = &p->items[0];
		assert_int_equal(it->kind, PLAN_MOVE);
		assert_cpus(it->to_cpus, "4-7");
		assert_nodes(&it->to_mems, "1");
		assert_non_null(strstr(it->detail, "no free core for each busy thread where it is"));
		plan_free(p);
	}
}

/* The testbed's smt-free-cores at the agent's first cycle: a and n, two
 * busy threads each, both free to run anywhere, both with their memory
 * on node 0, a's threads there and n's on node 1. By CPUs both went to
 * node 0 (four busy threads on its two cores, node 1 idle); by cores they
 * end on nodes of their own, one of them with its memory moved. */
static void test_smt_two_floaters_one_memory_node(void **st)
{
	const struct plan_item *a, *n;
	struct plan *p;

	(void)st;
	p = smt_free_cores(2, 5);
	a = item_of(p, "a");
	n = item_of(p, "n");
	assert_int_equal(a->kind, PLAN_MOVE);
	assert_int_equal(n->kind, PLAN_MOVE);
	assert_false(mask_equal(&a->to_nodes, &n->to_nodes));
	assert_true((a->migrate_bytes > 0) != (n->migrate_bytes > 0));
	plan_free(p);
}

/* No node has a free core for n (two busy threads on each): counted by
 * CPUs as before, it still goes where it fits, to its memory (a local
 * fit), and a and b stay. */
static void test_smt_no_free_cores_falls_back(void **st)
{
	const struct plan_item *it;
	struct plan *p;

	(void)st;
	/* Node 1's cores are free but its memory is full: by cores only
	 * both nodes together would do (grown for memory, more nodes than
	 * its threads fill); by CPUs node 0 does, and a guest is not spread
	 * for cores. */
	p = smt_free_cores(2, 4);
	it = item_of(p, "n");
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_cpus(it->to_cpus, "0-3");
	assert_nodes(&it->to_mems, "0");
	plan_free(p);

	p = smt_free_cores(2, 2);
	it = item_of(p, "n");
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_cpus(it->to_cpus, "0-3");
	assert_nodes(&it->to_mems, "0");
	assert_non_null(strstr(it->detail, "fits without headroom: its memory is there"));
	assert_settled(p, "a");
	assert_settled(p, "b");
	plan_free(p);
}

/* n (two busy threads, 1.4 CPUs) local on node 0 beside 0.6 CPU of load
 * no guest owns (a busy thread's worth): no free core for each of its
 * threads there, two on node 1 (0.25 CPU of noise, no busy thread), but
 * node 1 is not less busy by the margin (0.48 x 1.12 against 0.5 now).
 * It stays, settled as by CPUs, not skipped every cycle for a set it
 * will not go to. */
static void test_smt_short_of_cores_stays_when_nothing_better(void **st)
{
	struct snapshot *s = fixture_snap("vm-smt", 0.0625);
	struct plan *p;

	(void)st;
	s->nodes[0].busy = 0.5;
	core_guest(s, "n", "0-3", 1.4, 2, 0, 0, 256);
	p = decide_as(s, true, false);
	assert_settled(p, "n");
	plan_free(p);
	snap_unref(s);
}

/* The testbed's smt-busy at the agent's first cycle (balancing off): s1
 * (2 busy threads on node 1's CPUs, its memory on node 0), s2 (2 on node
 * 0's, its memory on node 1), s3 (1, free to run anywhere, on node 0 with
 * its memory). MODE 1: without the host's core files. */
static struct plan *smt_busy_swap(int mode)
{
	struct snapshot *s = fixture_snap("vm-smt", 0.5);
	struct plan *p;

	s->nodes[0].busy = 0.75;
	core_guest(s, "s1", "0-7", 2.0, 2, 1, 0, 256);
	core_guest(s, "s2", "0-7", 2.0, 2, 0, 1, 256);
	core_guest(s, "s3", "0-7", 1.0, 1, 0, 0, 128);
	if (mode == 1)
		snap_set_cputopo(s, NULL, NULL, 0);
	p = decide_as(s, true, false);
	snap_unref(s);
	return p;
}

/* Two floaters whose threads run on each other's memory's node swap
 * their CPUs, no memory moved, as by CPUs: counted by cores, a node's
 * busy threads are those of the floaters whose memory it holds (their
 * CPUs go there), not those running there now. Counted where they ran,
 * s1 found node 0 short of cores beside s3 and took node 1 with its 256
 * MiB, and s2, its memory there, then shared node 1's cores with it:
 * four busy threads on node 1, one on node 0. */
static void test_smt_swap_cpus_to_memory(void **st)
{
	struct plan *p;

	(void)st;
	for (int mode = 0; mode < 2; mode++) {
		const struct plan_item *a, *b;

		p = smt_busy_swap(mode);
		a = item_of(p, "s1");
		b = item_of(p, "s2");
		assert_int_equal(a->kind, PLAN_MOVE);
		assert_int_equal(b->kind, PLAN_MOVE);
		assert_cpus(a->to_cpus, "0-3");
		assert_cpus(b->to_cpus, "4-7");
		assert_true(a->migrate_bytes < MIB);
		assert_true(b->migrate_bytes < MIB);
		plan_free(p);
	}
}

/* Advice on the vm-smt host (two nodes of two cores x two threads) for a
 * guest of one vCPU with a device on node 0, node 0 carrying two busy
 * threads (its two cores taken), node 1 one. By CPUs node 0 wins (util
 * 0.75, beside its device; node 1 0.5 + W_DEVICE_PLACE) and the guest's
 * thread would share a core; with its busy thread named, node 1, where a
 * core is free, and the detail says cores decided. Without the field,
 * the advice is as before. */
static void test_advise_by_free_cores(void **st)
{
	struct snapshot *s = fixture_snap("vm-smt", 0.25);
	struct policy_config cfg;
	struct advice_request req = { .cpus = 1.0, .mem_bytes = 64 * MIB, .nr_devices = 1,
				      .devices = GPOL_DEV_PREFER };
	struct advice a;

	(void)st;
	s->nodes[0].busy = 0.5;
	snap_finalize(s);
	policy_config_default(&cfg);
	mask_set(&req.dev_nodes, 0);
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_nodes(&a.nodes, "0");
	assert_null(strstr(a.detail, "core"));

	req.busy_threads = 1;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_nodes(&a.nodes, "1");
	assert_nodes(&a.mems, "1");
	assert_non_null(strstr(a.detail, "by free cores: one for each of its 1 busy thread (by CPUs: nodes 0, short of cores)"));

	/* Two busy threads, node 1 with two too (1.5 CPUs): no node has a
	 * free core for each, and by CPUs node 1 fits (0.875): as without. */
	req.busy_threads = 2;
	req.cpus = 2.0;
	s->nodes[1].busy = 0.375;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_nodes(&a.nodes, "1");
	assert_non_null(strstr(a.detail, "no set has a free core for each of its 2 busy threads: counted by CPUs"));

	/* Without core files every CPU is a core: the field changes nothing. */
	snap_set_cputopo(s, NULL, NULL, 0);
	s->nodes[1].busy = 0.25;
	req.busy_threads = 1;
	req.cpus = 1.0;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_nodes(&a.nodes, "0");
	assert_null(strstr(a.detail, "core"));
	snap_unref(s);
}

/* A VM's start placement weighs its vCPUs as busy threads, as the
 * advice does when they are named: the shape of test_advise_by_free_cores
 * (node 0 beside its device with both cores taken, node 1 with one
 * free) sends its one vCPU to node 1, where the next cycle, counting its
 * measured busy thread by cores, leaves it. Placed as before the field
 * (busy_threads 0), it went to node 0. */
static void test_vm_start_by_free_cores(void **st)
{
	struct snapshot *s = fixture_snap("vm-smt", 0.25);
	struct snap_guest *g = snap_add_guest(s);
	struct policy_config cfg;
	struct place_request req = { .guest_id = "vm-a", .cpus = 1.0, .mem_bytes = 64 * MIB };
	struct place_result pr;

	(void)st;
	snprintf(g->id, sizeof(g->id), "vm-a");
	g->kind = GUEST_VM;
	g->cpu_use = NAN;
	g->nr_devices = 1;
	mask_set(&g->dev_nodes, 0);
	g->policy.devices = GPOL_DEV_PREFER;
	s->nodes[0].busy = 0.5;
	snap_finalize(s);
	policy_config_default(&cfg);
	assert_int_equal(policy_place(&cfg, s, &req, &pr), 0);
	assert_int_equal(pr.item.kind, PLAN_MOVE);
	assert_nodes(&pr.item.to_nodes, "0");

	req.busy_threads = 1;
	assert_int_equal(policy_place(&cfg, s, &req, &pr), 0);
	assert_int_equal(pr.item.kind, PLAN_MOVE);
	assert_nodes(&pr.item.to_nodes, "1");
	assert_nodes(&pr.item.to_mems, "1");
	assert_non_null(strstr(pr.item.detail, "by free cores: one for each of its 1 busy thread"));
	snap_unref(s);
}

/* two_llc_host with node 0's caches each half busy (a guest on CPUs 0-1
 * and 4-5) and node 1's first cache full (one on 8-11), node 1's second
 * idle: both nodes equally loaded. */
static struct snapshot *two_llc_loaded(void)
{
	struct snapshot *s = two_llc_host();
	const char *on[2] = { "0-1,4-5", "8-11" }, *id[2] = { "o0", "o1" }, *mems[2] = { "0", "1" };

	for (unsigned i = 0; i < 2; i++) {
		busy_guest(s, id[i], on[i], 4, i, mems[i], i, 256);
		s->nodes[i].busy = 0.5;
	}
	return s;
}

/* A node of two last-level caches: of two nodes equally loaded, a
 * guest's three busy threads go where one cache has three free cores
 * (node 1), not to the lower id whose caches have two each; cores.c then
 * gives it that cache. The advice for such a guest likewise, when its
 * busy threads are named. */
static void test_llc_breaks_the_tie(void **st)
{
	struct snapshot *s = two_llc_loaded();
	struct policy_config cfg;
	struct advice_request req = { .cpus = 3.0, .mem_bytes = 64 * MIB };
	struct advice a;
	const struct plan_item *it;
	struct snap_guest *g;
	struct plan *p;

	(void)st;
	/* g: free to run on both nodes, its memory on both alike. */
	g = busy_guest(s, "g", "0-15", 3, 0, "0-1", 0, 128);
	g->mem_node[1] = 128 * MIB;
	g->cpu_node[0] = g->cpu_node[1] = 1.5;
	s->nodes[0].busy = s->nodes[1].busy = 5.5 / 8;
	p = decide(s, true);
	it = item_of(p, "g");
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_nodes(&it->to_nodes, "1");
	assert_cpus(it->to_cpus, "12-14");
	assert_non_null(strstr(it->detail, "3 busy threads on 3 cores of LLC 3"));
	plan_free(p);
	snap_unref(s);

	/* Advice (the guests' load is in busy; g is not there). */
	s = two_llc_loaded();
	snap_finalize(s);
	policy_config_default(&cfg);
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_nodes(&a.nodes, "0");
	req.busy_threads = 3;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_nodes(&a.nodes, "1");
	assert_non_null(strstr(a.detail, "its 3 busy threads in one last-level cache (by CPUs: nodes 0, no cache with the cores)"));
	snap_unref(s);
}

/* coreload_llcs: each cache of node 0 of two_llc_host with its cores and
 * the load on them, less a guest's own where it is counted; and after
 * coreload_move, where it was moved. */
static void test_llc_loads(void **st)
{
	struct snapshot *s = two_llc_loaded();
	struct llc_load l[4];
	struct coreload *cl;
	cpumask_t own, to;

	(void)st;
	snap_finalize(s);
	cl = coreload_new(s);
	assert_non_null(cl);
	assert_int_equal(coreload_llcs(cl, s, &s->nodes[0], NULL, 0.0, l, 4), 2);
	assert_int_equal(l[0].leader, 0);
	assert_int_equal(l[1].leader, 4);
	assert_int_equal(l[0].cores, 4);
	assert_int_equal(l[1].cores, 4);
	assert_true(fabs(l[0].load - 2.0) < 1e-9 && fabs(l[1].load - 2.0) < 1e-9);
	/* o0's own use (4 CPUs over 0-1,4-5) left out: both caches idle. */
	assert_int_equal(coreload_llcs(cl, s, &s->nodes[0], s->guests[0].cpus, 4.0, l, 4), 2);
	assert_true(fabs(l[0].load) < 1e-9 && fabs(l[1].load) < 1e-9);
	/* At most MAX caches. */
	assert_int_equal(coreload_llcs(cl, s, &s->nodes[0], NULL, 0.0, l, 1), 1);
	/* o0 moved onto 12-15: node 0 idle, node 1's second cache full. */
	mask_zero(&own);
	mask_parse("0-1,4-5", &own);
	mask_zero(&to);
	mask_parse("12-15", &to);
	coreload_move(cl, &own, &to, 4.0);
	assert_int_equal(coreload_llcs(cl, s, &s->nodes[0], NULL, 0.0, l, 4), 2);
	assert_true(fabs(l[0].load) < 1e-9 && fabs(l[1].load) < 1e-9);
	assert_int_equal(coreload_llcs(cl, s, &s->nodes[1], NULL, 0.0, l, 4), 2);
	assert_true(fabs(l[0].load - 4.0) < 1e-9 && fabs(l[1].load - 4.0) < 1e-9);
	coreload_move(NULL, &own, &to, 4.0);
	coreload_free(cl);
	/* A host without several caches or siblings has no coreload. */
	assert_int_equal(coreload_llcs(NULL, s, &s->nodes[0], NULL, 0.0, l, 4), 0);
	snap_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_guests_separate_cores),
		cmocka_unit_test(test_not_whole_cores),
		cmocka_unit_test(test_containers_keep_the_node_by_default),
		cmocka_unit_test(test_use_without_busy_threads),
		cmocka_unit_test(test_big_guest_whole_node),
		cmocka_unit_test(test_no_topology_unchanged),
		cmocka_unit_test(test_one_llc_where_it_fits),
		cmocka_unit_test(test_plain_host_no_coreload),
		cmocka_unit_test(test_smt_beside_kernel_takes_free_cores),
		cmocka_unit_test(test_smt_node_by_free_cores),
		cmocka_unit_test(test_smt_no_free_cores_falls_back),
		cmocka_unit_test(test_smt_short_of_cores_stays_when_nothing_better),
		cmocka_unit_test(test_smt_swap_cpus_to_memory),
		cmocka_unit_test(test_smt_two_floaters_one_memory_node),
		cmocka_unit_test(test_advise_by_free_cores),
		cmocka_unit_test(test_vm_start_by_free_cores),
		cmocka_unit_test(test_llc_breaks_the_tie),
		cmocka_unit_test(test_llc_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

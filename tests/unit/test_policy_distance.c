/* test_policy_distance.c — the cost of moving memory, weighed by how far
 * it travels (issue 43, "Distances and the cost of moving"), and nodes
 * with memory and no CPUs.
 *
 * The generated host is the issue's: 8 nodes in 2 sockets (distances
 * 10 within a node, 12 within a socket, 32 across), 2000 guests, nodes
 * 42-60 % busy. Most guests are local on one node; some have their
 * threads on one node and their memory on another, in the same socket or
 * across. Among them the example: a guest using 0.01 CPU, its
 * threads on node 5 and 16 GiB on node 6.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/policies.h"

#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)
#define SEC 1000000000LL
#define T0 (100000 * SEC)

#define DN 8          /* nodes */
#define DCPUS 32      /* CPUs a node */
#define DGUESTS 2000

static uint32_t lcg(uint32_t *st)
{
	*st = *st * 1664525u + 1013904223u;
	return *st >> 8;
}

static unsigned socket_of(unsigned n)
{
	return n / 4;
}

static void guest_on_node(struct snapshot *s, struct snap_guest *g, unsigned cpu_node)
{
	nodemask_t on;
	cpumask_t cpus;

	mask_zero(&on);
	mask_set(&on, cpu_node);
	snap_nodes_to_cpus(s, &on, &cpus);
	g->cpus = snap_cpumask(s, &cpus);
	g->mems = on;
}

/* The host. The example guest is "docker-tiny". */
static struct snapshot *gen_two_sockets(uint32_t seed)
{
	struct snapshot *s = snap_new();
	struct snap_node sn[DN];
	unsigned dist[DN * DN];
	/* Node 3, in the other socket, is the least busy; node 6 is not
	 * less busy than node 5 by the margin. */
	static const double busy[DN] = { 0.50, 0.48, 0.52, 0.42, 0.56, 0.58, 0.55, 0.60 };
	uint64_t used[DN] = { 0 };
	uint32_t st = seed;

	memset(sn, 0, sizeof(sn));
	for (unsigned i = 0; i < DN; i++) {
		sn[i].id = (int)i;
		for (unsigned c = 0; c < DCPUS; c++)
			mask_set(&sn[i].cpus, i * DCPUS + c);
		sn[i].nr_cpus = DCPUS;
		sn[i].mem_total = 1024 * GIB;
		for (unsigned j = 0; j < DN; j++)
			dist[i * DN + j] = i == j ? 10 : (socket_of(i) == socket_of(j) ? 12 : 32);
	}
	snap_set_nodes(s, sn, DN, dist);
	s->seq = 1;
	s->mono_ns = T0;
	s->numa_balancing = 0;
	for (unsigned gi = 0; gi < DGUESTS; gi++) {
		struct snap_guest *g = snap_add_guest(s);
		unsigned cn = lcg(&st) % DN, mn = cn, kind = lcg(&st) % 100;
		uint64_t mem = (256 + lcg(&st) % 3840) * MIB;

		snprintf(g->id, sizeof(g->id), "docker-g%04u", gi);
		snprintf(g->runtime, sizeof(g->runtime), "docker");
		/* Mostly idle guests, a few busy ones. */
		g->cpu_use = kind < 70 ? (double)(lcg(&st) % 10) / 100.0 : (double)(lcg(&st) % 150) / 100.0;
		g->nr_threads = 4;
		if (kind < 8)
			mn = socket_of(cn) * 4 + (cn % 4 + 1 + lcg(&st) % 3) % 4;  /* same socket */
		else if (kind < 12)
			mn = (1 - socket_of(cn)) * 4 + lcg(&st) % 4;               /* other socket */
		if (mn != cn)
			mem = (1 + lcg(&st) % 16) * GIB;
		guest_on_node(s, g, cn);
		g->mem_node[mn] = mem;
		used[mn] += mem;
	}
	{
		/* The example. */
		struct snap_guest *g = snap_add_guest(s);

		snprintf(g->id, sizeof(g->id), "docker-tiny");
		snprintf(g->runtime, sizeof(g->runtime), "docker");
		g->cpu_use = 0.01;
		g->nr_threads = 4;
		guest_on_node(s, g, 5);
		g->mem_node[6] = 16 * GIB;
		used[6] += 16 * GIB;
	}
	for (unsigned i = 0; i < DN; i++) {
		s->nodes[i].busy = busy[i];
		s->nodes[i].mem_free = s->nodes[i].mem_total - used[i] - 8 * GIB;
	}
	snap_finalize(s);
	return s;
}

struct dcount {
	unsigned moves, crossing, crossing_same_socket;
	uint64_t bytes;
};

/* The moves of P that migrate memory across sockets: some of the guest's
 * memory leaves a node of the other socket than every node it goes to. */
static void count_moves(const struct snapshot *s, const struct plan *p, struct dcount *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];
		const struct snap_guest *g = &s->guests[it->guest_idx];
		bool cross = false, same = true;
		unsigned tsock = 99;

		if (it->kind != PLAN_MOVE)
			continue;
		c->moves++;
		c->bytes += it->migrate_bytes;
		mask_foreach(id, &it->to_mems)
			tsock = socket_of((unsigned)id);
		for (unsigned n = 0; n < s->nr_nodes; n++) {
			if (!g->mem_node[n])
				continue;
			if (!mask_test(&it->to_mems, (unsigned)n) && socket_of(n) != tsock && it->migrate_bytes)
				cross = true;
			mask_foreach(id, &g->cpu_nodes)
				if (socket_of((unsigned)id) != socket_of(n))
					same = false;
		}
		c->crossing += cross;
		c->crossing_same_socket += cross && same;
	}
}

static const struct plan_item *find_item(const struct plan *p, const char *id)
{
	for (unsigned i = 0; i < p->nr_items; i++)
		if (strcmp(p->items[i].guest_id, id) == 0)
			return &p->items[i];
	return NULL;
}

/* One decision on S with CFG: the counts, and docker-tiny's item (its
 * kind, nodes and migration) into *TINY. */
static void decide_count(const struct policy_config *cfg, const struct snapshot *s, const char *what,
			 struct dcount *c, struct plan_item *tiny)
{
	struct plan *p;
	struct pstate *next;
	const struct plan_item *it;
	char to[64];

	assert_int_equal(policy_decide(cfg, s, NULL, true, &p, &next), 0);
	count_moves(s, p, c);
	it = find_item(p, "docker-tiny");
	assert_non_null(it);
	*tiny = *it;
	tiny->to_cpus = NULL;
	mask_format(&it->to_nodes, to, sizeof(to));
	print_message("%s: %u moves, %u across sockets (%u of guests whose threads and memory shared a socket), "
		      "%.1f GiB; docker-tiny: %s to node %s, %llu MiB: %s\n",
		      what, c->moves, c->crossing, c->crossing_same_socket, (double)c->bytes / GIB,
		      plan_kind_name(it->kind), to, (unsigned long long)(it->migrate_bytes / MIB), it->detail);
	plan_free(p);
	pstate_free(next);
}

/* The example, with the default budgets and with them lifted. */
static void test_two_sockets_distance_cost(void **state)
{
	struct snapshot *s = gen_two_sockets(43);
	struct policy_config cfg;
	struct dcount c, cl;
	struct plan_item tiny, tinyl;

	(void)state;
	policy_config_default(&cfg);
	decide_count(&cfg, s, "default budgets", &c, &tiny);
	cfg.max_moves = 100000;
	cfg.max_migrate_bytes = 1ULL << 50;
	decide_count(&cfg, s, "budgets lifted", &cl, &tinyl);
	snap_unref(s);

	/* A guest using 0.01 CPU drags no memory anywhere: its CPUs go to its
	 * memory (node 6, the same socket), nothing migrated. */
	assert_int_equal(tinyl.kind, PLAN_MOVE);
	assert_true(mask_test(&tinyl.to_nodes, 6) && mask_count(&tinyl.to_nodes) == 1);
	assert_int_equal(tinyl.migrate_bytes, 0);
	/* Its record says the nodes and why: the migration it spared, and
	 * how far it would have gone (node 5 to 6, the same socket). */
	assert_non_null(strstr(tinyl.detail, "move nodes 5→6 (mems 6)"));
	assert_non_null(strstr(tinyl.detail, "; CPUs to its memory, not 16384 MiB over distance 12"));
	assert_non_null(strstr(tiny.detail, "; CPUs to its memory, not 16384 MiB over distance 12"));
	assert_int_equal(c.crossing_same_socket, 0);
	assert_int_equal(cl.crossing_same_socket, 0);
}

/* A host with a memory-only node (a CXL expander): nodes 0 and 1 with
 * 8 CPUs and 16 GiB, node 2 with 64 GiB and no CPUs, farther (distances
 * 10/21/30). Guests: "a" runs on node 0 with 1 GiB there and 3 GiB on
 * node 2; "p" is pinned to nodes 0 and 2 (it runs on node 1); "n" is new
 * (no use measured yet). TIERING: kernel.numa_balancing = 2. */
static struct snapshot *cxl_host(bool tiering)
{
	static const unsigned dist[9] = { 10, 21, 30, 21, 10, 30, 30, 30, 10 };
	struct snapshot *s = snap_new();
	struct snap_node sn[3];
	struct snap_guest *g;
	nodemask_t pin;

	memset(sn, 0, sizeof(sn));
	for (unsigned i = 0; i < 3; i++) {
		sn[i].id = (int)i;
		sn[i].mem_total = (i == 2 ? 64 : 16) * GIB;
		sn[i].mem_free = (i == 2 ? 48 : 10) * GIB;
		sn[i].busy = i == 2 ? NAN : 0.2;
		if (i < 2) {
			for (unsigned c = 0; c < 8; c++)
				mask_set(&sn[i].cpus, i * 8 + c);
			sn[i].nr_cpus = 8;
		}
	}
	snap_set_nodes(s, sn, 3, dist);
	s->mono_ns = T0;
	s->numa_balancing = tiering ? 2 : 0;
	s->demotion_enabled = tiering ? 1 : 0;
	g = snap_add_guest(s);
	snprintf(g->id, sizeof(g->id), "a");
	g->cpu_use = 1.0;
	g->nr_threads = 2;
	guest_on_node(s, g, 0);
	mask_set(&g->mems, 2);
	g->mem_node[0] = 1 * GIB;
	g->mem_node[2] = 3 * GIB;
	g = snap_add_guest(s);
	snprintf(g->id, sizeof(g->id), "p");
	g->cpu_use = 1.0;
	g->nr_threads = 2;
	guest_on_node(s, g, 1);
	g->mem_node[1] = 1 * GIB;
	g->policy.mode = GPOL_PINNED;
	mask_zero(&pin);
	mask_set(&pin, 0);
	mask_set(&pin, 2);
	g->policy.nodes = pin;
	snap_finalize(s);
	return s;
}

static void assert_no_cpu_on_memory_only(const struct snapshot *s, const struct plan *p)
{
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		if (it->kind != PLAN_MOVE)
			continue;
		assert_false(mask_test(&it->to_nodes, 2));
		assert_non_null(it->to_cpus);
		for (unsigned c = 16; c < 24; c++)
			assert_false(mask_test(it->to_cpus, c));
	}
}

/* Tiering off: the memory-only node is never a CPU target (a guest's
 * own placement, a pin naming it, advice); its memory is remote and is
 * pulled to the guest's CPU node, the cost counted by distance. */
static void test_memory_only_node_no_tiering(void **state)
{
	struct snapshot *s = cxl_host(false);
	struct policy_config cfg;
	struct plan *p;
	struct pstate *next;
	const struct plan_item *a, *pi;
	struct advice_request req = { .cpus = 9.0, .mem_bytes = 2 * GIB };
	struct advice adv;

	(void)state;
	policy_config_default(&cfg);
	assert_false(snap_memory_tiering(s));
	assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
	assert_no_cpu_on_memory_only(s, p);
	a = find_item(p, "a");
	pi = find_item(p, "p");
	assert_non_null(a);
	assert_non_null(pi);
	print_message("a: %s; p: %s\n", a->detail, pi->detail);
	assert_int_equal(a->kind, PLAN_MOVE);
	assert_false(mask_test(&a->to_mems, 2));
	assert_int_equal(a->migrate_bytes, 3 * GIB);
	/* The record's cost: 3 GiB over distance 30, in GiB at distance 20. */
	assert_non_null(strstr(a->detail, "; cost 4.5 GiB×distance/20, farthest 30"));
	assert_int_equal(pi->kind, PLAN_MOVE);
	assert_true(mask_test(&pi->to_nodes, 0) && mask_count(&pi->to_nodes) == 1);
	plan_free(p);
	pstate_free(next);
	/* Advice for more CPUs than a node has: both CPU nodes, never 2. */
	assert_int_equal(policy_advise(&cfg, s, &req, &adv), 0);
	assert_true(adv.ok);
	assert_false(mask_test(&adv.nodes, 2));
	snap_unref(s);
}

/* Tiering on (numa_balancing = 2, demotion on): its memory on the
 * memory-only node is the kernel's tier, left where the kernel put it:
 * that node stays in its mems, nothing of it migrates, and a guest local
 * but for it is not moved for it. */
static void test_memory_only_node_tiering(void **state)
{
	struct snapshot *s = cxl_host(true);
	struct policy_config cfg;
	struct plan *p;
	struct pstate *next;
	const struct plan_item *a;

	(void)state;
	policy_config_default(&cfg);
	assert_true(snap_memory_tiering(s));
	assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
	assert_no_cpu_on_memory_only(s, p);
	a = find_item(p, "a");
	assert_non_null(a);
	print_message("a: %s %s\n", plan_kind_name(a->kind), a->detail);
	assert_int_equal(a->migrate_bytes, 0);
	assert_true(a->kind != PLAN_MOVE || mask_test(&a->to_mems, 2));
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}


/* No move of P puts a CPU on memory-only node NODE, whose CPU ids would
 * start at FIRST_CPU (it has none). */
static void assert_no_cpu_on_memory_only_of(const struct plan *p, unsigned node, unsigned first_cpu)
{
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		if (it->kind != PLAN_MOVE)
			continue;
		assert_false(mask_test(&it->to_nodes, node));
		assert_non_null(it->to_cpus);
		for (unsigned c = first_cpu; c < first_cpu + 8; c++)
			assert_false(mask_test(it->to_cpus, c));
	}
}

/* The twosocket testbed's shape (tests/numa-vm/scenarios/twosocket.scn):
 * nodes 0-1 and 2-3 in two sockets (10/12/32), node 4 with MO_MIB of
 * memory and no CPUs at 40 from every CPU node; NODE_MIB and CPUS a CPU
 * node. FREE_MIB and BUSY: each node's free memory and load. */
static struct snapshot *twosocket_host(unsigned cpus, uint64_t node_mib, uint64_t mo_mib,
				       const uint64_t free_mib[5], const double busy[5])
{
	static const unsigned dist[25] = {
		10, 12, 32, 32, 40,
		12, 10, 32, 32, 40,
		32, 32, 10, 12, 40,
		32, 32, 12, 10, 40,
		40, 40, 40, 40, 10,
	};
	struct snapshot *s = snap_new();
	struct snap_node sn[5];

	memset(sn, 0, sizeof(sn));
	for (unsigned i = 0; i < 5; i++) {
		sn[i].id = (int)i;
		sn[i].mem_total = (i == 4 ? mo_mib : node_mib) * MIB;
		sn[i].mem_free = free_mib[i] * MIB;
		sn[i].busy = i == 4 ? NAN : busy[i];
		if (i < 4) {
			for (unsigned c = 0; c < cpus; c++)
				mask_set(&sn[i].cpus, i * cpus + c);
			sn[i].nr_cpus = cpus;
		}
	}
	snap_set_nodes(s, sn, 5, dist);
	s->mono_ns = T0;
	s->numa_balancing = 0;
	return s;
}

/* twosocket_host with 16 GiB and 8 CPUs a node, all nodes 10 % busy,
 * FREE_GIB free on each. */
static struct snapshot *twosocket_big(const unsigned free_gib[5])
{
	static const double busy[5] = { 0.1, 0.1, 0.1, 0.1, 0.1 };
	uint64_t free_mib[5];

	for (unsigned i = 0; i < 5; i++)
		free_mib[i] = (uint64_t)free_gib[i] * 1024;
	return twosocket_host(8, 16384, 16384, free_mib, busy);
}

/* "big", one busy docker thread on node 0, 6 GiB there and 6 GiB on node
 * OTHER: more than any node holds. */
static void big_guest(struct snapshot *s, unsigned other)
{
	struct snap_guest *g = snap_add_guest(s);

	snprintf(g->id, sizeof(g->id), "big");
	snprintf(g->runtime, sizeof(g->runtime), "docker");
	g->cpu_use = 1.0;
	g->nr_threads = 1;
	g->busy_threads = 1;
	g->busy_measured = true;
	guest_on_node(s, g, 0);
	for (unsigned n = 1; n < 5; n++)
		mask_set(&g->mems, n);
	g->mem_node[0] = 6 * GIB;
	g->mem_node[other] = 6 * GIB;
}

/* A guest larger than any node must span: its busy thread on node 0
 * with 6 GiB there, 6 GiB on node 3 in the other socket. The
 * memory-only node 4 has the most room (11 GiB free) and node 1, node
 * 0's socket sibling, less (8 GiB): the split keeps node 0 for its
 * thread and takes its other memory node by distance — node 1 — not by
 * room (node 4, which it got before), and never puts a CPU on node 4. */
static void test_span_by_distance_memory_only_last(void **state)
{
	static const unsigned free_gib[5] = { 4, 8, 9, 1, 11 };
	struct snapshot *s = twosocket_big(free_gib);
	struct policy_config cfg;
	const struct plan_item *it;
	struct pstate *next;
	struct plan *p;

	(void)state;
	big_guest(s, 3);
	snap_finalize(s);
	policy_config_default(&cfg);
	assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
	it = find_item(p, "big");
	assert_non_null(it);
	print_message("big: %s %s\n", plan_kind_name(it->kind), it->detail);
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_true(it->split);
	assert_int_equal(it->first_node, 0);
	assert_true(mask_test(&it->to_nodes, 0) && mask_count(&it->to_nodes) == 1);
	assert_true(mask_test(&it->to_mems, 0));
	assert_true(mask_test(&it->to_mems, 1));
	assert_false(mask_test(&it->to_mems, 4));
	assert_false(mask_test(&it->to_mems, 2) || mask_test(&it->to_mems, 3));
	/* its record says what the journey costs: 6 GiB from node 3 (32 away) */
	assert_non_null(strstr(it->detail, "; cost 9.6 GiB×distance/20, farthest 32"));
	assert_no_cpu_on_memory_only_of(p, 4, 32);
	plan_free(p);
	pstate_free(next);
	snap_unref(s);

	/* With the CPU nodes full but node 0 and half of it already on the
	 * memory-only node, which cannot hold it all either: that node comes
	 * last, but it comes, and still gets no CPU. */
	{
		static const unsigned full[5] = { 4, 0, 0, 0, 5 };

		s = twosocket_big(full);
		big_guest(s, 4);
		snap_finalize(s);
		assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
		it = find_item(p, "big");
		assert_non_null(it);
		print_message("big, CPU nodes full: %s %s\n", plan_kind_name(it->kind), it->detail);
		assert_int_equal(it->kind, PLAN_MOVE);
		assert_true(it->split);
		assert_true(mask_test(&it->to_nodes, 0) && mask_count(&it->to_nodes) == 1);
		assert_true(mask_test(&it->to_mems, 0) && mask_test(&it->to_mems, 4));
		assert_int_equal(mask_count(&it->to_mems), 2);
		assert_no_cpu_on_memory_only_of(p, 4, 32);
		plan_free(p);
		pstate_free(next);
		snap_unref(s);
	}
}

/* Tiering on, cycle after cycle: "a", local on node 0 but for its 3 GiB
 * in the tier (node 2), is settled each cycle with the tier named — not
 * a "not less busy" skip for memory nothing here will move, which came
 * every cycle. Its huge pages on node 2 are no tier: with them there it
 * is remote and decided as before. */
static void test_tiering_local_but_for_tier_is_settled(void **state)
{
	struct snapshot *s = cxl_host(true);
	struct policy_config cfg;
	struct pstate *prev = NULL, *next;
	const struct plan_item *a;
	struct plan *p;

	(void)state;
	policy_config_default(&cfg);
	for (unsigned cyc = 0; cyc < 3; cyc++) {
		s->seq = cyc + 1;
		s->mono_ns = T0 + (int64_t)cyc * 10 * SEC;
		assert_int_equal(policy_decide(&cfg, s, prev, true, &p, &next), 0);
		a = find_item(p, "a");
		assert_non_null(a);
		print_message("cycle %u a: %s %s\n", cyc, plan_kind_name(a->kind), a->detail);
		assert_int_equal(a->kind, PLAN_SETTLED);
		assert_non_null(strstr(a->detail, "3072 MiB in the kernel's memory tier"));
		assert_int_equal(a->migrate_bytes, 0);
		plan_free(p);
		pstate_free(prev);
		prev = next;
	}
	pstate_free(prev);
	snap_unref(s);

	/* Its memory on node 2 hugetlb: no tier, not settled for it. */
	s = cxl_host(true);
	for (unsigned i = 0; i < s->nr_guests; i++)
		if (strcmp(s->guests[i].id, "a") == 0) {
			snap_guest_huge(s, &s->guests[i])[2] = 3 * GIB;
			s->guests[i].huge_page = 2 * MIB;
		}
	snap_finalize(s);
	assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
	a = find_item(p, "a");
	assert_non_null(a);
	print_message("a, hugetlb on node 2: %s %s\n", plan_kind_name(a->kind), a->detail);
	assert_null(strstr(a->detail, "tier"));
	plan_free(p);
	pstate_free(next);
	snap_unref(s);

	/* Local but for its tier and 1 GiB more on node 1: not local, not
	 * settled for the tier. */
	s = cxl_host(true);
	for (unsigned i = 0; i < s->nr_guests; i++)
		if (strcmp(s->guests[i].id, "a") == 0) {
			s->guests[i].mem_node[1] = 2 * GIB;
			mask_set(&s->guests[i].mems, 1);
		}
	snap_finalize(s);
	assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
	a = find_item(p, "a");
	assert_non_null(a);
	print_message("a, 2 GiB on node 1 too: %s %s\n", plan_kind_name(a->kind), a->detail);
	assert_true(a->kind != PLAN_SETTLED);
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

/* The testbed's twosocket-misplaced as the agent measured it in its first
 * cycle: two sockets of two 2-CPU nodes (768 MiB each; distances 10/12/32)
 * and a 512 MiB memory-only node 4 (40 from all); four unrestricted
 * guests of one busy thread (two threads in all) and 256 MiB, web1/web2's
 * memory on node 0 and db1/db2's on node 2, their threads by chance on
 * nodes 0, 1, 0 and 2. Two one-thread guests fit each 2-CPU node that
 * holds their memory without headroom (local fit): their CPUs go to it,
 * nothing migrates. Within a socket a move costs 12/20 of a remote one,
 * and weighed against the load alone an idle sibling node (util 0.5
 * against 1.0) paid for it: web1 went to node 1 with 256 MiB, and db1 or
 * db2 would follow to node 3 after its cool-down. */
static void test_twosocket_cpus_to_memory(void **state)
{
	static const struct {
		const char *id;
		double use;
		unsigned mem_node, runs_on;
	} gs[] = { { "web1", 1.00, 0, 0 }, { "web2", 0.99, 0, 1 }, { "db1", 1.02, 2, 0 }, { "db2", 1.00, 2, 2 } };
	static const uint64_t free_mib[5] = { 212, 715, 224, 630, 496 };
	static const double busy[5] = { 1.0, 0.5, 0.5, 0.02, 0.0 };
	struct snapshot *s = twosocket_host(2, 768, 512, free_mib, busy);
	struct policy_config cfg;
	struct plan *p;
	struct pstate *next;
	unsigned home = 0;

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		struct snap_guest *g = snap_add_guest(s);
		cpumask_t c;

		snprintf(g->id, sizeof(g->id), "%s", gs[i].id);
		snprintf(g->runtime, sizeof(g->runtime), "docker");
		g->cpu_use = gs[i].use;
		g->nr_threads = 2;
		g->busy_threads = 1;
		g->busy_measured = true;
		mask_parse("0-7", &c);
		g->cpus = snap_cpumask(s, &c);
		mask_parse("0-4", &g->mems);
		g->cpu_node = calloc(5, sizeof(double));
		assert_non_null(g->cpu_node);
		g->cpu_node[gs[i].runs_on] = gs[i].use;
		g->mem_node[gs[i].mem_node] = 256 * MIB;
	}
	snap_finalize(s);
	policy_config_default(&cfg);
	assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
	for (unsigned i = 0; i < 4; i++) {
		const struct plan_item *it = find_item(p, gs[i].id);
		char to[32];

		assert_non_null(it);
		mask_format(&it->to_nodes, to, sizeof(to));
		print_message("%s: %s to %s, %llu MiB: %s\n", it->guest_id, plan_kind_name(it->kind), to,
			      (unsigned long long)(it->migrate_bytes / MIB), it->detail);
		home += it->kind == PLAN_MOVE && mask_count(&it->to_nodes) == 1 &&
			mask_test(&it->to_nodes, gs[i].mem_node) && it->migrate_bytes < MIB;
	}
	assert_int_equal(home, 4);
	assert_int_equal(p->migrate_bytes, 0);
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

/* The same host once placed so (a later cycle, the cool-down over): two
 * guests local on each of nodes 0 and 2, their threads on the node's two
 * CPUs, nodes 1 and 3 idle. No load case: a guest whose node holds its
 * memory and its thread is not sent with 256 MiB to the idle sibling. */
static void test_twosocket_placed_stays(void **state)
{
	static const uint64_t free_mib[5] = { 212, 715, 224, 630, 496 };
	static const double busy[5] = { 1.0, 0.01, 1.0, 0.01, 0.0 };
	static const char *const ids[4] = { "web1", "web2", "db1", "db2" };
	struct snapshot *s = twosocket_host(2, 768, 512, free_mib, busy);
	struct policy_config cfg;
	struct plan *p;
	struct pstate *next;

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		struct snap_guest *g = snap_add_guest(s);
		unsigned node = i < 2 ? 0 : 2;
		cpumask_t c;

		snprintf(g->id, sizeof(g->id), "%s", ids[i]);
		snprintf(g->runtime, sizeof(g->runtime), "docker");
		g->cpu_use = 1.0;
		g->nr_threads = 2;
		g->busy_threads = 1;
		g->busy_measured = true;
		mask_parse(node ? "4-5" : "0-1", &c);
		g->cpus = snap_cpumask(s, &c);
		mask_parse("0-4", &g->mems);
		g->cpu_node = calloc(5, sizeof(double));
		assert_non_null(g->cpu_node);
		g->cpu_node[node] = 1.0;
		g->mem_node[node] = 256 * MIB;
	}
	snap_finalize(s);
	policy_config_default(&cfg);
	assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
	for (unsigned i = 0; i < p->nr_items; i++)
		print_message("%s: %s, %llu MiB: %s\n", p->items[i].guest_id, plan_kind_name(p->items[i].kind),
			      (unsigned long long)(p->items[i].migrate_bytes / MIB), p->items[i].detail);
	assert_int_equal(p->nr_moves, 0);
	assert_int_equal(p->migrate_bytes, 0);
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_sockets_distance_cost),
		cmocka_unit_test(test_memory_only_node_no_tiering),
		cmocka_unit_test(test_memory_only_node_tiering),
		cmocka_unit_test(test_span_by_distance_memory_only_last),
		cmocka_unit_test(test_tiering_local_but_for_tier_is_settled),
		cmocka_unit_test(test_twosocket_cpus_to_memory),
		cmocka_unit_test(test_twosocket_placed_stays),
	};

	return cmocka_run_group_tests_name("policy_distance", tests, NULL, NULL);
}

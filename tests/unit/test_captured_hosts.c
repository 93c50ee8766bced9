/* test_captured_hosts.c — the hypervisor host shapes of issue 43 as the
 * testbed's real kernel shows them, read through the agent's own readers
 * (agents/topo.c, agents/devnode.c) from trees captured in the VM
 * (tests/numa-vm/numavm.py capture NAME --vm SCENARIO,
 * guest/capture_fixture.sh):
 *
 *   vm-twosocket (twosocket.scn): four CPU nodes in two sockets,
 *     distances 10/12/32, node 4 with memory and no CPUs at 40, a PCI
 *     expander bridge on node 1 with a virtio-rng behind it;
 *   vm-smt (smt.scn): -smp 8,sockets=2,cores=2,threads=2, a node per
 *     socket, an L3 per socket;
 *   vm-hugetlb (hugetlb-host.scn): four nodes whose 2 MiB pools were
 *     reserved as 40/24/16/0 pages, two containers holding huge pages
 *     (16 on node 0, 10 on node 1) while the files were read, the hugetlb
 *     controller on in their cgroups.
 *
 * What is checked is what the kernel wrote (the scenario asked QEMU for
 * it): the distance rows, the memory-only node, each CPU's core and
 * last-level cache, the devices' nodes, the hugetlb pools and the
 * guests' huge pages per node; and that a plan decided over the
 * two-socket tree never gives a CPU to the memory-only node.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/cgscan.h"
#include "agents/devnode.h"
#include "agents/hugetlb.h"
#include "agents/topo.h"
#include "orchestrator/base/hostpaths.h"
#include "policies/policies.h"

#define FIXTURES "tests/fixtures"
#define MIB (1024ULL * 1024ULL)
#define SEC 1000000000LL

struct host {
	struct host_paths hp;
	struct snap_node *nodes;
	unsigned nr, *dist;
	struct topo_cputopo t;
};

static void load(struct host *h, const char *name)
{
	char root[512];

	memset(h, 0, sizeof(*h));
	snprintf(root, sizeof(root), FIXTURES "/%s", name);
	assert_int_equal(host_paths_from_root(&h->hp, root), 0);
	assert_int_equal(topo_read_nodes(&h->hp, &h->nodes, &h->nr, &h->dist), 0);
	topo_read_cputopo(&h->hp, h->nodes, h->nr, &h->t);
}

static void unload(struct host *h)
{
	topo_cputopo_free(&h->t);
	free(h->nodes);
	free(h->dist);
}

/* ---- vm-twosocket --------------------------------------------------- */

static const unsigned twosocket_dist[5][5] = {
	{ 10, 12, 32, 32, 40 },
	{ 12, 10, 32, 32, 40 },
	{ 32, 32, 10, 12, 40 },
	{ 32, 32, 12, 10, 40 },
	{ 40, 40, 40, 40, 10 },
};

static void test_twosocket_distances_and_memory_only(void **state)
{
	struct host h;
	char buf[64];

	(void)state;
	load(&h, "vm-twosocket");
	assert_int_equal(h.nr, 5);
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(h.nodes[i].id, (int)i);
		for (unsigned j = 0; j < 5; j++)
			assert_int_equal(h.dist[i * 5 + j], twosocket_dist[i][j]);
	}
	/* Two CPUs a CPU node (0-1, 2-3, ...), memory on every node. */
	for (unsigned i = 0; i < 4; i++) {
		char want[16];

		assert_int_equal(h.nodes[i].nr_cpus, 2);
		assert_int_equal(mask_format(&h.nodes[i].cpus, buf, sizeof(buf)), 0);
		snprintf(want, sizeof(want), "%u-%u", 2 * i, 2 * i + 1);
		assert_string_equal(buf, want);
		assert_true(h.nodes[i].mem_total > 600 * MIB && h.nodes[i].mem_total <= 768 * MIB);
	}
	/* Node 4: 512 MiB and no CPU. */
	assert_int_equal(h.nodes[4].nr_cpus, 0);
	assert_true(mask_empty(&h.nodes[4].cpus));
	assert_true(h.nodes[4].mem_total > 400 * MIB && h.nodes[4].mem_total <= 512 * MIB);
	/* One socket a node (-smp ...,sockets=4 under -numa): each CPU its own
	 * core, the L3 its node's. */
	assert_int_equal(h.t.nr, 8);
	for (unsigned c = 0; c < 8; c++) {
		assert_int_equal(h.t.core[c], (int)c);
		assert_int_equal(h.t.llc[c], (int)(c & ~1u));
	}
	unload(&h);
}

/* The expander bridge and the device behind it on node 1 (the bridge's
 * _PXM), the host bridge's functions with no node. */
static void test_twosocket_pxb_device_node(void **state)
{
	struct host h;
	int node = 42;

	(void)state;
	load(&h, "vm-twosocket");
	assert_int_equal(devnode_of(&h.hp, DEVNODE_PCI, "0000:21:00.0", &node), 0);
	assert_int_equal(node, 1);
	assert_int_equal(devnode_of(&h.hp, DEVNODE_PCI, "0000:20:00.0", &node), 0);
	assert_int_equal(node, 1);
	assert_int_equal(devnode_of(&h.hp, DEVNODE_PCI, "0000:00:01.1", &node), 0);
	assert_int_equal(node, -1);
	assert_int_equal(devnode_of(&h.hp, DEVNODE_PCI, "0000:99:00.0", &node), -ENOENT);
	unload(&h);
}

/* A guest on CPU_NODE's CPUs (every CPU: -1), BYTES on MEM_NODE, its
 * cpuset.mems every node. */
static struct snap_guest *guest(struct snapshot *s, const char *id, double use, int cpu_node,
				unsigned mem_node, uint64_t bytes)
{
	struct snap_guest *g = snap_add_guest(s);
	nodemask_t all, on;
	cpumask_t cpus;

	snprintf(g->id, sizeof(g->id), "%s", id);
	snprintf(g->runtime, sizeof(g->runtime), "docker");
	g->cpu_use = use;
	g->nr_threads = 1;
	g->busy_threads = use >= 0.5 ? 1 : 0;
	g->busy_measured = true;
	mask_zero(&all);
	for (unsigned n = 0; n < s->nr_nodes; n++)
		mask_set(&all, (unsigned)s->nodes[n].id);
	mask_zero(&on);
	if (cpu_node >= 0)
		mask_set(&on, (unsigned)cpu_node);
	snap_nodes_to_cpus(s, cpu_node >= 0 ? &on : &all, &cpus);
	g->cpus = snap_cpumask(s, &cpus);
	g->mems = all;
	g->mem_node[mem_node] = bytes;
	return g;
}

/* Plans over the captured two-socket tree, the guests' memory on the
 * memory-only node (as the in-VM memory_only_node_gets_no_cpus puts
 * one), cycle after cycle, with and without the kernel tiering: node 4
 * is never a CPU target, no move's CPUs are outside the CPU nodes, and
 * advice for more CPUs than a node has names CPU nodes only. */
static void test_twosocket_memory_only_never_a_cpu_target(void **state)
{
	struct host h;
	struct policy_config cfg;
	cpumask_t cpu_nodes_cpus;
	nodemask_t cn;

	(void)state;
	load(&h, "vm-twosocket");
	policy_config_default(&cfg);
	for (unsigned tier = 0; tier < 2; tier++) {
		struct snapshot *s = snap_new();
		struct pstate *prev = NULL, *next;
		struct advice_request req = { .cpus = 3.0, .mem_bytes = 64 * MIB };
		struct advice adv;

		snap_set_nodes(s, h.nodes, h.nr, h.dist);
		snap_set_cputopo(s, h.t.core, h.t.llc, h.t.nr);
		for (unsigned n = 0; n < 4; n++)
			s->nodes[n].busy = 0.1 + 0.2 * n;
		s->numa_balancing = tier ? 2 : 0;
		s->demotion_enabled = tier ? 1 : 0;
		guest(s, "onmem", 1.0, -1, 4, 64 * MIB);
		guest(s, "far", 1.0, 3, 4, 128 * MIB);
		guest(s, "idle", 0.01, 2, 4, 32 * MIB);
		guest(s, "local", 1.0, 1, 1, 96 * MIB);
		snap_finalize(s);
		mask_zero(&cn);
		for (unsigned n = 0; n < 4; n++)
			mask_set(&cn, n);
		snap_nodes_to_cpus(s, &cn, &cpu_nodes_cpus);
		for (unsigned cyc = 0; cyc < 3; cyc++) {
			struct plan *p;

			s->seq = cyc + 1;
			s->mono_ns = (100000 + (int64_t)cyc * 10) * SEC;
			assert_int_equal(policy_decide(&cfg, s, prev, true, &p, &next), 0);
			for (unsigned i = 0; i < p->nr_items; i++) {
				const struct plan_item *it = &p->items[i];

				print_message("tiering %u cycle %u %s: %s %s\n", tier, cyc, it->guest_id,
					      plan_kind_name(it->kind), it->detail);
				assert_false(mask_test(&it->to_nodes, 4));
				if (it->kind != PLAN_MOVE)
					continue;
				assert_non_null(it->to_cpus);
				assert_false(mask_empty(it->to_cpus));
				mask_foreach(c, it->to_cpus)
					assert_true(mask_test(&cpu_nodes_cpus, (unsigned)c));
			}
			plan_note_cooldowns(p, next);
			plan_free(p);
			pstate_free(prev);
			prev = next;
		}
		pstate_free(prev);
		assert_int_equal(policy_advise(&cfg, s, &req, &adv), 0);
		assert_true(adv.ok);
		assert_false(mask_test(&adv.nodes, 4));
		snap_unref(s);
	}
	unload(&h);
}

/* ---- vm-smt ----------------------------------------------------------- */

/* Two nodes of two cores x two threads: siblings 0-1, 2-3, 4-5, 6-7 (the
 * kernel's core_cpus_list), an L3 per node (0-3, 4-7), distance 20; the
 * snapshot's per-node counts from them. */
static void test_smt_cores_and_llcs(void **state)
{
	static const int core[8] = { 0, 0, 2, 2, 4, 4, 6, 6 }, llc[8] = { 0, 0, 0, 0, 4, 4, 4, 4 };
	struct snapshot *s;
	struct host h;

	(void)state;
	load(&h, "vm-smt");
	assert_int_equal(h.nr, 2);
	assert_int_equal(h.dist[0], 10);
	assert_int_equal(h.dist[1], 20);
	assert_int_equal(h.dist[2], 20);
	assert_int_equal(h.dist[3], 10);
	assert_int_equal(h.nodes[0].nr_cpus, 4);
	assert_int_equal(h.nodes[1].nr_cpus, 4);
	assert_int_equal(h.t.nr, 8);
	for (unsigned c = 0; c < 8; c++) {
		assert_int_equal(h.t.core[c], core[c]);
		assert_int_equal(h.t.llc[c], llc[c]);
	}
	s = snap_new();
	snap_set_nodes(s, h.nodes, h.nr, h.dist);
	snap_set_cputopo(s, h.t.core, h.t.llc, h.t.nr);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(s->nodes[i].nr_cores, 2);
		assert_int_equal(s->nodes[i].threads_per_core, 2);
		assert_int_equal(s->nodes[i].nr_llcs, 1);
	}
	assert_int_equal(snap_cpu_core(s, 7), 6);
	assert_int_equal(snap_cpu_llc(s, 5), 4);
	snap_unref(s);
	unload(&h);
}

/* A one-thread guest measured busy, moved to node 0 of the captured SMT
 * tree with [policy] container_cores = yes: one whole core (both
 * siblings), the one another guest does not load; with container_cores =
 * no, the whole node. */
static void test_smt_container_gets_a_whole_free_core(void **state)
{
	struct host h;
	struct policy_config cfg;

	(void)state;
	load(&h, "vm-smt");
	for (unsigned cc = 0; cc < 2; cc++) {
		struct snapshot *s = snap_new();
		struct snap_guest *g, *o;
		const struct plan_item *it = NULL;
		struct pstate *next;
		struct plan *p;
		nodemask_t n0;
		cpumask_t cpus;
		char buf[64];

		policy_config_default(&cfg);
		cfg.container_cores = cc;
		snap_set_nodes(s, h.nodes, h.nr, h.dist);
		snap_set_cputopo(s, h.t.core, h.t.llc, h.t.nr);
		s->nodes[0].busy = 0.25;
		s->nodes[1].busy = 0.5;
		/* "o": busy on CPU 0 (core 0), local on node 0. */
		o = guest(s, "o", 1.0, 0, 0, 32 * MIB);
		mask_zero(&cpus);
		mask_set(&cpus, 0);
		o->cpus = snap_cpumask(s, &cpus);
		/* "g": on node 1, its memory on node 0. */
		g = guest(s, "g", 1.0, 1, 0, 64 * MIB);
		g->busy_threads = 1;
		snap_finalize(s);
		assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
		for (unsigned i = 0; i < p->nr_items; i++)
			if (strcmp(p->items[i].guest_id, "g") == 0)
				it = &p->items[i];
		assert_non_null(it);
		print_message("container_cores %u: g %s %s\n", cc, plan_kind_name(it->kind), it->detail);
		assert_int_equal(it->kind, PLAN_MOVE);
		assert_int_equal(mask_format(it->to_cpus, buf, sizeof(buf)), 0);
		mask_zero(&n0);
		mask_set(&n0, 0);
		assert_true(mask_equal(&it->to_nodes, &n0));
		assert_string_equal(buf, cc ? "2-3" : "0-3");
		plan_free(p);
		pstate_free(next);
		snap_unref(s);
	}
	unload(&h);
}

/* ---- vm-hugetlb ------------------------------------------------------- */

#define HPAGE (2ULL * MIB)
#define GPAGE (1024ULL * MIB)
#define DOCKER_ID "docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define POD_ID "kubernetes-11112222-3333-4444-5555-666677778888"

/* The pools as the kernel wrote them (node<N>/hugepages/hugepages-2048kB/
 * nr_hugepages, free_hugepages, surplus_hugepages):
 *   node 0: 40 40-16=24 0   (the docker guest's 16 pages)
 *   node 1: 24 24-10=14 0   (the pod's 10 pages)
 *   node 2: 16 16       0
 *   node 3:  0  0       0
 * and a 1 GiB pool of 0/0/0 on each (hugepages-1048576kB): the agent
 * lists both sizes, smallest first. /proc/meminfo agrees: HugePages_Total
 * 80, HugePages_Free 54. */
static const uint64_t hpool2m[4][3] = { { 40, 24, 0 }, { 24, 14, 0 }, { 16, 16, 0 }, { 0, 0, 0 } };

static void test_hugetlb_pools(void **state)
{
	struct snapshot *s;
	struct host h;

	(void)state;
	load(&h, "vm-hugetlb");
	assert_int_equal(h.nr, 4);
	for (unsigned n = 0; n < 4; n++) {
		const struct snap_hpool *p2 = snap_node_hpool(&h.nodes[n], HPAGE), *p1g = snap_node_hpool(&h.nodes[n], GPAGE);

		assert_int_equal(h.nodes[n].nr_hpools, 2);
		assert_int_equal(h.nodes[n].hpools[0].page, HPAGE);
		assert_int_equal(h.nodes[n].hpools[1].page, GPAGE);
		assert_non_null(p2);
		assert_non_null(p1g);
		assert_int_equal(p2->total, hpool2m[n][0]);
		assert_int_equal(p2->free, hpool2m[n][1]);
		assert_int_equal(p2->surplus, hpool2m[n][2]);
		assert_int_equal(p1g->total, 0);
		assert_int_equal(p1g->free, 0);
		assert_int_equal(p1g->surplus, 0);
	}
	s = snap_new();
	snap_set_nodes(s, h.nodes, h.nr, h.dist);
	/* Pages in use (total > free on nodes 0 and 1): the scan looks for
	 * guests' huge pages. On the two-socket tree (pools 0/0) it does not. */
	assert_true(ghuge_host_in_use(s));
	snap_unref(s);
	unload(&h);
	load(&h, "vm-twosocket");
	s = snap_new();
	snap_set_nodes(s, h.nodes, h.nr, h.dist);
	assert_false(ghuge_host_in_use(s));
	snap_unref(s);
	unload(&h);
}

/* The container scan over the captured tree: each guest's huge pages per
 * node from its cgroup's hugetlb.2MB.numa_stat, as the kernel wrote it:
 *   docker:  total=33554432 N0=33554432 N1=0 N2=0 N3=0   (32 MiB, node 0)
 *   pod:     total=20971520 N0=0 N1=20971520 N2=0 N3=0   (20 MiB, node 1)
 * counted in its memory per node too (memory.numa_stat has none of them). */
static void test_hugetlb_guests_scanned(void **state)
{
	static const uint64_t want_d[4] = { 32 * MIB, 0, 0, 0 }, want_k[4] = { 0, 20 * MIB, 0, 0 };
	const struct snap_guest *d, *k;
	struct cgscan *cs = NULL;
	struct snapshot *s;
	struct host h;

	(void)state;
	load(&h, "vm-hugetlb");
	s = snap_new();
	snap_set_nodes(s, h.nodes, h.nr, h.dist);
	assert_int_equal(cgscan_new(&h.hp, NULL, &cs), 0);
	assert_int_equal(cgscan_scan(cs, s, 1000000000), 0);
	snap_finalize(s);
	assert_int_equal(s->nr_guests, 2);
	d = snap_find_guest(s, DOCKER_ID);
	k = snap_find_guest(s, POD_ID);
	assert_non_null(d);
	assert_non_null(k);
	assert_non_null(d->huge_node);
	assert_non_null(k->huge_node);
	assert_int_equal(d->huge_page, HPAGE);
	assert_int_equal(k->huge_page, HPAGE);
	assert_int_equal(d->huge_total, 32 * MIB);
	assert_int_equal(k->huge_total, 20 * MIB);
	for (unsigned n = 0; n < 4; n++) {
		assert_int_equal(d->huge_node[n], want_d[n]);
		assert_int_equal(k->huge_node[n], want_k[n]);
		assert_true(d->mem_node[n] >= want_d[n]);
		assert_true(k->mem_node[n] >= want_k[n]);
	}
	/* Each guest also has its 24 MiB of ordinary (4 KiB) memory. */
	assert_true(d->mem_total >= d->huge_total + 20 * MIB);
	assert_true(k->mem_total >= k->huge_total + 20 * MIB);
	snap_unref(s);
	cgscan_free(cs);
	unload(&h);
}

/* Without the hugetlb cgroup files (a host whose controller is off): the
 * processes' status and numa_maps. The kernel wrote
 *   160 (docker): HugetlbPages 32768 kB; "... huge anon=16 dirty=16 N0=16 kernelpagesize_kB=2048"
 *   167 (pod):    HugetlbPages 20480 kB; "... huge anon=10 dirty=10 N1=10 kernelpagesize_kB=2048"
 * so 16 pages of 2 MiB on node 0 and 10 on node 1. */
static void test_hugetlb_guests_from_numa_maps(void **state)
{
	static const struct { pid_t pid; uint64_t want[4]; } cases[] = {
		{ 160, { 16 * HPAGE, 0, 0, 0 } },
		{ 167, { 0, 10 * HPAGE, 0, 0 } },
	};
	struct host h;

	(void)state;
	load(&h, "vm-hugetlb");
	for (unsigned c = 0; c < 2; c++) {
		struct snapshot *s = snap_new();
		struct snap_guest *g;

		snap_set_nodes(s, h.nodes, h.nr, h.dist);
		g = snap_add_guest(s);
		snprintf(g->id, sizeof(g->id), "p%d", (int)cases[c].pid);
		assert_int_equal(ghuge_read(&h.hp, s, g, NULL, cases[c].pid, false), 0);
		assert_int_equal(g->huge_page, HPAGE);
		for (unsigned n = 0; n < 4; n++) {
			assert_int_equal(g->huge_node[n], cases[c].want[n]);
			assert_int_equal(g->mem_node[n], 0); /* not added: ADD_TO_MEM false */
		}
		snap_unref(s);
	}
	/* A process that is not there: -ESRCH. */
	{
		struct snapshot *s = snap_new();
		struct snap_guest *g;

		snap_set_nodes(s, h.nodes, h.nr, h.dist);
		g = snap_add_guest(s);
		snprintf(g->id, sizeof(g->id), "gone");
		assert_int_equal(ghuge_read(&h.hp, s, g, NULL, 99999, false), -ESRCH);
		snap_unref(s);
	}
	unload(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_twosocket_distances_and_memory_only),
		cmocka_unit_test(test_twosocket_pxb_device_node),
		cmocka_unit_test(test_twosocket_memory_only_never_a_cpu_target),
		cmocka_unit_test(test_smt_cores_and_llcs),
		cmocka_unit_test(test_smt_container_gets_a_whole_free_core),
		cmocka_unit_test(test_hugetlb_pools),
		cmocka_unit_test(test_hugetlb_guests_scanned),
		cmocka_unit_test(test_hugetlb_guests_from_numa_maps),
	};

	return cmocka_run_group_tests_name("captured_hosts", tests, NULL, NULL);
}

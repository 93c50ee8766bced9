/* test_devpref.c — a guest's devices in its placement (policies/devpref.c):
 * the device's node wins a tie, keeps a guest from leaving it for a
 * slightly less busy node, never overrides room; devices = require and
 * ignore; the record names the device's node. And in every other path
 * that chooses nodes: the advice (policy_advise, a device in the
 * request), a VM's start placement (policy_place: the advice, its pin,
 * its reservation), a pinned guest, a split guest's threads' node. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/devpref.h"
#include "policies/policies.h"

#define SEC 1000000000LL
#define T0 (100000 * SEC)

/* N nodes of 2 CPUs (node i: CPUs 2i, 2i+1) and 8 GiB, FREE_MIB[i] free,
 * BUSY[i] of its CPUs busy. */
static struct snapshot *host(unsigned n, const uint64_t *free_mib, const double *busy)
{
	struct snapshot *s = snap_new();
	struct snap_node *nodes = calloc(n, sizeof(*nodes));

	assert_non_null(nodes);
	for (unsigned i = 0; i < n; i++) {
		nodes[i].id = (int)i;
		mask_set(&nodes[i].cpus, 2 * i);
		mask_set(&nodes[i].cpus, 2 * i + 1);
		nodes[i].nr_cpus = 2;
		nodes[i].mem_total = 8192 * MIB;
		nodes[i].mem_free = free_mib[i] * MIB;
		nodes[i].busy = busy[i];
		nodes[i].agent_cpus = NAN;
	}
	snap_set_nodes(s, nodes, n, NULL);
	free(nodes);
	s->mono_ns = T0;
	return s;
}

/* A one-thread guest using USE CPUs on CPUS (its use measured on node
 * index RUNS_ON when >= 0), MEM_MIB of memory on node index MEM_ON, with
 * a device on node DEV (-1: none) under policy DEVS. */
static struct snap_guest *guest(struct snapshot *s, double use, const char *cpus, int runs_on, unsigned mem_mib,
				int mem_on, int dev, enum gpol_devices devs)
{
	struct snap_guest *g = snap_add_guest(s);
	cpumask_t c;

	snprintf(g->id, sizeof(g->id), "docker-g");
	g->cpu_use = use;
	g->nr_threads = 1;
	mask_parse(cpus, &c);
	g->cpus = snap_cpumask(s, &c);
	mask_parse("0-3", &g->mems);
	if (runs_on >= 0) {
		g->cpu_node = calloc(s->nr_nodes, sizeof(double));
		g->cpu_node[runs_on] = use;
	}
	g->mem_node[mem_on] = (uint64_t)mem_mib * MIB;
	if (dev >= 0) {
		g->nr_devices = 1;
		mask_set(&g->dev_nodes, dev);
	}
	g->policy.devices = devs;
	return g;
}

/* Decide on S (released) with the default policy; the one item. */
static struct plan_item decide(struct snapshot *s)
{
	struct policy_config cfg;
	struct pstate *next;
	struct plan_item it;
	struct plan *p;

	snap_finalize(s);
	policy_config_default(&cfg);
	assert_int_equal(policy_decide(&cfg, s, NULL, true, &p, &next), 0);
	assert_int_equal(p->nr_items, 1);
	it = p->items[0];
	if (getenv("DEVPREF_DEBUG"))
		fprintf(stderr, "kind %d skip %d to %llx: %s\n", it.kind, it.skip,
			(unsigned long long)it.to_nodes.w[0], it.detail);
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
	return it;
}

/* A guest (as guest()'s arguments) alone on a 4-node host FR, BUSY, decided. */
static struct plan_item run(const uint64_t *fr, const double *busy, double use, const char *cpus, int runs_on,
			    unsigned mem_mib, int mem_on, int dev, enum gpol_devices devs)
{
	struct snapshot *s = host(4, fr, busy);

	guest(s, use, cpus, runs_on, mem_mib, mem_on, dev, devs);
	return decide(s);
}

static bool moved_to(const struct plan_item *it, int node)
{
	return it->kind == PLAN_MOVE && mask_count(&it->to_nodes) == 1 && mask_test(&it->to_nodes, node);
}

/* Four idle nodes, a new guest free to run anywhere: node 0 without a
 * device (lowest id), its device's node with one. */
static void test_tie_goes_to_device(void **state)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 6000 };
	static const double busy[4] = { 0.3, 0.3, 0.3, 0.3 };
	struct plan_item it;

	(void)state;
	it = run(fr, busy, 0.5, "0-7", -1, 0, 0, -1, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 0));
	it = run(fr, busy, 0.5, "0-7", -1, 0, 0, 2, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 2));
	assert_non_null(strstr(it.detail, "near its device on node 2"));
	/* ignore: as without */
	it = run(fr, busy, 0.5, "0-7", -1, 0, 0, 2, GPOL_DEV_IGNORE);
	assert_true(moved_to(&it, 0));
	assert_null(strstr(it.detail, "device"));
}

/* On node 1 (util 0.85), node 0 less busy by the margin: it leaves
 * without a device; with its device on node 1 it stays, unless node 0 is
 * much less busy. */
static void test_keeps_device_node(void **state)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 6000 };
	static const double busy[4] = { 0.4, 0.85, 0.95, 0.95 };
	static const double idle0[4] = { 0.1, 0.85, 0.95, 0.95 };
	struct plan_item it;

	(void)state;
	it = run(fr, busy, 0.5, "2-3", 1, 0, 1, -1, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 0));
	it = run(fr, busy, 0.5, "2-3", 1, 0, 1, 1, GPOL_DEV_PREFER);
	assert_int_not_equal(it.kind, PLAN_MOVE);
	it = run(fr, idle0, 0.5, "2-3", 1, 0, 1, 1, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 0));
	assert_non_null(strstr(it.detail, "away from its device on node 1"));
}

/* The device's node has no room for its memory: prefer goes elsewhere
 * (room first), require is skipped saying so. */
static void test_room_first_require_skips(void **state)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 300 };
	static const double busy[4] = { 0.3, 0.3, 0.3, 0.3 };
	struct plan_item it;

	(void)state;
	it = run(fr, busy, 0.5, "0-7", -1, 512, 0, 3, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 0));
	assert_non_null(strstr(it.detail, "away from its device on node 3"));
	it = run(fr, busy, 0.5, "0-7", -1, 512, 0, 3, GPOL_DEV_REQUIRE);
	assert_int_equal(it.kind, PLAN_SKIP);
	assert_int_equal(it.skip, SKIP_NO_FIT);
	assert_non_null(strstr(it.detail, "devices = require, only node sets with its device's node 3"));
}

/* require: a guest settled on node 0 with its memory goes to its
 * device's node, not less busy; prefer leaves it where it is. */
static void test_require_moves(void **state)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 6000 };
	static const double busy[4] = { 0.3, 0.3, 0.3, 0.3 };
	struct plan_item it;

	(void)state;
	it = run(fr, busy, 0.5, "0-1", 0, 64, 0, 2, GPOL_DEV_PREFER);
	assert_int_equal(it.kind, PLAN_SETTLED);
	assert_non_null(strstr(it.detail, "away from its device on node 2"));
	it = run(fr, busy, 0.5, "0-1", 0, 64, 0, 2, GPOL_DEV_REQUIRE);
	assert_true(moved_to(&it, 2));
	assert_non_null(strstr(it.detail, "devices = require: nodes 0 → 2, its device's node 2"));
}

/* A guest that moves anyway (its thread on node 2, its 128 MiB on node
 * 3, CPUs on both): without a device its CPUs go to its memory; with its
 * device on node 1, prefer takes it there, its memory following; 16 GiB
 * used at half a CPU stays with its memory (the travel outweighs the
 * device), as under ignore. */
static void test_prefer_moving_guest_goes_to_device(void **state)
{
	static const uint64_t fr[4] = { 60000, 60000, 60000, 60000 };
	static const double busy[4] = { 0.3, 0.3, 0.3, 0.3 };
	struct plan_item it;

	(void)state;
	it = run(fr, busy, 0.5, "4-7", 2, 128, 3, -1, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 3));
	it = run(fr, busy, 0.5, "4-7", 2, 128, 3, 1, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 1));
	assert_non_null(strstr(it.detail, "near its device on node 1"));
	it = run(fr, busy, 0.5, "4-7", 2, 128, 3, 1, GPOL_DEV_IGNORE);
	assert_true(moved_to(&it, 3));
	it = run(fr, busy, 0.5, "4-7", 2, 16384, 3, 1, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 3));
	assert_non_null(strstr(it.detail, "away from its device on node 1"));
}

/* The operator's store says "prefer" for guest "docker-api" only. */
static bool api_prefers(void *ctx, const char *id, struct guest_policy *out)
{
	(void)ctx;
	if (strcmp(id, "docker-api") != 0)
		return false;
	memset(out, 0, sizeof(*out));
	out->source = GPOL_SRC_API;
	out->devices = GPOL_DEV_PREFER;
	return true;
}

/* [policy] devices = require, laid by the engine's overlay: a guest whose
 * source gave it no policy takes the host's default (and goes to its
 * device's node as test_require_moves' does); one the API set, and one
 * whose domain metadata set, keep theirs. */
static void test_host_default(void **state)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 6000 };
	static const double busy[4] = { 0.3, 0.3, 0.3, 0.3 };
	const struct snap_policy_overlay ov = { .get = api_prefers, .devices = GPOL_DEV_REQUIRE };
	struct snapshot *s = host(4, fr, busy);
	struct snap_guest *g[3];
	struct plan_item it;

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		g[i] = guest(s, 0.5, "0-1", 0, 64, 0, 2, GPOL_DEV_PREFER);
	snprintf(g[0]->id, sizeof(g[0]->id), "docker-default");
	snprintf(g[1]->id, sizeof(g[1]->id), "docker-api");
	snprintf(g[2]->id, sizeof(g[2]->id), "vm-meta");
	g[2]->policy.source = GPOL_SRC_METADATA;
	snap_finalize_with(s, &ov);
	assert_int_equal(snap_find_guest(s, "docker-default")->policy.devices, GPOL_DEV_REQUIRE);
	assert_int_equal(snap_find_guest(s, "docker-api")->policy.devices, GPOL_DEV_PREFER);
	assert_int_equal(snap_find_guest(s, "vm-meta")->policy.devices, GPOL_DEV_PREFER);
	/* Without its override the API's guest would have its source's
	 * policy with the host default: what GET shows once it is deleted.
	 * A second finalize (idempotent) keeps that. */
	assert_int_equal(snap_find_guest(s, "docker-api")->base_policy.source, GPOL_SRC_DEFAULT);
	assert_int_equal(snap_find_guest(s, "docker-api")->base_policy.devices, GPOL_DEV_REQUIRE);
	assert_int_equal(snap_find_guest(s, "vm-meta")->base_policy.source, GPOL_SRC_METADATA);
	snap_finalize_with(s, &ov);
	assert_int_equal(snap_find_guest(s, "docker-api")->base_policy.source, GPOL_SRC_DEFAULT);
	assert_int_equal(snap_find_guest(s, "docker-api")->policy.source, GPOL_SRC_API);
	snap_unref(s);

	s = host(4, fr, busy);
	guest(s, 0.5, "0-1", 0, 64, 0, 2, GPOL_DEV_PREFER);
	snap_finalize_with(s, &ov);
	it = decide(s);
	assert_true(moved_to(&it, 2));
	assert_non_null(strstr(it.detail, "devices = require: nodes 0 → 2, its device's node 2"));
}

/* The advice for a guest about to start, its device on node 2 given in
 * the request: four idle nodes, node 0 without it (lowest id); node 2
 * with it; node 2 full: prefer elsewhere saying so, require nothing. */
static void test_advice(void **state)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 6000 };
	static const uint64_t full2[4] = { 6000, 6000, 300, 6000 };
	static const double busy[4] = { 0.3, 0.3, 0.3, 0.3 };
	struct policy_config cfg;
	struct advice_request req = { .cpus = 1, .mem_bytes = 512 * MIB };
	struct advice a;
	struct snapshot *s = host(4, fr, busy), *f = host(4, full2, busy), *f2;

	(void)state;
	snap_finalize(s);
	snap_finalize(f);
	policy_config_default(&cfg);
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_true(mask_test(&a.nodes, 0) && mask_count(&a.nodes) == 1);
	assert_null(strstr(a.detail, "device"));
	req.nr_devices = 1;
	mask_set(&req.dev_nodes, 2);
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_true(mask_test(&a.nodes, 2) && mask_count(&a.nodes) == 1);
	assert_non_null(strstr(a.detail, "near its device on node 2"));
	assert_int_equal(policy_advise(&cfg, f, &req, &a), 0);
	assert_true(a.ok);
	assert_false(mask_test(&a.nodes, 2));
	assert_non_null(strstr(a.detail, "away from its device on node 2"));
	/* require: node 2 and the nearest that makes room (not where
	 * prefer went, a set without it) */
	req.devices = GPOL_DEV_REQUIRE;
	assert_int_equal(policy_advise(&cfg, f, &req, &a), 0);
	assert_true(a.ok);
	assert_true(mask_test(&a.nodes, 2));
	assert_non_null(strstr(a.detail, "near its device on node 2 (required)"));
	/* a device on a node no guest can run on (no CPUs): nothing fits */
	f2 = host(4, fr, busy);
	f2->nodes[2].nr_cpus = 0;
	mask_zero(&f2->nodes[2].cpus);
	snap_finalize(f2);
	assert_int_equal(policy_advise(&cfg, f2, &req, &a), 0);
	assert_false(a.ok);
	assert_non_null(strstr(a.detail, "nothing fits holding its device's node 2 (devices = require)"));
	req.devices = GPOL_DEV_PREFER;
	assert_int_equal(policy_advise(&cfg, f2, &req, &a), 0);
	assert_true(a.ok);
	snap_unref(f2);
	req.devices = GPOL_DEV_IGNORE;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok && mask_test(&a.nodes, 0));
	snap_unref(s);
	snap_unref(f);
}

/* A VM that just started (policy_place), its device (from its domain
 * XML) on node 2: the advice puts it there; pinned to node 1, prefer
 * goes there saying it is away from it, require is skipped saying so;
 * a reservation on node 0 likewise. */
static void test_start_placement(void **state)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 6000 };
	static const double busy[4] = { 0.3, 0.3, 0.3, 0.3 };
	struct policy_config cfg;
	struct place_request q = { .guest_id = "docker-g", .cpus = 1, .mem_bytes = 512 * MIB };
	struct place_result r;
	struct snapshot *s = host(4, fr, busy);
	struct snap_guest *g = guest(s, 0.0, "0-7", -1, 0, 0, 2, GPOL_DEV_PREFER);

	(void)state;
	snap_finalize(s);
	g = (struct snap_guest *)snap_find_guest(s, "docker-g");
	policy_config_default(&cfg);
	assert_int_equal(policy_place(&cfg, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_MOVE);
	assert_true(mask_test(&r.item.to_nodes, 2) && mask_count(&r.item.to_nodes) == 1);
	assert_non_null(strstr(r.item.detail, "near its device on node 2"));

	g->policy.mode = GPOL_PINNED;
	mask_zero(&g->policy.nodes);
	mask_set(&g->policy.nodes, 1);
	assert_int_equal(policy_place(&cfg, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_MOVE);
	assert_true(mask_test(&r.item.to_nodes, 1));
	assert_non_null(strstr(r.item.detail, "away from its device on node 2"));
	g->policy.devices = GPOL_DEV_REQUIRE;
	assert_int_equal(policy_place(&cfg, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_SKIP);
	assert_non_null(strstr(r.item.detail, "devices = require: nodes 1 hold not its device's node 2"));

	q.reserved = true;
	q.reserved_id = 3;
	mask_set(&q.reserved_nodes, 0);
	q.reserved_cpu_nodes = q.reserved_nodes;
	q.reserved_mems = q.reserved_nodes;
	assert_int_equal(policy_place(&cfg, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_SKIP);
	assert_false(r.used_reservation);
	assert_non_null(strstr(r.item.detail, "reservation 3"));
	assert_non_null(strstr(r.item.detail, "hold not its device's node 2"));
	/* without require, the reservation goes */
	g->policy.devices = GPOL_DEV_PREFER;
	assert_int_equal(policy_place(&cfg, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_MOVE);
	assert_true(r.used_reservation);
	assert_non_null(strstr(r.item.detail, "away from its device on node 2"));
	snap_unref(s);

	/* require, its device on a node without CPUs: the advice has
	 * nothing to offer, and the record says why */
	s = host(4, fr, busy);
	s->nodes[2].nr_cpus = 0;
	mask_zero(&s->nodes[2].cpus);
	guest(s, 0.0, "0-7", -1, 0, 0, 2, GPOL_DEV_REQUIRE);
	snap_finalize(s);
	memset(&q, 0, sizeof(q));
	q.guest_id = "docker-g";
	q.cpus = 1;
	q.mem_bytes = 512 * MIB;
	assert_int_equal(policy_place(&cfg, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_SKIP);
	assert_int_equal(r.item.skip, SKIP_NO_FIT);
	assert_non_null(strstr(r.item.detail, "not placed: nothing fits holding its device's node 2 (devices = require)"));
	snap_unref(s);
}

/* A pinned guest (the decide): pinned to node 1, its device on node 2:
 * prefer keeps the pin and says it is away; require is skipped. */
static void test_pinned(void **state)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 6000 };
	static const double busy[4] = { 0.3, 0.3, 0.3, 0.3 };
	struct plan_item it;

	(void)state;
	for (unsigned req = 0; req < 2; req++) {
		struct snapshot *s = host(4, fr, busy);
		struct snap_guest *g = guest(s, 0.5, "0-1", 0, 64, 0, 2, req ? GPOL_DEV_REQUIRE : GPOL_DEV_PREFER);

		g->policy.mode = GPOL_PINNED;
		g->policy.source = GPOL_SRC_API;
		mask_set(&g->policy.nodes, 1);
		it = decide(s);
		if (!req) {
			assert_true(moved_to(&it, 1));
			assert_non_null(strstr(it.detail, "away from its device on node 2"));
		} else {
			assert_int_equal(it.kind, PLAN_SKIP);
			assert_non_null(strstr(it.detail, "pinned to nodes 1, none holding its device's node 2"));
		}
	}
}

/* A guest whose memory fits no one node, its two busy threads on nodes
 * 1 and 2 (test_policy's bigguest): its threads go to one of nodes 1-3
 * (node 1 without a device: the lowest of equals), to its device's node 3
 * with one, prefer or require. */
static struct plan_item split_with(int dev, enum gpol_devices devs)
{
	static const uint64_t fr[4] = { 390, 1000, 1000, 1000 };
	/* node 3 idle: its threads fit there as on nodes 1 and 2 */
	static const double busy[4] = { 0.5, 0.5, 0.5, 0.0 };
	struct snapshot *s = host(4, fr, busy);
	struct snap_guest *g = guest(s, 2.02, "0-7", -1, 425, 0, dev, devs);

	for (unsigned n = 0; n < 4; n++) {
		s->nodes[n].mem_total = 1536 * MIB;
		g->mem_node[n] = 425 * MIB;
	}
	g->nr_threads = 3;
	g->cpu_node = calloc(4, sizeof(double));
	g->cpu_node[1] = g->cpu_node[2] = 1.01;
	g->busy_threads = 2;
	g->busy_measured = true;
	return decide(s);
}

static void test_split(void **state)
{
	struct plan_item it;

	(void)state;
	it = split_with(-1, GPOL_DEV_PREFER);
	assert_int_equal(it.kind, PLAN_MOVE);
	assert_true(it.split);
	assert_int_equal(it.first_node, 1);
	for (unsigned req = 0; req < 2; req++) {
		it = split_with(3, req ? GPOL_DEV_REQUIRE : GPOL_DEV_PREFER);
		assert_int_equal(it.kind, PLAN_MOVE);
		assert_true(it.split);
		assert_int_equal(it.first_node, 3);
		assert_non_null(strstr(it.detail, "near its device on node 3"));
	}
}

/* Beside the kernel's balancing (kernel.numa_balancing = 1), a
 * one-thread guest using a CPU, device on node 1, its 128 MiB MEM_MIB[n]
 * on node n, on CPUS with its thread on node 2, and the kernel measured
 * moving FLOW_MIB[n] onto (> 0) or off (< 0) node n over a second (all
 * zero: nothing measured); devices DEVS. */
static struct plan_item beside_kernel(const char *cpus, const unsigned *mem_mib, const int *flow_mib,
				      enum gpol_devices devs)
{
	static const uint64_t fr[4] = { 6000, 6000, 6000, 6000 };
	/* node 2: the guest's own CPU and 0.2 more */
	static const double busy[4] = { 0.1, 0.1, 0.6, 0.1 };
	struct snapshot *s = host(4, fr, busy);
	struct snap_guest *g = guest(s, 1.0, cpus, 2, 0, 0, 1, devs);
	struct snap_kflow *f = NULL;

	s->numa_balancing = 1;
	for (unsigned n = 0; n < 4; n++) {
		g->mem_node[n] = (uint64_t)mem_mib[n] * MIB;
		if (!flow_mib[n])
			continue;
		if (!f) {
			f = g->kflow = calloc(1, sizeof(*f));
			f->delta = calloc(4, sizeof(*f->delta));
			f->window_s = 1.0;
			f->cpus_steady = true;
		}
		f->delta[n] = (int64_t)flow_mib[n] * (int64_t)MIB;
		if (flow_mib[n] > 0)
			f->arrived += (uint64_t)flow_mib[n] * MIB;
		else
			f->left += (uint64_t)-flow_mib[n] * MIB;
	}
	if (f)
		f->moved = f->arrived < f->left ? f->arrived : f->left;
	g->busy_threads = 1;
	g->busy_measured = true;
	return decide(s);
}

/* The testbed's device-misplaced with balancing on: a guest that moves
 * anyway went where its memory was (or where the kernel brought it),
 * never to its device, as a set where the memory is came first whatever
 * the scores. The kernel migrates toward the threads on fault, so with
 * the CPUs on the device's node it brings the memory there too: not
 * measured moving it, the device's set competes by score and wins; the
 * kernel measured carrying it toward node 2, with half of it there
 * already, it stays with that flow (under require it goes); the kernel
 * having carried only a little, the device still wins. */
static void test_device_beside_kernel_flow(void **state)
{
	static const unsigned on2[4] = { 0, 0, 128, 0 }, on3[4] = { 0, 0, 0, 128 }, half[4] = { 0, 0, 64, 64 },
			      little[4] = { 0, 0, 8, 120 };
	static const int none[4] = { 0, 0, 0, 0 }, to2[4] = { 0, 0, 32, -32 }, to2s[4] = { 0, 0, 8, -8 };
	struct plan_item it;

	(void)state;
	/* Free to run anywhere, the kernel already brought all of it to its
	 * thread's node before the first cycle (the testbed's io2). */
	it = beside_kernel("0-7", on2, none, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 1));
	assert_non_null(strstr(it.detail, "near its device on node 1, preferred over node 2 where its memory is: "
					  "the kernel not measured moving it"));
	/* Its thread on node 2, its memory on node 3. */
	it = beside_kernel("4-5", on3, none, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 1));
	assert_non_null(strstr(it.detail, "preferred over node 3 where its memory is"));
	it = beside_kernel("4-5", on3, none, GPOL_DEV_IGNORE);
	assert_true(moved_to(&it, 3));
	assert_null(strstr(it.detail, "device"));
	/* The kernel measured bringing it to node 2, half of it there. */
	it = beside_kernel("4-5", half, to2, GPOL_DEV_PREFER);
	assert_int_equal(it.kind, PLAN_MOVE);
	assert_false(mask_test(&it.to_nodes, 1));
	assert_non_null(strstr(it.detail, "away from its device on node 1, kept by the kernel's flow toward node 2 "
					  "(64 MiB there)"));
	it = beside_kernel("4-5", half, to2, GPOL_DEV_REQUIRE);
	assert_true(moved_to(&it, 1));
	/* The kernel measured bringing it, 8 MiB there so far. */
	it = beside_kernel("4-5", little, to2s, GPOL_DEV_PREFER);
	assert_true(moved_to(&it, 1));
	assert_non_null(strstr(it.detail, "the kernel carried only 8 MiB toward node 2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tie_goes_to_device),
		cmocka_unit_test(test_keeps_device_node),
		cmocka_unit_test(test_room_first_require_skips),
		cmocka_unit_test(test_require_moves),
		cmocka_unit_test(test_prefer_moving_guest_goes_to_device),
		cmocka_unit_test(test_host_default),
		cmocka_unit_test(test_advice),
		cmocka_unit_test(test_start_placement),
		cmocka_unit_test(test_pinned),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_device_beside_kernel_flow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

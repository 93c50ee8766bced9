/* What the agent keeps from cycle to cycle is sized to what it holds (make
 * bench at 1000 guests: a plan sized by guests held twice the items it
 * had, two of them were published at once; a snapshot's guest array
 * grown by doubling left its old copies as holes in the heap). */
#include "testutil.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/pstate.h"
#include "orchestrator/model/snapshot.h"
#include "policies/policies.h"

#define MIB (1024ull * 1024ull)

/* Two nodes of two CPUs, 4 GiB each, idle. */
static struct snapshot *two_nodes(void)
{
	struct snapshot *s = snap_new();
	struct snap_node nodes[2] = { 0 };

	for (unsigned i = 0; i < 2; i++) {
		nodes[i].id = (int)i;
		mask_set(&nodes[i].cpus, 2 * i);
		mask_set(&nodes[i].cpus, 2 * i + 1);
		nodes[i].nr_cpus = 2;
		nodes[i].mem_total = 4096 * MIB;
		nodes[i].mem_free = 3072 * MIB;
		nodes[i].busy = 0.1;
	}
	snap_set_nodes(s, nodes, 2, NULL);
	return s;
}

/* 40 guests settled on node 0 (CPUs there, memory there) and one whose
 * memory sits on node 1: the plan holds one item, its array room for
 * about that many, not for 41. */
static void test_plan_items_sized_to_items(void **state)
{
	struct snapshot *s = two_nodes();
	struct policy_config cfg;
	struct pstate *next;
	struct plan *p;
	cpumask_t c;

	(void)state;
	mask_parse("0-1", &c);
	for (unsigned i = 0; i < 41; i++) {
		struct snap_guest *g = snap_add_guest(s);

		snprintf(g->id, sizeof(g->id), "g%02u", i);
		g->cpu_use = 0.01;
		g->nr_threads = 1;
		g->cpus = snap_cpumask(s, &c);
		mask_parse("0", &g->mems);
		g->mem_node[i == 40 ? 1 : 0] = 16 * MIB;
	}
	snap_finalize(s);
	policy_config_default(&cfg);
	assert_int_equal(policy_decide(&cfg, s, NULL, false, &p, &next), 0);
	assert_true(p->nr_items >= 1 && p->nr_items < 10);
	assert_true(malloc_usable_size(p->items) < (p->nr_items + 1) * sizeof(struct plan_item));
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

/* Room reserved for N guests: adding N moves nothing (the acquirer
 * reserves the last snapshot's count). */
static void test_snapshot_reserve(void **state)
{
	struct snapshot *s = two_nodes();
	struct snap_guest *first;

	(void)state;
	snap_reserve_guests(s, 300);
	first = snap_add_guest(s);
	for (unsigned i = 1; i < 300; i++)
		snap_add_guest(s);
	assert_ptr_equal(first, &s->guests[0]);
	assert_true(s->guests_cap >= 300);
	/* a hint, never a shrink */
	snap_reserve_guests(s, 10);
	assert_int_equal(s->nr_guests, 300);
	assert_true(s->guests_cap >= 300);
	snap_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_items_sized_to_items),
		cmocka_unit_test(test_snapshot_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

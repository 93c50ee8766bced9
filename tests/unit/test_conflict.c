/* conflict: a cpuset another placer rewrote after the agent's move is
 * said once and held while it stays as found (conflict.h). */
#include "testutil.h"

#include <string.h>

#include "orchestrator/model/conflict.h"
#include "orchestrator/model/hold.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/snapshot.h"

static void set_cpus(struct snapshot *s, struct snap_guest *g, const char *list)
{
	cpumask_t c;

	assert_int_equal(mask_parse(list, &c), 0);
	g->cpus = snap_cpumask(s, &c);
}

static struct snapshot *one_guest(const char *cpus, const char *runtime, const char *pod)
{
	struct snapshot *s = snap_new();
	struct snap_guest *g = snap_add_guest(s);

	snprintf(g->id, sizeof(g->id), "g");
	snprintf(g->runtime, sizeof(g->runtime), "%s", runtime);
	snprintf(g->pod, sizeof(g->pod), "%s", pod);
	set_cpus(s, g, cpus);
	mask_parse("0-1", &g->mems);
	return s;
}

static void note(struct conflict_table *t, const char *cpus, const char *mems)
{
	cpumask_t c;
	nodemask_t m;

	mask_parse(cpus, &c);
	mask_parse(mems, &m);
	conflict_note_write(t, "g", &c, &m);
}

/* The kubelet's reconcile loop: the agent moved g onto 3,5,7; the kubelet
 * writes the shared pool back every 10 s. Said once, held after. */
static void test_once_then_held(void **state)
{
	struct conflict_table t = { 0 };
	struct snapshot *s = one_guest("3,5,7", "kubernetes", "cart");
	struct snap_guest *g = &s->guests[0];
	const struct conflict_entry *x;
	char buf[64];

	/* not written by the agent: nothing to say */
	assert_int_equal(conflict_check(&t, g), CONFLICT_NONE);
	note(&t, "3,5,7", "1");
	assert_int_equal(conflict_check(&t, g), CONFLICT_NONE);
	assert_int_equal(conflict_check(&t, g), CONFLICT_NONE);
	set_cpus(s, g, "0,3,5-7");
	assert_int_equal(conflict_check(&t, g), CONFLICT_NEW);
	x = conflict_find(&t, "g");
	assert_non_null(x);
	mask_format(&x->wrote_cpus, buf, sizeof(buf));
	assert_string_equal(buf, "3,5,7");
	mask_format(&x->found_cpus, buf, sizeof(buf));
	assert_string_equal(buf, "0,3,5-7");
	mask_format(&x->wrote_mems, buf, sizeof(buf));
	assert_string_equal(buf, "1");
	for (int i = 0; i < 5; i++)
		assert_int_equal(conflict_check(&t, g), CONFLICT_HELD);
	assert_string_equal(conflict_placer(g), "kubelet");
	/* its cpuset changes again: forgotten, free to be placed */
	set_cpus(s, g, "0-7");
	assert_int_equal(conflict_check(&t, g), CONFLICT_NONE);
	assert_null(conflict_find(&t, "g"));
	assert_int_equal(conflict_check(&t, g), CONFLICT_NONE);
	conflict_table_clear(&t);
	snap_unref(s);
}

/* A new write of the agent's ends a conflict: the cpuset to expect is the
 * new one. The memory nodes are not compared (they change on their own
 * after a move). Unknown CPUs say nothing. */
static void test_rewrite_and_mems(void **state)
{
	struct conflict_table t = { 0 };
	struct snapshot *s = one_guest("0-1", "docker", "");
	struct snap_guest *g = &s->guests[0];
	const cpumask_t *keep;

	note(&t, "0-1", "0");
	mask_parse("0-1", &g->mems);
	assert_int_equal(conflict_check(&t, g), CONFLICT_NONE);
	set_cpus(s, g, "2-3");
	assert_int_equal(conflict_check(&t, g), CONFLICT_NEW);
	assert_string_equal(conflict_placer(g), "unknown");
	note(&t, "2-3", "1");
	assert_int_equal(conflict_check(&t, g), CONFLICT_NONE);
	keep = g->cpus;
	g->cpus = NULL;
	assert_int_equal(conflict_check(&t, g), CONFLICT_NONE);
	g->cpus = keep;
	conflict_table_clear(&t);
	snap_unref(s);
}

/* Guests gone are forgotten; the others kept. */
static void test_prune(void **state)
{
	struct conflict_table t = { 0 };
	struct snapshot *s = one_guest("0-1", "kubernetes", "");
	cpumask_t c;
	nodemask_t m;

	mask_parse("0", &c);
	mask_parse("0", &m);
	conflict_note_write(&t, "g", &c, &m);
	conflict_note_write(&t, "gone", &c, &m);
	conflict_note_write(&t, "also-gone", &c, &m);
	assert_int_equal(t.n, 3);
	conflict_prune(&t, s);
	assert_int_equal(t.n, 1);
	assert_non_null(conflict_find(&t, "g"));
	assert_string_equal(conflict_placer(&s->guests[0]), "kubelet");
	conflict_forget(&t, "g");
	conflict_forget(&t, "g");
	assert_int_equal(t.n, 0);
	conflict_table_clear(&t);
	snap_unref(s);
}

/* The hold: a move of a guest in the cycle's conflict list is held, a skip
 * is not. */
static void test_hold(void **state)
{
	struct snapshot *s = one_guest("0-1", "kubernetes", "cart");
	char ids[1][GUEST_ID_MAX] = { "g" };
	struct plan_holds h = { .conflict = ids, .nconflict = 1, .applying = true };
	struct plan_item it = { .guest_idx = 0, .kind = PLAN_MOVE };

	snprintf(it.guest_id, sizeof(it.guest_id), "g");
	assert_int_equal(plan_item_hold(&it, s, &h), HOLD_CONFLICT);
	assert_string_equal(plan_hold_name(HOLD_CONFLICT), "conflict");
	it.kind = PLAN_SKIP;
	assert_int_equal(plan_item_hold(&it, s, &h), HOLD_NONE);
	it.kind = PLAN_MOVE;
	h.nconflict = 0;
	assert_int_equal(plan_item_hold(&it, s, &h), HOLD_NONE);
	snap_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once_then_held),
		cmocka_unit_test(test_rewrite_and_mems),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_hold),
	};

	return cmocka_run_group_tests(tests, 0, 0);
}

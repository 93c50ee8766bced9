/* hold: which planned items the cycle does not carry out (plan_item.hold),
 * from the cycle's facts and the live jobs laid on the snapshot. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/model/hold.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/snapshot.h"

#define MIB (1024ULL * 1024)

/* Two nodes of 2 CPUs; guest "g" on node 0's CPUs (0-1), mems 0. */
static struct snapshot *two_nodes(void)
{
	struct snapshot *s = snap_new();
	struct snap_guest *g;
	cpumask_t c;

	tu_snap_nodes(s, 2, 2, 1024 * MIB);
	g = snap_add_guest(s);
	snprintf(g->id, sizeof(g->id), "g");
	mask_parse("0-1", &c);
	g->cpus = snap_cpumask(s, &c);
	mask_parse("0", &g->mems);
	snap_finalize(s);
	return s;
}

static void test_same_move_table(void **state)
{
	static const struct {
		const char *job_to;
		bool has_first, write, ended;
		int job_first;
		const char *to;
		int first;
		uint64_t first_bytes;
		bool same;
	} t[] = {
		{ "1", false, false, false, 0, "1", -1, 0, true },
		{ "1", false, false, false, 0, "0-1", -1, 0, false },   /* other nodes */
		{ "1", false, true, false, 0, "1", -1, 0, false },      /* a cpuset.mems write */
		{ "1", false, false, true, 0, "1", -1, 0, false },      /* ended */
		{ "0-1", true, false, false, 1, "0-1", 1, 64 * MIB, true },
		{ "0-1", true, false, false, 0, "0-1", 1, 64 * MIB, false }, /* other first node */
		{ "0-1", false, false, false, 0, "0-1", 1, 64 * MIB, false }, /* the job has none */
		{ "0-1", true, false, false, 1, "0-1", 1, 0, false },   /* the plan has none */
		{ "1", false, false, false, 0, "1", 0, 64 * MIB, true }, /* first outside TO: none */
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct snap_job j = { .id = 7, .has_first = t[i].has_first, .first = t[i].job_first,
				      .write = t[i].write, .ended = t[i].ended };
		nodemask_t to;

		mask_parse(t[i].job_to, &j.to);
		mask_parse(t[i].to, &to);
		if (snap_job_same_move(&j, &to, t[i].first, t[i].first_bytes) != t[i].same)
			fail_msg("row %u: want %s", i, t[i].same ? "the same move" : "another move");
	}
}

/* A move of "g" onto node 1 (CPUs 2-3, mems 1), or the cool-down skip of
 * that move. */
static void item(struct plan_item *it, const struct snapshot *s, enum plan_kind kind, enum skip_reason skip,
		 cpumask_t *cpus)
{
	plan_item_init(it, s, 0, kind);
	it->skip = skip;
	mask_parse("1", &it->to_nodes);
	mask_parse("1", &it->to_mems);
	mask_parse("2-3", cpus);
	it->to_cpus = kind == PLAN_MOVE ? cpus : NULL;
}

static void test_hold_table(void **state)
{
	static char ids[1][GUEST_ID_MAX] = { "g" };
	enum fact { NONE = 0, PLACED = 1, WRITING = 4, JOB = 8, THERE = 16, MIGRATING = 32, VMSTART = 64 };
	static const struct {
		enum plan_kind kind;
		enum skip_reason skip;
		unsigned facts;
		bool applying;
		enum plan_hold want;
	} t[] = {
		{ PLAN_MOVE, SKIP_NONE, NONE, true, HOLD_NONE },
		/* dealt with by the start placement: whatever the item, whatever the mode */
		{ PLAN_MOVE, SKIP_NONE, PLACED | WRITING | JOB | THERE, true, HOLD_JUST_PLACED },
		{ PLAN_SKIP, SKIP_NO_FIT, PLACED, false, HOLD_JUST_PLACED },
		/* a start binding's write: a move that would be carried out */
		{ PLAN_MOVE, SKIP_NONE, WRITING | JOB | THERE, true, HOLD_BIND_WRITING },
		{ PLAN_MOVE, SKIP_NONE, WRITING, false, HOLD_NONE },
		{ PLAN_SKIP, SKIP_COOLDOWN, WRITING, true, HOLD_NONE },
		/* the live job makes the move: its CPUs already there */
		{ PLAN_MOVE, SKIP_NONE, JOB | THERE, true, HOLD_STILL_MOVING },
		{ PLAN_MOVE, SKIP_NONE, JOB, true, HOLD_NONE },
		{ PLAN_MOVE, SKIP_NONE, JOB | THERE, false, HOLD_NONE },
		/* ... or the move a cool-down holds back, in any mode */
		{ PLAN_SKIP, SKIP_COOLDOWN, JOB | THERE, false, HOLD_STILL_MOVING },
		{ PLAN_SKIP, SKIP_COOLDOWN, JOB, false, HOLD_NONE },
		{ PLAN_SKIP, SKIP_NO_FIT, JOB | THERE, false, HOLD_NONE },
		{ PLAN_SETTLED, SKIP_NONE, JOB | THERE, true, HOLD_NONE },
		/* another guest's migrating write in flight: every move that
		 * would be carried out waits (its writes would wait in the
		 * kernel), after the holds that say more */
		{ PLAN_MOVE, SKIP_NONE, MIGRATING, true, HOLD_MIGRATING_WRITE },
		{ PLAN_MOVE, SKIP_NONE, MIGRATING, false, HOLD_NONE },
		{ PLAN_SKIP, SKIP_NO_FIT, MIGRATING, true, HOLD_NONE },
		{ PLAN_SETTLED, SKIP_NONE, MIGRATING, true, HOLD_NONE },
		{ PLAN_MOVE, SKIP_NONE, MIGRATING | WRITING, true, HOLD_BIND_WRITING },
		{ PLAN_MOVE, SKIP_NONE, MIGRATING | JOB | THERE, true, HOLD_STILL_MOVING },
		{ PLAN_MOVE, SKIP_NONE, MIGRATING | PLACED, true, HOLD_JUST_PLACED },
		/* a VM's start placement comes once: never deferred */
		{ PLAN_MOVE, SKIP_NONE, MIGRATING | VMSTART, true, HOLD_NONE },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct snapshot *s = two_nodes();
		struct snap_guest *g = &s->guests[0];
		struct plan_holds h = { .applying = t[i].applying };
		struct plan_item it;
		cpumask_t cpus;
		enum plan_hold got;

		item(&it, s, t[i].kind, t[i].skip, &cpus);
		if (t[i].facts & PLACED)
			h.placed = ids, h.nplaced = 1;
		if (t[i].facts & WRITING)
			h.bind_writing = ids, h.nbind_writing = 1;
		if (t[i].facts & MIGRATING)
			h.write_guest = "big", h.write_job = 9;
		it.vm_start = t[i].facts & VMSTART;
		if (t[i].facts & JOB) {
			g->job.id = 42;
			mask_parse("1", &g->job.to);
		}
		if (t[i].facts & THERE) {
			cpumask_t c;

			mask_parse("2-3", &c);
			g->cpus = snap_cpumask(s, &c);
			mask_parse("1", &g->cpu_nodes);
		}
		got = plan_item_hold(&it, s, &h);
		if (got != t[i].want)
			fail_msg("row %u: got %s, want %s", i, plan_hold_name(got), plan_hold_name(t[i].want));
		snap_unref(s);
	}
}

/* plan_mark_holds names the job; the item keeps what was decided, and its
 * JSON says why it was not carried out. No facts: nothing held. */
static void test_mark_holds(void **state)
{
	struct snapshot *s = two_nodes();
	struct plan p = { .nr_items = 1 };
	struct plan_holds h = { .applying = true };
	cpumask_t cpus, c;
	json_t *j;

	(void)state;
	p.items = calloc(1, sizeof(*p.items));
	item(&p.items[0], s, PLAN_MOVE, SKIP_NONE, &cpus);
	plan_mark_holds(&p, s, NULL);
	assert_int_equal(p.items[0].hold, HOLD_NONE);
	j = plan_item_to_json(&p.items[0]);
	assert_null(json_object_get(j, "hold"));
	json_decref(j);

	s->guests[0].job.id = 42;
	mask_parse("1", &s->guests[0].job.to);
	mask_parse("2-3", &c);
	s->guests[0].cpus = snap_cpumask(s, &c);
	plan_mark_holds(&p, s, &h);
	assert_int_equal(p.items[0].hold, HOLD_STILL_MOVING);
	assert_int_equal(p.items[0].hold_job, 42);
	assert_int_equal(p.items[0].kind, PLAN_MOVE);
	j = plan_item_to_json(&p.items[0]);
	assert_string_equal(json_string_value(json_object_get(j, "hold")), "still_moving");
	assert_int_equal(json_integer_value(json_object_get(j, "hold_job")), 42);
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "move");
	json_decref(j);
	free(p.items);
	snap_unref(s);
}

/* A move deferred for another guest's migrating write names that write's
 * guest and job, keeps what was decided and the plan's own sentence. */
static void test_mark_migrating_write(void **state)
{
	struct snapshot *s = two_nodes();
	struct plan p = { .nr_items = 1 };
	struct plan_holds h = { .applying = true, .write_guest = "big", .write_job = 9 };
	cpumask_t cpus;
	json_t *j;

	(void)state;
	p.items = calloc(1, sizeof(*p.items));
	item(&p.items[0], s, PLAN_MOVE, SKIP_NONE, &cpus);
	snprintf(p.items[0].detail, sizeof(p.items[0].detail), "to node 1, where its memory is");
	plan_mark_holds(&p, s, &h);
	assert_int_equal(p.items[0].hold, HOLD_MIGRATING_WRITE);
	assert_int_equal(p.items[0].hold_job, 9);
	assert_int_equal(p.items[0].kind, PLAN_MOVE);
	assert_non_null(strstr(p.items[0].detail, "guest big's cpuset.mems write (job 9)"));
	assert_non_null(strstr(p.items[0].detail, "planned: to node 1, where its memory is"));
	j = plan_item_to_json(&p.items[0]);
	assert_string_equal(json_string_value(json_object_get(j, "hold")), "migrating_write");
	json_decref(j);
	/* the write ended: carried out */
	h.write_guest = NULL;
	plan_mark_holds(&p, s, &h);
	assert_int_equal(p.items[0].hold, HOLD_NONE);
	assert_int_equal(p.items[0].hold_job, 0);
	free(p.items);
	snap_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_move_table),
		cmocka_unit_test(test_hold_table),
		cmocka_unit_test(test_mark_holds),
		cmocka_unit_test(test_mark_migrating_write),
	};

	return cmocka_run_group_tests(tests, 0, 0);
}

/* kflow: the kernel's flow of each guest's memory between two snapshots,
 * the verdict on it, the holds it puts on a plan, and kbal's rule with it. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/model/hold.h"
#include "orchestrator/model/kbal.h"
#include "orchestrator/model/kflow.h"
#include "orchestrator/model/memway.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/snapshot.h"
#include "orchestrator/store/logged.h"

#define MIB (1024ULL * 1024)

struct gspec {
	const char *id;
	const char *cgroup;
	const char *cpus;
	double cpu_use;
	uint64_t mib[3];     /* memory per node, MiB */
	uint64_t job;
	bool mem_unknown;
};

/* Three nodes of 2 CPUs, balancing BAL, taken at T_S seconds, with the
 * guests of G (N of them). */
static struct snapshot *snap_at(double t_s, int bal, const struct gspec *g, unsigned n)
{
	struct snapshot *s = snap_new();

	tu_snap_nodes(s, 3, 2, 1024 * MIB);
	s->mono_ns = (int64_t)(t_s * 1e9);
	s->numa_balancing = bal;
	for (unsigned i = 0; i < n; i++) {
		struct snap_guest *x = snap_add_guest(s);
		cpumask_t c;

		snprintf(x->id, sizeof(x->id), "%s", g[i].id);
		x->cgroup = strdup(g[i].cgroup ? g[i].cgroup : g[i].id);
		mask_parse(g[i].cpus, &c);
		x->cpus = snap_cpumask(s, &c);
		mask_parse("0-2", &x->mems);
		x->cpu_use = g[i].cpu_use;
		x->mem_unknown = g[i].mem_unknown;
		x->job.id = g[i].job;
		for (unsigned k = 0; k < 3; k++)
			x->mem_node[k] = g[i].mib[k] * MIB;
	}
	snap_finalize(s);
	return s;
}

static bool never_ours(void *ctx, const char *id, int64_t prev_ns, int64_t cur_ns)
{
	(void)ctx, (void)prev_ns, (void)cur_ns;
	return strcmp(id, "ours") == 0;
}

static const struct snap_guest *guest(const struct snapshot *s, const char *id)
{
	const struct snap_guest *g = snap_find_guest(s, id);

	assert_non_null(g);
	return g;
}

/* Two snapshots 10 s apart: per node what arrived and left; growth is
 * no move; a guest the agent moved, with a job at either end, new, in
 * another cgroup or with its memory unknown has no flow. */
static void test_fill(void **state)
{
	struct gspec a[] = {
		{ "moving", NULL, "2-3", 1.0, { 100, 0, 0 }, 0, false },
		{ "growing", NULL, "0-1", 1.0, { 100, 0, 0 }, 0, false },
		{ "ours", NULL, "2-3", 1.0, { 100, 0, 0 }, 0, false },
		{ "jobnow", NULL, "2-3", 1.0, { 100, 0, 0 }, 0, false },
		{ "jobthen", NULL, "2-3", 1.0, { 100, 0, 0 }, 7, false },
		{ "restarted", "old", "2-3", 1.0, { 100, 0, 0 }, 0, false },
		{ "unknown", NULL, "2-3", 1.0, { 100, 0, 0 }, 0, false },
		{ "vanished", NULL, "2-3", 1.0, { 100, 0, 0 }, 0, false },
	};
	struct gspec b[] = {
		{ "moving", NULL, "2-3", 1.0, { 60, 40, 0 }, 0, false },
		{ "growing", NULL, "0-1", 1.0, { 100, 40, 0 }, 0, false },
		{ "ours", NULL, "2-3", 1.0, { 60, 40, 0 }, 0, false },
		{ "jobnow", NULL, "2-3", 1.0, { 60, 40, 0 }, 9, false },
		{ "jobthen", NULL, "2-3", 1.0, { 60, 40, 0 }, 0, false },
		{ "restarted", "new", "2-3", 1.0, { 60, 40, 0 }, 0, false },
		{ "unknown", NULL, "2-3", 1.0, { 0, 0, 0 }, 0, true },
		{ "new", NULL, "2-3", 1.0, { 60, 40, 0 }, 0, false },
	};
	struct snapshot *p = snap_at(100, 1, a, 8), *c = snap_at(110, 1, b, 8);
	const struct snap_kflow *f;

	(void)state;
	p->vmstat_read = c->vmstat_read = true;
	p->numa_pages_migrated = 1000;
	c->numa_pages_migrated = 1000 + 25600;
	assert_true(kflow_fill(c, p, never_ours, NULL));
	f = guest(c, "moving")->kflow;
	assert_non_null(f);
	assert_true(fabs(f->window_s - 10.0) < 1e-9);
	assert_true(f->delta[0] == -40 * (int64_t)MIB && f->delta[1] == 40 * (int64_t)MIB && f->delta[2] == 0);
	assert_true(f->arrived == 40 * MIB && f->left == 40 * MIB && f->moved == 40 * MIB);
	f = guest(c, "growing")->kflow;
	assert_non_null(f);
	assert_true(f->arrived == 40 * MIB && f->left == 0 && f->moved == 0);
	assert_null(guest(c, "ours")->kflow);
	assert_null(guest(c, "jobnow")->kflow);
	assert_null(guest(c, "jobthen")->kflow);
	assert_null(guest(c, "restarted")->kflow);
	assert_null(guest(c, "unknown")->kflow);
	assert_null(guest(c, "new")->kflow);
	assert_true(fabs(c->kernel_migrated_pps - 2560.0) < 1e-6);
	assert_true(isnan(p->kernel_migrated_pps));
	snap_unref(c);

	/* no previous snapshot, or one not older: nothing measured, and
	 * the next window starts here */
	c = snap_at(110, 1, b, 8);
	assert_true(kflow_fill(c, NULL, NULL, NULL));
	assert_null(guest(c, "moving")->kflow);
	assert_true(kflow_fill(c, c, NULL, NULL));
	assert_null(guest(c, "moving")->kflow);
	assert_true(isnan(c->kernel_migrated_pps));
	snap_unref(c);

	/* a window shorter than KFLOW_MIN_WINDOW_S (a prompt cycle a
	 * second after the last): measured, and the previous snapshot kept
	 * for the next window; at the minimum, the next starts here */
	c = snap_at(100 + KFLOW_MIN_WINDOW_S - 0.9, 1, b, 8);
	assert_false(kflow_fill(c, p, never_ours, NULL));
	assert_non_null(guest(c, "moving")->kflow);
	snap_unref(c);
	c = snap_at(100 + KFLOW_MIN_WINDOW_S, 1, b, 8);
	assert_true(kflow_fill(c, p, never_ours, NULL));
	assert_non_null(guest(c, "moving")->kflow);
	snap_unref(c);
	snap_unref(p);
}

/* One guest whose threads run on node 1 (CPUs 2-3), from memory THEN to
 * NOW MiB per node over WINDOW_S; its verdict with bound FOLLOW_S. */
static enum kflow_verdict judge_over(double window_s, int bal, double cpu, const uint64_t then[3],
				     const uint64_t now[3], double follow_s, struct kflow_judgement *j)
{
	struct gspec a = { "g", NULL, "2-3", cpu, { then[0], then[1], then[2] }, 0, false };
	struct gspec b = { "g", NULL, "2-3", cpu, { now[0], now[1], now[2] }, 0, false };
	struct snapshot *p = snap_at(0, bal, &a, 1), *c = snap_at(window_s, bal, &b, 1);

	kflow_fill(c, p, NULL, NULL);
	kflow_judge(c, guest(c, "g"), follow_s, j);
	snap_unref(c);
	snap_unref(p);
	return j->verdict;
}

/* The same over 10 s. */
static enum kflow_verdict judge(int bal, double cpu, const uint64_t then[3], const uint64_t now[3], double follow_s,
				struct kflow_judgement *j)
{
	return judge_over(10, bal, cpu, then, now, follow_s, j);
}

static void test_judge(void **state)
{
	static const uint64_t all0[3] = { 100, 0, 0 }, moved40[3] = { 60, 40, 0 }, moved2[3] = { 98, 2, 0 },
			      local[3] = { 0, 100, 0 }, away[3] = { 100, 0, 0 }, grew[3] = { 100, 40, 0 },
			      from1[3] = { 0, 100, 0 }, to2[3] = { 0, 60, 40 };
	struct kflow_judgement j;

	(void)state;
	/* 40 MiB onto node 1 in 10 s, 60 MiB to go: 15 s */
	assert_int_equal(judge(1, 1.0, all0, moved40, 30, &j), KFLOW_FOLLOWS);
	assert_true(fabs(j.rate_bps - 4.0 * MIB) < 1 && j.remote_bytes == 60 * MIB && j.to_node == 1);
	assert_int_equal(judge(1, 1.0, all0, moved40, 10, &j), KFLOW_SLOW);
	assert_int_equal(judge(1, 1.0, all0, moved2, 30, &j), KFLOW_SLOW);
	/* it runs and nothing came: the kernel is not moving it */
	assert_int_equal(judge(1, 1.0, all0, away, 30, &j), KFLOW_STILL);
	assert_int_equal(j.to_node, -1);
	/* growth on its threads' node is no migration */
	assert_int_equal(judge(1, 1.0, all0, grew, 30, &j), KFLOW_STILL);
	/* idle: the kernel never scans it, nothing to say */
	assert_int_equal(judge(1, 0.1, all0, away, 30, &j), KFLOW_ABSENT);
	assert_int_equal(judge(1, NAN, all0, away, 30, &j), KFLOW_ABSENT);
	/* balancing off (or tiering alone): nothing to say */
	assert_int_equal(judge(0, 1.0, all0, moved40, 30, &j), KFLOW_ABSENT);
	assert_int_equal(judge(2, 1.0, all0, moved40, 30, &j), KFLOW_ABSENT);
	/* local already */
	assert_int_equal(judge(1, 1.0, local, local, 30, &j), KFLOW_ABSENT);
	/* memory leaving its threads' node is no flow toward them */
	assert_int_equal(judge(1, 1.0, from1, to2, 30, &j), KFLOW_STILL);
	/* a window under KFLOW_MIN_WINDOW_S shows the kernel moving it, but
	 * never that it is not (a lull between two passes): ABSENT */
	assert_int_equal(judge_over(1.1, 1, 1.0, all0, moved40, 30, &j), KFLOW_FOLLOWS);
	assert_int_equal(judge_over(1.1, 1, 1.0, all0, away, 30, &j), KFLOW_ABSENT);
	assert_int_equal(judge_over(1.1, 1, 1.0, all0, moved2, 1, &j), KFLOW_ABSENT);
	assert_int_equal(judge_over(KFLOW_MIN_WINDOW_S, 1, 1.0, all0, away, 30, &j), KFLOW_STILL);
}

/* A plan of one move of "g" (threads on node 1, CPUs 2-3) to TO_MEMS, on
 * a snapshot where its memory went from THEN to NOW; its hold with the
 * bound FOLLOW_S (0: none). */
static enum plan_hold hold_of(const uint64_t then[3], const uint64_t now[3], const char *to_mems, double follow_s,
			      bool pinned, enum plan_hold before, char *detail, size_t dsz)
{
	struct gspec a = { "g", NULL, "2-3", 1.0, { then[0], then[1], then[2] }, 0, false };
	struct gspec b = { "g", NULL, "2-3", 1.0, { now[0], now[1], now[2] }, 0, false };
	struct snapshot *p = snap_at(0, 1, &a, 1), *c = snap_at(10, 1, &b, 1);
	struct plan pl = { 0 };
	struct plan_item it;
		enum plan_hold r;

	kflow_fill(c, p, NULL, NULL);
	if (pinned)
		c->guests[0].policy.mode = GPOL_PINNED;
	plan_item_init(&it, c, 0, PLAN_MOVE);
	mask_parse(to_mems, &it.to_mems);
	it.to_nodes = it.to_mems;
	it.migrate_bytes = 60 * MIB;
	it.hold = before;
	snprintf(it.detail, sizeof(it.detail), "the policy's");
	pl.items = &it;
	pl.nr_items = 1;
	plan_mark_kernel_holds(&pl, c, follow_s);
	r = it.hold;
	if (detail)
		snprintf(detail, dsz, "%s", it.detail);
	snap_unref(c);
	snap_unref(p);
	return r;
}

static void test_holds(void **state)
{
	static const uint64_t all0[3] = { 100, 0, 0 }, moved40[3] = { 60, 40, 0 }, away[3] = { 100, 0, 0 },
			      filling2[3] = { 60, 0, 40 };
	char d[320];

	(void)state;
	/* the kernel finishes within the bound: left to it, and said so */
	assert_int_equal(hold_of(all0, moved40, "1", 30, false, HOLD_NONE, d, sizeof(d)), HOLD_KERNEL_MOVING);
	assert_non_null(strstr(d, "kernel moving 4.0 MiB/s to node 1, left to it"));
	/* no bound: the flow holds nothing */
	assert_int_equal(hold_of(all0, moved40, "1", 0, false, HOLD_NONE, d, sizeof(d)), HOLD_NONE);
	assert_string_equal(d, "the policy's");
	/* too slow to finish in time, the move goes its way: carried out */
	assert_int_equal(hold_of(all0, moved40, "1", 10, false, HOLD_NONE, NULL, 0), HOLD_NONE);
	/* a move taking its memory off the node the kernel fills: left */
	assert_int_equal(hold_of(all0, moved40, "2", 10, false, HOLD_NONE, d, sizeof(d)), HOLD_KERNEL_AGAINST);
	assert_non_null(strstr(d, "kernel filling node 1 with its memory"));
	/* the kernel filling a node that is not its threads' (toward node 2,
	 * threads on 1): a move to node 1 goes against it, one to 1-2 not */
	assert_int_equal(hold_of(all0, filling2, "1", 30, false, HOLD_NONE, NULL, 0), HOLD_KERNEL_AGAINST);
	assert_int_equal(hold_of(all0, filling2, "1-2", 30, false, HOLD_NONE, NULL, 0), HOLD_NONE);
	/* nothing moving: the agent acts */
	assert_int_equal(hold_of(all0, away, "1", 30, false, HOLD_NONE, NULL, 0), HOLD_NONE);
	/* a pin is the operator's; another hold stays */
	assert_int_equal(hold_of(all0, moved40, "1", 30, true, HOLD_NONE, NULL, 0), HOLD_NONE);
	assert_int_equal(hold_of(all0, moved40, "1", 30, false, HOLD_CONFLICT, NULL, 0), HOLD_CONFLICT);
}

/* The agent's first cycle (no flow measured at all): a busy guest's move
 * waits a cycle with the kernel's balancing on; an idle one's, or any
 * with it off, does not. */
static void test_unmeasured(void **state)
{
	static const struct {
		int bal;
		double cpu;
		enum plan_hold want;
	} t[] = {
		{ 1, 1.0, HOLD_KERNEL_UNMEASURED },
		{ 3, 1.0, HOLD_KERNEL_UNMEASURED },
		{ 1, 0.1, HOLD_NONE },
		{ 1, NAN, HOLD_NONE },
		{ 0, 1.0, HOLD_NONE },
		{ 2, 1.0, HOLD_NONE },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct gspec a = { "g", NULL, "2-3", t[i].cpu, { 100, 0, 0 }, 0, false };
		struct snapshot *c = snap_at(10, t[i].bal, &a, 1);
		struct plan pl = { 0 };
		struct plan_item it;

		plan_item_init(&it, c, 0, PLAN_MOVE);
		mask_parse("1", &it.to_mems);
		it.migrate_bytes = 100 * MIB;
		pl.items = &it;
		pl.nr_items = 1;
		plan_mark_kernel_holds(&pl, c, 30);
		if (it.hold != t[i].want)
			fail_msg("row %u: got %s, want %s", i, plan_hold_name(it.hold), plan_hold_name(t[i].want));
		/* a window too short to say the kernel is not moving it (a
		 * prompt cycle): held the same */
		c->flow_window_s = KFLOW_MIN_WINDOW_S - 0.9;
		it.hold = HOLD_NONE;
		plan_mark_kernel_holds(&pl, c, 30);
		if (it.hold != t[i].want)
			fail_msg("row %u, short window: got %s", i, plan_hold_name(it.hold));
		/* with a flow window (the next cycle) it is judged, not held so */
		c->flow_window_s = 10;
		it.hold = HOLD_NONE;
		plan_mark_kernel_holds(&pl, c, 30);
		assert_int_not_equal(it.hold, HOLD_KERNEL_UNMEASURED);
		snap_unref(c);
	}
}

/* A move held a cycle for the flow to be measured was not said: the
 * next cycle's left_to_kernel record is news, not a repeat (the
 * decision log's dedup). */
static void test_unmeasured_not_logged(void **state)
{
	struct gspec a = { "g", NULL, "2-3", 1.0, { 100, 0, 0 }, 0, false };
	struct snapshot *c = snap_at(10, 1, &a, 1);
	struct logged_table t = { 0 };
	struct plan pl = { 0 };
	struct plan_item it;
	int64_t hold = 300 * (int64_t)1000000000;

	(void)state;
	plan_item_init(&it, c, 0, PLAN_MOVE);
	mask_parse("1", &it.to_mems);
	it.to_nodes = it.to_mems;
	it.migrate_bytes = 100 * MIB;
	it.hold = HOLD_KERNEL_UNMEASURED;
	pl.items = &it;
	pl.nr_items = 1;
	logged_update(&t, &pl, 10 * (int64_t)1000000000, hold);
	it.hold = HOLD_KERNEL_MOVING;
	assert_false(logged_repeats(&t, &it, false, 11 * (int64_t)1000000000, hold));
	/* once said, the same again is a repeat */
	logged_update(&t, &pl, 11 * (int64_t)1000000000, hold);
	assert_true(logged_repeats(&t, &it, false, 12 * (int64_t)1000000000, hold));
	logged_table_clear(&t);
	snap_unref(c);
}

/* Its CPUs changed in the window: the kernel had no whole window to be
 * judged not moving it. */
static void test_cpus_changed(void **state)
{
	struct gspec a = { "g", NULL, "0-1", 1.0, { 100, 0, 0 }, 0, false };
	struct gspec b = { "g", NULL, "2-3", 1.0, { 100, 0, 0 }, 0, false };
	struct snapshot *p = snap_at(0, 1, &a, 1), *c = snap_at(10, 1, &b, 1);
	struct kflow_judgement j;

	(void)state;
	kflow_fill(c, p, NULL, NULL);
	assert_non_null(guest(c, "g")->kflow);
	assert_false(guest(c, "g")->kflow->cpus_steady);
	kflow_judge(c, guest(c, "g"), 30, &j);
	assert_int_equal(j.verdict, KFLOW_ABSENT);
	snap_unref(c);
	snap_unref(p);
}

/* kbal's rule with the flow: for auto, a measured shortfall migrates;
 * unmeasured it is kbal_decide (the equivalence table of test_kbal). */
static void test_decide_flow(void **state)
{
	static const enum kbal_setting settings[] = { KBAL_AUTO, KBAL_DEFER, KBAL_MIGRATE };
	static const int bals[] = { -1, 0, 1, 2, 3 };
	static const double cpus[] = { NAN, 0.0, 0.1, KBAL_BUSY_CPUS, 1.0 };

	(void)state;
	for (unsigned si = 0; si < 3; si++)
		for (unsigned bi = 0; bi < 5; bi++)
			for (unsigned ci = 0; ci < 5; ci++)
				for (int strict = 0; strict < 2; strict++) {
					enum kbal_action base = kbal_decide(settings[si], bals[bi], strict, cpus[ci]);

					assert_int_equal(kbal_decide_flow(settings[si], bals[bi], strict, cpus[ci],
									  KBAL_FLOW_UNMEASURED), base);
					assert_int_equal(kbal_decide_flow(settings[si], bals[bi], strict, cpus[ci],
									  KBAL_FLOW_MOVING), base);
					assert_int_equal(kbal_decide_flow(settings[si], bals[bi], strict, cpus[ci],
									  KBAL_FLOW_SHORT),
							 settings[si] == KBAL_AUTO ? KBAL_ACT_MIGRATE : base);
				}
}

/* The plan's way for a busy guest under auto with balancing on: the
 * kernel's while nothing is measured, the mover's once the kernel is
 * measured not moving it. */
static void test_plan_way(void **state)
{
	static const uint64_t all0[3] = { 100, 0, 0 };
	struct gspec a = { "g", NULL, "2-3", 1.0, { 100, 0, 0 }, 0, false };
	struct snapshot *p = snap_at(0, 1, &a, 1), *c = snap_at(10, 1, &a, 1);
	struct mem_way_cfg cfg = { .kbal = KBAL_AUTO, .mover = true, .mover_on = true, .kernel_follow_s = 30 };
	struct plan pl = { 0 };
	struct plan_item it;

	(void)state, (void)all0;
	plan_item_init(&it, c, 0, PLAN_MOVE);
	mask_parse("1", &it.to_mems);
	it.migrate_bytes = 100 * MIB;
	pl.items = &it;
	pl.nr_items = 1;
	plan_mem_ways(&pl, c, &cfg);
	assert_int_equal(it.mem_way, MEM_WAY_KERNEL);
	kflow_fill(c, p, NULL, NULL);
	plan_mem_ways(&pl, c, &cfg);
	assert_int_equal(it.mem_way, MEM_WAY_MOVER);
	cfg.kbal = KBAL_DEFER;
	plan_mem_ways(&pl, c, &cfg);
	assert_int_equal(it.mem_way, MEM_WAY_KERNEL);
	snap_unref(c);
	snap_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill),
		cmocka_unit_test(test_judge),
		cmocka_unit_test(test_holds),
		cmocka_unit_test(test_unmeasured),
		cmocka_unit_test(test_unmeasured_not_logged),
		cmocka_unit_test(test_cpus_changed),
		cmocka_unit_test(test_decide_flow),
		cmocka_unit_test(test_plan_way),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

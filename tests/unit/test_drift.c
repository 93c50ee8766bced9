/* Tests for agents/drift.c: the step rule, the counter's parse, and
 * passes over a cgroup v2 tree in a temp directory whose cpu.stat the
 * test rewrites between passes, at times it chooses. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/cgscan.h"
#include "agents/drift.h"
#include "orchestrator/base/cghier.h"
#include "orchestrator/model/snapshot.h"
#include "orchestrator/base/xalloc.h"

#define S 1000000000LL /* ns in a second */

static void test_step(void **state)
{
	(void)state;
	assert_int_equal(drift_step(0.0, 1.0), 1);      /* idle -> busy */
	assert_int_equal(drift_step(1.0, 0.02), -1);    /* busy -> idle */
	assert_int_equal(drift_step(0.1, 0.4), 0);      /* under DRIFT_MIN_CPUS */
	assert_int_equal(drift_step(0.0, 0.5), 1);      /* two busy threads sharing a CPU */
	assert_int_equal(drift_step(0.5, 0.1), -1);
	assert_int_equal(drift_step(12.0, 12.6), 0);    /* a big guest's noise */
	assert_int_equal(drift_step(12.0, 16.0), 1);    /* ... and a real step */
	assert_int_equal(drift_step(NAN, 1.0), 0);
	assert_int_equal(drift_step(1.0, NAN), 0);
}

static void test_parse(void **state)
{
	uint64_t ns = 0;

	(void)state;
	assert_int_equal(cgscan_parse_usage("usage_usec 1500\nuser_usec 1000\n", true, &ns), 0);
	assert_true(ns == 1500000);
	assert_int_equal(cgscan_parse_usage("user_usec 7\nusage_usec 42\n", true, &ns), 0);
	assert_true(ns == 42000);
	assert_int_equal(cgscan_parse_usage("123456789", false, &ns), 0);
	assert_true(ns == 123456789);
	assert_int_equal(cgscan_parse_usage("user_usec 7\n", true, &ns), -EINVAL);
	assert_int_equal(cgscan_parse_usage("usage_usec \n", true, &ns), -EINVAL);
	assert_int_equal(cgscan_parse_usage("usage_usec 12x\n", true, &ns), -EINVAL);
	assert_int_equal(cgscan_parse_usage("usage_usec 18446744073709552\n", true, &ns), -ERANGE);
	assert_int_equal(cgscan_parse_usage(NULL, true, &ns), -EINVAL);
}

/* ---- passes over a temp tree --------------------------------------------- */

struct tree {
	char *root;
	struct cg_hier h;
	struct snapshot *snap;
	struct drift *d;
	int64_t t;                  /* the passes' clock */
	double used[2];             /* each guest's CPU seconds so far */
	/* g0's one thread, for the watch of where threads run: its CPU time
	 * (ns), the CPU it runs on, and how often each guest's were read. */
	uint64_t thr_ns;
	int thr_cpu;
	unsigned thr_reads[2];
	bool *moved;                /* the passes' MOVED (NULL: none) */
};

static void set_usage(struct tree *t, unsigned g)
{
	char rel[64], text[64];

	snprintf(rel, sizeof(rel), "sys/fs/cgroup/g%u/cpu.stat", g);
	snprintf(text, sizeof(text), "usage_usec %llu\nuser_usec 0\n", (unsigned long long)(t->used[g] * 1e6));
	tu_write(t->root, rel, text);
}

/* Two nodes of 2 CPUs (0-1, 2-3) with memory. g0 spreads over both, its
 * 100 MiB on node 0, its thread measured on node 0 by the cycle
 * (locality LOC0); g1 is on node 1 alone. */
static struct snapshot *snap_of_loc(uint64_t seq, double loc0)
{
	struct snapshot *s = snap_new();

	tu_snap_nodes(s, 2, 2, 1ULL << 30);
	s->seq = seq;
	for (unsigned g = 0; g < 2; g++) {
		struct snap_guest *x = snap_add_guest(s);
		char id[16], cg[16];

		snprintf(id, sizeof(id), "g%u", g);
		snprintf(cg, sizeof(cg), "/g%u", g);
		snprintf(x->id, sizeof(x->id), "%s", id);
		x->cgroup = xstrdup(cg);
		x->cpu_use = NAN;
		x->mem_node[g] = 100ULL << 20;
		x->mem_total = 100ULL << 20;
		mask_set(&x->cpu_nodes, 1);
		x->locality = 1.0;
	}
	mask_set(&s->guests[0].cpu_nodes, 0);
	/* where its threads ran over the cycle's window, as LOC0 says
	 * (its memory is on node 0) */
	s->guests[0].cpu_node = xcalloc(2, sizeof(double));
	s->guests[0].cpu_node[0] = loc0;
	s->guests[0].cpu_node[1] = 1.0 - loc0;
	s->guests[0].cpu_use = 1.0;
	s->guests[0].locality = loc0;
	return s;
}

static struct snapshot *snap_of(uint64_t seq)
{
	return snap_of_loc(seq, 1.0);
}

static int setup(void **state)
{
	struct tree *t = xcalloc(1, sizeof(*t));
	char cg[PATH_MAX];

	t->root = tu_mkdtemp();
	tu_write(t->root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
	tu_write(t->root, "sys/fs/cgroup/cgroup.procs", "1\n");
	for (unsigned g = 0; g < 2; g++)
		set_usage(t, g);
	snprintf(cg, sizeof(cg), "%s/sys/fs/cgroup", t->root);
	assert_int_equal(cgh_detect(cg, &t->h), 0);
	assert_true(t->h.v2[CGC_CPUACCT]);
	t->snap = snap_of(1);
	t->d = drift_new();
	t->t = 100 * S;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;

	drift_free(t->d);
	snap_unref(t->snap);
	tu_rm_rf(t->root);
	free(t->root);
	free(t);
	return 0;
}

/* Advance the clock by SEC, guest G0 using USE0 CPUs and G1 USE1 meanwhile,
 * and run a pass. */
static struct drift_report pass(struct tree *t, double sec, double use0, double use1)
{
	struct drift_report r;

	t->t += (int64_t)(sec * S);
	t->used[0] += use0 * sec;
	t->used[1] += use1 * sec;
	t->thr_ns += (uint64_t)(use0 * sec * 1e9);
	set_usage(t, 0);
	set_usage(t, 1);
	drift_pass(t->d, t->snap, t->t, drift_read_path, &t->h, t->moved, &r);
	return r;
}

static void new_cycle(struct tree *t)
{
	uint64_t seq = t->snap->seq + 1;

	snap_unref(t->snap);
	t->snap = snap_of(seq);
}

/* A guest idle at the cycle that turns busy is reported on the second
 * busy window, not the first; the other guest, steady, never. */
static void test_idle_to_busy(void **state)
{
	struct tree *t = *state;
	struct drift_report r;

	r = pass(t, 1, 0, 1);            /* first readings */
	assert_int_equal(r.read, 2);
	assert_int_equal(r.stepped, 0);
	r = pass(t, 1, 0, 1);            /* the reference windows */
	assert_int_equal(r.stepped, 0);
	r = pass(t, 1, 0, 1);
	assert_int_equal(r.stepped, 0);
	r = pass(t, 1, 1, 1);            /* g0 busy: one window */
	assert_int_equal(r.stepped, 0);
	r = pass(t, 1, 1, 1);            /* two */
	assert_int_equal(r.stepped, 1);
	assert_string_equal(r.first, "g0");
	assert_true(fabs(r.first_ref - 0.0) < 0.01);
	assert_true(fabs(r.first_now - 1.0) < 0.01);
	/* Until a cycle, it stays reported (the engine may have had to wait). */
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.stepped, 1);
	/* A cycle: the window around it is the new reference; g0 busy is no
	 * step any more. */
	new_cycle(t);
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.stepped, 0);
	r = pass(t, 1, 1, 1);
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.stepped, 0);
	/* busy -> idle is a step too */
	r = pass(t, 1, 0, 1);
	r = pass(t, 1, 0, 1);
	assert_int_equal(r.stepped, 1);
	assert_string_equal(r.first, "g0");
}

/* A guest that alternates around its reference (busy one window, idle
 * the next) prompts nothing; nor does a window too short to read. */
static void test_alternating_and_short(void **state)
{
	struct tree *t = *state;
	struct drift_report r;

	pass(t, 1, 0.5, 0);
	pass(t, 1, 0.5, 0);              /* reference 0.5 */
	for (int i = 0; i < 7; i++) {    /* ends on an idle window */
		r = pass(t, 1, i % 2 ? 1.0 : 0.0, 0);
		assert_int_equal(r.stepped, 0);
	}
	/* a pass 0.1 s after the last reads nothing new: the window goes on */
	r = pass(t, 0.1, 1, 0);
	assert_int_equal(r.stepped, 0);
	r = pass(t, 1, 1, 0);            /* 1.1 s busy: one window up */
	assert_int_equal(r.stepped, 0);
	r = pass(t, 1, 1, 0);            /* two */
	assert_int_equal(r.stepped, 1);
}

/* A cgroup made again (its counter went back) starts over; one that is
 * gone is not read. */
static void test_counter_back_and_gone(void **state)
{
	struct tree *t = *state;
	struct drift_report r;
	char path[PATH_MAX];

	pass(t, 1, 0, 0);
	pass(t, 1, 0, 0);
	pass(t, 1, 1, 0);
	t->used[0] = 0;                  /* g0 recreated: its counter is back at 0.5 s */
	r = pass(t, 1, 0.5, 0);
	assert_int_equal(r.stepped, 0);  /* a first reading again */
	r = pass(t, 1, 1, 0);            /* its reference: busy */
	r = pass(t, 1, 1, 0);
	assert_int_equal(r.stepped, 0);
	snprintf(path, sizeof(path), "%s/sys/fs/cgroup/g1", t->root);
	tu_rm_rf(path);
	t->t += S;
	drift_pass(t->d, t->snap, t->t, drift_read_path, &t->h, t->moved, &r);
	assert_int_equal(r.read, 1);
}

/* The watch's reader of threads: g0's one thread (tid 42) as the test
 * sets it; any other guest's, none (and counted: it should not be asked). */
static int fake_threads(void *ctx, const struct snap_guest *g, struct drift_thread *out, unsigned max)
{
	struct tree *t = ctx;

	assert_true(max >= 1);
	t->thr_reads[g->id[1] == '0' ? 0 : 1]++;
	if (strcmp(g->id, "g0") != 0)
		return 0;
	out[0].tid = 42;
	out[0].cpu = t->thr_cpu;
	out[0].ns = t->thr_ns;
	return 1;
}

/* Where, not how much: g0 (on nodes 0-1, its memory on node 0) stays
 * exactly as busy while its thread moves to node 1. One window there is
 * not reported (a hop and back is not), two are, with the cycle's
 * locality and the window's; the next cycle's snapshot starts over, and
 * if it saw the guest as it now is, nothing is away. An idle thread on
 * the far node says nothing; g1, on one node, is never read. */
static void test_threads_away_from_memory(void **state)
{
	struct tree *t = *state;
	struct drift_report r;

	drift_watch_threads(t->d, fake_threads, t);
	t->thr_cpu = 1;
	r = pass(t, 1, 1, 1);            /* first readings */
	assert_int_equal(r.away, 0);
	r = pass(t, 1, 1, 1);            /* on node 0, with its memory */
	assert_int_equal(r.away, 0);
	assert_int_equal(r.stepped, 0);
	assert_int_equal(r.threads, 1);  /* g0's one thread; g1 is on one node */
	t->thr_cpu = 2;                  /* a hop to node 1 ... */
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.away, 0);
	t->thr_cpu = 0;                  /* ... and back */
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.away, 0);
	t->thr_cpu = 3;                  /* node 1 for good */
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.away, 0);
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.away, 1);
	assert_int_equal(r.stepped, 0);  /* its use did not change */
	assert_string_equal(r.away_first, "g0");
	assert_true(fabs(r.away_ref - 1.0) < 1e-9);
	assert_true(fabs(r.away_now - 0.0) < 1e-9);
	/* A short pass reads nothing new, and still says so. */
	r = pass(t, 0.1, 1, 1);
	assert_int_equal(r.away, 1);
	assert_int_equal(r.threads, 0);
	/* The next cycle saw it on node 1 (locality 0): nothing away. */
	snap_unref(t->snap);
	t->snap = snap_of_loc(2, 0.0);
	for (int i = 0; i < 4; i++) {
		r = pass(t, 1, 1, 1);
		assert_int_equal(r.away, 0);
	}
	/* A cycle that saw it local, then its thread idle on node 1: no use
	 * over the window, nothing said. */
	snap_unref(t->snap);
	t->snap = snap_of_loc(3, 1.0);
	for (int i = 0; i < 4; i++) {
		r = pass(t, 1, 0, 1);
		assert_int_equal(r.away, 0);
	}
	assert_int_equal(t->thr_reads[1], 0);
	assert_true(t->thr_reads[0] >= 10);
	/* A guest the cycle saw idle, or one the agent must not touch, is
	 * not read. */
	for (unsigned k = 0; k < 2; k++) {
		unsigned before = t->thr_reads[0];

		snap_unref(t->snap);
		t->snap = snap_of_loc(4 + k, 1.0);
		if (k == 0)
			t->snap->guests[0].cpu_use = 0.1;
		else
			t->snap->guests[0].policy.mode = GPOL_IGNORE;
		t->thr_cpu = 3;
		for (int i = 0; i < 3; i++) {
			r = pass(t, 1, 1, 1);
			assert_int_equal(r.away, 0);
			assert_int_equal(r.threads, 0);
		}
		assert_int_equal(t->thr_reads[0], before);
	}
}

/* A guest the cycle moved after its snapshot: its threads running away
 * from the memory the snapshot saw are that move, not the scheduler's;
 * they are not read until the next snapshot, and its use is still
 * watched. */
static void test_threads_of_a_moved_guest_not_watched(void **state)
{
	struct tree *t = *state;
	struct drift_report r;
	bool moved[2] = { true, false };

	drift_watch_threads(t->d, fake_threads, t);
	t->thr_cpu = 1;
	r = pass(t, 1, 1, 1);
	r = pass(t, 1, 1, 1);            /* on node 0, with its memory */
	assert_int_equal(r.threads, 1);
	t->moved = moved;                /* the cycle moved it to node 1 */
	t->thr_cpu = 3;
	for (int i = 0; i < 4; i++) {
		r = pass(t, 1, 1, 1);
		assert_int_equal(r.away, 0);
		assert_int_equal(r.threads, 0);
		assert_int_equal(r.read, 2);
	}
	r = pass(t, 1, 0, 1);            /* idle now: its use is watched */
	r = pass(t, 1, 0, 1);
	assert_int_equal(r.stepped, 1);
	/* The next snapshot saw it on node 1, local (memory followed); the
	 * scheduler then takes its thread back to node 0. */
	t->moved = NULL;
	snap_unref(t->snap);
	t->snap = snap_of_loc(2, 1.0);
	t->snap->guests[0].mem_node[0] = 0;
	t->snap->guests[0].mem_node[1] = 100ULL << 20;
	t->snap->guests[0].cpu_node[0] = 0.0;
	t->snap->guests[0].cpu_node[1] = 1.0;
	t->thr_cpu = 0;
	r = pass(t, 1, 1, 1);
	r = pass(t, 1, 1, 1);
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.away, 1);
}

/* A pod whose containers sit on their own nodes, each with its memory:
 * local by its parts (g->locality 1), while its whole memory, half on
 * each node, reads 0.5 wherever its threads run. Threads that stay where
 * the cycle saw them are not away; leaving for a node without its
 * memory still is, measured against the cycle's whole-memory reading. */
static void test_pod_local_by_its_parts_not_away(void **state)
{
	struct tree *t = *state;
	struct snapshot *s = snap_new();
	struct drift_report r;

	/* g0 on nodes 0-2 (CPUs 0-5), half its memory on node 0, half on
	 * node 1; g1 on node 1 alone */
	tu_snap_nodes(s, 3, 2, 1ULL << 30);
	s->seq = 2;
	for (unsigned i = 0; i < 2; i++) {
		struct snap_guest *g = snap_add_guest(s);

		snprintf(g->id, sizeof(g->id), "g%u", i);
		g->cgroup = xstrdup(i ? "/g1" : "/g0");
		g->cpu_use = NAN;
		g->mem_node[1] = 50ULL << 20;
		g->mem_total = 100ULL << 20;
		mask_set(&g->cpu_nodes, 1);
		g->locality = 1.0;
	}
	s->guests[0].mem_node[0] = 50ULL << 20;
	s->guests[1].mem_node[1] = 100ULL << 20;
	mask_set(&s->guests[0].cpu_nodes, 0);
	mask_set(&s->guests[0].cpu_nodes, 2);
	s->guests[0].cpu_node = xcalloc(3, sizeof(double));
	s->guests[0].cpu_node[0] = s->guests[0].cpu_node[1] = 0.5;
	s->guests[0].cpu_use = 1.0;
	snap_unref(t->snap);
	t->snap = s;
	drift_watch_threads(t->d, fake_threads, t);
	t->thr_cpu = 1;                  /* node 0: as the cycle saw */
	for (int i = 0; i < 4; i++) {
		r = pass(t, 1, 1, 1);
		assert_int_equal(r.away, 0);
	}
	t->thr_cpu = 5;                  /* node 2, none of its memory */
	r = pass(t, 1, 1, 1);
	r = pass(t, 1, 1, 1);
	assert_int_equal(r.away, 1);
	assert_true(fabs(r.away_ref - 0.5) < 1e-9);
	assert_true(fabs(r.away_now - 0.0) < 1e-9);
}

/* Without drift_watch_threads, no thread is read (the default). */
static void test_threads_not_watched_by_default(void **state)
{
	struct tree *t = *state;
	struct drift_report r;

	t->thr_cpu = 3;
	for (int i = 0; i < 4; i++) {
		r = pass(t, 1, 1, 1);
		assert_int_equal(r.away, 0);
		assert_int_equal(r.threads, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step),
		cmocka_unit_test(test_parse),
		cmocka_unit_test_setup_teardown(test_idle_to_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alternating_and_short, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counter_back_and_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_away_from_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_of_a_moved_guest_not_watched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_not_watched_by_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pod_local_by_its_parts_not_away, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests for agents/selfload.c: the agent's own CPU time per node, taken
 * off the nodes' measured load. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/selfload.h"
#include "orchestrator/base/xalloc.h"

/* A task/TID/stat line of the agent: utime 1, stime 1, last on CPU. */
#define STAT_FMT "%d (numaorchd) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 2 0 100 0 0 0 0 0 0 0 0 0 0 0 0 0 " \
		 "0 0 17 %d 0 0 0 0 0\n"

/* Two nodes of two CPUs: 0-1 and 2-3. */
static void two_nodes(struct snap_node *n)
{
	memset(n, 0, 2 * sizeof(*n));
	for (int i = 0; i < 2; i++) {
		n[i].id = i;
		mask_set(&n[i].cpus, 2 * i);
		mask_set(&n[i].cpus, 2 * i + 1);
		n[i].nr_cpus = 2;
		n[i].busy = NAN;
	}
}

static void test_by_node(void **state)
{
	struct snap_node nodes[2];
	/* 10: ran 0.1 s more, last on CPU 3 (node 1); 11: gone; 12: born
	 * since, 0.05 s on CPU 0; 13: a reused tid (counter back), 0.02 s on
	 * CPU 1; 14: CPU unknown, not counted. */
	const struct selfload_thr prev[] = { { 10, 0, 500000000 }, { 11, 2, 7000000000 }, { 13, 1, 900000000 } };
	const struct selfload_thr cur[] = { { 10, 3, 600000000 }, { 12, 0, 50000000 }, { 13, 1, 20000000 },
					    { 14, -1, 80000000 } };
	double sec[2] = { 0, 0 };

	(void)state;
	two_nodes(nodes);
	selfload_by_node(prev, 3, cur, 4, nodes, 2, sec);
	assert_true(fabs(sec[0] - 0.07) < 1e-9);
	assert_true(fabs(sec[1] - 0.1) < 1e-9);
}

static void test_subtract(void **state)
{
	struct snap_node nodes[2];
	/* A node with no guest on it that reads a little busy: the agent's
	 * own time there is most of it. */
	double sec[2] = { 0.5, 0.1 };

	(void)state;
	two_nodes(nodes);
	nodes[0].busy = 0.2;          /* 0.4 CPUs, the agent 0.5 s of 1 s: floor 0 */
	nodes[1].busy = 0.0615;       /* 0.123 CPUs, the agent 0.1: 0.023 left */
	selfload_subtract(nodes, 2, sec, 1.0);
	assert_true(nodes[0].busy == 0.0);
	assert_true(fabs(nodes[1].busy - 0.0115) < 1e-9);
	assert_true(fabs(nodes[0].agent_cpus - 0.5) < 1e-9);   /* what it used, floor or not */
	assert_true(fabs(nodes[1].agent_cpus - 0.1) < 1e-9);
	/* not measured: stays so, its agent_cpus still noted; no window:
	 * nothing taken */
	nodes[0].busy = NAN;
	nodes[0].agent_cpus = NAN;
	selfload_subtract(nodes, 2, sec, 2.0);
	assert_true(isnan(nodes[0].busy));
	assert_true(fabs(nodes[0].agent_cpus - 0.25) < 1e-9);
	nodes[1].busy = 0.5;
	selfload_subtract(nodes, 2, sec, 0.0);
	assert_true(nodes[1].busy == 0.5);
}

/* A fixture procfs: the agent's pid with two threads, then a second
 * sample after they ran; a procfs without the pid counts nothing. */
static void test_sample_fixture(void **state)
{
	char *dir = tu_mkdtemp(), *proc = xasprintf("%s/proc", dir);
	struct snap_node nodes[2];
	struct selfload s;
	double sec[2] = { 0, 0 };
	char rel[128], text[512];

	(void)state;
	two_nodes(nodes);
	for (int k = 0; k < 2; k++) {
		const int tid[2] = { 4242, 4243 }, /* [sample][thread] */ cpu[2][2] = { { 0, 1 }, { 3, 2 } };
		/* [sample][thread] */
		const char *ns[2][2] = { { "100000000 0 0\n", "200000000 0 0\n" },
					 { "300000000 0 0\n", "250000000 0 0\n" } };

		for (int t = 0; t < 2; t++) {
			snprintf(rel, sizeof(rel), "proc/4242/task/%d/stat", tid[t]);
			snprintf(text, sizeof(text), STAT_FMT, tid[t], cpu[k][t]);
			tu_write(dir, rel, text);
			snprintf(rel, sizeof(rel), "proc/4242/task/%d/schedstat", tid[t]);
			tu_write(dir, rel, ns[k][t]);
		}
		if (k == 0) {
			selfload_init(&s, proc, 4242);
			assert_int_equal(selfload_sample(&s, nodes, 2, sec), 0);
			assert_true(sec[0] == 0.0 && sec[1] == 0.0);   /* a first sample counts nothing */
		}
	}
	assert_int_equal(selfload_sample(&s, nodes, 2, sec), 1);     /* a window counted */
	/* 4242: +0.2 s, last on CPU 3 (node 1); 4243: +0.05 s on CPU 2 (node 1) */
	assert_true(fabs(sec[0]) < 1e-9);
	assert_true(fabs(sec[1] - 0.25) < 1e-9);
	selfload_clear(&s);

	selfload_init(&s, proc, 999999);
	assert_int_equal(selfload_sample(&s, nodes, 2, sec), -ENOENT);
	selfload_clear(&s);
	free(proc);
	tu_rm_rf(dir);
	free(dir);
}

/* This process on the live /proc: its own CPU time shows on the node of
 * a CPU it ran on (all CPUs on one node here). */
static void test_sample_live(void **state)
{
	struct snap_node node;
	struct selfload s;
	double sec = 0.0;
	volatile unsigned long x = 0;

	(void)state;
	memset(&node, 0, sizeof(node));
	for (int c = 0; c < 64; c++)
		mask_set(&node.cpus, c);
	node.nr_cpus = 64;
	selfload_init(&s, "/proc", getpid());
	assert_int_equal(selfload_sample(&s, &node, 1, &sec), 0);
	for (unsigned long i = 0; i < 200000000UL; i++)
		x += i;
	assert_int_equal(selfload_sample(&s, &node, 1, &sec), 1);
	assert_true(sec > 0.01);
	selfload_clear(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_node),
		cmocka_unit_test(test_subtract),
		cmocka_unit_test(test_sample_fixture),
		cmocka_unit_test(test_sample_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

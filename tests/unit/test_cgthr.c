/* Tests for agents/cgthr.c: a container's CPU use across scans. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/cgthr.h"
#include "orchestrator/base/xalloc.h"

#define S 1000000000LL

static void record(struct cgthr *t, const char *name, uint64_t usage, int64_t t_ns)
{
	char id[GUEST_ID_MAX] = { 0 };

	snprintf(id, sizeof(id), "%s", name);
	cgthr_record(t, id, usage, t_ns, 0, 0);
}

static const struct cgthr_prev *prev_of(const struct cgthr *t, const char *name)
{
	char id[GUEST_ID_MAX] = { 0 };

	snprintf(id, sizeof(id), "%s", name);
	return cgthr_prev_find(t, id);
}

/* Each guest's rate runs from its own previous read to its own read now.
 * Two guests each using exactly one CPU, read 0.15 s apart in the first
 * scan and 0.02 s apart in the second (a scan that stalled early on):
 * both read 1.00. Over the scans' common 0.25 s they would read 1.00 and
 * 0.48. */
static void test_rate_over_each_guests_own_reads(void **state)
{
	struct cgthr t;
	const struct cgthr_prev *a, *b;

	(void)state;
	cgthr_init(&t, "/nonexistent");
	cgthr_begin(&t);
	record(&t, "b", 7 * S, 10 * S + S / 100 * 15);
	record(&t, "a", 3 * S, 10 * S);
	cgthr_end(&t);

	cgthr_begin(&t);
	a = prev_of(&t, "a");
	b = prev_of(&t, "b");
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->t_ns, 10 * S);
	/* a read at 10.25 s, b at 10.27 s: 0.25 and 0.12 s of CPU since. */
	assert_true(fabs(cgthr_rate(a, 3 * S + S / 4, 10 * S + S / 4) - 1.0) < 1e-9);
	assert_true(fabs(cgthr_rate(b, 7 * S + S / 100 * 12, 10 * S + S / 100 * 27) - 1.0) < 1e-9);
	assert_null(prev_of(&t, "c"));
	cgthr_end(&t);
	cgthr_clear(&t);
}

/* No rate without a previous sample, a forward clock or a counter that
 * did not go back (a cgroup of the same name made anew). */
static void test_rate_unknown(void **state)
{
	struct cgthr_prev p = { .usage_ns = 5 * S, .t_ns = 10 * S };

	(void)state;
	assert_true(isnan(cgthr_rate(NULL, 6 * S, 11 * S)));
	assert_true(isnan(cgthr_rate(&p, 6 * S, 10 * S)));
	assert_true(isnan(cgthr_rate(&p, 6 * S, 9 * S)));
	assert_true(isnan(cgthr_rate(&p, 4 * S, 11 * S)));
	assert_true(fabs(cgthr_rate(&p, 5 * S, 11 * S)) < 1e-12);
}

/* A fixture /proc/TID/task/TID/stat: TICKS of user time, 1 of system
 * time, last on CPU; the comm has a space and a ')' in it. */
static void thread_stat(const char *root, int tid, unsigned ticks, int cpu)
{
	char rel[64], text[512];
	int n;

	n = snprintf(text, sizeof(text), "%d (CPU 0/T) x) R", tid);
	for (int f = 4; f <= 52; f++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, " %d",
			      f == 14 ? (int)ticks : f == 15 ? 1 : f == 39 ? cpu : 0);
	snprintf(text + n, sizeof(text) - (size_t)n, "\n");
	snprintf(rel, sizeof(rel), "%d/task/%d/stat", tid, tid);
	tu_write(root, rel, text);
}

/* What the watch reads between scans (drift.h): the threads the last
 * scan measured of a guest spread over two nodes that ran in its window
 * (none after a first scan: no window), and each one's CPU time and last
 * CPU now; a guest not measured has none, a thread gone reads -ENOENT. */
static void test_watch_reads_the_measured_threads(void **state)
{
	char *root = tu_mkdtemp();
	struct snapshot *s = snap_new();
	struct snap_guest *g;
	struct cgthr t;
	cpumask_t all;
	pid_t tids[4];
	unsigned off, n;
	const struct cgthr_prev *p;
	uint64_t ns;
	int cpu;

	(void)state;
	tu_snap_nodes(s, 2, 2, 1ULL << 30);
	mask_zero(&all);
	for (unsigned c = 0; c < 4; c++)
		mask_set(&all, c);
	g = snap_add_guest(s);
	snprintf(g->id, sizeof(g->id), "wide");
	snap_guest_set_cpus(s, g, &all, NULL);
	g->cpu_use = 1.0;
	thread_stat(root, 43, 300, 3);
	thread_stat(root, 42, 100, 0);
	cgthr_init(&t, root);
	cgthr_begin(&t);
	cgthr_guest_begin(&t);
	cgthr_add_tid(&t, 43);
	cgthr_add_tid(&t, 42);
	cgthr_thread_nodes(&t, s, g, NULL, 10 * S, &off, &n);
	assert_int_equal(n, 2);
	cgthr_record(&t, g->id, 5 * S, 10 * S, off, n);
	cgthr_end(&t);
	assert_int_equal(cgthr_prev_tids(&t, "wide", tids, 4), 0);

	/* 10 s later: 43 used 0.2 CPU, 44 (new) and 42 (idle, a tick:
	 * under CGTHR_RAN_CPU) are not read */
	thread_stat(root, 43, 300 + (int)(2 * sysconf(_SC_CLK_TCK)), 3);
	thread_stat(root, 42, 101, 0);
	thread_stat(root, 44, 500, 2);
	cgthr_begin(&t);
	cgthr_guest_begin(&t);
	cgthr_add_tid(&t, 44);
	cgthr_add_tid(&t, 43);
	cgthr_add_tid(&t, 42);
	p = cgthr_prev_find(&t, g->id);
	assert_non_null(p);
	free(g->cpu_node); /* each scan's guest is new; this one is reused */
	g->cpu_node = NULL;
	cgthr_thread_nodes(&t, s, g, p, 20 * S, &off, &n);
	assert_int_equal(n, 3);
	cgthr_record(&t, g->id, 7 * S, 20 * S, off, n);
	cgthr_end(&t);
	assert_int_equal(cgthr_prev_tids(&t, "wide", tids, 4), 1);
	assert_int_equal(tids[0], 43);
	assert_int_equal(cgthr_prev_tids(&t, "other", tids, 4), 0);

	/* two that ran: both, sorted by tid, at most MAX */
	thread_stat(root, 42, 101 + (int)sysconf(_SC_CLK_TCK), 0);
	thread_stat(root, 43, 300 + (int)(4 * sysconf(_SC_CLK_TCK)), 3);
	cgthr_begin(&t);
	cgthr_guest_begin(&t);
	cgthr_add_tid(&t, 43);
	cgthr_add_tid(&t, 42);
	free(g->cpu_node);
	g->cpu_node = NULL;
	cgthr_thread_nodes(&t, s, g, cgthr_prev_find(&t, g->id), 30 * S, &off, &n);
	cgthr_record(&t, g->id, 9 * S, 30 * S, off, n);
	cgthr_end(&t);
	assert_int_equal(cgthr_prev_tids(&t, "wide", tids, 4), 2);
	assert_int_equal(tids[0], 42);   /* the slice is sorted by tid */
	assert_int_equal(tids[1], 43);
	assert_int_equal(cgthr_prev_tids(&t, "wide", tids, 1), 1);
	thread_stat(root, 43, 399 + (int)(4 * sysconf(_SC_CLK_TCK)), 1); /* it ran on, and moved to node 0 */
	assert_int_equal(cgthr_read_thread(&t, 43, &ns, &cpu), 0);
	assert_int_equal(cpu, 1);
	assert_true(ns == (400ULL + 4 * (uint64_t)sysconf(_SC_CLK_TCK)) * (1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK)));
	assert_int_equal(cgthr_read_thread(&t, 45, &ns, &cpu), -ENOENT);
	assert_int_equal(cgthr_read_thread(&t, 0, &ns, &cpu), -EINVAL);
	cgthr_clear(&t);
	snap_unref(s);
	tu_rm_rf(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_over_each_guests_own_reads),
		cmocka_unit_test(test_rate_unknown),
		cmocka_unit_test(test_watch_reads_the_measured_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

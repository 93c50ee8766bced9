/* Tests for agents/acquire.c's first rate window on a fixture host tree:
 * acquirer_prime() starts it early, so the first snapshot waits only what
 * is left of it (the daemon's start-up runs inside the window). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "agents/acquire.h"
#include "orchestrator/base/clock.h"

struct afx {
	char *dir;
	struct acquirer *a;
};

static void afx_init(struct afx *f)
{
	struct host_paths hp;
	struct cgscan_config cg = { 0 };
	char cmd[600];

	f->dir = tu_mkdtemp();
	snprintf(cmd, sizeof(cmd), "cp -a tests/fixtures/host-2node/. '%s/'", f->dir);
	assert_int_equal(system(cmd), 0);
	tu_write(f->dir, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
	assert_int_equal(host_paths_from_root(&hp, f->dir), 0);
	assert_int_equal(acquirer_new(&hp, &cg, &f->a), 0);
}

static void afx_fini(struct afx *f)
{
	acquirer_free(f->a);
	tu_rm_rf(f->dir);
	free(f->dir);
}

static double since_s(int64_t t0)
{
	return (double)(clock_mono_ns() - t0) / 1e9;
}

static void pause_s(double s)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(s * 1e9) };

	while (nanosleep(&ts, &ts) < 0)
		;
}

/* Without a prime, the first snapshot waits the whole window. */
static void test_first_snapshot_waits_the_window(void **state)
{
	struct afx f;
	const struct snapshot *s = NULL;
	int64_t t0;

	(void)state;
	afx_init(&f);
	t0 = clock_mono_ns();
	assert_int_equal(acquirer_snapshot(f.a, 0.3, NULL, &s), 0);
	assert_true(since_s(t0) >= 0.3);
	assert_true(s->window_s >= 0.3);
	snap_unref(s);
	afx_fini(&f);
}

/* Primed 0.4 s before, the first snapshot of a 0.4 s window does not wait
 * again (it took the full 0.4 s before acquirer_prime existed). */
static void test_prime_counts_toward_the_window(void **state)
{
	struct afx f;
	const struct snapshot *s = NULL;
	int64_t t0;

	(void)state;
	afx_init(&f);
	assert_int_equal(acquirer_prime(f.a), 0);
	pause_s(0.4);
	t0 = clock_mono_ns();
	assert_int_equal(acquirer_snapshot(f.a, 0.4, NULL, &s), 0);
	assert_true(since_s(t0) < 0.3);
	assert_true(s->window_s >= 0.4);
	snap_unref(s);
	afx_fini(&f);
}

/* Primed just now, it waits the rest: the window is never shorter. And a
 * second prime changes nothing once counters exist. */
static void test_prime_then_snapshot_waits_the_rest(void **state)
{
	struct afx f;
	const struct snapshot *s = NULL, *s2 = NULL;
	int64_t t0;

	(void)state;
	afx_init(&f);
	assert_int_equal(acquirer_prime(f.a), 0);
	assert_int_equal(acquirer_prime(f.a), 0);
	assert_int_equal(acquirer_snapshot(f.a, 0.3, NULL, &s), 0);
	assert_true(s->window_s >= 0.3);
	/* Later snapshots are deltas against the last one: no waiting. */
	t0 = clock_mono_ns();
	assert_int_equal(acquirer_snapshot(f.a, 0.3, NULL, &s2), 0);
	assert_true(since_s(t0) < 0.25);
	snap_unref(s);
	snap_unref(s2);
	afx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_snapshot_waits_the_window),
		cmocka_unit_test(test_prime_counts_toward_the_window),
		cmocka_unit_test(test_prime_then_snapshot_waits_the_rest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests for agents/cgthr.c: a container's CPU use across scans. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "agents/cgthr.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_over_each_guests_own_reads),
		cmocka_unit_test(test_rate_unknown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* kbal: who moves a guest's memory beside the kernel's NUMA balancing;
 * the [memory] keys. (kernel.numa_balancing itself is read by the acquirer.) */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/store/config.h"
#include "orchestrator/model/kbal.h"

static void test_decide_table(void **state)
{
	static const struct {
		enum kbal_setting s;
		int balancing;
		bool strict;
		double cpu;
		enum kbal_action want;
	} t[] = {
		/* the kernel's balancing off or unknown: the agent migrates */
		{ KBAL_DEFER, 0, false, 1.0, KBAL_ACT_MIGRATE },
		{ KBAL_AUTO, -1, false, 1.0, KBAL_ACT_MIGRATE },
		/* tiering alone (2) migrates between tiers, not to the thread */
		{ KBAL_DEFER, 2, false, 1.0, KBAL_ACT_MIGRATE },
		{ KBAL_DEFER, 1, false, 0.0, KBAL_ACT_DEFER },
		{ KBAL_DEFER, 3, false, 1.0, KBAL_ACT_DEFER },
		{ KBAL_MIGRATE, 1, false, 1.0, KBAL_ACT_MIGRATE },
		/* strict binding ends narrow: narrowing is a migration */
		{ KBAL_DEFER, 1, true, 1.0, KBAL_ACT_MIGRATE },
		{ KBAL_AUTO, 1, true, 1.0, KBAL_ACT_MIGRATE },
		/* auto: the kernel only scans tasks that run */
		{ KBAL_AUTO, 1, false, 1.0, KBAL_ACT_DEFER },
		{ KBAL_AUTO, 1, false, KBAL_BUSY_CPUS, KBAL_ACT_DEFER },
		{ KBAL_AUTO, 1, false, 0.1, KBAL_ACT_MIGRATE },
		{ KBAL_AUTO, 1, false, NAN, KBAL_ACT_MIGRATE },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		enum kbal_action got = kbal_decide(t[i].s, t[i].balancing, t[i].strict, t[i].cpu);

		if (got != t[i].want)
			fail_msg("row %u: %s balancing=%d strict=%d cpu=%g: got %s, want %s", i,
				 kbal_setting_name(t[i].s), t[i].balancing, t[i].strict, t[i].cpu,
				 kbal_action_name(got), kbal_action_name(t[i].want));
	}
}

static void test_names(void **state)
{
	enum kbal_setting s;

	(void)state;
	for (int i = KBAL_AUTO; i <= KBAL_MIGRATE; i++) {
		assert_int_equal(kbal_setting_parse(kbal_setting_name((enum kbal_setting)i), &s), 0);
		assert_int_equal(s, i);
	}
	assert_int_equal(kbal_setting_parse("kernel", &s), -EINVAL);
	assert_null(kbal_setting_name((enum kbal_setting)7));
}

static void test_memory_section(void **state)
{
	struct agent_config c;
	char err[512];

	(void)state;
	assert_int_equal(config_load_string("", "t.conf", &c, err, sizeof(err)), 0);
	assert_int_equal(c.kernel_balancing, KBAL_MIGRATE);
	assert_true(c.mover);
	assert_true(c.mover_on_target);
	config_clear(&c);
	assert_int_equal(config_load_string("[memory]\nkernel_balancing = defer\nmover = no\nworkers = 4\n"
					    "rate_mib = 512\nchunk_ms = 10\njob_timeout = 60\n"
					    "workers_on_target = no\n",
					    "t.conf", &c, err, sizeof(err)), 0);
	assert_int_equal(c.kernel_balancing, KBAL_DEFER);
	assert_false(c.mover);
	assert_int_equal(c.mover_workers, 4);
	assert_true(fabs(c.mover_rate_mib - 512) < 1e-9);
	assert_true(fabs(c.mover_chunk_ms - 10) < 1e-9);
	assert_true(fabs(c.mover_job_timeout_s - 60) < 1e-9);
	assert_false(c.mover_on_target);
	config_clear(&c);
	assert_int_equal(config_load_string("[memory]\nkernel_balancing = kernel\n", "t.conf", &c, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "t.conf:2: [memory] kernel_balancing: must be auto, defer or migrate"));
	assert_int_equal(config_load_string("[memory]\nworkers = 0\n", "t.conf", &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "workers: must be an integer 1..16"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_table),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_memory_section),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

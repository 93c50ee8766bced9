/* Which inotify events of a watched cgroup directory prompt a cycle
 * (agents/cgwatch.c): guests appearing and leaving, processes attached,
 * cpusets rewritten — and nothing else (the agent reads the rest of a
 * guest's files every cycle; prompting on them would turn every read
 * counter into a cycle). */
#include "testutil.h"

#include <sys/inotify.h>

#include "agents/cgwatch.h"

static void test_prompts(void **state)
{
	(void)state;
	/* a cgroup created or removed */
	assert_true(cgwatch_event_prompts(IN_CREATE | IN_ISDIR, "docker-abc.scope"));
	assert_true(cgwatch_event_prompts(IN_DELETE | IN_ISDIR, "docker-abc.scope"));
	/* a process attached (v1 and v2), a cpuset rewritten by someone */
	assert_true(cgwatch_event_prompts(IN_MODIFY, "cgroup.procs"));
	assert_true(cgwatch_event_prompts(IN_MODIFY, "tasks"));
	assert_true(cgwatch_event_prompts(IN_MODIFY, "cpuset.cpus"));
	assert_true(cgwatch_event_prompts(IN_MODIFY, "cpuset.mems"));
	/* lost events: look now */
	assert_true(cgwatch_event_prompts(IN_Q_OVERFLOW, NULL));
	/* everything else: no */
	assert_false(cgwatch_event_prompts(IN_MODIFY, "memory.numa_stat"));
	assert_false(cgwatch_event_prompts(IN_MODIFY, "cpuset.memory_migrate"));
	assert_false(cgwatch_event_prompts(IN_MODIFY, "cgroup.procs.bak"));
	assert_false(cgwatch_event_prompts(IN_MODIFY, NULL));
	assert_false(cgwatch_event_prompts(IN_CREATE, "cgroup.procs"));   /* a file, not a cgroup */
	assert_false(cgwatch_event_prompts(IN_IGNORED, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prompts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

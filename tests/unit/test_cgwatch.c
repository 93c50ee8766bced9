/* Which inotify events of a watched cgroup directory prompt a cycle
 * (agents/cgwatch.c): guests appearing and leaving, processes attached,
 * cpusets rewritten — and nothing else (the agent reads the rest of a
 * guest's files every cycle; prompting on them would turn every read
 * counter into a cycle). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/cgwatch.h"
#include "orchestrator/base/clock.h"

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

static unsigned prompts;

static void count_prompt(void *ctx)
{
	(void)ctx;
	__atomic_add_fetch(&prompts, 1, __ATOMIC_RELEASE);
}

/* Wait (5 s at most) until more than AFTER prompts came; the count. */
static unsigned wait_prompts(unsigned after)
{
	int64_t end = clock_mono_ns() + 5000000000LL;
	unsigned n;

	while ((n = __atomic_load_n(&prompts, __ATOMIC_ACQUIRE)) <= after && clock_mono_ns() < end)
		usleep(2000);
	return n;
}

/* No prompt comes within 300 ms after AFTER (the watcher's thread sees an
 * event within microseconds; 300 ms leave room for a loaded machine). */
static bool quiet_after(unsigned after)
{
	usleep(300000);
	return __atomic_load_n(&prompts, __ATOMIC_ACQUIRE) == after;
}

static void mkdir_at(const char *root, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void rmdir_at(const char *root, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(rmdir(path), 0);
}

/* A watcher of SCOPES[0..N) over a v2 fixture tree of plain directories
 * at ROOT (inotify works the same there), prompts counted from 0. */
static struct cgwatch *start_watch(const char *root, const char **scopes, unsigned n)
{
	struct cgscan_config cfg = { 0 };
	struct cg_hier h;
	struct cgwatch *w = NULL;

	tu_write(root, "cgroup.controllers", "cpuset memory\n");
	assert_int_equal(cgh_detect(root, &h), 0);
	cfg.scopes = (char **)scopes;
	cfg.nr_scopes = n;
	__atomic_store_n(&prompts, 0, __ATOMIC_RELEASE);
	assert_int_equal(cgwatch_start(&h, &cfg, 0, count_prompt, NULL, &w), 0);
	return w;
}

/* A scope (and a parent) configured but created after the watcher
 * started — machine.slice before the first VM, a runtime's parent before
 * its first container — is noticed when it appears, several levels deep,
 * and watched from then on; directories created on the way to it, or
 * beside it outside every scope, prompt nothing. Removed and created
 * again, it is noticed again. A v2 fixture tree of plain directories:
 * inotify works the same there. */
static void test_scope_created_later(void **state)
{
	char *root = tu_mkdtemp();
	const char *scopes[] = { "/machine.slice", "/rt/deep/parent" };
	struct cgwatch *w = start_watch(root, scopes, 2);
	struct cgwatch_stats st;
	unsigned n;

	(void)state;
	cgwatch_get_stats(w, &st);
	assert_int_equal(st.watches, 1);   /* the root, waiting for both */

	/* beside the scopes: nothing */
	mkdir_at(root, "/system.slice");
	assert_true(quiet_after(0));
	/* on the way to a scope: nothing yet */
	mkdir_at(root, "/rt");
	mkdir_at(root, "/rt/deep");
	assert_true(quiet_after(0));
	/* the scope itself: a prompt, and what appears inside it prompts */
	mkdir_at(root, "/machine.slice");
	n = wait_prompts(0);
	assert_true(n >= 1);
	assert_true(quiet_after(n));
	mkdir_at(root, "/machine.slice/qemu-1-vm.scope");
	n = wait_prompts(n);
	assert_true(n >= 2);
	tu_write(root, "machine.slice/qemu-1-vm.scope/cgroup.procs", "42\n");
	n = wait_prompts(n);
	assert_true(n >= 3);
	mkdir_at(root, "/rt/deep/parent");
	n = wait_prompts(n);
	assert_true(n >= 4);
	assert_true(quiet_after(n));
	/* both found: nothing above them is watched any more */
	mkdir_at(root, "/system.slice/other.service");
	mkdir_at(root, "/rt/deep/sibling");
	assert_true(quiet_after(n));
	cgwatch_get_stats(w, &st);
	assert_int_equal(st.watches, 3);   /* machine.slice, its guest, parent */

	/* a scope removed and created again (tmpfs reports the removal with
	 * IN_IGNORED; cgroup v1's cgroupfs does not, see cgwatch.h) */
	{
		char procs[4096];

		snprintf(procs, sizeof(procs), "%s/machine.slice/qemu-1-vm.scope/cgroup.procs", root);
		assert_int_equal(unlink(procs), 0);
	}
	rmdir_at(root, "/machine.slice/qemu-1-vm.scope");
	rmdir_at(root, "/machine.slice");
	n = wait_prompts(n);
	{
		int64_t end = clock_mono_ns() + 5000000000LL;

		/* the removal's events are in when the root waits again */
		do {
			usleep(2000);
			cgwatch_get_stats(w, &st);
		} while (st.watches != 2 && clock_mono_ns() < end);
		assert_int_equal(st.watches, 2);   /* parent, and the root waiting */
	}
	n = __atomic_load_n(&prompts, __ATOMIC_ACQUIRE);
	mkdir_at(root, "/machine.slice");
	n = wait_prompts(n);
	mkdir_at(root, "/machine.slice/qemu-2-vm.scope");
	assert_true(wait_prompts(n) > n);

	cgwatch_stop(w);
	tu_rm_rf(root);
	free(root);
}

/* A scope whose path is created in one go (mkdir -p: every level within
 * microseconds, as a runtime makes its parent and its first container),
 * then removed in one go, a thousand times. Two races can lose it for
 * good (test_cgwatch.py's scope created after the start is the case):
 * - a level created after the watcher failed to watch the scope and
 *   before it armed the anchor above it sends its IN_CREATE to nobody;
 * - a scope removed between the watch that found it and watch_tree's own
 *   leaves no slot for its IN_IGNORED to find, so it is never waited for
 *   again — which a prompt from an event of a dropped anchor can hide.
 * Each round it must be noticed, and a guest created in it too. */
static void test_scope_created_in_one_go(void **state)
{
	char *root = tu_mkdtemp();
	const char *scopes[] = { "/a/b/c/d" };
	struct cgwatch *w = start_watch(root, scopes, 1);
	struct cgwatch_stats st;
	unsigned missed = 0;

	(void)state;
	for (unsigned r = 0; r < 1000; r++) {
		unsigned n = __atomic_load_n(&prompts, __ATOMIC_ACQUIRE);
		int64_t end;

		mkdir_at(root, "/a");
		mkdir_at(root, "/a/b");
		mkdir_at(root, "/a/b/c");
		mkdir_at(root, "/a/b/c/d");
		if (wait_prompts(n) == n && missed++ == 0)
			print_message("round %u: /a/b/c/d created in one go and never noticed\n", r);
		/* and watched: a guest created in it prompts */
		n = __atomic_load_n(&prompts, __ATOMIC_ACQUIRE);
		mkdir_at(root, "/a/b/c/d/guest");
		if (wait_prompts(n) == n && missed++ == 0)
			print_message("round %u: /a/b/c/d noticed, but a guest created in it was not\n", r);
		if (missed)
			break;
		rmdir_at(root, "/a/b/c/d/guest");
		rmdir_at(root, "/a/b/c/d");
		rmdir_at(root, "/a/b/c");
		rmdir_at(root, "/a/b");
		rmdir_at(root, "/a");
		/* settled: waiting for it again on the root (1 watch) */
		end = clock_mono_ns() + 2000000000LL;
		do {
			usleep(1000);
			cgwatch_get_stats(w, &st);
		} while (st.watches != 1 && clock_mono_ns() < end);
	}
	assert_int_equal(missed, 0);
	cgwatch_stop(w);
	tu_rm_rf(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prompts),
		cmocka_unit_test(test_scope_created_later),
		cmocka_unit_test(test_scope_created_in_one_go),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

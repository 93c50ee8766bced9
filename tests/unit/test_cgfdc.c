/* The container scanner's open files (agents/cgfdc.c): the budget an fd
 * limit gives, and which files a scan keeps within it. The files are
 * real descriptors (of /dev/null); the scan is played as cgscan.c plays
 * it, each guest's files in its order (cpuset's two, the CPU counter,
 * memory, the two pid lists), one keep asked per file read. */
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agents/cgfdc.h"

/* The order measure_guest() reads a guest's files in. */
static const enum cgfdc_slot scan_order[] = {
	CGFDC_CPUS, CGFDC_MEMS, CGFDC_CPU, CGFDC_MEM, CGFDC_PROCS, CGFDC_THREADS,
};

/* One scan over guests /g0 .. /g(N-1), as cgscan_scan() runs it: each
 * file read, through the kept fd when there is one, else opened and
 * kept if the budget allows (closed if not). WITH_CPU false: a host with
 * no CPU counter file (no cpuacct anywhere). */
static void scan(struct cgfdc *c, unsigned n, bool with_cpu)
{
	cgfdc_begin(c);
	for (unsigned g = 0; g < n; g++) {
		char rel[32];
		struct cgfdc_ent *e;

		snprintf(rel, sizeof(rel), "/g%u", g);
		e = cgfdc_get(c, rel);
		for (unsigned k = 0; k < sizeof(scan_order) / sizeof(scan_order[0]); k++) {
			enum cgfdc_slot s = scan_order[k];
			int fd;

			if (s == CGFDC_CPU && !with_cpu)
				continue;
			if (e->fd[s] >= 0)
				continue;
			fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			assert_true(fd >= 0);
			if (!cgfdc_keep(c, e, s, fd))
				close(fd);
		}
		assert_true(c->open <= c->budget);
	}
	cgfdc_sweep(c);
	assert_true(c->open <= c->budget);
}

/* Guests /g0 .. /g(N-1) whose slot SLOT is kept. */
static unsigned kept(struct cgfdc *c, unsigned n, enum cgfdc_slot slot)
{
	unsigned k = 0;

	for (unsigned g = 0; g < n; g++) {
		char rel[32];
		struct cgfdc_ent *e;

		snprintf(rel, sizeof(rel), "/g%u", g);
		e = cgfdc_find(c, rel);
		assert_non_null(e);
		if (e->fd[slot] >= 0)
			k++;
	}
	return k;
}

/* Every descriptor the cache holds is counted, and fcntl sees it open. */
static unsigned held(struct cgfdc *c)
{
	unsigned k = 0;

	for (unsigned j = 0; j < c->cap; j++) {
		for (unsigned s = 0; c->tab[j].rel && s < CGFDC_NR; s++)
			if (c->tab[j].fd[s] >= 0) {
				assert_true(fcntl(c->tab[j].fd[s], F_GETFD) >= 0);
				k++;
			}
		for (unsigned i = 0; c->tab[j].rel && c->tab[j].kid_fd && i < 2 * c->tab[j].nr_kids; i++)
			if (c->tab[j].kid_fd[i] >= 0) {
				assert_true(fcntl(c->tab[j].kid_fd[i], F_GETFD) >= 0);
				k++;
			}
	}
	assert_int_equal(k, c->open);
	return k;
}

/* The number of this process's open descriptors. */
static unsigned nr_fds(void)
{
	unsigned n = 0;

	for (int fd = 0; fd < 4096; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

/* Under the fd limit, room for everything else the agent opens: half of
 * a small limit, all but 512 of a larger one; no limit, a million. */
static void test_budget_for(void **state)
{
	struct cgfdc c;
	struct rlimit rl;

	(void)state;
	assert_int_equal(cgfdc_budget_for(256), 128);
	assert_int_equal(cgfdc_budget_for(1024), 512);
	assert_int_equal(cgfdc_budget_for(1025), 513);
	assert_int_equal(cgfdc_budget_for(20000), 19488);
	assert_int_equal(cgfdc_budget_for(1048576), 1048576 - 512);
	assert_int_equal(cgfdc_budget_for((uint64_t)RLIM_INFINITY), 1u << 20);
	assert_int_equal(cgfdc_budget_for(1ull << 40), 1u << 20);
	/* cgfdc_init takes it from this process's soft limit */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	cgfdc_init(&c);
	assert_int_equal(c.budget, cgfdc_budget_for((uint64_t)rl.rlim_cur));
	cgfdc_clear(&c);
}

/* A budget wide enough keeps every file of every guest; a guest gone
 * from a scan has its files closed; clear closes the rest. */
static void test_all_kept_then_swept(void **state)
{
	struct cgfdc c;
	unsigned before = nr_fds();

	(void)state;
	cgfdc_init_budget(&c, 100);
	scan(&c, 5, true);
	assert_int_equal(held(&c), 30);
	for (unsigned s = 0; s < CGFDC_NR; s++)
		assert_int_equal(kept(&c, 5, (enum cgfdc_slot)s), 5);
	scan(&c, 3, true); /* /g3 and /g4 are gone */
	assert_int_equal(c.n, 3);
	assert_int_equal(held(&c), 18);
	assert_null(cgfdc_find(&c, "/g4"));
	assert_int_equal(nr_fds(), before + 18);
	cgfdc_clear(&c);
	assert_int_equal(c.open, 0);
	assert_int_equal(nr_fds(), before);
}

/* A budget of more than one file a guest but not all six: from the
 * second scan on, every guest's CPU counter is kept (the watch between
 * cycles reads those, agents/drift.h), the rest of the budget goes to
 * the other files, and a third scan changes nothing. */
static void test_cpu_first(void **state)
{
	struct cgfdc c;
	unsigned before = nr_fds();

	(void)state;
	cgfdc_init_budget(&c, 14);
	scan(&c, 4, true);
	/* the first scan filled the budget before it met /g2's and /g3's
	 * counters: its sweep left room for them */
	assert_int_equal(kept(&c, 4, CGFDC_CPU), 2);
	assert_int_equal(held(&c), 12);
	scan(&c, 4, true);
	assert_int_equal(kept(&c, 4, CGFDC_CPU), 4);
	assert_int_equal(held(&c), 14);
	scan(&c, 4, true);
	assert_int_equal(kept(&c, 4, CGFDC_CPU), 4);
	assert_int_equal(held(&c), 14);
	/* a dropped counter (its cgroup made again) is kept again */
	cgfdc_drop(&c, cgfdc_find(&c, "/g3"), CGFDC_CPU);
	assert_int_equal(kept(&c, 4, CGFDC_CPU), 3);
	scan(&c, 4, true);
	assert_int_equal(kept(&c, 4, CGFDC_CPU), 4);
	assert_int_equal(held(&c), 14);
	/* more guests than the budget: counters only, as many as fit */
	scan(&c, 20, true);
	scan(&c, 20, true);
	assert_int_equal(kept(&c, 20, CGFDC_CPU), 14);
	assert_int_equal(held(&c), 14);
	cgfdc_clear(&c);
	assert_int_equal(nr_fds(), before);
}

/* With no CPU counter to keep (no cpuacct anywhere), nothing of the
 * budget is held back for one: the other files use all of it. */
static void test_no_cpu_counter(void **state)
{
	struct cgfdc c;

	(void)state;
	cgfdc_init_budget(&c, 14);
	scan(&c, 4, false);
	scan(&c, 4, false);
	assert_int_equal(kept(&c, 4, CGFDC_CPU), 0);
	assert_int_equal(held(&c), 14);
	cgfdc_clear(&c);
}

/* A guest's children's pid lists are kept like its other files than
 * the counter: within the budget, closed first when counters lack room
 * (here only they can make it), and when the children are forgotten or
 * the guest goes. */
static void test_kid_files(void **state)
{
	const ino_t ino[3] = { 11, 12, 13 };
	struct cgfdc c;
	struct cgfdc_ent *e;
	unsigned before = nr_fds();
	int fd;

	(void)state;
	cgfdc_init_budget(&c, 8);
	cgfdc_begin(&c);
	e = cgfdc_get(&c, "/g0");
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(cgfdc_keep(&c, e, CGFDC_CPU, fd));
	cgfdc_kids_set(&c, e, 10, 5, "a\0b\0c\0", 6, ino, 3);
	assert_int_equal(e->nr_kids, 3);
	for (unsigned i = 0; i < 7; i++) {
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		/* six fit the budget of 8 (the seventh is not a child's) */
		assert_int_equal(cgfdc_keep_kid(&c, e, i, fd), i < 6);
		if (i >= 6)
			close(fd);
	}
	cgfdc_sweep(&c);
	assert_int_equal(held(&c), 7);
	e = cgfdc_find(&c, "/g0");
	cgfdc_kid_drop(&c, e, 0);
	assert_int_equal(held(&c), 6);
	/* three more guests: their counters come first, and only the
	 * children's files can make room */
	scan(&c, 4, true);
	scan(&c, 4, true);
	assert_int_equal(kept(&c, 4, CGFDC_CPU), 4);
	assert_true(held(&c) <= 8);
	e = cgfdc_get(&c, "/g0");
	cgfdc_kids_forget(&c, e);
	assert_null(e->kid_fd);
	held(&c);
	/* children kept, then the guest gone: all closed */
	cgfdc_kids_set(&c, e, 10, 5, "a\0b\0c\0", 6, ino, 3);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!cgfdc_keep_kid(&c, e, 0, fd))
		close(fd);
	cgfdc_clear(&c);
	assert_int_equal(c.open, 0);
	assert_int_equal(nr_fds(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_for),
		cmocka_unit_test(test_kid_files),
		cmocka_unit_test(test_all_kept_then_swept),
		cmocka_unit_test(test_cpu_first),
		cmocka_unit_test(test_no_cpu_counter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests for orchestrator/base/mask.c: the kernel list format and bit helpers. */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/snapshot.h"

static void test_parse_format_roundtrip(void **st)
{
	static const struct {
		const char *in;
		const char *out; /* canonical form */
		unsigned count;
	} cases[] = {
		{ "0-3,8", "0-3,8", 5 },
		{ "0-3,8\n", "0-3,8", 5 },
		{ "0", "0", 1 },
		{ "0,1,2,3", "0-3", 4 },
		{ "5,1-2", "1-2,5", 3 },
		{ "1-1", "1", 1 },
		{ "3,3,2-3", "2-3", 2 },
		{ "63-64", "63-64", 2 },
		{ "0,2,4,6", "0,2,4,6", 4 },
		{ "  7", "7", 1 },
		{ "8191", "8191", 1 },
		{ "0-8191", "0-8191", 8192 },
		{ "", "", 0 },
		{ "\n", "", 0 },
	};
	char *buf = malloc(CPULIST_BUFSZ);

	(void)st;
	assert_non_null(buf);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cpumask_t m, again;
		int r;

		memset(&m, 0xa5, sizeof(m)); /* parse must overwrite everything */
		r = mask_parse(cases[i].in, &m);
		if (r != 0)
			fail_msg("case %zu \"%s\": %d", i, cases[i].in, r);
		assert_int_equal(mask_count(&m), cases[i].count);
		assert_int_equal(mask_format(&m, buf, CPULIST_BUFSZ), 0);
		assert_string_equal(buf, cases[i].out);
		assert_int_equal(mask_parse(buf, &again), 0);
		assert_true(mask_equal(&m, &again));
	}
	free(buf);
}

static void test_parse_bad(void **st)
{
	static const struct {
		const char *in;
		int err;
	} cases[] = {
		{ "3-1", -EINVAL },
		{ "1,,2", -EINVAL },
		{ "a", -EINVAL },
		{ "1-", -EINVAL },
		{ "-1", -EINVAL },
		{ "1,", -EINVAL },
		{ ",1", -EINVAL },
		{ "1,\n", -EINVAL },
		{ "1 2", -EINVAL },
		{ "1\n2", -EINVAL },
		{ "0-3\n\n", -EINVAL },
		{ "0x3", -EINVAL },
		{ "0-3:1/2", -EINVAL },
		{ "8192", -E2BIG },
		{ "0-8192", -E2BIG },
		{ "8190,9000-9001", -E2BIG },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cpumask_t m;
		int r;

		mask_zero(&m);
		mask_set(&m, 42);
		r = mask_parse(cases[i].in, &m);
		if (r != cases[i].err)
			fail_msg("case %zu \"%s\": got %d, want %d", i, cases[i].in, r, cases[i].err);
		/* untouched on error */
		assert_int_equal(mask_count(&m), 1);
		assert_true(mask_test(&m, 42));
	}
}

static void test_parse_huge_number(void **st)
{
	cpumask_t m;

	(void)st;
	mask_zero(&m);
	/* Beyond mask.c's digit guard: refused (today -ERANGE), never wrapped. */
	assert_true(mask_parse("99999999999999999999", &m) < 0);
	assert_true(mask_parse("0-99999999", &m) < 0);
	assert_true(mask_empty(&m));
}

static void test_nodemask_bounds(void **st)
{
	nodemask_t n;
	char buf[NODELIST_BUFSZ];

	(void)st;
	assert_int_equal(mask_parse("0-1023", &n), 0);
	assert_int_equal(mask_count(&n), 1024);
	assert_int_equal(mask_format(&n, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-1023");
	assert_int_equal(mask_parse("1024", &n), -E2BIG);
	assert_int_equal(mask_count(&n), 1024);
}

static void test_format_nospace(void **st)
{
	cpumask_t m;
	char buf[8];

	(void)st;
	assert_int_equal(mask_parse("0-3,8,10", &m), 0);
	assert_int_equal(mask_format(&m, buf, 0), -ENOSPC);
	assert_int_equal(mask_format(&m, buf, 5), -ENOSPC);
	assert_string_equal(buf, "");
	/* "0-3,8,10" is 8 characters: needs 9 bytes with the NUL */
	assert_int_equal(mask_format(&m, buf, 8), -ENOSPC);
	{
		char big[9];

		assert_int_equal(mask_format(&m, big, sizeof(big)), 0);
		assert_string_equal(big, "0-3,8,10");
	}
	mask_zero(&m);
	assert_int_equal(mask_format(&m, buf, 1), 0);
	assert_string_equal(buf, "");
}

static void test_iterate(void **st)
{
	cpumask_t m;
	int seen[8], n = 0;

	(void)st;
	mask_zero(&m);
	assert_int_equal(mask_first(m.w, MASK_BITS(&m)), -1);
	assert_true(mask_empty(&m));
	assert_int_equal(mask_parse("0,63-64,127,8191", &m), 0);
	mask_foreach(b, &m) {
		assert_true(n < 8);
		seen[n++] = b;
	}
	assert_int_equal(n, 5);
	assert_int_equal(seen[0], 0);
	assert_int_equal(seen[1], 63);
	assert_int_equal(seen[2], 64);
	assert_int_equal(seen[3], 127);
	assert_int_equal(seen[4], 8191);
	assert_int_equal(mask_next(m.w, MASK_BITS(&m), 8191), -1);
	assert_false(mask_test(&m, 8192)); /* out of range reads as clear */
	mask_clear(&m, 63);
	assert_false(mask_test(&m, 63));
	assert_int_equal(mask_count(&m), 4);
}

static void test_set_ops(void **st)
{
	cpumask_t a, b, c;
	char buf[64];

	(void)st;
	assert_int_equal(mask_parse("0-7", &a), 0);
	assert_int_equal(mask_parse("4-11", &b), 0);
	mask_and(&c, &a, &b);
	assert_int_equal(mask_format(&c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "4-7");
	mask_or(&c, &a, &b);
	assert_int_equal(mask_format(&c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-11");
	mask_andnot(&c, &a, &b);
	assert_int_equal(mask_format(&c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-3");
	assert_true(mask_intersects(&a, &b));
	assert_false(mask_subset(&a, &b));
	assert_true(mask_subset(&c, &a));
	assert_false(mask_intersects(&c, &b));
	mask_zero(&c);
	assert_true(mask_subset(&c, &a)); /* the empty set is in every set */
}

/* Guests' CPU masks are interned per snapshot: equal masks are one copy,
 * distinct ones stay distinct, and a pointer handed out stays valid and
 * unchanged while the table grows (thousands of distinct masks, e.g.
 * pinned containers). */
static void test_snapshot_interns_cpumasks(void **st)
{
	struct snapshot *s = snap_new();
	const cpumask_t **seen = calloc(3000, sizeof(*seen));
	cpumask_t m;
	struct snap_guest *g;

	(void)st;
	for (unsigned i = 0; i < 3000; i++) {
		mask_zero(&m);
		mask_set(&m, i % 8192);
		if (i % 3)
			mask_set(&m, 8191 - i % 100);
		seen[i] = snap_cpumask(s, &m);
		assert_true(mask_equal(seen[i], &m));
	}
	assert_int_equal(s->nr_masks, 3000);
	for (unsigned i = 0; i < 3000; i++) {
		mask_zero(&m);
		mask_set(&m, i % 8192);
		if (i % 3)
			mask_set(&m, 8191 - i % 100);
		assert_ptr_equal(snap_cpumask(s, &m), seen[i]);
		assert_true(mask_equal(seen[i], &m));
	}
	assert_int_equal(s->nr_masks, 3000);

	/* A new guest starts with empty, non-NULL masks; setting them with no
	 * bound means "unrestricted" (empty allowed_cpus). */
	g = snap_add_guest(s);
	assert_non_null(g->cpus);
	assert_true(mask_empty(g->cpus));
	assert_ptr_equal(g->cpus, g->allowed_cpus);
	assert_int_equal(mask_parse("0-3", &m), 0);
	snap_guest_set_cpus(s, g, &m, NULL);
	assert_int_equal(mask_count(g->cpus), 4);
	assert_true(mask_empty(g->allowed_cpus));
	free(seen);
	snap_unref(s);
}

/* Nodes 1 and 3 have no memory; 0, 2 and 4 have. From node 1, 0 and 2
 * are equally near (the lower index wins); from 3, 4 is nearer. */
static void test_snapshot_nearest_mem_node(void **st)
{
	static const unsigned dist[25] = {
		10, 20, 30, 30, 40,
		20, 10, 20, 30, 30,
		30, 20, 10, 30, 30,
		30, 30, 30, 10, 15,
		40, 30, 30, 15, 10,
	};
	struct snap_node nodes[5] = {
		{ .id = 0, .mem_total = 1 }, { .id = 1 }, { .id = 2, .mem_total = 1 },
		{ .id = 3 }, { .id = 4, .mem_total = 1 },
	};
	struct snapshot *s = snap_new();
	unsigned d = 0;

	(void)st;
	snap_set_nodes(s, nodes, 5, dist);
	assert_int_equal(snap_nearest_mem_node(s, 0, &d), 0);
	assert_int_equal(d, 10);
	assert_int_equal(snap_nearest_mem_node(s, 1, &d), 0);
	assert_int_equal(d, 20);
	assert_int_equal(snap_nearest_mem_node(s, 3, &d), 4);
	assert_int_equal(d, 15);
	assert_int_equal(snap_nearest_mem_node(s, 3, NULL), 4);
	/* Asked by index, answered by id. With node 0 renamed 8 the sorted
	 * order is ids 1 2 3 4 8: from id 1 (index 0), ids 2 and 8 are both
	 * at 20 and id 2 has the lower index; from id 3 (index 2) it is id 4
	 * (index 3). */
	nodes[0].id = 8;
	snap_set_nodes(s, nodes, 5, dist);
	assert_int_equal(s->nodes[4].id, 8);
	assert_int_equal(snap_nearest_mem_node(s, 0, &d), 2);
	assert_int_equal(d, 20);
	assert_int_equal(snap_nearest_mem_node(s, 2, &d), 4);
	assert_int_equal(d, 15);
	/* no node with memory */
	for (unsigned i = 0; i < 5; i++)
		nodes[i].mem_total = 0;
	snap_set_nodes(s, nodes, 5, dist);
	assert_int_equal(snap_nearest_mem_node(s, 1, &d), -1);
	assert_int_equal(d, ~0u);
	snap_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_format_roundtrip),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_huge_number),
		cmocka_unit_test(test_nodemask_bounds),
		cmocka_unit_test(test_format_nospace),
		cmocka_unit_test(test_iterate),
		cmocka_unit_test(test_set_ops),
		cmocka_unit_test(test_snapshot_interns_cpumasks),
		cmocka_unit_test(test_snapshot_nearest_mem_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

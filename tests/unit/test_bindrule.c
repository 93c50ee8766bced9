/* test_bindrule.c — when a start binding ends (orchestrator/model/
 * bindrule.h): the pure rule over a binding's facts at one look. */
#include "testutil.h"

#include <string.h>

#include "orchestrator/model/bindrule.h"
#include "orchestrator/model/policy.h"

#define MIB (1ULL << 20)

static void test_rule_table(void **state)
{
	static const struct {
		const char *what;
		struct bind_facts f;
		const char *why;   /* NULL: kept */
		bool grew;         /* carried to the next look when kept */
	} t[] = {
		{ "starting, not grown, young: kept", { 10 * MIB, 10 * MIB, false, 1.0, false }, NULL, false },
		{ "growing for the first time: kept, grew noted", { 100 * MIB, 10 * MIB, false, 1.0, false }, NULL,
		  true },
		{ "growing again: kept", { 300 * MIB, 100 * MIB, true, 3.0, false }, NULL, true },
		{ "grew before, still now: released", { 300 * MIB, 300 * MIB, true, 5.0, false },
		  "its memory stopped growing", true },
		{ "growth within the slack is no growth", { 301 * MIB, 300 * MIB, true, 5.0, false },
		  "its memory stopped growing", true },
		{ "2 MiB slack at least: 1.5 MiB on 10 MiB is noise", { 10 * MIB + MIB + MIB / 2, 10 * MIB, false,
		  BIND_START_S, false }, "its memory did not begin to grow", false },
		{ "never grew by BIND_START_S: released", { 10 * MIB, 10 * MIB, false, BIND_START_S, false },
		  "its memory did not begin to grow", false },
		{ "never grew, just before BIND_START_S: kept", { 10 * MIB, 10 * MIB, false, BIND_START_S - 0.5,
		  false }, NULL, false },
		{ "still growing at BIND_MAX_S: released", { 900 * MIB, 500 * MIB, true, BIND_MAX_S, false },
		  "bound for the longest a start binding lasts", true },
		{ "its node short of room comes first", { 900 * MIB, 500 * MIB, true, 1.0, true },
		  "its node is short of free memory", true },
		{ "short of room, even starting", { 0, 0, false, 0.0, true }, "its node is short of free memory",
		  false },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct bind_verdict v;

		bind_rule(&t[i].f, &v);
		if ((v.why == NULL) != (t[i].why == NULL) || (v.why && strcmp(v.why, t[i].why) != 0))
			fail_msg("row %u (%s): got \"%s\", want \"%s\"", i, t[i].what, v.why ? v.why : "(kept)",
				 t[i].why ? t[i].why : "(kept)");
		if (!v.why && (v.grew != t[i].grew || v.mem != t[i].f.mem_now))
			fail_msg("row %u (%s): carried grew=%d mem=%llu", i, t[i].what, v.grew,
				 (unsigned long long)v.mem);
	}
}

static void test_slack(void **state)
{
	(void)state;
	assert_int_equal(bind_slack(0), 2 * MIB);
	assert_int_equal(bind_slack(100 * MIB), 2 * MIB);
	assert_int_equal(bind_slack(1000 * MIB), 10 * MIB);
}

/* A node of its mems below the policy's reserve; a node outside its mems,
 * or one without memory, does not count. */
static void test_node_short(void **state)
{
	struct snap_node nodes[3];
	struct snapshot snap;
	nodemask_t m;

	(void)state;
	memset(&snap, 0, sizeof(snap));
	memset(nodes, 0, sizeof(nodes));
	for (int i = 0; i < 3; i++) {
		nodes[i].id = i;
		nodes[i].mem_total = 8192 * MIB;
		nodes[i].mem_free = 4096 * MIB;
	}
	nodes[2].mem_free = 100 * MIB;
	snap.nodes = nodes;
	snap.nr_nodes = 3;
	mask_zero(&m);
	mask_set(&m, 0);
	mask_set(&m, 1);
	assert_false(bind_node_short(&snap, &m, 256 * MIB, 0.04));
	mask_set(&m, 2);
	assert_true(bind_node_short(&snap, &m, 256 * MIB, 0.04));
	/* the reserve is the smaller of the two: 1 % of 8 GiB is 82 MiB */
	assert_false(bind_node_short(&snap, &m, 256 * MIB, 0.01));
	nodes[2].mem_total = 0;
	assert_false(bind_node_short(&snap, &m, 256 * MIB, 0.04));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_table),
		cmocka_unit_test(test_slack),
		cmocka_unit_test(test_node_short),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_bindstate.c — the start bindings' state file (orchestrator/
 * bindstate.h): what is written reads back the same; a file that is not
 * one is refused with a reason; a bad entry is left out, the rest kept. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/store/bindstate.h"
#include "orchestrator/base/xalloc.h"

static void entry(struct bindstate_entry *e, const char *id, const char *cg, const char *wide, const char *bound,
		  int64_t since)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->cgroup = (char *)cg;
	assert_int_equal(mask_parse(wide, &e->wide), 0);
	assert_int_equal(mask_parse(bound, &e->bound), 0);
	e->since_real_ns = since;
}

static void test_round_trip(void **state)
{
	struct bindstate_entry in[2];
	struct bindstate out;
	unsigned nbad = 99;
	char err[300] = "", *text;

	(void)state;
	entry(&in[0], "docker-abc", "/docker/abc", "0-3", "1", 1764612345000000000LL);
	entry(&in[1], "pod-x", "/kubepods/burstable/pod-x", "0-1", "0", 1);
	text = bindstate_format(in, 2);
	assert_non_null(text);
	assert_int_equal(bindstate_parse(text, strlen(text), &out, &nbad, err, sizeof(err)), 0);
	assert_int_equal(nbad, 0);
	assert_int_equal(out.n, 2);
	for (unsigned i = 0; i < 2; i++) {
		assert_string_equal(out.e[i].id, in[i].id);
		assert_string_equal(out.e[i].cgroup, in[i].cgroup);
		assert_true(mask_equal(&out.e[i].wide, &in[i].wide));
		assert_true(mask_equal(&out.e[i].bound, &in[i].bound));
		assert_true(out.e[i].since_real_ns == in[i].since_real_ns);
	}
	bindstate_clear(&out);
	free(text);

	/* none bound: a file of none */
	text = bindstate_format(NULL, 0);
	assert_non_null(text);
	assert_int_equal(bindstate_parse(text, strlen(text), &out, &nbad, err, sizeof(err)), 0);
	assert_int_equal(out.n, 0);
	bindstate_clear(&out);
	free(text);
}

static void test_not_a_bindings_file(void **state)
{
	static const char *const bad[] = {
		"",
		"{not json",
		"[]",
		"{\"format\":\"numaorch-engine-state\",\"version\":1,\"bindings\":[]}",
		"{\"format\":\"numaorch-start-bindings\",\"version\":2,\"bindings\":[]}",
		"{\"format\":\"numaorch-start-bindings\",\"version\":1,\"bindings\":{}}",
		"{\"format\":\"numaorch-start-bindings\",\"version\":1}",
	};
	struct bindstate out;
	unsigned nbad;
	char err[300];

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(bindstate_parse(bad[i], strlen(bad[i]), &out, &nbad, err, sizeof(err)), -EINVAL);
		assert_int_equal(out.n, 0);
		if (!err[0])
			fail_msg("case %u: no reason given", i);
		bindstate_clear(&out);
	}
}

/* A bad entry is left out and counted, with the first one's reason; the
 * good ones are kept (each is a guest that would otherwise stay bound). */
static void test_bad_entries_left_out(void **state)
{
	static const char text[] =
		"{\"format\":\"numaorch-start-bindings\",\"version\":1,\"bindings\":["
		"{\"guest\":\"ok\",\"cgroup\":\"/grp/ok\",\"mems_before\":\"0-1\",\"mems_bound\":\"1\",\"since_real_ns\":5},"
		"{\"guest\":\"up\",\"cgroup\":\"/grp/../../etc\",\"mems_before\":\"0-1\",\"mems_bound\":\"1\",\"since_real_ns\":5},"
		"{\"guest\":\"rel\",\"cgroup\":\"grp/x\",\"mems_before\":\"0-1\",\"mems_bound\":\"1\",\"since_real_ns\":5},"
		"{\"guest\":\"dot\",\"cgroup\":\"/grp/./x\",\"mems_before\":\"0-1\",\"mems_bound\":\"1\",\"since_real_ns\":5},"
		"{\"guest\":\"dbl\",\"cgroup\":\"/grp//x\",\"mems_before\":\"0-1\",\"mems_bound\":\"1\",\"since_real_ns\":5},"
		"{\"guest\":\"empty\",\"cgroup\":\"/grp/e\",\"mems_before\":\"0-1\",\"mems_bound\":\"\",\"since_real_ns\":5},"
		"{\"guest\":\"junk\",\"cgroup\":\"/grp/j\",\"mems_before\":\"zero\",\"mems_bound\":\"1\",\"since_real_ns\":5},"
		"{\"guest\":\"\",\"cgroup\":\"/grp/n\",\"mems_before\":\"0-1\",\"mems_bound\":\"1\",\"since_real_ns\":5},"
		"{\"guest\":\"nosince\",\"cgroup\":\"/grp/s\",\"mems_before\":\"0-1\",\"mems_bound\":\"1\"},"
		"7,"
		"{\"guest\":\"ok2\",\"cgroup\":\"/\",\"mems_before\":\"0\",\"mems_bound\":\"0\",\"since_real_ns\":6}"
		"]}";
	struct bindstate out;
	unsigned nbad = 0;
	char err[300] = "";

	(void)state;
	assert_int_equal(bindstate_parse(text, strlen(text), &out, &nbad, err, sizeof(err)), 0);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.e[0].id, "ok");
	assert_string_equal(out.e[1].id, "ok2");
	assert_int_equal(nbad, 9);
	assert_non_null(strstr(err, "binding 1"));
	assert_non_null(strstr(err, "/grp/../../etc"));
	bindstate_clear(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_not_a_bindings_file),
		cmocka_unit_test(test_bad_entries_left_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* numaorch-nrt-export's pure parts (api/nrtx.c): the object it writes,
 * what counts as a change, when to write, and the create-or-update
 * exchange's steps for each answer an API server gives. */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "api/nrtx.h"

#define S 1000000000ull

/* An agent reply as GET /v1/topology gives it (trimmed to one zone). */
static json_t *agent_reply(const char *measured, const char *guests)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:[], s:[{s:s, s:s, s:[{s:s, s:s}]}], s:[{s:s, s:s}, {s:s, s:s}, "
			 "{s:s, s:s}]}",
			 "apiVersion", "topology.node.k8s.io/v1alpha2", "kind", "NodeResourceTopology", "metadata",
			 "name", "agent-side-name", "topologyPolicies", "zones", "name", "node-0", "type", "Node",
			 "attributes", "name", "numaorch.io/guests", "value", guests, "attributes", "name",
			 "numaorch.io/measured-at", "value", measured, "name", "numaorch.io/snapshot-seq", "value",
			 measured, "name", "numaorch.io/guests-memory-unmeasured", "value", "1");
}

static void test_object(void **st)
{
	json_t *a = agent_reply("t1", "2"), *o, *meta;
	char err[128];

	(void)st;
	o = nrtx_object(a, "worker-1", NULL, err, sizeof(err));
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "apiVersion")), "topology.node.k8s.io/v1alpha2");
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "NodeResourceTopology");
	meta = json_object_get(o, "metadata");
	/* The node's name is the exporter's, not whatever the agent was told. */
	assert_string_equal(json_string_value(json_object_get(meta, "name")), "worker-1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "labels"),
							      "app.kubernetes.io/managed-by")),
			    NRTX_MANAGED_BY);
	assert_null(json_object_get(meta, "resourceVersion"));
	assert_null(json_object_get(meta, "ownerReferences"));
	assert_true(json_equal(json_object_get(o, "zones"), json_object_get(a, "zones")));
	assert_true(json_equal(json_object_get(o, "attributes"), json_object_get(a, "attributes")));
	assert_int_equal(json_array_size(json_object_get(o, "topologyPolicies")), 0);
	json_decref(o);

	o = nrtx_object(a, "worker-1", "42", err, sizeof(err));
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion")),
			    "42");
	json_decref(o);

	/* topologyPolicies is required by the schema: written even when the agent left it out. */
	json_object_del(a, "topologyPolicies");
	o = nrtx_object(a, "worker-1", NULL, err, sizeof(err));
	assert_true(json_is_array(json_object_get(o, "topologyPolicies")));
	json_decref(o);

	assert_null(nrtx_object(a, "", NULL, err, sizeof(err)));
	json_object_set_new(a, "zones", json_array());
	assert_null(nrtx_object(a, "worker-1", NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "no zones"));
	json_decref(a);
}

static void test_same(void **st)
{
	json_t *a = agent_reply("t1", "2"), *b = agent_reply("t2", "2"), *c = agent_reply("t1", "3");
	char err[64];
	json_t *oa = nrtx_object(a, "n", "7", err, sizeof(err));

	(void)st;
	assert_true(nrtx_same(a, b));  /* only the reading's time and number differ */
	assert_false(nrtx_same(a, c)); /* a guest more on the zone */
	assert_true(nrtx_same(a, oa)); /* metadata is not content */
	assert_false(nrtx_same(a, NULL));
	assert_true(nrtx_same(NULL, NULL));
	json_object_set_new(b, "topologyPolicies", json_pack("[s]", "SingleNUMANodePodLevel"));
	assert_false(nrtx_same(a, b));
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(oa);
}

static void test_decide(void **st)
{
	static const struct {
		struct nrtx_sched s;
		int changed;
		uint64_t now;
		enum nrtx_why want;
	} t[] = {
		{ { 0 }, 0, 1 * S, NRTX_FIRST },
		{ { 0 }, 1, 1 * S, NRTX_FIRST },
		{ { .written = 1, .last_write_ns = 10 * S }, 0, 20 * S, NRTX_SKIP },
		{ { .written = 1, .last_write_ns = 10 * S }, 1, 20 * S, NRTX_CHANGED },
		{ { .written = 1, .last_write_ns = 10 * S }, 0, 310 * S, NRTX_HEARTBEAT },
		{ { .written = 1, .last_write_ns = 10 * S }, 0, 309 * S, NRTX_SKIP },
		/* After a failure: nothing before the back-off ends, changed or not; then a retry. */
		{ { .written = 1, .failures = 2, .retry_at_ns = 50 * S }, 1, 49 * S, NRTX_SKIP },
		{ { .written = 1, .failures = 2, .retry_at_ns = 50 * S }, 0, 50 * S, NRTX_RETRY },
		{ { .failures = 1, .retry_at_ns = 5 * S }, 0, 6 * S, NRTX_RETRY },
	};

	(void)st;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		enum nrtx_why w = nrtx_decide(&t[i].s, t[i].changed, t[i].now, 300 * S);

		if (w != t[i].want)
			fail_msg("row %u: %s, want %s", i, nrtx_why_name(w), nrtx_why_name(t[i].want));
	}
	assert_null(nrtx_why_name((enum nrtx_why)99));
}

static void test_backoff(void **st)
{
	(void)st;
	assert_int_equal(nrtx_backoff(1, 5 * S, 300 * S), 5 * S);
	assert_int_equal(nrtx_backoff(2, 5 * S, 300 * S), 10 * S);
	assert_int_equal(nrtx_backoff(4, 5 * S, 300 * S), 40 * S);
	assert_int_equal(nrtx_backoff(7, 5 * S, 300 * S), 300 * S);
	assert_int_equal(nrtx_backoff(4000000000u, 5 * S, 300 * S), 300 * S);
	assert_int_equal(nrtx_backoff(3, 500 * S, 300 * S), 300 * S);
}

static void test_next(void **st)
{
	static const struct {
		enum nrtx_step step;
		long status;
		int retried, want_retried;
		enum nrtx_step want;
	} t[] = {
		{ NRTX_GET, 200, 0, 0, NRTX_PUT },   { NRTX_GET, 404, 0, 0, NRTX_POST },
		{ NRTX_GET, 401, 0, 0, NRTX_FAIL },  { NRTX_GET, 403, 0, 0, NRTX_FAIL },
		{ NRTX_GET, 500, 0, 0, NRTX_FAIL },  { NRTX_POST, 201, 0, 0, NRTX_DONE },
		{ NRTX_POST, 200, 0, 0, NRTX_DONE }, { NRTX_PUT, 200, 0, 0, NRTX_DONE },
		/* A conflict reads again, once. */
		{ NRTX_PUT, 409, 0, 1, NRTX_GET },   { NRTX_PUT, 409, 1, 1, NRTX_FAIL },
		{ NRTX_POST, 409, 0, 1, NRTX_GET },  { NRTX_POST, 409, 1, 1, NRTX_FAIL },
		/* Deleted between our GET and PUT: read again too. */
		{ NRTX_PUT, 404, 0, 1, NRTX_GET },   { NRTX_POST, 404, 0, 0, NRTX_FAIL },
		{ NRTX_PUT, 422, 0, 0, NRTX_FAIL },  { NRTX_DONE, 200, 0, 0, NRTX_FAIL },
	};

	(void)st;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int retried = t[i].retried;
		enum nrtx_step n = nrtx_next(t[i].step, t[i].status, &retried);

		if (n != t[i].want || retried != t[i].want_retried)
			fail_msg("row %u: step %d on %ld: %d (retried %d), want %d (%d)", i, t[i].step, t[i].status,
				 n, retried, t[i].want, t[i].want_retried);
	}
	assert_string_equal(nrtx_step_method(NRTX_PUT), "PUT");
	assert_null(nrtx_step_method(NRTX_DONE));
}

static void test_replies(void **st)
{
	char b[64];

	(void)st;
	assert_int_equal(nrtx_resource_version("{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"1234\"}}", b,
					       sizeof(b)),
			 0);
	assert_string_equal(b, "1234");
	strcpy(b, "untouched");
	assert_int_equal(nrtx_resource_version("{\"metadata\":{\"name\":\"n\"}}", b, sizeof(b)), -EINVAL);
	assert_int_equal(nrtx_resource_version("not json", b, sizeof(b)), -EINVAL);
	assert_int_equal(nrtx_resource_version("{\"metadata\":{\"resourceVersion\":\"\"}}", b, sizeof(b)), -EINVAL);
	assert_string_equal(b, "untouched");

	nrtx_server_message("{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Unauthorized\","
			    "\"reason\":\"Unauthorized\",\"code\":401}",
			    b, sizeof(b));
	assert_string_equal(b, "Unauthorized (Unauthorized)");
	nrtx_server_message("{\"message\":\"the object has been modified\"}", b, sizeof(b));
	assert_string_equal(b, "the object has been modified");
	nrtx_server_message("upstream connect error\r\nmore", b, sizeof(b));
	assert_string_equal(b, "upstream connect error");
	nrtx_server_message("", b, sizeof(b));
	assert_string_equal(b, "(empty reply)");
	nrtx_server_message(NULL, b, sizeof(b));
	assert_string_equal(b, "(empty reply)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object), cmocka_unit_test(test_same),    cmocka_unit_test(test_decide),
		cmocka_unit_test(test_backoff), cmocka_unit_test(test_next), cmocka_unit_test(test_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* api_handle() with a real engine on a fixture host: routes, statuses and
 * problem bodies without a socket; the token check; the engine-busy path
 * (503, and the change is dropped, not applied later). */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "orchestrator/store/config.h"
#include "orchestrator/engine/engine.h"
#include "orchestrator/base/clock.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/store/gpolstore.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/base/log.h"

#define TOKEN "unit-test-token-0123456789"

struct fx {
	char *dir;
	struct agent_config cfg;
	struct host_paths hp;
	struct engine *e;
	struct gpolstore *gs;
	struct api *a;
	pthread_t thread;
	bool threaded;
};

/* The 2-node fixture host with a cgroup v2 tree, as the integration tests
 * compose it. */
static void compose(const char *dir)
{
	char *cmd = xasprintf("set -e; r=%s/host; mkdir -p $r/sys/fs; "
			      "cp -r tests/fixtures/host-2node/sys/. $r/sys/; cp -r tests/fixtures/host-2node/proc $r/; "
			      "cp -r tests/fixtures/cg-v2/sys/fs/cgroup $r/sys/fs/; cp -r tests/fixtures/cg-v2/run $r/; "
			      ": > $r/sys/fs/cgroup/.numaorch-writes", dir);

	if (system(cmd) != 0)
		fail_msg("cannot compose the fixture host: %s", cmd);
	free(cmd);
}

static void fx_init(struct fx *f, unsigned timeout_ms)
{
	char *root, err[300];
	struct api_opts ao = { .version = "test", .token = TOKEN, .engine_timeout_ms = timeout_ms };

	memset(f, 0, sizeof(*f));
	log_set_level(LOG_LEVEL_ERROR);
	f->dir = tu_mkdtemp();
	compose(f->dir);
	root = xasprintf("%s/host", f->dir);
	assert_int_equal(host_paths_from_root(&f->hp, root), 0);
	free(root);
	config_default(&f->cfg);
	f->cfg.sample_s = 0.05;
	f->cfg.libvirt_enabled = false;
	free(f->cfg.state_dir);
	f->cfg.state_dir = xasprintf("%s/state", f->dir);
	assert_int_equal(engine_new(&f->cfg, &f->hp, tu_engine_parts(), &f->e), 0);
	if (gpolstore_open(f->cfg.state_dir, GPOLSTORE_CREATE, &f->gs, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	engine_use_gpolstore(f->e, f->gs);
	assert_int_equal(api_new(f->e, f->gs, &ao, &f->a), 0);
}

static void fx_fini(struct fx *f)
{
	if (f->threaded) {
		engine_stop(f->e);
		pthread_join(f->thread, NULL);
	}
	api_free(f->a);
	engine_free(f->e);
	gpolstore_free(f->gs);
	config_clear(&f->cfg);
	tu_rm_rf(f->dir);
	free(f->dir);
}

struct reply {
	unsigned status;
	json_t *j;
	struct api_response r;
};

static struct reply req(struct fx *f, enum api_transport tr, const char *auth, const char *method,
			const char *target, const char *body)
{
	struct api_request rq = {
		.method = method, .target = target, .body = body, .body_len = body ? strlen(body) : 0,
		.content_type = body ? "application/json" : NULL, .content_length = body ? (int64_t)strlen(body) : -1,
		.authorization = auth, .transport = tr,
	};
	struct reply out = { 0 };

	api_handle(f->a, &rq, &out.r);
	out.status = out.r.status;
	if (out.r.body_len)
		out.j = json_loads(out.r.body, 0, NULL);
	return out;
}

static void reply_free(struct reply *r)
{
	json_decref(r->j);
	api_response_clear(&r->r);
}

/* Ask and check the status (and for errors, the problem type). */
static void expect(struct fx *f, const char *method, const char *target, const char *body, unsigned status,
		   const char *problem)
{
	struct reply r = req(f, API_UNIX, NULL, method, target, body);

	if (r.status != status)
		fail_msg("%s %s: got %u (%s), want %u", method, target, r.status, r.r.body ? r.r.body : "", status);
	if (problem) {
		char type[96];

		snprintf(type, sizeof(type), "urn:numaorch:problem:%s", problem);
		assert_string_equal(r.r.content_type, "application/problem+json");
		assert_non_null(r.j);
		assert_string_equal(json_string_value(json_object_get(r.j, "type")), type);
		assert_int_equal(json_integer_value(json_object_get(r.j, "status")), status);
	}
	reply_free(&r);
}

static void test_before_and_after_the_first_cycle(void **state)
{
	struct fx f;
	struct reply r;

	(void)state;
	fx_init(&f, 1000);
	assert_int_equal(engine_prepare_loop(f.e), 0);  /* engine_call runs inline on this thread */
	expect(&f, "GET", "/v1/status", NULL, 503, "no-snapshot");
	expect(&f, "GET", "/metrics", NULL, 503, "no-snapshot");
	r = req(&f, API_UNIX, NULL, "GET", "/v1/health", NULL);
	assert_int_equal(r.status, 200);
	assert_false(json_is_true(json_object_get(r.j, "ready")));
	reply_free(&r);
	expect(&f, "GET", "/v1/decisions", NULL, 200, NULL);

	assert_int_equal(engine_cycle(f.e, true, NULL), 0);
	r = req(&f, API_UNIX, NULL, "GET", "/v1/status", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r.j, "host"), "nodes")), 2);
	reply_free(&r);
	expect(&f, "GET", "/v1/nodes", NULL, 200, NULL);
	expect(&f, "GET", "/v1/guests", NULL, 200, NULL);
	expect(&f, "GET", "/v1/guests", NULL, 200, NULL);  /* from the cache */
	expect(&f, "GET", "/v1/guests?runtime=lxc&node=1", NULL, 200, NULL);
	expect(&f, "GET", "/v1/guests/lxc-db", NULL, 200, NULL);
	expect(&f, "GET", "/v1/guests/lxc-db/policy", NULL, 200, NULL);
	expect(&f, "GET", "/v1/guest-policies", NULL, 200, NULL);
	expect(&f, "GET", "/v1/policy", NULL, 200, NULL);
	expect(&f, "HEAD", "/v1/policy", NULL, 200, NULL);
	expect(&f, "GET", "/metrics", NULL, 200, NULL);
	expect(&f, "POST", "/v1/rebalance", "{\"dry_run\": true, \"verbose\": true}", 200, NULL);
	expect(&f, "POST", "/v1/rebalance", NULL, 200, NULL);
	expect(&f, "POST", "/v1/placements", "{\"vcpus\": 2, \"memory_mib\": 512, \"reserve_seconds\": 5}", 200, NULL);
	expect(&f, "POST", "/v1/events", "{\"source\": \"t\", \"event\": \"stopped\", \"domain\": \"d\"}", 202, NULL);

	/* A per-guest policy: stored, shown, honoured by the next cycle. */
	expect(&f, "PUT", "/v1/guests/runc-ctr1/policy", "{\"mode\": \"ignore\"}", 200, NULL);
	r = req(&f, API_UNIX, NULL, "POST", "/v1/rebalance", "{\"dry_run\": true, \"verbose\": true}");
	assert_int_equal(r.status, 200);
	{
		json_t *items = json_object_get(json_object_get(r.j, "plan"), "items"), *it;
		size_t i;
		bool seen = false;

		json_array_foreach(items, i, it)
			if (strcmp(json_string_value(json_object_get(it, "guest")), "runc-ctr1") == 0) {
				assert_string_equal(json_string_value(json_object_get(it, "skip")), "ignored");
				seen = true;
			}
		assert_true(seen);
	}
	reply_free(&r);
	expect(&f, "DELETE", "/v1/guests/runc-ctr1/policy", NULL, 204, NULL);
	expect(&f, "DELETE", "/v1/guests/runc-ctr1/policy", NULL, 404, "not-found");

	/* Policy: a PUT shows at once, before any cycle publishes it. */
	expect(&f, "PUT", "/v1/policy", "{\"max_util\": 70, \"mode\": \"advise\"}", 200, NULL);
	r = req(&f, API_UNIX, NULL, "GET", "/v1/policy", NULL);
	assert_true(json_number_value(json_object_get(r.j, "max_util")) == 70);
	assert_string_equal(json_string_value(json_object_get(r.j, "mode")), "advise");
	reply_free(&r);
	assert_int_equal(engine_config(f.e)->mode, MODE_ADVISE);
	assert_true(engine_config(f.e)->policy.max_util == 0.7);

	/* A few refusals. */
	expect(&f, "PUT", "/v1/policy", "{\"max_util\": 0}", 400, "invalid-field");
	expect(&f, "PUT", "/v1/policy", "{\"revision\": \"0000000000000000\"}", 409, "conflict");
	expect(&f, "PUT", "/v1/guests/lxc-db/policy", "{\"mode\": \"pinned\", \"nodes\": \"3\"}", 409, "conflict");
	expect(&f, "GET", "/v1/guests/%2e%2e", NULL, 400, "invalid-field");
	expect(&f, "GET", "/v1/guests/nope", NULL, 404, "not-found");
	expect(&f, "OPTIONS", "/v1/status", NULL, 405, "method-not-allowed");
	expect(&f, "GET", "/nothing", NULL, 404, "not-found");
	expect(&f, "PUT", "/v1/policy", "{", 400, "malformed-body");
	fx_fini(&f);
}

/* The nodes' hugetlb pools (the fixture's node 1 has 64 surplus 2 MiB
 * pages and none free) in GET /v1/nodes and /metrics, and a guest's huge
 * pages in its JSON, the guest list and /metrics. */
static void test_hugepage_pools_shown(void **state)
{
	struct fx f;
	struct reply r;
	json_t *hp;

	(void)state;
	fx_init(&f, 2000);
	/* lxc-db holds 64 MiB of 2 MiB huge pages on node 1 (its cgroup's
	 * hugetlb controller says so: the fixture host's pools are in use). */
	tu_write(f.dir, "host/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
	tu_write(f.dir, "host/sys/fs/cgroup/lxc.payload.db/hugetlb.2MB.numa_stat", "total=67108864 N0=0 N1=67108864\n");
	assert_int_equal(engine_cycle(f.e, true, NULL), 0);
	r = req(&f, API_UNIX, NULL, "GET", "/v1/guests/lxc-db", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.j, "hugetlb_total_bytes")), 64 << 20);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r.j, "hugetlb_bytes_by_node"), "1")), 64 << 20);
	assert_int_equal(json_integer_value(json_object_get(r.j, "hugetlb_page_size_bytes")), 2 << 20);
	reply_free(&r);
	r = req(&f, API_UNIX, NULL, "GET", "/v1/guests", NULL);
	assert_int_equal(r.status, 200);
	{
		json_t *g;
		size_t i;
		unsigned with = 0;

		json_array_foreach(json_object_get(r.j, "guests"), i, g)
			if (json_object_get(g, "hugetlb_total_bytes")) {
				assert_string_equal(json_string_value(json_object_get(g, "id")), "lxc-db");
				assert_int_equal(json_integer_value(json_object_get(g, "hugetlb_total_bytes")), 64 << 20);
				with++;
			}
		assert_int_equal(with, 1);
	}
	reply_free(&r);
	r = req(&f, API_UNIX, NULL, "GET", "/v1/nodes", NULL);
	assert_int_equal(r.status, 200);
	hp = json_object_get(json_array_get(json_object_get(r.j, "nodes"), 1), "hugepages");
	assert_int_equal(json_array_size(hp), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(hp, 0), "page_size_bytes")), 2 << 20);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(hp, 0), "total")), 64);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(hp, 0), "free")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(hp, 0), "surplus")), 64);
	reply_free(&r);
	r = req(&f, API_UNIX, NULL, "GET", "/metrics", NULL);
	assert_int_equal(r.status, 200);
	{
		static const char *const want[] = {
			"# TYPE numaorch_node_hugepages gauge\n",
			"numaorch_node_hugepages{node=\"0\",size=\"2048kB\",state=\"free\"} 100\n",
			"numaorch_node_hugepages{node=\"1\",size=\"2048kB\",state=\"surplus\"} 64\n",
			"numaorch_node_hugepages{node=\"1\",size=\"1048576kB\",state=\"total\"} 0\n",
			"# TYPE numaorch_guest_hugetlb_bytes gauge\n",
			"numaorch_guest_hugetlb_bytes{guest=\"lxc-db\",node=\"1\",size=\"2048kB\"} 67108864\n",
		};

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			if (!memmem(r.r.body, r.r.body_len, want[i], strlen(want[i])))
				fail_msg("/metrics lacks %s", want[i]);
	}
	reply_free(&r);
	fx_fini(&f);
}

static void test_tcp_token_and_preflight(void **state)
{
	struct fx f;
	struct reply r;
	struct api_response resp;
	struct api_request big = { .method = "PUT", .target = "/v1/policy", .content_length = 1 << 20,
				   .content_type = "application/json", .transport = API_UNIX };
	struct api_request good = { .method = "PUT", .target = "/v1/policy", .content_length = 10,
				    .content_type = "application/json", .transport = API_UNIX };
	struct api_request form = { .method = "POST", .target = "/v1/events", .content_length = 10,
				    .content_type = "text/plain", .transport = API_UNIX };

	(void)state;
	fx_init(&f, 1000);
	assert_true(api_token_equal(TOKEN, TOKEN));
	assert_false(api_token_equal(TOKEN, TOKEN "x"));
	assert_false(api_token_equal(TOKEN, "unit"));
	assert_false(api_token_equal(TOKEN, ""));
	assert_false(api_token_equal("", ""));

	r = req(&f, API_TCP, NULL, "GET", "/v1/health", NULL);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	r = req(&f, API_TCP, NULL, "GET", "/v1/health?x=1", NULL);  /* exempt from the token, not from checks */
	assert_int_equal(r.status, 400);
	reply_free(&r);
	r = req(&f, API_TCP, NULL, "GET", "/v1/status", NULL);
	assert_int_equal(r.status, 401);
	assert_true(r.r.www_authenticate);
	reply_free(&r);
	r = req(&f, API_TCP, "Bearer nope", "GET", "/v1/status", NULL);
	assert_int_equal(r.status, 403);
	reply_free(&r);
	r = req(&f, API_TCP, "bearer " TOKEN, "GET", "/v1/decisions", NULL);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	r = req(&f, API_UNIX, "Bearer nope", "GET", "/v1/decisions", NULL);  /* the socket ignores tokens */
	assert_int_equal(r.status, 200);
	reply_free(&r);

	assert_true(api_preflight(f.a, &big, &resp));
	assert_int_equal(resp.status, 413);
	api_response_clear(&resp);
	assert_false(api_preflight(f.a, &good, &resp));
	api_response_clear(&resp);
	assert_true(api_preflight(f.a, &form, &resp));
	assert_int_equal(resp.status, 415);
	api_response_clear(&resp);
	good.transport = API_TCP;
	assert_true(api_preflight(f.a, &good, &resp));
	assert_int_equal(resp.status, 401);
	api_response_clear(&resp);
	fx_fini(&f);
}

static void *run_engine(void *arg)
{
	struct fx *f = arg;

	engine_prepare_loop(f->e);
	engine_run(f->e, NULL, NULL);
	return NULL;
}

static bool blocking, released;

/* Holds the engine until the test releases it: a fixed hold (it was
 * 800 ms) lets a slow or loaded machine send the refused PUTs after the
 * engine is free again. The 60 s cap only keeps a broken test from
 * hanging forever. */
static int block_engine(struct engine *e, void *arg)
{
	(void)e;
	(void)arg;
	__atomic_store_n(&blocking, true, __ATOMIC_RELEASE);
	for (int i = 0; i < 60000 && !__atomic_load_n(&released, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return 0;
}

static void *blocker(void *arg)
{
	struct fx *f = arg;

	engine_call(f->e, block_engine, NULL, 0);
	return NULL;
}

static void test_engine_busy_is_503_and_changes_nothing(void **state)
{
	struct fx f;
	struct reply r;
	pthread_t b;

	(void)state;
	fx_init(&f, 150);
	assert_int_equal(pthread_create(&f.thread, NULL, run_engine, &f), 0);
	f.threaded = true;
	/* Wait for the first cycle (30 s at most: ASan on a loaded machine),
	 * then keep the engine busy. */
	bool ready = false;

	for (int i = 0; i < 1500 && !ready; i++) {
		struct engine_view *v = engine_view_get(f.e);

		ready = v && v->snap;
		engine_view_unref(v);
		if (!ready)
			usleep(20 * 1000);
	}
	assert_true(ready);
	assert_int_equal(pthread_create(&b, NULL, blocker, &f), 0);
	while (!__atomic_load_n(&blocking, __ATOMIC_ACQUIRE))
		usleep(1000);
	r = req(&f, API_UNIX, NULL, "PUT", "/v1/policy", "{\"max_util\": 55}");
	assert_int_equal(r.status, 503);
	assert_string_equal(json_string_value(json_object_get(r.j, "type")), "urn:numaorch:problem:engine-busy");
	assert_int_not_equal(r.r.retry_after, 0);
	reply_free(&r);
	r = req(&f, API_UNIX, NULL, "PUT", "/v1/guests/lxc-db/policy", "{\"mode\": \"ignore\"}");
	assert_int_equal(r.status, 503);
	reply_free(&r);
	/* Reads do not wait for the engine. */
	r = req(&f, API_UNIX, NULL, "GET", "/v1/status", NULL);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	__atomic_store_n(&released, true, __ATOMIC_RELEASE);
	pthread_join(b, NULL);
	/* The refused changes were dropped, not applied late. */
	r = req(&f, API_UNIX, NULL, "GET", "/v1/policy", NULL);
	assert_true(json_number_value(json_object_get(r.j, "max_util")) == 90);
	reply_free(&r);
	assert_int_equal(gpolstore_count(f.gs), 0);
	/* And once the engine is free again, changes go through. */
	r = req(&f, API_UNIX, NULL, "PUT", "/v1/policy", "{\"max_util\": 55}");
	assert_int_equal(r.status, 200);
	reply_free(&r);
	/* Once the engine has stopped, changes are refused with -ESHUTDOWN:
	 * 503 shutting-down, nothing changed. */
	engine_stop(f.e);
	pthread_join(f.thread, NULL);
	f.threaded = false; /* joined: fx_fini must not join again */
	r = req(&f, API_UNIX, NULL, "PUT", "/v1/policy", "{\"max_util\": 70}");
	assert_int_equal(r.status, 503);
	assert_string_equal(r.r.content_type, "application/problem+json");
	assert_non_null(r.j);
	assert_string_equal(json_string_value(json_object_get(r.j, "type")), "urn:numaorch:problem:shutting-down");
	assert_int_equal(json_integer_value(json_object_get(r.j, "status")), 503);
	assert_int_not_equal(r.r.retry_after, 0);
	reply_free(&r);
	r = req(&f, API_UNIX, NULL, "GET", "/v1/policy", NULL);
	assert_true(json_number_value(json_object_get(r.j, "max_util")) == 55);
	reply_free(&r);
	fx_fini(&f);
}

/* Large answers: at most API_HEAVY_MAX (32) held at once, counted until
 * the server says the reply was sent; the next waits, then gets 503
 * server-busy; a released slot serves it again. Small routes are not
 * held back. Writes past a client's rate: 429 with Retry-After; requests
 * without a client identity (no server) are not limited. */
static void test_heavy_slots_and_write_rate(void **state)
{
	struct fx f;
	struct reply r;
	struct api_request rq = { .method = "GET", .target = "/v1/guest-policies", .content_length = -1,
				  .transport = API_UNIX, .hold_heavy = true };
	unsigned held = 0;

	(void)state;
	fx_init(&f, 1000);
	assert_int_equal(engine_prepare_loop(f.e), 0);
	assert_int_equal(engine_cycle(f.e, true, NULL), 0);
	for (unsigned i = 0; i < 32; i++) {
		struct api_response resp;

		api_handle(f.a, &rq, &resp);
		assert_int_equal(resp.status, 200);
		held += resp.heavy_slot;
		api_response_clear(&resp);
	}
	assert_int_equal(held, 32);
	{
		struct api_response resp;
		int64_t t0 = clock_mono_ns();

		api_handle(f.a, &rq, &resp);
		assert_int_equal(resp.status, 503);
		assert_false(resp.heavy_slot);
		assert_true(strstr(resp.body, "urn:numaorch:problem:server-busy") != NULL);
		assert_true(clock_mono_ns() - t0 >= 1900000000LL);
		api_response_clear(&resp);
	}
	expect(&f, "GET", "/v1/status", NULL, 200, NULL);
	api_heavy_release(f.a, API_UNIX);
	expect(&f, "GET", "/v1/guest-policies", NULL, 200, NULL);  /* not held: released inside */
	expect(&f, "GET", "/v1/guests", NULL, 200, NULL);
	for (unsigned i = 1; i < 32; i++)
		api_heavy_release(f.a, API_UNIX);
	/* TCP takes at most 24, leaving 8 for the unix socket. */
	{
		struct api_request t = rq;
		char auth[64];

		snprintf(auth, sizeof(auth), "Bearer %s", TOKEN);
		t.transport = API_TCP;
		t.authorization = auth;
		held = 0;
		for (unsigned i = 0; i < 25; i++) {
			struct api_response resp;

			api_handle(f.a, &t, &resp);
			held += resp.status == 200 && resp.heavy_slot;
			api_response_clear(&resp);
		}
		assert_int_equal(held, 24);
		for (unsigned i = 0; i < 8; i++) {
			struct api_response resp;

			api_handle(f.a, &rq, &resp);
			assert_int_equal(resp.status, 200);
			api_response_clear(&resp);
		}
		for (unsigned i = 0; i < 24; i++)
			api_heavy_release(f.a, API_TCP);
		for (unsigned i = 0; i < 8; i++)
			api_heavy_release(f.a, API_UNIX);
	}

	/* The write rate, per client. */
	{
		struct api_request w = { .method = "POST", .target = "/v1/events", .content_type = "application/json",
					 .transport = API_UNIX, .client = "uid:1000" };
		const char *body = "{\"source\":\"t\",\"event\":\"started\",\"domain\":\"d\"}";
		unsigned ok = 0, limited = 0;

		w.body = body;
		w.body_len = strlen(body);
		w.content_length = (int64_t)w.body_len;
		for (unsigned i = 0; i < 150; i++) {
			struct api_response resp;

			api_handle(f.a, &w, &resp);
			if (resp.status == 202)
				ok++;
			else if (resp.status == 429 && resp.retry_after >= 1 &&
				 strstr(resp.body, "urn:numaorch:problem:rate-limited"))
				limited++;
			api_response_clear(&resp);
		}
		assert_in_range(ok, 100, 110);
		assert_int_equal(ok + limited, 150);
		w.client = "uid:1001";
		{
			struct api_response resp;

			api_handle(f.a, &w, &resp);
			assert_int_equal(resp.status, 202);
			api_response_clear(&resp);
		}
		r = req(&f, API_UNIX, NULL, "POST", "/v1/events", body);  /* no client: not limited */
		assert_int_equal(r.status, 202);
		reply_free(&r);
	}
	fx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_and_after_the_first_cycle),
		cmocka_unit_test(test_hugepage_pools_shown),
		cmocka_unit_test(test_tcp_token_and_preflight),
		cmocka_unit_test(test_engine_busy_is_503_and_changes_nothing),
		cmocka_unit_test(test_heavy_slots_and_write_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The NodeResourceTopology builder (api/nrt.c) on snapshots built by hand:
 * quantities in Kubernetes' canonical form, each resource derived as
 * documented, costs from the distances, and attributes only where the
 * snapshot measured them. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/nrt.h"
#include "orchestrator/model/snapshot.h"

#define GIB (1ull << 30)
#define MIB (1ull << 20)

static void test_quantities(void **st)
{
	static const struct {
		uint64_t bytes;
		const char *want;
	} bytes[] = {
		{ 0, "0" }, { 1, "1" }, { 1000, "1000" }, { 1024, "1Ki" }, { 1536, "1536" },
		{ 2 * MIB, "2Mi" }, { 3 * MIB + 512 * 1024, "3584Ki" }, { GIB, "1Gi" },
		{ 64 * GIB, "64Gi" }, { 1ull << 40, "1Ti" }, { 1ull << 60, "1Ei" }, { 1ull << 62, "4Ei" },
	};
	static const struct {
		uint64_t milli;
		const char *want;
	} millis[] = { { 0, "0" }, { 1000, "1" }, { 3250, "3250m" }, { 1, "1m" }, { 64000, "64" } };
	char b[64];

	(void)st;
	for (unsigned i = 0; i < sizeof(bytes) / sizeof(bytes[0]); i++) {
		nrt_bytes(bytes[i].bytes, b, sizeof(b));
		assert_string_equal(b, bytes[i].want);
	}
	for (unsigned i = 0; i < sizeof(millis) / sizeof(millis[0]); i++) {
		nrt_millis(millis[i].milli, b, sizeof(b));
		assert_string_equal(b, millis[i].want);
	}
	nrt_hugepages_name(2 * MIB, b, sizeof(b));
	assert_string_equal(b, "hugepages-2Mi");
	nrt_hugepages_name(GIB, b, sizeof(b));
	assert_string_equal(b, "hugepages-1Gi");
	nrt_hugepages_name(64 * 1024, b, sizeof(b));
	assert_string_equal(b, "hugepages-64Ki");
}

/* Two nodes of 4 CPUs (node 1's id is 2: names follow ids, not indexes),
 * 16 GiB each; node 0 has a 2 MiB pool of 512 pages (100 free) and a
 * 1 GiB pool of 2 (1 free) and is 25 % busy; node 2's load is not
 * measured yet. */
static struct snapshot *host(void)
{
	struct snapshot *s = snap_new();
	struct snap_node nd[2];
	static const unsigned dist[] = { 10, 21, 21, 10 };

	memset(nd, 0, sizeof(nd));
	for (unsigned k = 0; k < 2; k++) {
		nd[k].id = k ? 2 : 0;
		for (unsigned c = 0; c < 4; c++)
			mask_set(&nd[k].cpus, k * 4 + c);
		nd[k].nr_cpus = 4;
		nd[k].mem_total = 16 * GIB;
		nd[k].agent_cpus = NAN;
	}
	nd[0].mem_free = 10 * GIB;
	nd[0].busy = 0.25;
	nd[0].nr_hpools = 2;
	nd[0].hpools[0] = (struct snap_hpool){ .page = 2 * MIB, .total = 512, .free = 100 };
	nd[0].hpools[1] = (struct snap_hpool){ .page = GIB, .total = 2, .free = 1 };
	nd[1].mem_free = 12 * GIB;
	nd[1].busy = NAN;
	snap_set_nodes(s, nd, 2, dist);
	s->seq = 7;
	s->real_ns = 1700000000123000000;
	s->window_s = 1.0;
	s->numa_balancing = -1;
	return s;
}

static struct snap_guest *guest(struct snapshot *s, const char *id, const char *cpus, uint64_t m0,
				uint64_t m2)
{
	struct snap_guest *g = snap_add_guest(s);
	cpumask_t c;

	snprintf(g->id, sizeof(g->id), "%s", id);
	memset(&c, 0, sizeof(c));
	assert_int_equal(mask_parse(cpus, &c), 0);
	snap_guest_set_cpus(s, g, &c, NULL);
	g->cpu_use = NAN;
	g->mem_node[0] = m0;
	g->mem_node[1] = m2;
	return g;
}

static json_t *find(json_t *list, const char *name)
{
	size_t i;
	json_t *e;

	json_array_foreach(list, i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
			return e;
	return NULL;
}

static const char *attr(json_t *list, const char *name)
{
	json_t *e = find(list, name);

	return e ? json_string_value(json_object_get(e, "value")) : NULL;
}

static void assert_resource(json_t *zone, const char *name, const char *cap, const char *alloc,
			    const char *avail)
{
	json_t *r = find(json_object_get(zone, "resources"), name);

	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "capacity")), cap);
	assert_string_equal(json_string_value(json_object_get(r, "allocatable")), alloc);
	assert_string_equal(json_string_value(json_object_get(r, "available")), avail);
}

static void test_object(void **st)
{
	struct snapshot *s = host();
	json_t *o, *z0, *z2, *a0, *a2, *top, *costs;

	(void)st;
	/* a: runs on node 0 with 1 GiB there and 256 MiB on node 2;
	 * b: runs on both with 512 MiB on node 2; c: runs on node 2, its
	 * memory unreadable (its zeros are no measurement). */
	guest(s, "a", "0-1", GIB, 256 * MIB);
	guest(s, "b", "3-4", 0, 512 * MIB);
	guest(s, "c", "5", 0, 0)->mem_unknown = true;
	snap_finalize(s);
	o = nrt_build(s, "worker-1");
	assert_string_equal(json_string_value(json_object_get(o, "apiVersion")), "topology.node.k8s.io/v1alpha2");
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "NodeResourceTopology");
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")), "worker-1");
	assert_int_equal(json_array_size(json_object_get(o, "topologyPolicies")), 0);
	assert_int_equal(json_array_size(json_object_get(o, "zones")), 2);
	z0 = json_array_get(json_object_get(o, "zones"), 0);
	z2 = json_array_get(json_object_get(o, "zones"), 1);
	assert_string_equal(json_string_value(json_object_get(z0, "name")), "node-0");
	assert_string_equal(json_string_value(json_object_get(z2, "name")), "node-2");
	assert_string_equal(json_string_value(json_object_get(z2, "type")), "Node");

	/* Resources: 16 GiB less 1 GiB of 2 MiB pages and 2 GiB of 1 GiB
	 * pages is 13 GiB allocatable; MemFree 10 GiB is available. */
	assert_resource(z0, "cpu", "4", "4", "4");
	assert_resource(z0, "memory", "16Gi", "13Gi", "10Gi");
	assert_resource(z0, "hugepages-2Mi", "1Gi", "1Gi", "200Mi");
	assert_resource(z0, "hugepages-1Gi", "2Gi", "2Gi", "1Gi");
	assert_int_equal(json_array_size(json_object_get(z0, "resources")), 4);
	assert_resource(z2, "memory", "16Gi", "16Gi", "12Gi");
	assert_int_equal(json_array_size(json_object_get(z2, "resources")), 2);

	/* Costs: every node, by zone name, from the distance matrix. */
	costs = json_object_get(z0, "costs");
	assert_int_equal(json_array_size(costs), 2);
	assert_int_equal(json_integer_value(json_object_get(find(costs, "node-0"), "value")), 10);
	assert_int_equal(json_integer_value(json_object_get(find(costs, "node-2"), "value")), 21);

	/* Node 0: 1 CPU of 4 busy; a runs there (local 1 GiB), nobody else's
	 * memory is there. Node 2: load unknown, so no CPU attribute at all;
	 * b and c run there (local: b's 512 MiB), a's 256 MiB is remote. */
	a0 = json_object_get(z0, "attributes");
	assert_string_equal(attr(a0, "numaorch.io/cpu-used"), "1");
	assert_string_equal(attr(a0, "numaorch.io/cpu-busy-fraction"), "0.250");
	assert_string_equal(attr(a0, "numaorch.io/guests"), "2");
	assert_string_equal(attr(a0, "numaorch.io/guest-memory-local"), "1Gi");
	assert_string_equal(attr(a0, "numaorch.io/guest-memory-remote"), "0");
	a2 = json_object_get(z2, "attributes");
	assert_null(attr(a2, "numaorch.io/cpu-used"));
	assert_null(attr(a2, "numaorch.io/cpu-busy-fraction"));
	assert_string_equal(attr(a2, "numaorch.io/guests"), "2");
	assert_string_equal(attr(a2, "numaorch.io/guest-memory-local"), "512Mi");
	assert_string_equal(attr(a2, "numaorch.io/guest-memory-remote"), "256Mi");

	/* Top level: when, which cycle, the window; numa_balancing unknown
	 * is absent; one guest's memory unmeasured. */
	top = json_object_get(o, "attributes");
	assert_string_equal(attr(top, "numaorch.io/measured-at"), "2023-11-14T22:13:20.123Z");
	assert_string_equal(attr(top, "numaorch.io/snapshot-seq"), "7");
	assert_string_equal(attr(top, "numaorch.io/sample-window-seconds"), "1.000");
	assert_null(attr(top, "numaorch.io/kernel-numa-balancing"));
	assert_string_equal(attr(top, "numaorch.io/guests-memory-unmeasured"), "1");
	json_decref(o);
	snap_unref(s);
}

/* Fractional load in thousandths; MemFree above allocatable (a pool
 * reserved since MemFree was read) is bounded by allocatable; no guest's
 * memory unknown: no count of them; numa_balancing known: shown. */
static void test_edges(void **st)
{
	struct snapshot *s = host();
	struct snap_node *nd = &s->nodes[0];
	json_t *o, *z0;

	(void)st;
	nd->busy = 0.8125;              /* 3.25 CPUs of 4 */
	nd->mem_free = 15 * GIB;        /* above 13 GiB allocatable */
	s->numa_balancing = 1;
	snap_finalize(s);
	o = nrt_build(s, "n");
	z0 = json_array_get(json_object_get(o, "zones"), 0);
	assert_string_equal(attr(json_object_get(z0, "attributes"), "numaorch.io/cpu-used"), "3250m");
	assert_string_equal(attr(json_object_get(z0, "attributes"), "numaorch.io/cpu-busy-fraction"), "0.812");
	assert_string_equal(attr(json_object_get(z0, "attributes"), "numaorch.io/guests"), "0");
	assert_resource(z0, "memory", "16Gi", "13Gi", "13Gi");
	assert_null(attr(json_object_get(o, "attributes"), "numaorch.io/guests-memory-unmeasured"));
	assert_string_equal(attr(json_object_get(o, "attributes"), "numaorch.io/kernel-numa-balancing"), "1");
	json_decref(o);
	snap_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantities),
		cmocka_unit_test(test_object),
		cmocka_unit_test(test_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* nrt.c — the host as a NodeResourceTopology object (nrt.h). */
#include "nrt.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "../orchestrator/base/mask.h"
#include "../orchestrator/store/declog.h"

#define NRT_API_VERSION "topology.node.k8s.io/v1alpha2"
/* Attribute names carry the project's prefix, as Kubernetes labels and
 * annotations do, so they never take a name the API's owners may give. */
#define NRT_ATTR(x) "numaorch.io/" x

void nrt_bytes(uint64_t bytes, char *buf, size_t sz)
{
	static const char *const suffix[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	int k = -1;

	while (bytes && k + 1 < 6 && (bytes & 1023) == 0) {
		bytes >>= 10;
		k++;
	}
	snprintf(buf, sz, "%" PRIu64 "%s", bytes, k < 0 ? "" : suffix[k]);
}

void nrt_millis(uint64_t milli, char *buf, size_t sz)
{
	if (milli % 1000 == 0)
		snprintf(buf, sz, "%" PRIu64, milli / 1000);
	else
		snprintf(buf, sz, "%" PRIu64 "m", milli);
}

void nrt_hugepages_name(uint64_t page, char *buf, size_t sz)
{
	char q[32];

	nrt_bytes(page, q, sizeof(q));
	snprintf(buf, sz, "hugepages-%s", q);
}

static void add_attr(json_t *list, const char *name, const char *value)
{
	json_array_append_new(list, json_pack("{s:s, s:s}", "name", name, "value", value));
}

static void add_attr_u64(json_t *list, const char *name, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	add_attr(list, name, b);
}

static void add_resource(json_t *list, const char *name, const char *capacity, const char *allocatable,
			 const char *available)
{
	json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s}", "name", name, "capacity", capacity,
					      "allocatable", allocatable, "available", available));
}

static void add_bytes_resource(json_t *list, const char *name, uint64_t capacity, uint64_t allocatable,
			       uint64_t available)
{
	char c[32], al[32], av[32];

	nrt_bytes(capacity, c, sizeof(c));
	nrt_bytes(allocatable, al, sizeof(al));
	nrt_bytes(available, av, sizeof(av));
	add_resource(list, name, c, al, av);
}

/* A node's resources. Memory's allocatable leaves out its hugetlb pools
 * as the kubelet's does (their pages came out of MemTotal's ordinary
 * memory when reserved); its available is MemFree, which counts no
 * hugetlb page, bounded by allocatable. A pool's capacity and
 * allocatable are all its pages, available its free pages. The agent
 * reserves no CPU: all three of cpu are the node's online CPUs. */
static json_t *zone_resources(const struct snap_node *nd)
{
	json_t *res = json_array();
	uint64_t huge = 0, avail;
	char n[16];

	snprintf(n, sizeof(n), "%u", nd->nr_cpus);
	add_resource(res, "cpu", n, n, n);
	for (unsigned h = 0; h < nd->nr_hpools; h++)
		huge += nd->hpools[h].total * nd->hpools[h].page;
	huge = huge < nd->mem_total ? huge : nd->mem_total;
	avail = nd->mem_free < nd->mem_total - huge ? nd->mem_free : nd->mem_total - huge;
	add_bytes_resource(res, "memory", nd->mem_total, nd->mem_total - huge, avail);
	for (unsigned h = 0; h < nd->nr_hpools; h++) {
		const struct snap_hpool *p = &nd->hpools[h];
		char name[48];

		nrt_hugepages_name(p->page, name, sizeof(name));
		add_bytes_resource(res, name, p->total * p->page, p->total * p->page, p->free * p->page);
	}
	return res;
}

static json_t *zone_costs(const struct snapshot *s, unsigned idx)
{
	json_t *costs = json_array();

	for (unsigned j = 0; j < s->nr_nodes; j++) {
		char name[24];

		snprintf(name, sizeof(name), "node-%d", s->nodes[j].id);
		json_array_append_new(costs, json_pack("{s:s, s:I}", "name", name, "value",
						       (json_int_t)snap_distance(s, idx, j)));
	}
	return costs;
}

/* What the agent measured on the node at IDX: the CPU its guests and
 * everything else used over the sample window (without the agent's own
 * threads), and the guests' memory on it, split by whether the guest
 * runs there (its CPUs include the node: local) or not (its threads
 * reach it across the interconnect: remote). Guests whose memory could
 * not be read count in neither (the top level says how many). */
static json_t *zone_attributes(const struct snapshot *s, unsigned idx)
{
	const struct snap_node *nd = &s->nodes[idx];
	json_t *attrs = json_array();
	uint64_t local = 0, remote = 0, guests = 0;

	if (nd->nr_cpus && isfinite(nd->busy) && nd->busy >= 0) {
		double busy = nd->busy > 1 ? 1 : nd->busy;
		char b[32];

		nrt_millis((uint64_t)llround(busy * nd->nr_cpus * 1000), b, sizeof(b));
		add_attr(attrs, NRT_ATTR("cpu-used"), b);
		snprintf(b, sizeof(b), "%.3f", busy);
		add_attr(attrs, NRT_ATTR("cpu-busy-fraction"), b);
	}
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];
		bool here = mask_test(&g->cpu_nodes, nd->id);

		guests += here;
		if (g->mem_unknown || !g->mem_node)
			continue;
		if (here)
			local += g->mem_node[idx];
		else
			remote += g->mem_node[idx];
	}
	add_attr_u64(attrs, NRT_ATTR("guests"), guests);
	{
		char b[32];

		nrt_bytes(local, b, sizeof(b));
		add_attr(attrs, NRT_ATTR("guest-memory-local"), b);
		nrt_bytes(remote, b, sizeof(b));
		add_attr(attrs, NRT_ATTR("guest-memory-remote"), b);
	}
	return attrs;
}

static json_t *top_attributes(const struct snapshot *s)
{
	json_t *attrs = json_array();
	unsigned unmeasured = 0;
	char b[48];

	declog_time(s->real_ns, b, sizeof(b));
	add_attr(attrs, NRT_ATTR("measured-at"), b);
	add_attr_u64(attrs, NRT_ATTR("snapshot-seq"), s->seq);
	if (isfinite(s->window_s) && s->window_s > 0) {
		snprintf(b, sizeof(b), "%.3f", s->window_s);
		add_attr(attrs, NRT_ATTR("sample-window-seconds"), b);
	}
	if (s->numa_balancing >= 0)
		add_attr_u64(attrs, NRT_ATTR("kernel-numa-balancing"), (uint64_t)s->numa_balancing);
	for (unsigned i = 0; i < s->nr_guests; i++)
		unmeasured += s->guests[i].mem_unknown;
	if (unmeasured)
		add_attr_u64(attrs, NRT_ATTR("guests-memory-unmeasured"), unmeasured);
	return attrs;
}

json_t *nrt_build(const struct snapshot *s, const char *node_name)
{
	json_t *zones = json_array();

	for (unsigned i = 0; i < s->nr_nodes; i++) {
		char name[24];

		snprintf(name, sizeof(name), "node-%d", s->nodes[i].id);
		json_array_append_new(zones, json_pack("{s:s, s:s, s:o, s:o, s:o}", "name", name, "type", "Node",
						       "costs", zone_costs(s, i), "attributes",
						       zone_attributes(s, i), "resources",
						       zone_resources(&s->nodes[i])));
	}
	/* topologyPolicies (deprecated in v1alpha2, yet always written) would
	 * name the kubelet's Topology Manager policy, which the agent does
	 * not know: empty, rather than a guess. */
	return json_pack("{s:s, s:s, s:{s:s}, s:[], s:o, s:o}", "apiVersion", NRT_API_VERSION, "kind",
			 "NodeResourceTopology", "metadata", "name", node_name, "topologyPolicies", "zones",
			 zones, "attributes", top_attributes(s));
}

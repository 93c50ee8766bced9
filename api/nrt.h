/* nrt.h — the host as Kubernetes' NodeResourceTopology object
 * (topology.node.k8s.io/v1alpha2), for GET /v1/topology: one zone per
 * NUMA node with its CPUs, memory and hugetlb pools as quantities, the
 * node distances as costs, and as attributes what the agent measures and
 * no scheduler sees today (per-node CPU load, where the guests' memory
 * lies against where they run). Pure: built from one snapshot.
 *
 * Only what the snapshot measured is shown: an attribute whose figure is
 * unknown (a load not sampled yet) is absent, never 0. api/openapi.yaml's
 * NodeResourceTopology says how each figure is derived.
 */
#ifndef NUMAORCH_NRT_H
#define NUMAORCH_NRT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../orchestrator/model/snapshot.h"

/* The object for snapshot S, named NODE_NAME (the Kubernetes node's
 * name): apiVersion, kind, metadata.name, topologyPolicies, zones,
 * attributes. A new reference. */
json_t *nrt_build(const struct snapshot *s, const char *node_name);

/* BYTES as a Kubernetes quantity in its canonical binary form: the largest
 * of Ki..Ei that divides it exactly ("2Mi", "1536", "0"), so the text an
 * API server reads back is the text written. */
void nrt_bytes(uint64_t bytes, char *buf, size_t sz);
/* MILLI thousandths of a CPU as a quantity: "3" or "3250m". */
void nrt_millis(uint64_t milli, char *buf, size_t sz);
/* The resource name of a hugetlb pool of PAGE bytes a page, as the
 * kubelet names it: "hugepages-2Mi", "hugepages-1Gi". */
void nrt_hugepages_name(uint64_t page, char *buf, size_t sz);

#endif

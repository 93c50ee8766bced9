/* cores.h — private to policies/: which CPUs of its target node a moved
 * guest gets, by core and last-level cache.
 *
 * A node set is chosen by load and room (guards.h); inside one node, on
 * a host that shows SMT siblings or more than one last-level cache per
 * node, a guest's busy threads get cores of their own before siblings
 * (two busy threads on one core's siblings each run far slower than on
 * two cores), the cores in one last-level cache where they fit (a small
 * guest split across caches pays on every access), and its cpuset holds
 * every sibling of each core it uses unless [policy] whole_cores = no.
 * Pure: it reads the snapshot and writes the caller's masks.
 */
#ifndef NUMAORCH_POLICIES_CORES_H
#define NUMAORCH_POLICIES_CORES_H

#include <stdbool.h>
#include <stddef.h>

#include "../orchestrator/model/snapshot.h"

/* The CPUs' load for one decision, by CPU id: every guest's use spread
 * over its cpuset, then moved with each move as it is chosen, so the
 * cycle's later moves see the cores its earlier ones took. NULL (and
 * every call below a no-op that keeps whole nodes) when no node shows
 * SMT siblings or more than one last-level cache. */
struct coreload;
struct coreload *coreload_new(const struct snapshot *s);
void coreload_free(struct coreload *cl);

/* USE moved in CL from the CPUs FROM to TO (a guest weighed again where
 * its view counts it); a no-op without CL. */
void coreload_move(struct coreload *cl, const cpumask_t *from, const cpumask_t *to, double use);

/* One last-level cache of a node as coreload_llcs() reads it: its
 * lowest CPU id, its cores, and the busy CPUs estimated on them. */
struct llc_load {
	int leader;
	unsigned cores;
	double load;
};
/* The last-level caches of node N (at most MAX) into OUT, each with its
 * load less OWN_USE spread over the CPUs OWN (a guest's own use, where
 * CL counts it; NULL: none); returns how many, 0 without CL or where N
 * shows no cores. */
unsigned coreload_llcs(const struct coreload *cl, const struct snapshot *s, const struct snap_node *n,
		       const cpumask_t *own, double own_use, struct llc_load *out, unsigned max);

/* G's CPUs on NODES: OUT holds on entry the CPUs it may be given there
 * (the nodes' CPUs it is allowed), and on return those it gets. Only a
 * one-node target with cores known is narrowed (a container's only with
 * CONTAINERS: [policy] container_cores), to as many cores as G has busy
 * threads (a VM: vCPUs), in one last-level cache where they
 * fit, the least loaded first; OUT stays as it was when that would be
 * the whole node. G's load moves in CL from FROM (the CPUs it was
 * counted on: its cpuset, or the CPUs an earlier choice this cycle gave
 * it) to OUT. WHY gets a clause for the record when cores shaped the
 * choice ("2 busy threads on 2 cores of LLC 0"), else "". */
void cores_choose(struct coreload *cl, const struct snapshot *s, const struct snap_guest *g,
		  const nodemask_t *nodes, const cpumask_t *from, bool whole_cores, bool containers,
		  cpumask_t *out, char *why, size_t whysz);

#endif

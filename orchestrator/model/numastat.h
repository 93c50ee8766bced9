/* numastat.h — the one parser of cgroup memory.numa_stat, for containers
 * (agents/cgscan.c) and VMs' domain cgroups (agents/vmproc.c). Pure.
 *
 *   v1, pages: "total=N N0=a N1=b ..." and, with use_hierarchy,
 *              "hierarchical_total=..." (preferred: it covers child cgroups);
 *   v2, bytes, hierarchical: "anon N0=a ..." + "file N0=a ..." (the
 *              footprint counted is anon + file).
 */
#ifndef NUMAORCH_NUMASTAT_H
#define NUMAORCH_NUMASTAT_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/snapshot.h"

/* Parse TEXT into MEM[snap->nr_nodes] (bytes, by node index; zeroed
 * first). PAGE_SIZE multiplies v1 counts. Node ids SNAP does not know are
 * skipped and added to *UNKNOWN (may be NULL). Returns 0, or -EINVAL if a
 * needed line is missing or malformed (MEM is then all zero). */
int numastat_parse(const char *text, bool v2, long page_size, const struct snapshot *snap,
		   uint64_t *mem, nodemask_t *unknown);

/* A cgroup's hugetlb.<size>.numa_stat (bytes): v2 "total=N N0=a ..."
 * (hierarchical), v1 "total=..." then "hierarchical_total=..."
 * (preferred). Into MEM[snap->nr_nodes] by node index, zeroed first;
 * unknown node ids are skipped. 0, or -EINVAL (MEM all zero). */
int numastat_parse_hugetlb(const char *text, const struct snapshot *snap, uint64_t *mem);

#endif

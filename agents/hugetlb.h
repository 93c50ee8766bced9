/* hugetlb.h — a guest's hugetlb memory per node, which memory.numa_stat
 * does not count: for the container scan (agents/cgscan.c) and the VM
 * source (agents/vmsrc.c).
 *
 * What it costs: nothing on a host whose pools have no page in use
 * (ghuge_host_in_use, from the snapshot's nodes). Else, per guest, its
 * cgroup's hugetlb.<size>.numa_stat where the hugetlb controller is on in
 * its hierarchy (one small file per page size in use; on v1 the hugetlb
 * controller's own hierarchy, whose files have it from Linux 5.16 on,
 * with a "hierarchical_total=" line that counts), or else its main
 * process's /proc/PID/status (HugetlbPages) and, only when that is not
 * zero, its /proc/PID/numa_maps.
 */
#ifndef NUMAORCH_HUGETLB_H
#define NUMAORCH_HUGETLB_H

#include <stdbool.h>
#include <sys/types.h>

#include "../orchestrator/base/hostpaths.h"
#include "../orchestrator/model/snapshot.h"

/* Do any node's pools have pages in use (total − free > 0)? If not, no
 * guest holds a huge page. */
bool ghuge_host_in_use(const struct snapshot *s);

/* G's hugetlb memory into g->huge_node and g->huge_page, from CGDIR's
 * hugetlb.<size>.numa_stat (CGDIR: the guest's cgroup directory in the
 * hierarchy that has hugetlb; NULL or without those files: not there),
 * else from PID's numa_maps when its status shows hugetlb pages. With
 * ADD_TO_MEM they are added to g->mem_node as well (its memory came from
 * memory.numa_stat, which has none of them). 0 (nothing found is 0
 * too), or a negative errno from reading PID's files (-ESRCH: gone). */
int ghuge_read(const struct host_paths *hp, struct snapshot *s, struct snap_guest *g,
	       const char *cgdir, pid_t pid, bool add_to_mem);

#endif

/* numastat.h — the one parser of cgroup memory.numa_stat, for containers
 * (agents/cgscan.c) and VMs' domain cgroups (agents/vmproc.c), and of
 * /proc/PID/numa_maps (agents/vmproc.c's fallback, the mover's census of
 * a job's pages). Pure.
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

#include "mask.h"
#include "snapshot.h"

/* Parse TEXT into MEM[snap->nr_nodes] (bytes, by node index; zeroed
 * first). PAGE_SIZE multiplies v1 counts. Node ids SNAP does not know are
 * skipped and added to *UNKNOWN (may be NULL). Returns 0, or -EINVAL if a
 * needed line is missing or malformed (MEM is then all zero). */
int numastat_parse(const char *text, bool v2, long page_size, const struct snapshot *snap,
		   uint64_t *mem, nodemask_t *unknown);

/* Bytes per node id in /proc/PID/numa_maps TEXT: every mapping's
 * "N<id>=<pages>" times its kernelpagesize_kB (4 when absent), added to
 * BYTES[id] for id < NIDS (larger ids are skipped). Other tokens, and a
 * malformed one, are skipped: the file is the kernel's, one line a mapping. */
void numastat_parse_numa_maps(const char *text, uint64_t *bytes, unsigned nids);

#endif

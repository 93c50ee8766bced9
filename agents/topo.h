/* topo.h — host NUMA topology and per-node CPU load, read from sysfs and
 * procfs under an injectable root.
 *
 * Sources: /sys/devices/system/node/node<N>/{cpulist,meminfo,distance},
 * node<N>/hugepages/hugepages-<size>kB/{nr,free,surplus}_hugepages,
 * /sys/devices/system/node/online where present (CPU and memory presence
 * come from cpulist and MemTotal),
 * /sys/devices/system/cpu/online, /proc/stat (per-CPU lines), and
 * /proc/meminfo when the kernel has no node directories (non-NUMA build:
 * one synthetic node 0 holding all online CPUs).
 */
#ifndef NUMAORCH_TOPO_H
#define NUMAORCH_TOPO_H

#include <stdint.h>

#include "../orchestrator/base/hostpaths.h"
#include "../orchestrator/model/snapshot.h"

/* Read nodes, their online CPUs, memory and the distance matrix.
 * On success *nodes ([*nr], sorted by id) and *distance ([*nr × *nr],
 * same order) are the caller's to free(); busy is NAN.
 * Errors: -ENOENT (no sysfs), -EINVAL (malformed file; logged at debug
 * with the path), -E2BIG (more CPUs/nodes than mask.h supports). */
int topo_read_nodes(const struct host_paths *hp, struct snap_node **nodes,
		    unsigned *nr, unsigned **distance);

/* Re-read only MemTotal/MemFree and the hugetlb pools of each node
 * (cheap, every cycle). */
int topo_read_meminfo(const struct host_paths *hp, struct snap_node *nodes, unsigned nr);

/* The cores and last-level caches of CPUs, by CPU id: the lowest CPU
 * id of each one's core (core_cpus_list, or thread_siblings_list on
 * kernels before 5.6) and of the CPUs sharing its highest-level cache
 * (cache/index<N>/{level,shared_cpu_list}); -1 where the files are not
 * there. nr is 0 (and the arrays NULL) when no CPU has them. */
struct topo_cputopo {
	unsigned nr;        /* highest CPU id read + 1 */
	int *core;
	int *llc;
};

/* Read them for the CPUs of NODES. A missing or malformed file leaves
 * that CPU unknown (logged at debug): a host without them is placed on
 * as one whose CPUs are all alike. */
void topo_read_cputopo(const struct host_paths *hp, const struct snap_node *nodes, unsigned nr,
		       struct topo_cputopo *out);
void topo_cputopo_free(struct topo_cputopo *t);

/* Cumulative per-CPU counters from /proc/stat, in USER_HZ ticks, indexed
 * by CPU id; CPUs absent from the file have total 0. */
struct topo_cpustat {
	unsigned nr;        /* highest CPU id + 1 */
	uint64_t *busy;     /* user+nice+system+irq+softirq+steal */
	uint64_t *total;    /* busy + idle + iowait */
};

int topo_read_cpustat(const struct host_paths *hp, struct topo_cpustat *out);
void topo_cpustat_free(struct topo_cpustat *c);

/* Set nodes[i].busy from the deltas between two samples: Σ Δbusy / Σ Δtotal
 * over the node's CPUs. Nodes without CPUs, or without any tick between
 * the samples, get NAN. */
void topo_node_busy(struct snap_node *nodes, unsigned nr,
		    const struct topo_cpustat *prev, const struct topo_cpustat *cur);

#endif

/* kflow.h — what the kernel moved of each guest's memory between two
 * snapshots (snap_guest.kflow), and what the agent makes of it beside
 * the kernel's NUMA balancing.
 *
 * The flow is the change of the guest's memory per node from the
 * previous snapshot to this one: bytes that arrived on a node and bytes
 * that left one. What arrived and left at once (the smaller of the two
 * sums) moved between nodes; the rest is the guest growing or shrinking.
 * Nothing else moves a guest's pages between nodes but the kernel and
 * the agent, so a window in which the agent moved nothing of the guest
 * measures the kernel: a guest the agent moved in the window (a live
 * job, a write) has no flow, nor has one seen in only one of the two
 * snapshots or with its memory unknown in either. Pure: no I/O.
 */
#ifndef NUMAORCH_KFLOW_H
#define NUMAORCH_KFLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/model/snapshot.h"

/* Less than this moved in a window is no flow: memory.numa_stat's
 * counts drift by a few pages with page cache and per-CPU batching. */
#define KFLOW_FLOOR_BYTES (1ull << 20)
/* A window shorter than this shows the kernel moving a guest, never that
 * it does not: its balancing works in passes (a scan period of a second
 * or more, then the faults it provokes as the task comes to the pages it
 * marked), and a shorter window can fall between two and read a lull as
 * no flow. */
#define KFLOW_MIN_WINDOW_S 2.0
/* [memory] kernel_follow's default, seconds. */
#define KFLOW_FOLLOW_S 30.0

/* Did the agent move guest ID's memory between PREV_NS and CUR_NS
 * (CLOCK_MONOTONIC)? The engine's answer: a job or a write of its own. */
typedef bool (*kflow_ours_fn)(void *ctx, const char *id, int64_t prev_ns, int64_t cur_ns);

/* Each guest of CUR seen in PREV as well gets its flow over the window
 * between them (snap_guest.kflow, owned by CUR), unless OURS (may be
 * NULL: none) says the agent moved it; and CUR the host's rate of the
 * kernel's balancing migrations (snapshot.kernel_migrated_pps) where
 * both read /proc/vmstat. PREV NULL, or not older than CUR: nothing.
 * Returns false when the window is shorter than KFLOW_MIN_WINDOW_S: PREV
 * is to be kept, so that the next snapshot's window is long enough to
 * say the kernel is not moving a guest; true when CUR is the next one's
 * PREV. */
bool kflow_fill(struct snapshot *cur, const struct snapshot *prev, kflow_ours_fn ours, void *ctx);

/* What the flow says about a guest whose memory is not local to where
 * its threads run (kflow_judge). */
enum kflow_verdict {
	KFLOW_ABSENT = 0,  /* no flow measured, balancing off, the guest local or idle:
			    * nothing to say (the rule as without a measurement) */
	KFLOW_FOLLOWS,     /* the kernel moves it toward its threads' nodes fast enough
			    * to finish within the bound: left to it */
	KFLOW_SLOW,        /* the kernel moves it toward them, too slowly to finish in time */
	KFLOW_STILL,       /* it runs and the kernel moved none of it toward them over
			    * the whole window, its CPUs the same all along */
	/* SLOW and STILL only over KFLOW_MIN_WINDOW_S or more: a shorter
	 * window that does not show it FOLLOWS is ABSENT. */
};

struct kflow_judgement {
	enum kflow_verdict verdict;
	double rate_bps;         /* bytes/s moved onto its threads' nodes */
	uint64_t remote_bytes;   /* its memory off its threads' nodes */
	int to_node;             /* the node (id) the kernel fills most, -1: none */
};

/* REMOTE bytes of TOTAL are too few to move: under 2 MiB or 1 % (as
 * plan_migration_negligible says of a migration). */
bool kflow_negligible(uint64_t remote, uint64_t total);

/* The threads' nodes of G (ids): where its measured CPU time ran
 * (cpu_node, nodes with at least SNAP_BUSY_THREAD_CPU of it), else its
 * CPUs' nodes. */
void kflow_thread_nodes(const struct snapshot *s, const struct snap_guest *g, nodemask_t *out);

/* The verdict on G of S, with the kernel's balancing as S read it, and
 * FOLLOW_S the bound the kernel's remaining work must fit in. */
void kflow_judge(const struct snapshot *s, const struct snap_guest *g, double follow_s, struct kflow_judgement *out);

/* The node the kernel is filling for G (id), -1 when none: the node its
 * measured flow brought the most memory to, KFLOW_FLOOR_BYTES or more. */
int kflow_filling(const struct snapshot *s, const struct snap_guest *g);

#endif

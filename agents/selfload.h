/* selfload.h — the agent's own CPU time on each node over a sample
 * window, taken off the nodes' measured load.
 *
 * The nodes' busy CPUs (/proc/stat) include the agent's own threads: the
 * daemon's start-up burns CPU inside its first window, a cycle's scan
 * and writes inside each later one, and the mover's workers their page
 * copies. None of it is load a guest's placement should steer around —
 * it comes in bursts and goes where the agent's threads happen to run —
 * yet on small nodes the daemon's start-up, or a mover job copying pages
 * onto a node, makes that node read markedly busier just as a guest has
 * been moved there, and a fraction of a CPU that no guest owns can tip a
 * local fit.
 *
 * Each thread's CPU time (/proc/PID/task/TID/schedstat, ns) since the
 * last sample counts wholly on the node of the CPU it last ran on
 * (stat's "processor"), as cgthr.c counts a guest's threads; a thread
 * born since counts whole. What a thread that ended in the window used
 * is lost (the mover's workers live as long as the mover).
 */
#ifndef NUMAORCH_SELFLOAD_H
#define NUMAORCH_SELFLOAD_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "../orchestrator/model/snapshot.h"

struct selfload_thr {
	pid_t tid;
	int cpu;            /* the CPU it last ran on, -1 unknown */
	uint64_t ns;        /* CPU time since it started */
};

struct selfload {
	char procfs[PATH_MAX];
	pid_t pid;
	struct selfload_thr *thr;   /* the last sample, sorted by tid */
	unsigned n;
	int have;                   /* a sample was taken */
	long clk_tck;               /* stat's ticks per second */
};

/* Accounting of process PID's threads under PROCFS. */
void selfload_init(struct selfload *s, const char *procfs, pid_t pid);
void selfload_clear(struct selfload *s);

/* Take a sample: with a previous one, add each node's CPU seconds since
 * it to SEC[nr] (NODES' order; SEC untouched without one, or NULL).
 * Returns 1 when a window was counted, 0 for a first sample (a window
 * starts), or -errno when the threads cannot be listed (a fixture procfs
 * without the agent's pid: nothing counted, nothing kept). */
int selfload_sample(struct selfload *s, const struct snap_node *nodes, unsigned nr, double *sec);

/* Pure: CPU seconds per node (SEC[nr], NODES' order) that CUR's threads
 * used since PREV (both sorted by tid), each on the node of its CPU. */
void selfload_by_node(const struct selfload_thr *prev, unsigned np, const struct selfload_thr *cur, unsigned nc,
		      const struct snap_node *nodes, unsigned nr, double *sec);

/* Pure: take SEC[i] CPU seconds over WINDOW_S off node i's busy fraction,
 * never below 0 (a node whose busy was not measured, NAN, stays so), and
 * note them as its agent_cpus (CPUs over the window). */
void selfload_subtract(struct snap_node *nodes, unsigned nr, const double *sec, double window_s);

#endif

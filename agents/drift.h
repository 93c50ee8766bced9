/* drift.h — between two cycles, which guests' CPU use has stepped away
 * from what the last cycle decided on.
 *
 * A cycle decides on each guest's use over its window (the interval,
 * 15 s by default). A guest that turns busy after it (a VM that boots its
 * workload, a container whose service takes traffic) runs where the
 * scheduler puts it, often away from its memory, until the next cycle.
 * The watch reads each guest's cgroup CPU counter (cpu.stat usage_usec,
 * or cpuacct.usage on v1) every `[agent] watch` seconds — one small file
 * per guest, no /proc walk — and reports a guest whose use over two
 * windows in a row differs from its reference by DRIFT_MIN_CPUS or more,
 * the same way both times. The engine then runs a cycle on a fresh,
 * short window (acquirer_rewindow).
 *
 * The reference is the guest's rate by this same counter over the cycle
 * window the last snapshot decided on (its first pass after that
 * snapshot closes it), not the snapshot's cpu_use: a VM's cgroup also
 * holds QEMU's emulator and I/O threads, which its cpu_use (vCPU
 * threads) leaves out, and an offset between the two would read as a
 * step every pass. Until a guest has a reference (its first cycle) it is
 * not watched; a guest seen for the first time is the first-sight
 * follow-up's (engine_next_cycle_s).
 *
 * Two windows, the same way: a guest whose use alternates around its
 * reference (busy one second, idle the next) prompts nothing.
 *
 * Where, not only how much: a guest whose CPUs span nodes can be as busy
 * as ever while the scheduler has moved its threads to another node of
 * its cpuset, away from its memory — its counter shows nothing. For such
 * a guest whose last cycle measured where its threads ran (cpu_node: a
 * container with few threads, a VM's vCPUs), the watch also reads those
 * threads' CPU time and last CPU (/proc/TID/task/TID/stat, one small file
 * a thread; drift_watch_threads) and computes its locality where they ran
 * over the window, with the memory the cycle saw (snap_locality_for). Two
 * windows in a row at least DRIFT_AWAY_DROP under the cycle's locality
 * read the same way (its whole memory against where its threads ran over
 * the cycle's window, whatever its parts say) report it as away
 * (drift_report.away). */
#ifndef NUMAORCH_DRIFT_H
#define NUMAORCH_DRIFT_H

#include <stdbool.h>
#include <stdint.h>

#include "../orchestrator/base/cghier.h"
#include "../orchestrator/model/snapshot.h"
#include "../orchestrator/model/source.h"

/* A step: at least 0.35 CPU (a thread is busy from a quarter; two
 * threads that turn busy on one CPU get half of it each, and a first
 * threshold of half a CPU missed them by a hair in test_watch) and at
 * least a quarter of the larger of the two (a 16-vCPU VM moving 12 ->
 * 12.6 CPUs is not). The counters are exact (ns of CPU time): what
 * varies is the guests, which the two-window rule is for. */
#define DRIFT_MIN_CPUS 0.35
#define DRIFT_MIN_SHARE 0.25
/* A window shorter than this (a pass right after the last) is not read:
 * a counter's granularity and the read's own jitter are a larger share
 * of it. */
#define DRIFT_MIN_WINDOW_S 0.2
/* Away: the locality where its threads ran over a window is this much
 * under what the last cycle measured (a one-thread guest that left the
 * node with its memory drops by ~1; one of two threads, by ~0.5), while
 * the guest used at least DRIFT_MIN_CPUS (an idle guest's last CPUs say
 * nothing). */
#define DRIFT_AWAY_DROP 0.25
/* Threads read per guest at most (cgthr.h's CGTHR_SAMPLE_MAX: the cycle
 * measures no more either). */
#define DRIFT_THREADS_MAX 64

/* One thread as read now: its CPU time so far and the CPU it last ran on. */
struct drift_thread {
	pid_t tid;
	int cpu;
	uint64_t ns;
};

struct drift;

struct drift *drift_new(void);
void drift_free(struct drift *d);

/* Reads guest cgroup REL's CPU counter (ns): 0 or a negative errno. */
typedef int (*drift_read_fn)(void *ctx, const char *rel, uint64_t *ns);

/* Reads guest G's threads that its last cycle measured by node, at most
 * MAX into OUT: how many, or a negative errno. */
typedef int (*drift_threads_fn)(void *ctx, const struct snap_guest *g, struct drift_thread *out, unsigned max);

/* Watch where the threads of guests spread over nodes run, reading them
 * with THREADS(CTX, ...) (NULL: not watched, the default). */
void drift_watch_threads(struct drift *d, drift_threads_fn threads, void *ctx);

/* One pass at NOW_NS over SNAP's guests (the last cycle's; those with a
 * cgroup), their counters read by READ(CTX, ...). OUT: how many were
 * read, how many stepped and how many are away, the first of each
 * (drift_report). MOVED (NULL: none), indexed as SNAP's guests: those
 * the cycle moved after SNAP, whose threads are not watched until the
 * next snapshot: SNAP's CPUs, memory and locality are no longer theirs,
 * and their threads leaving the memory SNAP saw is the cycle's move,
 * not the scheduler's. */
void drift_pass(struct drift *d, const struct snapshot *snap, int64_t now_ns, drift_read_fn read, void *ctx,
		const bool *moved, struct drift_report *out);

/* A drift_read_fn that opens the file by its path in the cpuacct
 * hierarchy of CTX (a const struct cg_hier *). */
int drift_read_path(void *ctx, const char *rel, uint64_t *ns);

/* Pure: the step between the reference REF and a window's use NOW, in
 * CPUs: +1 up, -1 down, 0 none (either unknown: none). */
int drift_step(double ref, double now);

#endif

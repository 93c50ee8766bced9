/* cgthr.h — a container's CPU use across scans: the usage sample each
 * guest had in the previous scan (for cpu_use, a rate), and for a guest
 * whose CPUs span nodes and that has few threads, where each thread ran
 * (/proc/TID/stat) so its load is counted on the right nodes. One scan's
 * samples become the next scan's previous ones (cgthr_end).
 */
#ifndef NUMAORCH_CGTHR_H
#define NUMAORCH_CGTHR_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../orchestrator/model/snapshot.h"

/* Where a guest's CPU time went, per node: only a guest whose cpus span
 * several nodes needs it (on one node it is all there), and only one
 * with few threads can afford it — one /proc/TID/stat read per thread
 * and cycle. Larger guests keep the policy's estimate (use spread over
 * their CPUs). */
#define CGTHR_SAMPLE_MAX 64
/* A thread of no part; parts counted per guest are fewer. */
#define CGTHR_NO_PART 255

/* What a scan measured of one guest. */
struct cgthr_prev {
	char id[GUEST_ID_MAX];
	uint64_t usage_ns;
	int64_t t_ns;
	unsigned thr_off, nr_thr;     /* its threads' ticks in the tick pool */
};

struct cgthr_tick {
	pid_t tid;
	bool ran;                     /* used CGTHR_RAN_CPU or more over its window */
	uint64_t ticks;               /* utime + stime */
};

/* A thread the watch reads between scans (cgthr_prev_tids) used at least
 * this much of a CPU over the scan's window. Its reads then follow what
 * the host's CPUs can run (at most 1 / CGTHR_RAN_CPU threads a CPU), not
 * what guests hold: a container's dozens of idle threads (a JVM's, a
 * web server's pool) cost a read each per pass and carry no locality. */
#define CGTHR_RAN_CPU 0.05

struct cgthr {
	char procfs[PATH_MAX];
	long clk_tck;
	/* prev is sorted by id; next collects this scan. */
	struct cgthr_prev *prev, *next;
	unsigned nr_prev, nr_next, cap_prev, cap_next;
	/* Thread ticks of the guests above (their thr_off/nr_thr), each
	 * guest's slice sorted by tid. */
	struct cgthr_tick *thr_prev, *thr_next;
	unsigned nr_thr_next, cap_thr_prev, cap_thr_next;
	/* The guest being measured: its thread ids, while under
	 * CGTHR_SAMPLE_MAX (tids_over: more). */
	pid_t tids[CGTHR_SAMPLE_MAX];
	/* The part of the guest (snap_guest.parts) each thread belongs to,
	 * CGTHR_NO_PART for none: given while its lists are read
	 * (cgthr_set_part). */
	unsigned char tid_part[CGTHR_SAMPLE_MAX];
	unsigned char cur_part;
	unsigned nr_tids;
	bool tids_over;
	/* How many nodes a cpus mask of this scan's snapshot spans, by the
	 * mask (interned, so guests share a handful): a few thousand bits
	 * each, not worth walking for every guest. Emptied each scan. */
	struct cgthr_span {
		const cpumask_t *cpus;
		unsigned nodes;
	} span[8];
	unsigned nr_span, next_span;
	int proc_fd;                  /* procfs, open during a scan; -1 */
	char buf[4096];               /* a /proc stat line */
};

/* Empty accounting reading PROCFS. */
void cgthr_init(struct cgthr *t, const char *procfs);
/* Frees T's pools (not T). */
void cgthr_clear(struct cgthr *t);

/* A scan begins / ends; at the end this scan's samples become the
 * previous ones. */
void cgthr_begin(struct cgthr *t);
void cgthr_end(struct cgthr *t);

/* A guest's measuring begins: no thread ids yet. */
void cgthr_guest_begin(struct cgthr *t);
/* One of its thread ids, from its thread list. */
void cgthr_add_tid(struct cgthr *t, pid_t tid);
/* The thread ids added from now on belong to part PART of the guest
 * (CGTHR_NO_PART: to none). */
void cgthr_set_part(struct cgthr *t, unsigned part);
/* The parts given so far renumbered: a thread of part I < N now belongs
 * to part MAP[I] (CGTHR_NO_PART: to none), as the guest's parts are
 * known only once its lists are read. */
void cgthr_map_parts(struct cgthr *t, const unsigned char *map, unsigned n);

/* What the previous scan measured of guest ID, NULL if it did not. */
const struct cgthr_prev *cgthr_prev_find(const struct cgthr *t, const char *id);
/* CPUs used since P (usage_ns per ns): USAGE as read at T_NS, the
 * monotonic time of that read (not of the scan: see cgscan.c's
 * read_time). NAN without P or a usable delta. */
double cgthr_rate(const struct cgthr_prev *p, uint64_t usage, int64_t t_ns);
/* A guest seen for the first time whose main process PID started a
 * little while ago: its average use since (see cgthr.c); NAN otherwise. */
double cgthr_young_rate(struct cgthr *t, pid_t pid, uint64_t usage_ns);
/* Share G's cpu_use out over the nodes its threads ran on (g->cpu_node,
 * busy_threads, busy_measured; and each of G's parts' cpu_node,
 * cpu_use, busy_threads from the threads given for it) from the tids given since
 * cgthr_guest_begin, against P; the ticks are recorded in the pool as the
 * slice *OFF, *N for cgthr_record. T_NS: when G's usage was read. */
void cgthr_thread_nodes(struct cgthr *t, const struct snapshot *s, struct snap_guest *g,
			const struct cgthr_prev *p, int64_t t_ns, unsigned *off, unsigned *n);
/* Between scans (the watch, drift.h): the ids of the threads the last
 * scan measured of guest ID by node (its tick slice) that ran over its
 * window (CGTHR_RAN_CPU), at most MAX into OUT; how many. */
unsigned cgthr_prev_tids(const struct cgthr *t, const char *id, pid_t *out, unsigned max);
/* Thread TID's CPU time so far (ns, from its ticks) and the CPU it last
 * ran on (/proc/TID/task/TID/stat): 0 or a negative errno (gone). */
int cgthr_read_thread(struct cgthr *t, pid_t tid, uint64_t *ns, int *cpu);
/* This scan's sample of guest ID (usage read at T_NS, its tick slice). */
void cgthr_record(struct cgthr *t, const char *id, uint64_t usage, int64_t t_ns, unsigned thr_off,
		  unsigned nr_thr);

#endif

/* cgthr.c — a container's CPU use across scans (see cgthr.h). */
#include "cgthr.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../orchestrator/base/procstat.h"
#include "../orchestrator/base/xalloc.h"

void cgthr_init(struct cgthr *t, const char *procfs)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->procfs, sizeof(t->procfs), "%s", procfs);
	t->clk_tck = sysconf(_SC_CLK_TCK);
	if (t->clk_tck <= 0)
		t->clk_tck = 100;
	t->proc_fd = -1;
}

void cgthr_clear(struct cgthr *t)
{
	free(t->prev);
	free(t->next);
	free(t->thr_prev);
	free(t->thr_next);
	t->prev = t->next = NULL;
	t->thr_prev = t->thr_next = NULL;
}

/* Read the small file DFD/PATH (a /proc stat line; an absolute PATH
 * ignores DFD; the last component never followed) into t->buf,
 * NUL-terminated. */
static int rd_small(struct cgthr *t, int dfd, const char *path)
{
	size_t n = 0;
	int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	while (n + 1 < sizeof(t->buf)) {
		ssize_t r = pread(fd, t->buf + n, sizeof(t->buf) - n - 1, (off_t)n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		/* A seq_file rendered by one show() fills a read to the brim
		 * unless at EOF: a short read is the end (cgscan.c's reader). */
		if (n + 1 < sizeof(t->buf))
			break;
	}
	close(fd);
	if (n + 1 >= sizeof(t->buf))
		return -EFBIG;
	t->buf[n] = '\0';
	return 0;
}

void cgthr_begin(struct cgthr *t)
{
	t->nr_span = t->next_span = 0;
	t->nr_next = 0;
	t->nr_thr_next = 0;
	t->proc_fd = -1;
}

void cgthr_guest_begin(struct cgthr *t)
{
	t->nr_tids = 0;
	t->tids_over = false;
	t->cur_part = CGTHR_NO_PART;
}

void cgthr_add_tid(struct cgthr *t, pid_t tid)
{
	if (t->nr_tids < CGTHR_SAMPLE_MAX) {
		t->tid_part[t->nr_tids] = t->cur_part;
		t->tids[t->nr_tids++] = tid;
	} else {
		t->tids_over = true;
	}
}

void cgthr_set_part(struct cgthr *t, unsigned part)
{
	t->cur_part = part < CGTHR_NO_PART ? (unsigned char)part : CGTHR_NO_PART;
}

void cgthr_map_parts(struct cgthr *t, const unsigned char *map, unsigned n)
{
	for (unsigned i = 0; i < t->nr_tids; i++)
		if (t->tid_part[i] < n)
			t->tid_part[i] = map[t->tid_part[i]];
}

/* Each part of G its share of the guest's use: the ticks PDN[part][node]
 * its threads ran, on the scale G's cpu_node has (its cpu_use over the
 * ticks DN_SUM all threads ran). */
static void parts_use(const struct snapshot *s, struct snap_guest *g, double **pdn, double dn_sum)
{
	for (unsigned i = 0; i < g->nr_parts; i++) {
		struct snap_part *p = &g->parts[i];

		if (!pdn[i])
			continue;
		if (!(dn_sum > 0.0) || isnan(g->cpu_use)) {
			free(pdn[i]);
			continue;
		}
		p->cpu_use = 0.0;
		for (unsigned k = 0; k < s->nr_nodes; k++) {
			pdn[i][k] *= g->cpu_use / dn_sum;
			p->cpu_use += pdn[i][k];
		}
		p->cpu_node = pdn[i];
	}
}

void cgthr_record(struct cgthr *t, const char *id, uint64_t usage, int64_t t_ns, unsigned thr_off,
		  unsigned nr_thr)
{
	if (t->nr_next == t->cap_next) {
		t->cap_next = t->cap_next ? t->cap_next * 2 : 64;
		t->next = xrealloc(t->next, t->cap_next * sizeof(*t->next));
	}
	memcpy(t->next[t->nr_next].id, id, GUEST_ID_MAX);
	t->next[t->nr_next].usage_ns = usage;
	t->next[t->nr_next].t_ns = t_ns;
	t->next[t->nr_next].thr_off = thr_off;
	t->next[t->nr_next].nr_thr = nr_thr;
	t->nr_next++;
}

static int prev_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cgthr_prev *)a)->id, ((const struct cgthr_prev *)b)->id);
}

const struct cgthr_prev *cgthr_prev_find(const struct cgthr *t, const char *id)
{
	struct cgthr_prev key;

	if (!t->nr_prev)
		return NULL;
	memcpy(key.id, id, GUEST_ID_MAX);
	return bsearch(&key, t->prev, t->nr_prev, sizeof(*t->prev), prev_cmp);
}

double cgthr_rate(const struct cgthr_prev *p, uint64_t usage, int64_t t_ns)
{
	if (!p || usage < p->usage_ns || t_ns <= p->t_ns)
		return NAN;
	return (double)(usage - p->usage_ns) / (double)(t_ns - p->t_ns);
}

static int tid_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct cgthr_tick *)a)->tid, y = ((const struct cgthr_tick *)b)->tid;

	return (x > y) - (x < y);
}

/* Thread TID's ticks (utime + stime) and the CPU it last ran on, from
 * DFD/PREFIX<TID>/task/<TID>/stat: task/TID, because /proc/PID/stat of a
 * group leader sums every thread of its process (a one-thread guest's
 * idle main thread counted as a second busy thread, carrying the whole
 * process's ticks to its own last CPU's node). 0 or a negative errno. */
static int read_tid(struct cgthr *t, int dfd, const char *prefix, pid_t tid, uint64_t *ticks, int *cpu)
{
	char path[PATH_MAX];
	int r;

	if (tid <= 0 ||
	    snprintf(path, sizeof(path), "%s%d/task/%d/stat", prefix, (int)tid, (int)tid) >= (int)sizeof(path))
		return -EINVAL;
	r = rd_small(t, dfd, path);
	return r < 0 ? r : proc_stat_ticks_cpu(t->buf, ticks, cpu);
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Did guest G stand still since P, its previous scan: no CPU time
 * charged to its cgroup, and the same threads? Then none of them ran:
 * their ticks are what P recorded, and reading every thread's stat again
 * (three system calls each, for every idle guest spread over nodes)
 * would tell nothing new. Its threads' ticks are copied to the pool at
 * *OFF as a read would have left them. */
static bool idle_since(struct cgthr *t, const struct snap_guest *g, const struct cgthr_prev *p, unsigned off)
{
	const struct cgthr_tick *was;
	pid_t tids[CGTHR_SAMPLE_MAX];

	if (!p || g->cpu_usage_ns != p->usage_ns || p->nr_thr != t->nr_tids)
		return false;
	was = t->thr_prev + p->thr_off;
	memcpy(tids, t->tids, t->nr_tids * sizeof(pid_t));
	qsort(tids, t->nr_tids, sizeof(pid_t), pid_cmp);
	for (unsigned i = 0; i < t->nr_tids; i++)
		if (tids[i] != was[i].tid)
			return false;
	for (unsigned i = 0; i < t->nr_tids; i++) {
		t->thr_next[off + i] = was[i];
		t->thr_next[off + i].ran = false;
	}
	return true;
}

/* How many nodes CPUS (a mask of snapshot S, this scan's) spans. */
static unsigned span_of(struct cgthr *t, const struct snapshot *s, const cpumask_t *cpus)
{
	struct cgthr_span *e;
	nodemask_t nodes;
	const unsigned max = sizeof(t->span) / sizeof(t->span[0]);

	for (unsigned i = 0; i < t->nr_span; i++)
		if (t->span[i].cpus == cpus)
			return t->span[i].nodes;
	snap_cpus_to_nodes(s, cpus, &nodes);
	if (t->nr_span < max) {
		e = &t->span[t->nr_span++];
	} else {
		e = &t->span[t->next_span];
		t->next_span = (t->next_span + 1) % max;
	}
	e->cpus = cpus;
	e->nodes = mask_count(&nodes);
	return e->nodes;
}

/* Where guest G's CPU time went, per node, from its threads (t->tids):
 * each thread's ticks since the previous scan count on the node of the
 * CPU it last ran on (/proc/TID/task/TID/stat "processor"). A thread that changed
 * nodes within the window counts wholly on its last one: it answers the
 * policy's question (which nodes carry this guest's load, so what is
 * left there without it) far better than spreading the use evenly over
 * its CPUs, which took two busy guests on one node for a quarter each.
 * P is what the previous scan recorded of the guest (NULL: nothing).
 * Sets g->cpu_node when there is something to share out; records the
 * ticks (pool slice *OFF, *N) for the next scan either way. */
void cgthr_thread_nodes(struct cgthr *t, const struct snapshot *s, struct snap_guest *g,
			const struct cgthr_prev *p, int64_t t_ns, unsigned *off, unsigned *n)
{
	double *dn, **pdn, busy_ticks, win_ticks, cap = 0, dn_sum = 0.0;
	bool measured = false;
	unsigned known = 0;

	*off = t->nr_thr_next;
	*n = 0;
	if (t->tids_over || !t->nr_tids || s->nr_nodes < 2)
		return;
	if (span_of(t, s, g->cpus) < 2)
		return;
	if (t->nr_thr_next + t->nr_tids > t->cap_thr_next) {
		t->cap_thr_next = (t->nr_thr_next + t->nr_tids) * 2;
		t->thr_next = xrealloc(t->thr_next, t->cap_thr_next * sizeof(*t->thr_next));
	}
	if (idle_since(t, g, p, t->nr_thr_next)) {
		*n = t->nr_tids;
		t->nr_thr_next += *n;
		g->busy_measured = false;
		return;
	}
	dn = xcalloc(s->nr_nodes, sizeof(double));
	pdn = g->nr_parts ? xcalloc(g->nr_parts, sizeof(*pdn)) : NULL;
	/* Busy: at least SNAP_BUSY_THREAD_CPU of a CPU over the window. */
	win_ticks = p && t_ns > p->t_ns ? (double)(t_ns - p->t_ns) / 1e9 * (double)t->clk_tck : INFINITY;
	busy_ticks = SNAP_BUSY_THREAD_CPU * win_ticks;
	if (t->proc_fd < 0)
		t->proc_fd = open(t->procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (unsigned i = 0; i < t->nr_tids; i++) {
		struct cgthr_tick *tk = &t->thr_next[t->nr_thr_next + *n];
		const struct cgthr_tick *was;
		uint64_t ticks;
		int cpu, k;

		if (t->proc_fd < 0 || read_tid(t, t->proc_fd, "", t->tids[i], &ticks, &cpu) < 0)
			continue; /* exited since the list was read */
		tk->tid = t->tids[i];
		tk->ticks = ticks;
		tk->ran = false;
		(*n)++;
		was = p && p->nr_thr ? bsearch(tk, t->thr_prev + p->thr_off, p->nr_thr, sizeof(*tk), tid_cmp)
				     : NULL;
		if (was && tk->ticks >= was->ticks) {
			/* Its ticks are truncated at both ends: one more is
			 * its most, and one CPU at most. */
			known++;
			cap += fmin(1.0, ((double)(tk->ticks - was->ticks) + 1.0) / win_ticks);
		}
		if (!was || tk->ticks <= was->ticks || (k = snap_cpu_node_index(s, cpu)) < 0)
			continue; /* new (its window is unknown), idle, or an unknown CPU */
		dn[k] += (double)(tk->ticks - was->ticks);
		dn_sum += (double)(tk->ticks - was->ticks);
		measured = true;
		tk->ran = (double)(tk->ticks - was->ticks) >= CGTHR_RAN_CPU * win_ticks;
		if ((double)(tk->ticks - was->ticks) >= busy_ticks)
			g->busy_threads++;
		if (t->tid_part[i] < g->nr_parts) {
			unsigned pi = t->tid_part[i];

			if (!pdn[pi])
				pdn[pi] = xcalloc(s->nr_nodes, sizeof(double));
			pdn[pi][k] += (double)(tk->ticks - was->ticks);
			if ((double)(tk->ticks - was->ticks) >= busy_ticks)
				g->parts[pi].busy_threads++;
		}
	}
	qsort(t->thr_next + t->nr_thr_next, *n, sizeof(struct cgthr_tick), tid_cmp);
	t->nr_thr_next += *n;
	g->busy_measured = measured;
	/* A thread uses at most one CPU. The cgroup's usage can read more:
	 * a running task's time since its last tick is not in it yet, so
	 * each end of the window is behind by up to a tick, and under
	 * emulation (TCG) by more, unevenly. A one-thread guest can then
	 * read more than one CPU over a short window, two of them no longer
	 * fit the 2-CPU node holding their memory, and the plan would
	 * migrate one for nothing. So a guest whose threads were the same at both ends is bounded
	 * by what its threads' own ticks say, each at most one CPU; an idle
	 * thread then adds a tick's worth, not a CPU (counting threads that
	 * ran let a main thread's one tick double the bound). A thread that
	 * came or went in the window (its time counted, its tid not seen at
	 * both ends) leaves no bound; a process that came and went inside
	 * it is not seen, and its time is cut by at most the excess. */
	if (p && known && isfinite(win_ticks) && known == t->nr_tids && known == *n && known == p->nr_thr &&
	    g->cpu_use > cap)
		g->cpu_use = cap;
	if (pdn)
		parts_use(s, g, pdn, dn_sum);
	free(pdn);
	g->cpu_node = snap_node_use(s, dn, g->cpu_use);
}

unsigned cgthr_prev_tids(const struct cgthr *t, const char *id, pid_t *out, unsigned max)
{
	char key[GUEST_ID_MAX] = { 0 };
	const struct cgthr_prev *p;
	unsigned n = 0;

	/* (cgthr_prev_find compares whole GUEST_ID_MAX buffers) */
	snprintf(key, sizeof(key), "%s", id);
	p = cgthr_prev_find(t, key);

	for (unsigned i = 0; p && i < p->nr_thr && n < max; i++)
		if (t->thr_prev[p->thr_off + i].ran)
			out[n++] = t->thr_prev[p->thr_off + i].tid;
	return n;
}

int cgthr_read_thread(struct cgthr *t, pid_t tid, uint64_t *ns, int *cpu)
{
	char prefix[PATH_MAX];
	uint64_t ticks;
	int r;

	if (snprintf(prefix, sizeof(prefix), "%s/", t->procfs) >= (int)sizeof(prefix))
		return -ENAMETOOLONG;
	r = read_tid(t, AT_FDCWD, prefix, tid, &ticks, cpu);
	if (r < 0)
		return r;
	*ns = ticks * (1000000000ULL / (uint64_t)t->clk_tck);
	return 0;
}

/* A guest seen for the first time has no earlier usage sample, hence no
 * rate, and the policy leaves it alone until the next cycle: a guest that
 * started between two cycles would wait a whole interval before it is
 * placed (15 s by default). If its
 * main process started less than FIRST_SIGHT_MAX_AGE_S ago, its average
 * use since then is the best estimate there is. An older guest (one that
 * just came into scope) keeps NAN: its lifetime average says little
 * about now. Returns NAN when unknown. */
#define FIRST_SIGHT_MIN_AGE_S 1.0
#define FIRST_SIGHT_MAX_AGE_S 120.0

double cgthr_young_rate(struct cgthr *t, pid_t pid, uint64_t usage_ns)
{
	char path[PATH_MAX];
	double up, age;
	const char *f[20];
	unsigned long long start = 0;

	if (pid <= 0 ||
	    snprintf(path, sizeof(path), "%s/uptime", t->procfs) >= (int)sizeof(path) ||
	    rd_small(t, AT_FDCWD, path) < 0)
		return NAN;
	up = strtod(t->buf, NULL);
	if (snprintf(path, sizeof(path), "%s/%d/stat", t->procfs, (int)pid) >= (int)sizeof(path) ||
	    rd_small(t, AT_FDCWD, path) < 0)
		return NAN;
	/* Field 22: starttime, clock ticks after boot. */
	if (proc_stat_fields(t->buf, f, 20) < 0 || sscanf(f[19], "%llu", &start) != 1)
		return NAN;
	age = up - (double)start / (double)t->clk_tck;
	if (!(age >= FIRST_SIGHT_MIN_AGE_S && age <= FIRST_SIGHT_MAX_AGE_S))
		return NAN;
	return (double)usage_ns / 1e9 / age;
}

void cgthr_end(struct cgthr *t)
{
	struct cgthr_prev *p;
	struct cgthr_tick *tt;
	unsigned tc;

	if (t->proc_fd >= 0)
		close(t->proc_fd);
	t->proc_fd = -1;
	if (t->nr_next)
		qsort(t->next, t->nr_next, sizeof(*t->next), prev_cmp);
	p = t->prev;
	t->prev = t->next;
	t->next = p;
	tc = t->cap_prev;
	t->cap_prev = t->cap_next;
	t->cap_next = tc;
	t->nr_prev = t->nr_next;
	t->nr_next = 0;
	tt = t->thr_prev;
	t->thr_prev = t->thr_next;
	t->thr_next = tt;
	tc = t->cap_thr_prev;
	t->cap_thr_prev = t->cap_thr_next;
	t->cap_thr_next = tc;
	t->nr_thr_next = 0;
}

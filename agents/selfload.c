/* selfload.c — the agent's own CPU time per node (selfload.h). */
#include "selfload.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/procstat.h"
#include "../orchestrator/base/xalloc.h"

void selfload_init(struct selfload *s, const char *procfs, pid_t pid)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->procfs, sizeof(s->procfs), "%s", procfs);
	s->pid = pid;
	s->clk_tck = sysconf(_SC_CLK_TCK);   /* stat's ticks, as cgthr.c reads them */
	if (s->clk_tck <= 0)
		s->clk_tck = 100;
}

void selfload_clear(struct selfload *s)
{
	free(s->thr);
	s->thr = NULL;
	s->n = 0;
	s->have = 0;
}

static int node_of_cpu(const struct snap_node *nodes, unsigned nr, int cpu)
{
	if (cpu < 0)
		return -1;
	for (unsigned i = 0; i < nr; i++)
		if (mask_test(&nodes[i].cpus, cpu))
			return (int)i;
	return -1;
}

void selfload_by_node(const struct selfload_thr *prev, unsigned np, const struct selfload_thr *cur, unsigned nc,
		      const struct snap_node *nodes, unsigned nr, double *sec)
{
	unsigned j = 0;

	for (unsigned i = 0; i < nc; i++) {
		uint64_t base = 0;
		int n;

		while (j < np && prev[j].tid < cur[i].tid)
			j++;
		if (j < np && prev[j].tid == cur[i].tid)
			base = prev[j].ns;
		/* A counter that went back is another thread with a reused
		 * tid: born since, all of its time is in the window. */
		if (cur[i].ns < base)
			base = 0;
		n = node_of_cpu(nodes, nr, cur[i].cpu);
		if (n >= 0)
			sec[n] += (double)(cur[i].ns - base) / 1e9;
	}
}

void selfload_subtract(struct snap_node *nodes, unsigned nr, const double *sec, double window_s)
{
	if (!(window_s > 0.0))
		return;
	for (unsigned i = 0; i < nr; i++) {
		double cpus;

		nodes[i].agent_cpus = sec[i] / window_s;
		if (isnan(nodes[i].busy) || !nodes[i].nr_cpus || !(sec[i] > 0.0))
			continue;
		cpus = nodes[i].busy * nodes[i].nr_cpus - sec[i] / window_s;
		nodes[i].busy = cpus > 0.0 ? cpus / nodes[i].nr_cpus : 0.0;
	}
}

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = ((const struct selfload_thr *)a)->tid, y = ((const struct selfload_thr *)b)->tid;

	return x < y ? -1 : x > y;
}

/* One thread's CPU time and last CPU; -ENOENT if it ended meanwhile. */
static int read_thread(const struct selfload *s, pid_t tid, struct selfload_thr *t)
{
	char path[PATH_MAX], line[1024], *buf = NULL;
	unsigned long long ns;
	uint64_t ticks;
	size_t len;
	int r;

	t->tid = tid;
	t->cpu = -1;
	if (snprintf(path, sizeof(path), "%s/%d/task/%d/stat", s->procfs, (int)s->pid, (int)tid) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	r = fs_read_file(path, 4096, &buf, &len);
	if (r < 0)
		return r;
	r = proc_stat_ticks_cpu(buf, &ticks, &t->cpu);
	free(buf);
	if (r < 0)
		return r;
	/* schedstat: nanoseconds, where stat's ticks are 10 ms apart. */
	if (snprintf(path, sizeof(path), "%s/%d/task/%d/schedstat", s->procfs, (int)s->pid, (int)tid) <
		    (int)sizeof(path) &&
	    fs_read_line(path, line, sizeof(line)) == 0 && sscanf(line, "%llu", &ns) == 1)
		t->ns = ns;
	else
		t->ns = ticks * (uint64_t)(1e9 / (double)s->clk_tck);
	return 0;
}

int selfload_sample(struct selfload *s, const struct snap_node *nodes, unsigned nr, double *sec)
{
	char path[PATH_MAX];
	struct selfload_thr *cur = NULL;
	unsigned n = 0, cap = 0;
	int counted;
	struct dirent *de;
	DIR *d;

	if (snprintf(path, sizeof(path), "%s/%d/task", s->procfs, (int)s->pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	d = opendir(path);
	if (!d) {
		int r = -errno;

		selfload_clear(s);
		return r;
	}
	while ((de = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || tid <= 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			cur = xrealloc(cur, cap * sizeof(*cur));
		}
		if (read_thread(s, (pid_t)tid, &cur[n]) == 0)
			n++;
	}
	closedir(d);
	qsort(cur, n, sizeof(*cur), cmp_tid);
	counted = s->have;
	if (counted && sec)
		selfload_by_node(s->thr, s->n, cur, n, nodes, nr, sec);
	free(s->thr);
	s->thr = cur;
	s->n = n;
	s->have = 1;
	return counted;
}

#include "acquire.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgthr.h"
#include "drift.h"
#include "selfload.h"
#include "topo.h"
#include "../orchestrator/base/clock.h"
#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"

struct acquirer {
	struct host_paths hp;
	struct cgscan *cg;
	struct topo_cpustat prev;
	struct selfload self;   /* the agent's own threads, taken off the nodes' load */
	int64_t prev_ns;
	bool have_prev;
	bool primed;            /* counters taken by acquirer_prime, no snapshot yet */
	uint64_t seq;
	unsigned last_guests;   /* guests in the last snapshot */
	unsigned nr_sources;
	struct guest_source *sources;
	struct drift *drift;     /* the watch between cycles */
	/* The CPUs' cores and caches, read again only when the nodes' CPUs
	 * change (hotplug): a few files per CPU that a cycle need not pay. */
	struct topo_cputopo cputopo;
	cpumask_t *cputopo_cpus;
};

/* The watch's threads of guest G (drift_threads_fn): a VM's vCPUs, whose
 * threads its source measured; a container's, those the last scan
 * measured by node (cgthr). Either way only those that ran over the
 * cycle's window (CGTHR_RAN_CPU; a vCPU whose use is unknown too). */
static int read_threads(void *ctx, const struct snap_guest *g, struct drift_thread *out, unsigned max)
{
	struct acquirer *a = ctx;
	pid_t tids[DRIFT_THREADS_MAX];
	unsigned n = 0, k = 0;

	if (max > DRIFT_THREADS_MAX)
		max = DRIFT_THREADS_MAX;
	if (g->vm) {
		for (unsigned v = 0; v < g->vm->nr_vcpus && n < max; v++)
			if (g->vm->vcpu_tids && g->vm->vcpu_tids[v] > 0 &&
			    !(g->vm->vcpu_use && g->vm->vcpu_use[v] < CGTHR_RAN_CPU))
				tids[n++] = g->vm->vcpu_tids[v];
	} else {
		n = cgscan_thread_ids(a->cg, g->id, tids, max);
	}
	for (unsigned i = 0; i < n; i++)
		if (cgscan_read_thread(a->cg, tids[i], &out[k].ns, &out[k].cpu) == 0)
			out[k++].tid = tids[i];
	return (int)k;
}

int acquirer_new(const struct host_paths *hp, const struct cgscan_config *cg, struct acquirer **out)
{
	struct acquirer *a = xcalloc(1, sizeof(*a));
	int r;

	a->hp = *hp;
	r = cgscan_new(hp, cg, &a->cg);
	if (r < 0) {
		free(a);
		return r;
	}
	selfload_init(&a->self, hp->procfs, getpid());
	a->drift = drift_new();
	drift_watch_threads(a->drift, read_threads, a);
	*out = a;
	return 0;
}

void acquirer_free(struct acquirer *a)
{
	if (!a)
		return;
	cgscan_free(a->cg);
	topo_cpustat_free(&a->prev);
	topo_cputopo_free(&a->cputopo);
	free(a->cputopo_cpus);
	selfload_clear(&a->self);
	drift_free(a->drift);
	free(a->sources);
	free(a);
}

void acquirer_add_source(struct acquirer *a, const struct guest_source *src)
{
	a->sources = xrealloc(a->sources, (a->nr_sources + 1) * sizeof(*a->sources));
	a->sources[a->nr_sources++] = *src;
}

const struct cg_hier *acquirer_hier(const struct acquirer *a)
{
	return cgscan_hier(a->cg);
}

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - floor(s)) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The counter KEY of /proc/vmstat (PATH): -ENOENT when the kernel has
 * none (no CONFIG_NUMA_BALANCING). */
static int read_vmstat_key(const char *path, const char *key, uint64_t *out)
{
	size_t klen = strlen(key), len;
	char *buf, *p;
	int r = fs_read_file(path, 1 << 16, &buf, &len);

	if (r < 0)
		return r;
	r = -ENOENT;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			char *end;

			errno = 0;
			*out = strtoull(p + klen + 1, &end, 10);
			r = errno || end == p + klen + 1 ? -EINVAL : 0;
			break;
		}
	free(buf);
	return r;
}

/* /sys/kernel/mm/numa/demotion_enabled under SYSFS ("true"/"false", or
 * 1/0 on some kernels): 1, 0, -1 when absent (a kernel without memory
 * tiering) or unreadable. */
static int read_demotion(const char *sysfs)
{
	char path[PATH_MAX], line[16];

	if (snprintf(path, sizeof(path), "%s/kernel/mm/numa/demotion_enabled", sysfs) >= (int)sizeof(path) ||
	    fs_read_line(path, line, sizeof(line)) < 0)
		return -1;
	if (!strcmp(line, "true") || !strcmp(line, "1"))
		return 1;
	if (!strcmp(line, "false") || !strcmp(line, "0"))
		return 0;
	return -1;
}

/* Scan all guest sources into SNAP at NOW. */
static int scan_guests(struct acquirer *a, struct snapshot *snap, int64_t now)
{
	int r = cgscan_scan(a->cg, snap, now);

	if (r < 0)
		snap_warn(snap, "container scan failed: %s", strerror(-r));
	for (unsigned i = 0; i < a->nr_sources; i++) {
		int rs = a->sources[i].scan(a->sources[i].ctx, snap, now);

		if (rs < 0)
			snap_warn(snap, "%s source: %s", a->sources[i].name, strerror(-rs));
	}
	return 0;
}

/* The first counters: node CPU time, and every guest's through a
 * throwaway snapshot. */
int acquirer_prime(struct acquirer *a)
{
	struct snap_node *nodes = NULL;
	unsigned nr = 0, *dist = NULL;
	struct snapshot *prime;
	int r;

	if (a->have_prev)
		return 0;
	r = topo_read_nodes(&a->hp, &nodes, &nr, &dist);
	if (r < 0)
		return r;
	prime = snap_new();
	snap_set_nodes(prime, nodes, nr, dist);
	r = topo_read_cpustat(&a->hp, &a->prev);
	if (r == 0) {
		(void)selfload_sample(&a->self, nodes, nr, NULL);
		a->prev_ns = clock_mono_ns();
		scan_guests(a, prime, a->prev_ns);
		a->have_prev = true;
		a->primed = true;
	}
	snap_unref(prime);
	free(nodes);
	free(dist);
	return r;
}

/* The snapshot's cores and caches, from the cache while the nodes'
 * CPUs are those it was read for. */
static void cputopo_set(struct acquirer *a, struct snapshot *s, const struct snap_node *nodes, unsigned nr)
{
	cpumask_t *all = xcalloc(1, sizeof(*all));

	for (unsigned i = 0; i < nr; i++)
		mask_or(all, all, &nodes[i].cpus);
	if (!a->cputopo_cpus || !mask_equal(all, a->cputopo_cpus)) {
		topo_cputopo_free(&a->cputopo);
		topo_read_cputopo(&a->hp, nodes, nr, &a->cputopo);
		free(a->cputopo_cpus);
		a->cputopo_cpus = all;
		all = NULL;
	}
	free(all);
	snap_set_cputopo(s, a->cputopo.core, a->cputopo.llc, a->cputopo.nr);
}

int acquirer_snapshot(struct acquirer *a, double prime_s, const struct snap_policy_overlay *ov,
		      const struct snapshot **out)
{
	struct snap_node *nodes = NULL;
	unsigned nr = 0, *dist = NULL;
	struct topo_cpustat cur = { 0 };
	double *self_s = NULL;  /* the agent's own CPU seconds per node */
	bool self_ok;
	struct snapshot *s;
	int64_t now;
	int r;

	if (!a->have_prev) {
		r = acquirer_prime(a);
		if (r < 0)
			return r;
	}
	if (a->primed) {
		/* The first snapshot has rates over at least PRIME_S; what the
		 * daemon's start-up took since acquirer_prime() counts. */
		double left = prime_s - (double)(clock_mono_ns() - a->prev_ns) / 1e9;

		if (left > 0)
			sleep_s(left);
		a->primed = false;
	}

	r = topo_read_nodes(&a->hp, &nodes, &nr, &dist);
	if (r < 0)
		return r;

	r = topo_read_cpustat(&a->hp, &cur);
	if (r < 0)
		goto out;
	self_s = xcalloc(nr ? nr : 1, sizeof(*self_s));
	/* Counted only over a window whose start it sampled too (not on a
	 * fixture procfs without the agent's pid): else agent_cpus stays NAN. */
	self_ok = selfload_sample(&a->self, nodes, nr, self_s) > 0;
	now = clock_mono_ns();
	topo_node_busy(nodes, nr, &a->prev, &cur);
	if (self_ok)
		selfload_subtract(nodes, nr, self_s, (double)(now - a->prev_ns) / 1e9);
	if (self_ok && log_get_level() >= LOG_LEVEL_DEBUG) {
		char line[512];
		size_t o = 0;

		for (unsigned i = 0; i < nr && o < sizeof(line); i++)
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %d:%.3f", nodes[i].id, self_s[i]);
		log_debug("the agent's own CPU s by node over the %.2f s window, left out of the nodes' load:%s",
			  (double)(now - a->prev_ns) / 1e9, line);
	}

	s = snap_new();
	s->seq = ++a->seq;
	s->mono_ns = now;
	s->real_ns = clock_real_ns();
	s->window_s = (double)(now - a->prev_ns) / 1e9;
	s->layout = cgscan_hier(a->cg)->layout;
	{
		char path[PATH_MAX];
		uint64_t v;

		/* Absent (a kernel without NUMA_BALANCING): unknown. */
		if (snprintf(path, sizeof(path), "%s/sys/kernel/numa_balancing", a->hp.procfs) < (int)sizeof(path) &&
		    fs_read_u64(path, &v) == 0)
			s->numa_balancing = v > 255 ? 255 : (int)v;
		s->demotion_enabled = read_demotion(a->hp.sysfs);
		if (snprintf(path, sizeof(path), "%s/vmstat", a->hp.procfs) < (int)sizeof(path))
			s->vmstat_read = read_vmstat_key(path, "numa_pages_migrated", &s->numa_pages_migrated) == 0;
	}
	snap_set_nodes(s, nodes, nr, dist);
	cputopo_set(a, s, nodes, nr);
	/* Room for as many guests as last time: grown by doubling, a large
	 * array passes through copies of half its size and less that stay
	 * behind as holes in the heap. */
	snap_reserve_guests(s, a->last_guests + 16);
	scan_guests(a, s, now);
	snap_finalize_with(s, ov);
	a->last_guests = s->nr_guests;

	topo_cpustat_free(&a->prev);
	a->prev = cur;
	memset(&cur, 0, sizeof(cur));
	a->prev_ns = now;
	*out = s;
	r = 0;
out:
	topo_cpustat_free(&cur);
	free(self_s);
	free(nodes);
	free(dist);
	return r;
}

/* A container's counter through the file the last scan kept open (by
 * its path, each read would pay a path walk again, at every guest); a
 * VM's cgroup, or a file not kept, by path. */
static int read_usage(void *ctx, const char *rel, uint64_t *ns)
{
	struct acquirer *a = ctx;
	int r = cgscan_read_usage(a->cg, rel, ns);

	if (r == -ENOENT)
		r = drift_read_path((void *)cgscan_hier(a->cg), rel, ns);
	return r;
}

void acquirer_drift(struct acquirer *a, const struct snapshot *last, const bool *moved, struct drift_report *out)
{
	drift_pass(a->drift, last, clock_mono_ns(), read_usage, a, moved, out);
}

int acquirer_rewindow(struct acquirer *a)
{
	/* As at start-up: the counters taken now, and the next snapshot
	 * waits for what is left of its PRIME_S (the engine arms its cycle
	 * that far out, so nothing is left to wait). */
	a->have_prev = false;
	topo_cpustat_free(&a->prev);
	return acquirer_prime(a);
}

const struct source_ops acquire_host_ops = {
	.acquirer_new = acquirer_new,
	.acquirer_free = acquirer_free,
	.add_source = acquirer_add_source,
	.hier = acquirer_hier,
	.snapshot = acquirer_snapshot,
	.prime = acquirer_prime,
	.read_meminfo = topo_read_meminfo,
	.drift = acquirer_drift,
	.rewindow = acquirer_rewindow,
};

#include "drift.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgscan.h"
#include "../orchestrator/base/xalloc.h"

/* One guest's counter between passes. */
struct entry {
	char id[GUEST_ID_MAX];
	int64_t t_ns;       /* the last reading taken as a window's end */
	uint64_t usage_ns;
	uint64_t seq;       /* the snapshot its reference belongs to */
	double ref;         /* CPUs over the window around that snapshot; NAN: none yet */
	int streak;         /* windows in a row stepped the same way (+ up, - down) */
	/* Where its threads run (a guest spread over nodes): their last
	 * reading, sorted by tid (owned), taken at thr_t_ns (0: none) under
	 * the snapshot thr_seq; windows in a row away from its memory. */
	struct drift_thread *thr;
	unsigned nthr;
	int64_t thr_t_ns;
	uint64_t thr_seq;
	int away;
	double loc_ref, loc_now;
};

struct drift {
	struct entry *v;    /* sorted by id */
	unsigned n;
	drift_threads_fn threads;
	void *tctx;
};

struct drift *drift_new(void)
{
	return xcalloc(1, sizeof(struct drift));
}

void drift_free(struct drift *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < d->n; i++)
		free(d->v[i].thr);
	free(d->v);
	free(d);
}

void drift_watch_threads(struct drift *d, drift_threads_fn threads, void *ctx)
{
	d->threads = threads;
	d->tctx = ctx;
}

int drift_step(double ref, double now)
{
	double d = now - ref, big = now > ref ? now : ref;

	if (!isfinite(ref) || !isfinite(now))
		return 0;
	if (fabs(d) < DRIFT_MIN_CPUS || fabs(d) < DRIFT_MIN_SHARE * big)
		return 0;
	return d > 0 ? 1 : -1;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->id, ((const struct entry *)b)->id);
}

static struct entry *find(const struct drift *d, const char *id)
{
	struct entry key;

	snprintf(key.id, sizeof(key.id), "%s", id);
	return d->n ? bsearch(&key, d->v, d->n, sizeof(*d->v), by_id) : NULL;
}

/* E's new reading U at T: a window closed (its use in *RATE), its
 * reference set, or a step counted. Returns true if E has stepped two
 * windows in a row. */
static bool advance(struct entry *e, uint64_t seq, int64_t t, uint64_t u, double *rate_out)
{
	double w = (double)(t - e->t_ns) / 1e9, rate;
	int st;

	if (w < DRIFT_MIN_WINDOW_S)
		return false; /* the window goes on to the next pass */
	rate = (double)(u - e->usage_ns) / 1e9 / w;
	*rate_out = rate;
	e->t_ns = t;
	e->usage_ns = u;
	if (e->seq != seq || !isfinite(e->ref)) {
		/* The first window around a new cycle (or the guest's first):
		 * what it decided on, as this counter reads it. */
		e->seq = seq;
		e->ref = rate;
		e->streak = 0;
		return false;
	}
	st = drift_step(e->ref, rate);
	if (st == 0)
		e->streak = 0;
	else if ((st > 0) == (e->streak > 0) && e->streak != 0)
		e->streak += st;
	else
		e->streak = st;
	return abs(e->streak) >= 2;
}

static int by_tid(const void *a, const void *b)
{
	pid_t x = ((const struct drift_thread *)a)->tid, y = ((const struct drift_thread *)b)->tid;

	return (x > y) - (x < y);
}

static void forget_threads(struct entry *e)
{
	free(e->thr);
	e->thr = NULL;
	e->nthr = 0;
	e->thr_t_ns = 0;
	e->away = 0;
}

/* Where G's threads ran since E's last reading of them: E->away counts
 * the windows in a row whose locality there (with the memory SNAP saw)
 * is DRIFT_AWAY_DROP or more under the cycle's. Returns true if away two
 * windows in a row. The first reading under a new snapshot starts its
 * window: the cycle may have just moved the guest. */
static bool where(struct drift *d, struct entry *e, const struct snapshot *snap, const struct snap_guest *g,
		  int64_t now_ns, unsigned *nread)
{
	struct drift_thread cur[DRIFT_THREADS_MAX];
	double wk64[64], *wk, used = 0.0, win;
	int n;

	/* Only a guest the cycle saw busy: an idle one's threads may run
	 * anywhere (when it turns busy, its counter steps), and this bounds
	 * the reads to the guests the host's CPUs can keep busy. Nor one the
	 * operator told the agent never to touch. */
	if (!d->threads || !g->cpu_node || mask_count(&g->cpu_nodes) < 2 || !g->mem_total ||
	    !(g->cpu_use >= DRIFT_MIN_CPUS) || g->policy.mode == GPOL_IGNORE) {
		forget_threads(e);
		return false;
	}
	if (e->thr_t_ns && now_ns - e->thr_t_ns < (int64_t)(DRIFT_MIN_WINDOW_S * 1e9))
		return e->away >= 2; /* the window goes on to the next pass */
	n = d->threads(d->tctx, g, cur, DRIFT_THREADS_MAX);
	if (n > 0)
		*nread += (unsigned)n;
	if (n <= 0) {
		forget_threads(e);
		return false;
	}
	qsort(cur, (size_t)n, sizeof(*cur), by_tid);
	if (!e->thr_t_ns || e->thr_seq != snap->seq) {
		e->away = 0;
	} else {
		win = (double)(now_ns - e->thr_t_ns) / 1e9;
		/* (each pass, each watched guest: no allocation on most hosts) */
		wk = snap->nr_nodes <= 64 ? memset(wk64, 0, sizeof(wk64)) : xcalloc(snap->nr_nodes, sizeof(double));
		for (int i = 0; i < n; i++) {
			const struct drift_thread *was = bsearch(&cur[i], e->thr, e->nthr, sizeof(*cur), by_tid);
			int k = snap_cpu_node_index(snap, cur[i].cpu);

			/* new since the last pass (its window unknown), idle, or on
			 * a CPU no node has */
			if (!was || cur[i].ns <= was->ns || k < 0)
				continue;
			wk[k] += (double)(cur[i].ns - was->ns);
			used += (double)(cur[i].ns - was->ns);
		}
		if (used / 1e9 / win >= DRIFT_MIN_CPUS) {
			/* The cycle's reading taken the same way (the guest's whole
			 * memory against where its threads ran), not g->locality: a
			 * pod whose containers sit on their own nodes is local by
			 * its parts while its whole memory on its threads' nodes
			 * reads about half, every pass. */
			e->loc_ref = snap_locality_for(snap, g, g->cpu_node);
			e->loc_now = snap_locality_for(snap, g, wk);
			e->away = e->loc_now <= e->loc_ref - DRIFT_AWAY_DROP ? e->away + 1 : 0;
		} else {
			e->away = 0;
		}
		if (wk != wk64)
			free(wk);
	}
	e->thr = xrealloc(e->thr, (size_t)n * sizeof(*cur));
	memcpy(e->thr, cur, (size_t)n * sizeof(*cur));
	e->nthr = (unsigned)n;
	e->thr_t_ns = now_ns;
	e->thr_seq = snap->seq;
	return e->away >= 2;
}

int drift_read_path(void *ctx, const char *rel, uint64_t *ns)
{
	const struct cg_hier *h = ctx;
	bool v2 = h->v2[CGC_CPUACCT];
	char *text = NULL;
	int r;

	if (!cgh_has(h, CGC_CPUACCT))
		return -EOPNOTSUPP;
	r = cgh_read_value(h, CGC_CPUACCT, rel, v2 ? "cpu.stat" : "cpuacct.usage", &text);
	if (r == 0)
		r = cgscan_parse_usage(text, v2, ns);
	free(text);
	return r;
}

void drift_pass(struct drift *d, const struct snapshot *snap, int64_t now_ns, drift_read_fn read, void *ctx,
		const bool *moved, struct drift_report *out)
{
	struct entry *next = xcalloc(snap->nr_guests ? snap->nr_guests : 1, sizeof(*next));
	unsigned n = 0;

	memset(out, 0, sizeof(*out));
	out->first_ref = out->first_now = NAN;
	out->away_ref = out->away_now = NAN;
	for (unsigned i = 0; i < snap->nr_guests; i++) {
		const struct snap_guest *g = &snap->guests[i];
		struct entry *old = find(d, g->id);
		struct entry *e = &next[n];
		double rate = NAN;
		uint64_t u;

		if (!g->cgroup || read(ctx, g->cgroup, &u) < 0)
			continue; /* gone, or not readable: the cycle will say */
		out->read++;
		n++;
		if (!old || u < old->usage_ns) {
			/* new, or a counter that went back (the cgroup made again) */
			snprintf(e->id, sizeof(e->id), "%s", g->id);
			e->t_ns = now_ns;
			e->usage_ns = u;
			e->seq = snap->seq;
			e->ref = NAN;
		} else {
			*e = *old;
			old->thr = NULL; /* E has its threads now */
			if (advance(e, snap->seq, now_ns, u, &rate)) {
				if (!out->stepped) {
					snprintf(out->first, sizeof(out->first), "%s", g->id);
					out->first_ref = e->ref;
					out->first_now = rate;
				}
				out->stepped++;
			}
		}
		if (moved && moved[i])
			forget_threads(e);
		else if (where(d, e, snap, g, now_ns, &out->threads)) {
			if (!out->away) {
				snprintf(out->away_first, sizeof(out->away_first), "%s", g->id);
				out->away_ref = e->loc_ref;
				out->away_now = e->loc_now;
			}
			out->away++;
		}
	}
	qsort(next, n, sizeof(*next), by_id);
	/* the threads of guests gone since (or whose counter went back) */
	for (unsigned i = 0; i < d->n; i++)
		free(d->v[i].thr);
	free(d->v);
	d->v = next;
	d->n = n;
}

#include "drift.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgscan.h"
#include "../orchestrator/xalloc.h"

/* One guest's counter between passes. */
struct entry {
	char id[GUEST_ID_MAX];
	int64_t t_ns;       /* the last reading taken as a window's end */
	uint64_t usage_ns;
	uint64_t seq;       /* the snapshot its reference belongs to */
	double ref;         /* CPUs over the window around that snapshot; NAN: none yet */
	int streak;         /* windows in a row stepped the same way (+ up, - down) */
};

struct drift {
	struct entry *v;    /* sorted by id */
	unsigned n;
};

struct drift *drift_new(void)
{
	return xcalloc(1, sizeof(struct drift));
}

void drift_free(struct drift *d)
{
	if (!d)
		return;
	free(d->v);
	free(d);
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

static const struct entry *find(const struct drift *d, const char *id)
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
		struct drift_report *out)
{
	struct entry *next = xcalloc(snap->nr_guests ? snap->nr_guests : 1, sizeof(*next));
	unsigned n = 0;

	memset(out, 0, sizeof(*out));
	out->first_ref = out->first_now = NAN;
	for (unsigned i = 0; i < snap->nr_guests; i++) {
		const struct snap_guest *g = &snap->guests[i];
		const struct entry *old = find(d, g->id);
		struct entry *e = &next[n];
		double rate = NAN;
		uint64_t u;

		if (!g->cgroup || read(ctx, g->cgroup, &u) < 0)
			continue; /* gone, or not readable: the cycle will say */
		out->read++;
		if (!old || u < old->usage_ns) {
			/* new, or a counter that went back (the cgroup made again) */
			snprintf(e->id, sizeof(e->id), "%s", g->id);
			e->t_ns = now_ns;
			e->usage_ns = u;
			e->seq = snap->seq;
			e->ref = NAN;
			n++;
			continue;
		}
		*e = *old;
		n++;
		if (advance(e, snap->seq, now_ns, u, &rate)) {
			if (!out->stepped) {
				snprintf(out->first, sizeof(out->first), "%s", g->id);
				out->first_ref = e->ref;
				out->first_now = rate;
			}
			out->stepped++;
		}
	}
	qsort(next, n, sizeof(*next), by_id);
	free(d->v);
	d->v = next;
	d->n = n;
}

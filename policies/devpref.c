/* devpref.c — what a guest's devices weigh in its placement (see
 * devpref.h). Pure. */
#include "devpref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"

bool dev_weighs(const struct snap_guest *g)
{
	return g->policy.devices != GPOL_DEV_IGNORE && MASK_ANY(&g->dev_nodes);
}

bool dev_refused(const struct snap_guest *g, const nodemask_t *nodes)
{
	return dev_weighs(g) && g->policy.devices == GPOL_DEV_REQUIRE && !mask_intersects(nodes, &g->dev_nodes);
}

double dev_leave_cost(const struct snap_guest *g, const nodemask_t *from, const nodemask_t *to)
{
	if (!dev_weighs(g) || g->policy.devices != GPOL_DEV_PREFER)
		return 0.0;
	return mask_intersects(from, &g->dev_nodes) && !mask_intersects(to, &g->dev_nodes) ? W_DEVICE : 0.0;
}

static void push(struct pctx *x, const struct pcand *c)
{
	if (x->nr_cands == x->cands_cap) {
		x->cands_cap = x->cands_cap ? 2 * x->cands_cap : 8;
		x->cands = xrealloc(x->cands, x->cands_cap * sizeof(*x->cands));
	}
	x->cands[x->nr_cands++] = *c;
}

/* From device node index D, the nearest usable nodes added one at a
 * time until the set fits: pushed if it does. Its own scratch, not the
 * context's (rare: a required device whose node the generation cut). */
static void grow_from(struct pctx *x, const struct gview *v, const bool *usable, unsigned d)
{
	const struct snapshot *s = x->s;
	unsigned *set = xcalloc(x->nn, sizeof(*set)), k = 0;
	bool *in = xcalloc(x->nn, sizeof(*in));
	struct pcand c;

	set[k++] = d;
	in[d] = true;
	for (;;) {
		int best = -1;

		pset_eval(x, v, set, k, NULL, &c);
		/* Not more nodes than its busy threads fill: a one-thread
		 * guest on two nodes runs on one of them. */
		if (pcand_fits(&c)) {
			if (!pcand_more_than_threads(x, v, &c))
				push(x, &c);
			break;
		}
		for (unsigned n = 0; n < x->nn; n++)
			if (usable[n] && !in[n] &&
			    (best < 0 || s->distance[d * s->nr_nodes + n] < s->distance[d * s->nr_nodes + (unsigned)best]))
				best = (int)n;
		if (best < 0)
			break;
		set[k++] = (unsigned)best;
		in[best] = true;
	}
	free(set);
	free(in);
}

unsigned dev_cands(struct pctx *x, const struct snap_guest *g, const struct gview *v, const bool *usable,
		   unsigned kmin)
{
	return dev_cands_for(x, g->policy.devices, &g->dev_nodes, v, usable, kmin);
}

unsigned dev_cands_for(struct pctx *x, enum gpol_devices mode, const nodemask_t *dev, const struct gview *v,
		       const bool *usable, unsigned kmin)
{
	unsigned w = 0;

	if (mode == GPOL_DEV_IGNORE || !MASK_ANY(dev))
		return kmin;
	if (mode == GPOL_DEV_PREFER) {
		for (unsigned i = 0; i < x->nr_cands; i++)
			if (!mask_intersects(&x->cands[i].nodes, dev))
				x->cands[i].score += W_DEVICE_PLACE;
		return kmin;
	}
	kmin = 0;
	for (unsigned i = 0; i < x->nr_cands; i++) {
		if (!mask_intersects(&x->cands[i].nodes, dev))
			continue;
		x->cands[w++] = x->cands[i];
		if (!x->cands[w - 1].crowded && (!kmin || x->cands[w - 1].k < kmin))
			kmin = x->cands[w - 1].k;
	}
	x->nr_cands = w;
	if (kmin)
		return kmin;
	for (unsigned n = 0; n < x->nn; n++)
		if (usable[n] && mask_test(dev, x->s->nodes[n].id))
			grow_from(x, v, usable, n);
	for (unsigned i = w; i < x->nr_cands; i++)
		if (!kmin || x->cands[i].k < kmin)
			kmin = x->cands[i].k;
	return kmin;
}

void dev_note(const struct snap_guest *g, const nodemask_t *nodes, char *buf, size_t sz)
{
	dev_note_for(g->policy.devices, &g->dev_nodes, g->nr_devices, nodes, buf, sz);
}

void dev_note_for(enum gpol_devices mode, const nodemask_t *dev, unsigned nr, const nodemask_t *nodes, char *buf,
		  size_t sz)
{
	char dn[48];
	bool many = nr > 1, on = mask_count(dev) > 1;

	buf[0] = '\0';
	if (mode == GPOL_DEV_IGNORE || !MASK_ANY(dev))
		return;
	fmt_nodes(dev, dn, sizeof(dn));
	snprintf(buf, sz, "; %s its device%s on node%s %s%s", mask_intersects(nodes, dev) ? "near" : "away from",
		 many ? "s" : "", on ? "s" : "", dn, mode == GPOL_DEV_REQUIRE ? " (required)" : "");
}

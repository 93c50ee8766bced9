/* logged.c — the last-recorded table (logged.h). */
#include "logged.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void logged_table_clear(struct logged_table *t)
{
	free(t->e);
	t->e = NULL;
	t->n = 0;
}

const struct logged *logged_find(const struct logged_table *t, const char *id)
{
	for (unsigned lo = 0, hi = t->n; lo < hi;) {
		unsigned mid = (lo + hi) / 2;
		int c = strcmp(t->e[mid].id, id);

		if (c == 0)
			return &t->e[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int logged_cmp(const void *a, const void *b)
{
	return strcmp(((const struct logged *)a)->id, ((const struct logged *)b)->id);
}

void logged_update(struct logged_table *t, const struct plan *plan)
{
	struct logged *nl = xcalloc(plan->nr_items ? plan->nr_items : 1, sizeof(*nl));
	unsigned n = 0;

	for (unsigned i = 0; i < plan->nr_items; i++) {
		const struct plan_item *it = &plan->items[i];

		if (it->kind == PLAN_SETTLED)
			continue;
		snprintf(nl[n].id, sizeof(nl[n].id), "%s", it->guest_id);
		nl[n].kind = it->kind;
		nl[n].skip = it->skip;
		nl[n].reason = it->reason;
		nl[n].to_nodes = it->to_nodes;
		nl[n].to_mems = it->to_mems;
		n++;
	}
	/* plan items come in ranked order, lookups want id order */
	qsort(nl, n, sizeof(*nl), logged_cmp);
	free(t->e);
	t->e = nl;
	t->n = n;
}

bool logged_repeats(const struct logged_table *t, const struct plan_item *it, bool explicit)
{
	const struct logged *last = logged_find(t, it->guest_id);

	if (!last || last->kind != it->kind || last->reason != it->reason)
		return false;
	if (it->kind == PLAN_SKIP)
		return last->skip == it->skip;
	if (it->kind == PLAN_MOVE)
		return !explicit && mask_equal(&last->to_nodes, &it->to_nodes) &&
		       mask_equal(&last->to_mems, &it->to_mems);
	return false;
}

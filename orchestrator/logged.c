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

static bool held(const struct logged *l, int64_t now_ns, int64_t hold_ns)
{
	return l && l->moved_ns && now_ns - l->moved_ns < hold_ns;
}

void logged_update(struct logged_table *t, const struct plan *plan, int64_t now_ns, int64_t hold_ns)
{
	struct logged *nl = xcalloc(plan->nr_items + t->n + 1, sizeof(*nl));
	unsigned n = 0;

	for (unsigned i = 0; i < plan->nr_items; i++) {
		const struct plan_item *it = &plan->items[i];
		const struct logged *old = logged_find(t, it->guest_id);

		if (it->kind == PLAN_SETTLED && !held(old, now_ns, hold_ns))
			continue;
		snprintf(nl[n].id, sizeof(nl[n].id), "%s", it->guest_id);
		if (it->kind == PLAN_SETTLED) {
			/* settled within the hold: only the hold is kept */
			nl[n].kind = PLAN_SETTLED;
			nl[n].moved_ns = old->moved_ns;
			n++;
			continue;
		}
		nl[n].kind = it->kind;
		nl[n].skip = it->skip;
		nl[n].reason = it->reason;
		nl[n].to_nodes = it->to_nodes;
		nl[n].to_mems = it->to_mems;
		/* A planned move was recorded this cycle unless it repeated. */
		if (it->kind == PLAN_MOVE)
			nl[n].moved_ns = logged_repeats(t, it, false, now_ns, hold_ns) && old && old->moved_ns
					 ? old->moved_ns : now_ns;
		else
			nl[n].moved_ns = held(old, now_ns, hold_ns) ? old->moved_ns : 0;
		n++;
	}
	/* plan items come in ranked order, lookups want id order */
	qsort(nl, n, sizeof(*nl), logged_cmp);
	/* Guests with no item this cycle that are within a hold keep it. */
	{
		struct logged_table cur = { .n = n, .e = nl };
		unsigned n0 = n;

		for (unsigned i = 0; i < t->n; i++) {
			if (!held(&t->e[i], now_ns, hold_ns) || logged_find(&cur, t->e[i].id))
				continue;
			snprintf(nl[n].id, sizeof(nl[n].id), "%s", t->e[i].id);
			nl[n].kind = PLAN_SETTLED;
			nl[n].moved_ns = t->e[i].moved_ns;
			n++;
		}
		if (n > n0)
			qsort(nl, n, sizeof(*nl), logged_cmp);
	}
	free(t->e);
	t->e = nl;
	t->n = n;
}

bool logged_repeats(const struct logged_table *t, const struct plan_item *it, bool explicit, int64_t now_ns,
		    int64_t hold_ns)
{
	const struct logged *last = logged_find(t, it->guest_id);

	if (it->kind == PLAN_MOVE && !explicit && held(last, now_ns, hold_ns))
		return true;
	if (!last || last->kind != it->kind || last->reason != it->reason)
		return false;
	if (it->kind == PLAN_SKIP)
		return last->skip == it->skip;
	if (it->kind == PLAN_MOVE)
		return !explicit && mask_equal(&last->to_nodes, &it->to_nodes) &&
		       mask_equal(&last->to_mems, &it->to_mems);
	return false;
}

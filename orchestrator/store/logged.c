/* logged.c — the last-recorded table (logged.h). */
#include "orchestrator/store/logged.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"

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

/* The bit of a skip in struct logged.skips. */
static unsigned skip_bit(const struct plan_item *it)
{
	unsigned b = (unsigned)it->skip * (REASON_PLACE + 1) + (unsigned)it->reason;

	return b < 128 ? b : 127;
}

static bool skip_seen(const struct logged *l, const struct plan_item *it, int64_t now_ns, int64_t hold_ns)
{
	unsigned b = skip_bit(it);

	return l->skips_ns && now_ns - l->skips_ns < hold_ns && (l->skips[b / 64] >> (b % 64) & 1);
}

void logged_update(struct logged_table *t, const struct plan *plan, int64_t now_ns, int64_t hold_ns)
{
	struct logged *nl = xcalloc(plan->nr_items + t->n + 1, sizeof(*nl));
	unsigned n = 0;

	for (unsigned i = 0; i < plan->nr_items; i++) {
		const struct plan_item *it = &plan->items[i];
		const struct logged *old = logged_find(t, it->guest_id);
		struct logged *e = &nl[n];

		/* A move waiting a cycle for the kernel's flow to be measured
		 * was not said: what was said before stands. */
		if (it->hold == HOLD_KERNEL_UNMEASURED) {
			if (old)
				nl[n++] = *old;
			continue;
		}
		if (it->kind == PLAN_SETTLED && !held(old, now_ns, hold_ns))
			continue;
		if (old)
			*e = *old;
		snprintf(e->id, sizeof(e->id), "%s", it->guest_id);
		if (it->kind == PLAN_SETTLED) {
			e->has_skip = false;
			e->skips_ns = 0;
		} else if (it->kind == PLAN_SKIP) {
			unsigned b = skip_bit(it);

			if (!logged_repeats(t, it, false, now_ns, hold_ns)) {
				/* recorded this cycle */
				if (!e->skips_ns || now_ns - e->skips_ns >= hold_ns) {
					e->skips[0] = e->skips[1] = 0;
					e->skips_ns = now_ns;
				}
				e->skips[b / 64] |= 1ULL << (b % 64);
			}
			e->has_skip = true;
			e->skip = it->skip;
			e->skip_move_reason = it->reason;
		} else if (!logged_repeats(t, it, false, now_ns, hold_ns)) {
			/* recorded this cycle */
			e->reason = it->reason;
			e->to_nodes = it->to_nodes;
			e->to_mems = it->to_mems;
			e->moved_ns = now_ns;
		}
		if (!held(e, now_ns, hold_ns) && !e->has_skip && it->kind != PLAN_MOVE)
			continue;
		n++;
	}
	/* plan items come in ranked order, lookups want id order */
	qsort(nl, n, sizeof(*nl), logged_cmp);
	/* Guests with no item this cycle (settled) that are within a hold
	 * keep it. */
	{
		struct logged_table cur = { .n = n, .e = nl };
		unsigned n0 = n;

		for (unsigned i = 0; i < t->n; i++) {
			if (!held(&t->e[i], now_ns, hold_ns) || logged_find(&cur, t->e[i].id))
				continue;
			nl[n] = t->e[i];
			nl[n].has_skip = false;
			nl[n].skips_ns = 0;
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

	if (!last)
		return false;
	if (it->kind == PLAN_SKIP)
		return (last->has_skip && last->skip == it->skip && last->skip_move_reason == it->reason) ||
		       skip_seen(last, it, now_ns, hold_ns);
	if (it->kind != PLAN_MOVE || explicit || !last->moved_ns)
		return false;
	return held(last, now_ns, hold_ns) ||
	       (last->reason == it->reason && mask_equal(&last->to_nodes, &it->to_nodes) &&
		mask_equal(&last->to_mems, &it->to_mems));
}

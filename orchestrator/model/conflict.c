/* conflict.c — cpusets rewritten by another placer (conflict.h). */
#include "orchestrator/model/conflict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"

static struct conflict_entry *find(const struct conflict_table *t, const char *id)
{
	for (unsigned i = 0; i < t->n; i++)
		if (strcmp(t->e[i].id, id) == 0)
			return &t->e[i];
	return NULL;
}

const struct conflict_entry *conflict_find(const struct conflict_table *t, const char *id)
{
	return find(t, id);
}

static void drop(struct conflict_table *t, struct conflict_entry *x)
{
	*x = t->e[--t->n];
}

void conflict_note_write(struct conflict_table *t, const char *id, const cpumask_t *cpus, const nodemask_t *mems)
{
	struct conflict_entry *x = find(t, id);

	if (!x) {
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 8;
			t->e = xrealloc(t->e, t->cap * sizeof(*t->e));
		}
		x = &t->e[t->n++];
		snprintf(x->id, sizeof(x->id), "%s", id);
	}
	memset(&x->found_cpus, 0, sizeof(x->found_cpus));
	memset(&x->found_mems, 0, sizeof(x->found_mems));
	x->wrote_cpus = *cpus;
	x->wrote_mems = *mems;
	x->conflict = false;
}

enum conflict_state conflict_check(struct conflict_table *t, const struct snap_guest *g)
{
	struct conflict_entry *x = find(t, g->id);

	if (!x || !g->cpus)
		return CONFLICT_NONE;
	if (!x->conflict) {
		/* Only the CPUs are compared: the memory nodes change on
		 * their own after a move (a soft binding widened again, a
		 * worker's write still to come). */
		if (mask_equal(g->cpus, &x->wrote_cpus))
			return CONFLICT_NONE;
		x->conflict = true;
		x->found_cpus = *g->cpus;
		x->found_mems = g->mems;
		return CONFLICT_NEW;
	}
	if (mask_equal(g->cpus, &x->found_cpus))
		return CONFLICT_HELD;
	/* Changed again: whoever owns it now, the agent may place it anew. */
	drop(t, x);
	return CONFLICT_NONE;
}

void conflict_forget(struct conflict_table *t, const char *id)
{
	struct conflict_entry *x = find(t, id);

	if (x)
		drop(t, x);
}

void conflict_prune(struct conflict_table *t, const struct snapshot *snap)
{
	for (unsigned i = 0; i < t->n;) {
		bool there = false;

		for (unsigned k = 0; k < snap->nr_guests && !there; k++)
			there = strcmp(snap->guests[k].id, t->e[i].id) == 0;
		if (there)
			i++;
		else
			drop(t, &t->e[i]);
	}
}

const char *conflict_placer(const struct snap_guest *g)
{
	return strcmp(g->runtime, "kubernetes") == 0 || g->pod[0] ? "kubelet" : "unknown";
}

void conflict_table_clear(struct conflict_table *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}
